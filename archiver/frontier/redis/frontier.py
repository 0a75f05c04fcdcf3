"""The Redis frontier: the joinable queue of :mod:`archiver.frontier.base`, shared by every
process that opens the same crawl id on the same Redis (the package docstring has the data model
and the protocol).

:class:`RedisFrontier` turns the protocol's calls into operations for its
:class:`~archiver.frontier.redis.pump.Pump` and keeps what only this process needs: a cache of
URL keys known to be seen (so links repeated on every page cost no round trip), the WARC files
whose commit records may be dropped, and a mirror of its own claims in a
:class:`~archiver.policy.politeness.HostGate` (for the synchronous ``reserve``). The in-process
:class:`~archiver.frontier.local.HostScheduler` is not used: per-host limits must hold for every
process, so Redis decides.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, cast

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from archiver.errors import FrontierError, FrontierUnavailableError
from archiver.frontier.base import Lease, Outcomes
from archiver.frontier.redis.codec import ack_record, put_entry, url_key
from archiver.frontier.redis.link import Log, RedisLink
from archiver.frontier.redis.pump import (
    COUNT_FIELDS,
    Ack,
    Barrier,
    Command,
    Pump,
    Put,
    Query,
    ScriptCall,
)
from archiver.frontier.redis.shared import (
    RedisCapturedUrls,
    RedisCookieStore,
    RedisDigestIndex,
    RedisRobotsCache,
)
from archiver.models import CrawlItem, FrontierStats, ResumeInfo, TaskResult
from archiver.policy.politeness import HostGate, host_report
from archiver.urls import redact_url

#: Format of the crawl state in Redis; a process refuses a crawl written in another format.
STATE_FORMAT = "archiver-redis/1"
#: Items per PUT script call (a Lua script blocks the server while it runs).
PUT_CHUNK = 1000
#: URL keys remembered as seen in this process (one dict entry each, oldest dropped first).
KNOWN_URLS = 200_000


def default_process_id() -> str:
    """``hostname-pid``: unique among live processes, and what the WARC names carry."""
    return f"{socket.gethostname()}-{os.getpid()}"


class RedisFrontier:
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
        self.gate = gate or HostGate()
        self.lease_timeout = float(lease_timeout)
        self.process_id = process_id or default_process_id()
        # Back within a fraction of a lease timeout of Redis's return: the others wait one
        # whole lease timeout after reconnecting before they reap anything.
        self.link = RedisLink(url, crawl_id, max_backoff=min(2.0, self.lease_timeout / 4), log=log)
        self.log = log
        self.close_timeout = close_timeout
        self.pump = Pump(
            self.link,
            self.gate,
            process_id=self.process_id,
            lease_timeout=self.lease_timeout,
            max_claim=max(max_claim, 1),
            ack_interval=ack_interval,
            poll_interval=poll_interval,
            max_pending=max_pending,
            log=log,
        )
        #: set by ``close()``: True when no other process of the crawl was alive
        self.last_to_leave = False
        self._known: OrderedDict[bytes, None] = OrderedDict()  # url-keys known to be seen
        self._current_file: str | None = None
        self._files: OrderedDict[str, None] = OrderedDict()  # WARC names seen, oldest first
        #: the crawl-wide politeness last applied from P:politeness (or published from here)
        self._politeness: tuple[float, int] | None = None

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

    # -- the joinable queue ----------------------------------------------------------------

    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        self.pump.check()
        entries: list[tuple[bytes, str, bytes, CrawlItem]] = []
        batch: set[bytes] = set()
        for item in items:
            key = url_key(item.url)
            if key in batch or key in self._known:
                continue
            batch.add(key)
            host, data = put_entry(item, key)
            entries.append((key, host, data, item))
        if not entries:
            return []
        loop = asyncio.get_running_loop()
        chunks = [entries[i : i + PUT_CHUNK] for i in range(0, len(entries), PUT_CHUNK)]
        futures: list[asyncio.Future[list[int]]] = []
        for chunk in chunks:  # a script runs alone on the server: keep each one short
            futures.append(loop.create_future())
            self.pump.push(Put(chunk, futures[-1]), urgent=True)
        new: list[CrawlItem] = []
        for chunk, future in zip(chunks, futures, strict=True):
            new += [chunk[i][3] for i in await future]
        for key, *_ in entries:
            self._remember(key)
        return new

    async def get(self) -> Lease:
        self.pump.check()
        future = self.pump.claim()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.pump.give_back([future.result()])
            raise

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        self.pump.check()
        self.gate.release(lease.host, result)  # this process's mirror
        for capture in result.captures:
            self._note_file(capture.filename)
        record = ack_record(lease, result, int(host_report(result)))
        # a host asking us to slow down is told to every process at once
        self.pump.push(Ack(lease, record), urgent=result.host_pause is not None)
        await self.pump.wait_for_space()

    def give_back(self, lease: Lease) -> None:
        self.pump.give_back([lease])

    async def join(self) -> None:
        """Return when no URL is pending in any process. A fatal frontier error is raised by
        ``get``/``task_done`` (every worker calls them); ``join`` then simply keeps waiting."""
        while True:
            if await self.pump.read_unfinished() == 0:
                return

    def statistics(self) -> FrontierStats:
        c = self.pump.counts
        outcomes = Outcomes(done=c.get("d", 0), failed=c.get("f", 0), skipped=c.get("s", 0))
        return outcomes.stats(
            queued=c.get("queued", 0),
            in_flight=c.get("leased", 0),
            seen=c.get("seen", 0),
            hosts=c.get("hosts", 0),
        )

    def stop_waiting(self) -> None:
        """An outage is not waited out any more (see the protocol): the link gives up at once,
        and with it the pump and every caller waiting on it."""
        self.link.stop_waiting()

    async def flush(self) -> None:
        """Wait until every call made so far (puts, outcomes, host delays) is in Redis, and the
        counters (``statistics()``) are read back."""
        self.pump.check()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pump.push(Barrier(future), urgent=True)
        await future

    # -- politeness ------------------------------------------------------------------------

    def set_host_delay(self, host: str, seconds: float) -> None:
        """Apply a robots.txt Crawl-delay, for every process (claims read it from Redis)."""
        gate = self.gate
        gate.set_crawl_delay(host, seconds)  # this process's mirror, for ``reserve``
        delay = min(seconds, gate.max_crawl_delay)  # claims space by the longer of it and ours
        self.pump.push(ScriptCall("delay", (gate.concurrency, host, repr(delay))), urgent=True)

    def set_politeness(self, delay: float, concurrency: int) -> None:
        """New per-host delay and concurrency for every process of the crawl.

        Applied here at once (every claim and outcome this process sends carries them), and
        published in ``P:politeness``, which each process reads every second or so
        (:meth:`shared_politeness`): per-host limits are the crawl's, not one process's, so
        the latest change made through any process's ``control.toml`` holds for all of them,
        processes that join later included (``scripts/politeness.lua``)."""
        self._apply_politeness(delay, concurrency)
        self._politeness = (delay, concurrency)
        change = (concurrency, repr(delay), self.process_id)
        self.pump.push(ScriptCall("politeness", change), urgent=True)

    async def shared_politeness(self) -> tuple[float, int] | None:
        """What another process published in ``P:politeness`` since this one last looked,
        applied here; None when nothing changed."""
        raw = await self.ask("HMGET", self.link.key("politeness"), "delay", "concurrency")
        if raw[0] is None or raw[1] is None:
            return None
        shared = (float(raw[0]), int(raw[1]))
        if shared == self._politeness:
            return None
        self._politeness = shared
        self._apply_politeness(*shared)
        return shared

    def _apply_politeness(self, delay: float, concurrency: int) -> None:
        self.gate.configure(delay=delay, concurrency=concurrency)
        self.pump.politeness_changed()

    def reserve(self, host: str) -> float:
        """Book one more request to ``host`` inside the current lease; the seconds to wait.

        The protocol makes this synchronous, so the wait comes from this process's mirror of
        the host (its own claims, the host's delay) and the booking goes to Redis at once,
        where it spaces every later claim. A request another process started to the same host
        since this lease was claimed is not seen here: with a delay and more than one slot per
        host, this page may start closer than ``delay`` to that one (never to this process's
        own requests); an ``async`` reserve would close that gap.
        """
        wait = self.gate.reserve(host)
        booking = (self.gate.concurrency, host, repr(self.gate.delay))
        self.pump.push(ScriptCall("reserve", booking), urgent=True)
        return wait

    # -- the connection --------------------------------------------------------------------

    @property
    def available(self) -> bool:
        """False while Redis cannot be reached (workers are waiting)."""
        return self.link.available

    async def wait_available(self) -> None:
        await self.link.wait_available()

    async def wait_unavailable(self) -> None:
        await self.link.wait_unavailable()

    # -- resume ----------------------------------------------------------------------------

    def _note_file(self, filename: str) -> None:
        """A file never seen before means the writer rotated: the previous file was closed
        whole, so its commit record (only needed to repair an ``.open`` file) can go. An
        outcome for an older file arriving late never moves this back."""
        if filename in self._files:
            return
        self._files[filename] = None
        if len(self._files) > 1000:
            self._files.popitem(last=False)
        if self._current_file is not None:
            self.pump.push(Command(("DEL", self.link.key("commits:" + self._current_file))))
        self._current_file = filename

    async def forget_captures(self, filenames: Iterable[str]) -> None:
        """Drop the commit records of WARC files that were closed whole (call after the
        writer closed cleanly; otherwise they expire after 7 days)."""
        keys = [self.link.key("commits:" + name) for name in filenames]
        if keys:

            async def delete(client: aioredis.Redis) -> None:
                await client.delete(*keys)

            await self.link.call(delete)

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        async def fields(client: aioredis.Redis) -> list[bytes]:
            return cast(list[bytes], await client.hkeys(self.link.key("commits:" + filename)))

        found: set[tuple[int, int]] = set()
        for raw in await self.link.call(fields):
            start, end = raw.split(b" ")
            found.add((int(start), int(end)))
        return found

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        fixed = [self.gate.concurrency, filename, offset]
        return int(await self.link.script("uncommit", fixed))

    # -- shared services -------------------------------------------------------------------

    def digest_index(self) -> RedisDigestIndex:
        """The crawl's payload digests, through this frontier's pump."""
        return RedisDigestIndex(self)

    def captured_urls(self) -> RedisCapturedUrls:
        """The URLs the crawl captured, through this frontier's pump."""
        return RedisCapturedUrls(self)

    def cookie_store(self) -> RedisCookieStore:
        return RedisCookieStore(self)

    def robots_cache(self) -> RedisRobotsCache:
        """The crawl's robots.txt cache, on this frontier's connection."""
        return RedisRobotsCache(self.link)

    def send(self, *args: Any) -> None:
        """Send a plain command with the next round trip; nobody waits for its reply."""
        self.pump.check()
        self.pump.push(Command(args))

    async def ask(self, *args: Any) -> Any:
        """Send a plain command with the next round trip (at once) and return its reply."""
        self.pump.check()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pump.push(Query(args, future), urgent=True)
        return await future

    def _remember(self, key: bytes) -> None:
        known = self._known
        known[key] = None
        if len(known) > KNOWN_URLS:
            known.popitem(last=False)
