"""The Redis connection of one crawler process: keys, scripts, outages.

:class:`RedisLink` is shared by the frontier, the digest index and the robots cache of a process,
so they wait out an outage together. The client is redis-py's asyncio client with its own retries
turned off: ours must survive an outage of any length (reconnect with backoff, reload the
scripts, tell the frontier that the connection came back so it can renew its leases first).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ReadOnlyError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from archiver.errors import FrontierError, FrontierUnavailableError
from archiver.frontier.redis.lua import SCRIPTS
from archiver.urls import redact_url

T = TypeVar("T")

#: Errors after which the same request may be sent again once Redis answers.
TRANSIENT: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (a restarted server loading its data)
    RedisTimeoutError,
    ReadOnlyError,  # a replica that is being promoted
    OSError,
)
#: The error every script raises when the crawl's meta key is gone (see ``scripts/prelude.lua``).
STATE_LOST = "ARCHIVER_STATE_LOST"


class Log(Protocol):
    """What the frontier logs through (a structlog logger in the crawler)."""

    def warning(self, event: str, **kw: Any) -> Any: ...

    def info(self, event: str, **kw: Any) -> Any: ...


class RedisLink:
    """One Redis client (a small connection pool) for one crawl: keys, scripts, outages.

    Shared by the frontier, the digest index and the robots cache of a process, so they wait
    out an outage together. ``available`` tells whether the last request got through.
    """

    def __init__(
        self,
        url: str,
        crawl_id: str,
        *,
        socket_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        max_backoff: float = 2.0,
        log: Log | None = None,
    ) -> None:
        if not crawl_id:
            raise FrontierError("a Redis frontier needs a crawl id (--crawl-id)")
        if any(ch in crawl_id for ch in "{}\0"):
            raise FrontierError(f"--crawl-id must not contain braces or NUL: {crawl_id!r}")
        self.url = url
        self.crawl_id = crawl_id
        self.prefix = f"archiver:{{{crawl_id}}}:"
        self.meta_key = self.prefix + "meta"
        self.log = log
        self._socket_timeout = socket_timeout
        self._connect_timeout = connect_timeout
        self.max_backoff = max_backoff
        self._client: aioredis.Redis | None = None
        self.epoch = 0  #: bumped on every reconnection after an outage
        self.down_since: float | None = None  #: monotonic time the current outage started
        self._up: asyncio.Event | None = None
        self._down: asyncio.Event | None = None
        #: set when the crawl stops: an outage is no longer waited out
        self._give_up: asyncio.Event | None = None

    @property
    def client(self) -> aioredis.Redis:
        if self._client is None:
            raise FrontierError("the Redis frontier is not open")
        return self._client

    def key(self, name: str) -> str:
        return self.prefix + name

    async def connect(self) -> None:
        """Connect and load the scripts; unreachable Redis is FrontierUnavailableError."""
        self._up, self._down = asyncio.Event(), asyncio.Event()
        self._give_up = asyncio.Event()
        self._up.set()
        try:
            client = aioredis.Redis.from_url(
                self.url,
                socket_timeout=self._socket_timeout,
                socket_connect_timeout=self._connect_timeout,
                retry=Retry(NoBackoff(), 0),  # retries are ours: they must survive outages
                decode_responses=False,
            )
        except ValueError as exc:
            raise FrontierUnavailableError(f"bad Redis URL {redact_url(self.url)}: {exc}") from None
        self._client = client
        try:
            await client.ping()
            info = await client.info("server")
            await self.load_scripts()
        except (RedisError, OSError) as exc:
            await client.aclose()
            self._client = None
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise FrontierUnavailableError(
                f"cannot reach Redis at {redact_url(self.url)}: {message}"
            ) from None
        version = str(info.get("redis_version", "0"))
        if int(version.split(".", maxsplit=1)[0]) < 5:
            await self.close()
            raise FrontierUnavailableError(
                f"Redis at {redact_url(self.url)} is version {version}; archiver needs 5 or later"
            )

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(RedisError, OSError):
                await client.aclose()

    async def load_scripts(self) -> None:
        for script in SCRIPTS.values():
            sha = await self.client.script_load(script.text)
            if sha != script.sha:  # pragma: no cover - would mean a client encoding change
                raise FrontierError(f"Redis returned sha {sha} for script {script.name}")

    # -- outage bookkeeping ----------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self.down_since is None

    def went_down(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            if self._up is not None and self._down is not None:
                self._up.clear()
                self._down.set()
            if self.log is not None:
                self.log.warning("redis-unavailable", url=redact_url(self.url), error=str(exc))

    def came_up(self) -> None:
        if self.down_since is not None:
            outage = time.monotonic() - self.down_since
            self.down_since = None
            self.epoch += 1
            if self._up is not None and self._down is not None:
                self._down.clear()
                self._up.set()
            if self.log is not None:
                self.log.warning(
                    "redis-available", url=redact_url(self.url), outage=round(outage, 2)
                )

    async def wait_available(self) -> None:
        assert self._up is not None
        await self._up.wait()

    async def wait_unavailable(self) -> None:
        assert self._down is not None
        await self._down.wait()

    def stop_waiting(self) -> None:
        """The crawl is stopping: an outage is not waited out any more; :meth:`reconnect`
        (the one place that waits for one) raises :class:`FrontierUnavailableError`."""
        if self._give_up is not None:
            self._give_up.set()

    async def reconnect(self) -> None:
        """Wait until Redis answers again (backoff from 50 ms to ``max_backoff``), then reload
        the scripts. When the crawl stops meanwhile (:meth:`stop_waiting`), give up."""
        delay = min(0.05, self.max_backoff)
        give_up = self._give_up or asyncio.Event()
        while True:
            with contextlib.suppress(TimeoutError):  # the backoff, cut short by a stop
                async with asyncio.timeout(delay):
                    await give_up.wait()
            if give_up.is_set():
                raise FrontierUnavailableError(
                    f"Redis at {redact_url(self.url)} is unreachable and the crawl is "
                    "stopping: not waiting for it"
                )
            try:
                await self.client.ping()
                await self.load_scripts()
            except TRANSIENT as exc:
                self.went_down(exc)
                delay = min(delay * 2, self.max_backoff)
                continue
            self.came_up()
            return

    async def call(self, fn: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """Run ``fn(client)``, waiting out outages; script errors become FrontierError."""
        while True:
            try:
                result = await fn(self.client)
            except NoScriptError:  # SCRIPT FLUSH, or a fresh server behind the same address
                with contextlib.suppress(*TRANSIENT):
                    await self.load_scripts()
                continue
            except TRANSIENT as exc:
                self.went_down(exc)
                await self.reconnect()
                continue
            except ResponseError as exc:
                raise script_error(exc) from None
            if self.down_since is not None:
                self.came_up()
            return result

    async def script(self, name: str, fixed: Sequence[Any], items: Sequence[Any] = ()) -> Any:
        """Run one script now (outside the pump), waiting out outages."""
        args = SCRIPTS[name].args(self.meta_key, fixed, items)

        async def run(client: aioredis.Redis) -> Any:
            return await client.evalsha(*args)

        return await self.call(run)


def script_error(exc: ResponseError) -> FrontierError:
    if STATE_LOST in str(exc):
        return FrontierError(
            "the crawl's state is gone from Redis (was the server restarted without "
            "persistence, or the keys deleted?); stopping"
        )
    return FrontierError(f"Redis script failed: {exc}")


# -- pending work ---------------------------------------------------------------------------------
