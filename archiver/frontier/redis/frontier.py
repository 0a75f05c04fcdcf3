"""The Redis frontier: one crawl in Redis, the three roles of :mod:`archiver.frontier.base`
over it, shared by every process that opens the same crawl id on the same Redis (the package
docstring has the data model and the protocol).

:class:`RedisFrontier` is its :class:`~.queue.RedisQueue` (the hot path: workers call it for
every URL), with :class:`~.politeness.RedisPoliteness`, the :class:`~.ledger.RedisLedger` of
committed captures, the services that live in the same Redis (:mod:`.services`), and the life
cycle: connect, join or create the crawl, register this process, start the
:class:`~.pump.Pump`; at the end flush, hand back what was never reported, leave.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterable
from typing import Any

from redis.exceptions import RedisError

from archiver.errors import FrontierError, FrontierUnavailableError
from archiver.frontier.redis.ledger import RedisLedger
from archiver.frontier.redis.link import Log, RedisLink
from archiver.frontier.redis.politeness import RedisPoliteness
from archiver.frontier.redis.pump import COUNT_FIELDS, Pump
from archiver.frontier.redis.queue import RedisQueue
from archiver.frontier.redis.services import (
    RedisCapturedUrls,
    RedisCookieStore,
    RedisDigestIndex,
    RedisMediaBytes,
    RedisRobotsCache,
    RedisSeedStore,
)
from archiver.models import ResumeInfo
from archiver.policy.politeness import HostGate
from archiver.urls import redact_url

#: Format of the crawl state in Redis; a process refuses a crawl written in another format.
STATE_FORMAT = "archiver-redis/1"


def default_process_id() -> str:
    """``hostname-pid``: unique among live processes, and what the WARC names carry."""
    return f"{socket.gethostname()}-{os.getpid()}"


class RedisFrontier(RedisQueue):
    """A frontier shared by every process that opens the same crawl id on the same Redis.

    ``lease_timeout``: seconds after which a silent process's leases are requeued;
    ``max_claim``: URLs claimed per round trip at most (the worker count).
    """

    persistent = True

    def __init__(
        self,
        url: str,
        crawl_id: str,
        *,
        gate: HostGate | None = None,
        lease_timeout: float = 120.0,
        max_claim: int = 64,
        process_id: str | None = None,
        ack_interval: float = 0.02,
        poll_interval: float = 0.25,
        max_pending: int = 5000,
        close_timeout: float = 30.0,
        log: Log | None = None,
    ) -> None:
        gate = gate or HostGate()
        self.lease_timeout = float(lease_timeout)
        self.process_id = process_id or default_process_id()
        # Back within a fraction of a lease timeout of Redis's return: the others wait one
        # whole lease timeout after reconnecting before they reap anything.
        self.link = RedisLink(url, crawl_id, max_backoff=min(2.0, self.lease_timeout / 4), log=log)
        self.log = log
        self.close_timeout = close_timeout
        pump = Pump(
            self.link,
            gate,
            process_id=self.process_id,
            lease_timeout=self.lease_timeout,
            max_claim=max(max_claim, 1),
            ack_interval=ack_interval,
            poll_interval=poll_interval,
            max_pending=max_pending,
            log=log,
        )
        self.ledger = RedisLedger(pump, gate)
        self.politeness = RedisPoliteness(pump, gate, self.process_id)
        super().__init__(pump, gate, self.ledger)
        #: set by ``close()``: True when no other process of the crawl was alive
        self.last_to_leave = False

    # -- life cycle ------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        return self.link.prefix

    async def open(self) -> ResumeInfo:
        """Connect (FrontierUnavailableError when Redis cannot be reached), join or create the
        crawl, register this process, start the pump."""
        link = self.link
        await link.connect()
        meta = link.meta_key
        try:
            created = await link.client.hsetnx(meta, "format", STATE_FORMAT)
            if created:
                await link.client.hset(meta, "created", str(time.time()))
            fmt = await link.client.hget(meta, "format")
            if fmt != STATE_FORMAT.encode():
                raise FrontierError(
                    f"crawl {link.crawl_id!r} in Redis has format {fmt!r}, not {STATE_FORMAT}"
                )
            # recover=1: leases under this id belong to a dead predecessor (same host, same
            # pid: a restarted container) and go back to the queue at once
            await link.script(
                "renew", [self.process_id, self.lease_timeout, 1, self.gate.concurrency]
            )
            counts = await link.client.hmget(link.key("counts"), list(COUNT_FIELDS))
            procs = await link.client.zcard(link.key("procs"))
        except FrontierError:
            await link.close()
            raise
        except (RedisError, OSError) as exc:
            await link.close()
            raise FrontierUnavailableError(f"Redis at {redact_url(link.url)}: {exc}") from None
        self.pump.start(counts)
        info = ResumeInfo(
            resumed=not created,
            queued=self.pump.counts.get("queued", 0),
            done=self.pump.counts.get("d", 0),
        )
        info.notes.append(
            f"{'joined' if not created else 'created'} crawl {link.crawl_id!r} in Redis as "
            f"{self.process_id} ({procs} processes; {info.queued} queued, {info.done} done)"
        )
        return info

    async def close(self) -> None:
        """Flush outcomes, hand back leases never reported, leave the crawl, disconnect."""
        pump = self.pump
        if not pump.running:
            await self.link.close()
            return
        pump.closing = True
        try:
            async with asyncio.timeout(self.close_timeout):
                if pump.failure is None:
                    await self.flush()
                    await self._leave()
        except (TimeoutError, FrontierError) as exc:
            if self.log is not None:
                self.log.warning(
                    "redis-close-incomplete",
                    error=str(exc) or "timed out",
                    unreported=len(pump.held),
                )
        finally:
            await pump.stop()
            await self.link.close()

    async def _leave(self) -> None:
        tokens = list(self.pump.held)
        if tokens:
            await self.link.script("release", [self.gate.concurrency], tokens)
            self.pump.held.clear()
        alive = await self.link.script("leave", [self.process_id, self.lease_timeout])
        self.last_to_leave = int(alive) == 0

    async def abandon(self) -> None:
        """Stop at once without reporting or releasing anything: what a killed process leaves
        behind (its leases expire, other processes fetch their URLs). For tests, and for a
        process that must exit now."""
        self.pump.closing = True
        await self.pump.stop()
        await self.link.close()

    def stop_waiting(self) -> None:
        """An outage is not waited out any more (see the protocol): the link gives up at once,
        and with it the pump and every caller waiting on it."""
        self.link.stop_waiting()

    # -- host politeness -------------------------------------------------------------------

    def set_host_delay(self, host: str, seconds: float) -> None:
        self.politeness.set_host_delay(host, seconds)

    def set_host_spacing(self, host: str, seconds: float) -> None:
        self.politeness.set_host_spacing(host, seconds)

    def set_politeness(self, delay: float, concurrency: int) -> None:
        self.politeness.set_politeness(delay, concurrency)

    async def shared_politeness(self) -> tuple[float, int] | None:
        return await self.politeness.shared_politeness()

    def reserve(self, host: str) -> float:
        return self.politeness.reserve(host)

    # -- the connection --------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """False while Redis cannot be reached (workers are waiting)."""
        return self.link.available

    async def wait_available(self) -> None:
        await self.link.wait_available()

    async def wait_unavailable(self) -> None:
        await self.link.wait_unavailable()

    # -- the capture ledger ----------------------------------------------------------------

    async def flush(self) -> None:
        """Wait until every call made so far (puts, outcomes, host delays) is in Redis, and the
        counters (``statistics()``) are read back."""
        await self.ledger.flush()

    async def forget_captures(self, filenames: Iterable[str]) -> None:
        await self.ledger.forget_captures(filenames)

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        return await self.ledger.committed_captures(filename)

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        return await self.ledger.uncommit_captures(filename, offset)

    # -- shared services -------------------------------------------------------------------

    def digest_index(self) -> RedisDigestIndex:
        """The crawl's payload digests, through this frontier's pump."""
        return RedisDigestIndex(self.pump)

    def captured_urls(self) -> RedisCapturedUrls:
        """The URLs the crawl captured, through this frontier's pump."""
        return RedisCapturedUrls(self.pump)

    def media_bytes(self) -> RedisMediaBytes:
        """The media bytes each page took, through this frontier's pump."""
        return RedisMediaBytes(self.pump)

    def cookie_store(self) -> RedisCookieStore:
        return RedisCookieStore(self.pump)

    def seed_store(self) -> RedisSeedStore:
        """The rules of the seeds that have their own, shared by every process."""
        return RedisSeedStore(self.pump)

    def robots_cache(self) -> RedisRobotsCache:
        """The crawl's robots.txt cache, on this frontier's connection."""
        return RedisRobotsCache(self.link)

    def send(self, *args: Any) -> None:
        """Send a plain command with the next round trip; nobody waits for its reply."""
        self.pump.send(*args)

    async def ask(self, *args: Any) -> Any:
        """Send a plain command with the next round trip (at once) and return its reply."""
        return await self.pump.ask(*args)
