"""The SQLite frontier: the joinable queue of :mod:`archiver.frontier.base`, on disk, resumable.

In front of the database sit the in-memory structures the event loop works with: per host a
window of its oldest queued URLs (refilled from disk in batches when it runs low), the seen-set
caches (:mod:`~archiver.frontier.sqlite.bloom`), and the dispatch and counters shared with the
memory frontier (:class:`~archiver.frontier.local.LocalFrontier`). Every change is queued to the
store thread (:mod:`~archiver.frontier.sqlite.store`) in call order, so a page's links
(``put_many``) reach the disk before its ``task_done``: a URL is never "done" without its
children, whatever moment a SIGKILL picks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from archiver.errors import FrontierError
from archiver.frontier.base import Lease
from archiver.frontier.local import LocalFrontier
from archiver.frontier.sqlite.bloom import (
    BLOOM_CAPACITY,
    BLOOM_MAX_BYTES,
    MASK64,
    Bloom,
    RecentUrls,
)
from archiver.frontier.sqlite.database import (
    DONE,
    FAILED,
    IN_FLIGHT,
    QUEUED,
    SKIPPED,
    WAITING,
    WINDOWED,
    OpenState,
)
from archiver.frontier.sqlite.digests import SqliteCapturedUrls, SqliteDigestIndex
from archiver.frontier.sqlite.ops import (
    CALL,
    HOST,
    INSERT,
    MAYBE,
    REFILL,
    SET_FINISH,
    SET_REQUEUE,
    SET_RETRY,
    SET_STATE,
    UPDATE,
    StoreStats,
)
from archiver.frontier.sqlite.store import COMMIT_INTERVAL, Store
from archiver.models import CrawlItem, FrontierStats, Outcome, ResumeInfo, TaskResult
from archiver.policy.politeness import HostGate
from archiver.urls import host_port

#: URLs held in memory per host (the oldest of its queue); refilled from disk below half.
WINDOW = 1024
#: URLs held in memory over all hosts; past it new URLs go to disk and refills shrink.
MEMORY_ITEMS = 100_000
#: Recent URLs kept for the cheap "already seen" answer (two generations of this size).
RECENT_URLS = 65_536

_FINAL_STATE = {Outcome.DONE: DONE, Outcome.FAILED: FAILED, Outcome.SKIPPED: SKIPPED}
_RETRY = Outcome.RETRY  # a module global: Enum member lookups are slow on Python 3.11


class _HostQueue:
    """One host's queue: a window of its oldest URLs in memory, the rest counted on disk."""

    __slots__ = ("id", "name", "on_disk", "refilling", "spilled", "window")

    def __init__(self, name: str, host_id: int) -> None:
        self.name = name
        self.id = host_id
        self.window: deque[CrawlItem] = deque()
        self.on_disk = 0  #: QUEUED rows of this host not in the window
        self.refilling = False
        #: URLs went to disk while a refill was under way (it may not have seen them)
        self.spilled = False


def _item(row: list[Any]) -> CrawlItem:
    """A refilled row (id, host, url, tries, redirects_left, depth, hops, via, seq, extra,
    found_by)."""
    return CrawlItem(row[2], row[4], row[5], row[6], row[7], row[3], row[9], row[10])


class SqliteFrontier(LocalFrontier):
    """A frontier in ``path`` (an SQLite database): resumable, bounded memory.

    ``window`` URLs per host and ``memory_items`` over all hosts live in memory;
    ``recent_urls`` sizes the seen-set cache; ``commit_interval`` is the group-commit period.
    ``max_pages`` (tests) caps the database size like a full disk would.
    """

    persistent = True

    def __init__(
        self,
        path: Path,
        gate: HostGate | None = None,
        *,
        window: int = WINDOW,
        memory_items: int = MEMORY_ITEMS,
        recent_urls: int = RECENT_URLS,
        commit_interval: float = COMMIT_INTERVAL,
        bloom_capacity: int = BLOOM_CAPACITY,
        bloom_max_bytes: int = BLOOM_MAX_BYTES,
        max_pages: int | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.window = max(window, 2)
        self.memory_items = max(memory_items, self.window)
        self._low = max(self.window // 2, 1)
        self._wall = wall_clock
        self._store = Store(self.path, commit_interval=commit_interval)
        self._db = self._store.db
        self._db.max_pages = max_pages
        self._db.bloom_capacity = bloom_capacity
        self._db.bloom_max_bytes = bloom_max_bytes
        self._recent = RecentUrls(max(recent_urls, 1))
        self._bloom = Bloom(1, max_bytes=64)
        #: payload digests in the database (for :class:`SqliteDigestIndex`), loaded on open
        self.digest_filter = Bloom(1, max_bytes=64)
        self._hosts: dict[str, _HostQueue] = {}
        self._hosts_by_id: dict[int, _HostQueue] = {}
        self._host_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._in_memory = 0  #: URLs in host windows
        self._on_disk = 0  #: queued URLs not in any window
        self._waiting = 0  #: retries not yet due
        self._seen = 0
        self._opened = False
        self.open_seconds = 0.0
        super().__init__(gate)

    # -- life cycle -------------------------------------------------------------------------
    async def open(self) -> ResumeInfo:
        if self._opened:
            raise FrontierError("the SQLite frontier is already open")
        self._store.start(asyncio.get_running_loop())
        try:
            state: OpenState = await self._store.run(self._db.open, None, commit=True)
        except BaseException:
            with contextlib.suppress(FrontierError):
                await self._store.close()
            raise
        self._opened = True
        self.open_seconds = state.seconds
        counts = state.counts
        self.outcomes.count(Outcome.DONE, counts.get(DONE, 0))
        self.outcomes.count(Outcome.FAILED, counts.get(FAILED, 0))
        self.outcomes.count(Outcome.SKIPPED, counts.get(SKIPPED, 0))
        self._seen = sum(counts.values())
        self._bloom = state.seen
        self.digest_filter = state.digests
        self._seq = itertools.count(state.max_seq + 1)
        for host_id, name in state.hosts:
            hq = _HostQueue(name, host_id)
            self._hosts[name] = hq
            self._hosts_by_id[host_id] = hq
        self._host_ids = itertools.count(max(self._hosts_by_id, default=0) + 1)
        queued = 0
        for host_id, count in state.queued_by_host.items():
            self._hosts_by_id[int(host_id)].on_disk = int(count)
            queued += int(count)
        self._on_disk = queued
        self.scheduler.added(queued + len(state.waiting))
        now = self._wall()
        for item, not_before in state.waiting:
            self._waiting += 1
            self.scheduler.delay(item, min(max(not_before - now, 0.0), self.gate.max_pause))
        for hq in self._hosts.values():
            if hq.on_disk:
                self._refill(hq)
        notes = [f"opened {self.path.name} in {state.seconds:.2f} s ({self._seen} URLs seen)"]
        return ResumeInfo(
            resumed=state.existed,
            requeued_in_flight=state.requeued_in_flight,
            queued=queued + len(state.waiting),
            done=self.outcomes.done,
            notes=notes,
        )

    async def close(self) -> None:
        """Commit what was issued and close the database; leases stay in flight for resume."""
        await self._store.close()

    async def flush(self) -> None:
        """Wait until every operation issued so far is committed."""
        await self._store.run(self._db.noop, None, commit=True)

    @property
    def store(self) -> Store:
        """The store thread (for the digest index, which queues its operations there too)."""
        return self._store

    @property
    def store_stats(self) -> StoreStats:
        return self._store.stats

    def _check(self) -> None:
        self._store.check()

    # -- storage hooks for the scheduler ----------------------------------------------------
    def _host(self, name: str) -> _HostQueue:
        hq = self._hosts.get(name)
        if hq is None:
            hq = _HostQueue(name, next(self._host_ids))
            self._hosts[name] = hq
            self._hosts_by_id[hq.id] = hq
            self._store.post(HOST, (hq.id, name))
        return hq

    def _room(self, hq: _HostQueue) -> bool:
        """May a newly queued URL of ``hq`` go straight into its window?"""
        return (
            hq.on_disk == 0 and len(hq.window) < self.window and self._in_memory < self.memory_items
        )

    def _pop_item(self, host: str) -> CrawlItem | None:
        hq = self._hosts.get(host)
        if hq is None or not hq.window:
            return None
        item = hq.window.popleft()
        self._in_memory -= 1
        if hq.on_disk and not hq.refilling and len(hq.window) <= self._low:
            self._refill(hq)
        self._store.post(UPDATE, (item.url, SET_STATE, (IN_FLIGHT,), ()))
        return item

    def _has_items(self, host: str) -> bool:
        hq = self._hosts.get(host)
        return hq is not None and bool(hq.window)

    def _requeue(self, item: CrawlItem, front: bool) -> str:
        hq = self._host(host_port(item.url))
        if front:  # a lease no worker started: back where it was
            hq.window.appendleft(item)
            self._in_memory += 1
            self._store.post(UPDATE, (item.url, SET_STATE, (WINDOWED,), ()))
            return hq.name
        self._waiting -= 1  # a retry is due: to the back of its host's queue
        if self._room(hq):
            hq.window.append(item)
            self._in_memory += 1
            state = WINDOWED
        else:
            state = QUEUED
            self._spill(hq, 1)
        self._store.post(UPDATE, (item.url, SET_REQUEUE, (state, next(self._seq), None), ()))
        return hq.name

    def _spill(self, hq: _HostQueue, count: int) -> None:
        """``count`` queued URLs of ``hq`` are on disk only; refill its window if it runs low."""
        hq.on_disk += count
        self._on_disk += count
        if hq.refilling:
            hq.spilled = True
        elif len(hq.window) <= self._low:
            self._refill(hq)

    def _refill(self, hq: _HostQueue) -> None:
        count = max(2, min(self.window - len(hq.window), self.memory_items - self._in_memory))
        hq.refilling = True
        hq.spilled = False
        self._store.post(REFILL, (hq.id, count), partial(self._refilled, hq, count))

    def _refilled(self, hq: _HostQueue, asked: int, rows: Any, error: BaseException | None) -> None:
        hq.refilling = False
        if error is not None:
            return
        got = len(rows)
        if got:
            hq.window.extend(_item(row) for row in rows)
            hq.on_disk -= got
            self._on_disk -= got
            self._in_memory += got
        # Again if the host is still low and there is more to read: the refill was full, or
        # URLs went to disk after it was issued (a later batch, which it did not see). A short
        # refill otherwise means the disk part is empty: asking again would only spin.
        if hq.on_disk > 0 and len(hq.window) <= self._low and (got == asked or hq.spilled):
            self._refill(hq)
        if got:
            self.scheduler.schedule(hq.name)

    # -- the queue --------------------------------------------------------------------------
    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        store = self._store
        store.check()
        recent = self._recent
        bloom = self._bloom
        new: list[CrawlItem] = []
        positions: list[int] = []  # of the new items among the candidates (for the merge)
        maybe: list[tuple[int, CrawlItem]] = []
        rows: list[tuple[Any, ...]] = []
        touched: set[str] = set()
        for item in items:
            url = item.url
            if url in recent.hot:
                continue
            if url in recent.warm:
                recent.add(url)  # still in use: keep it
                continue
            h = hash(url) & MASK64
            if bloom.might_contain(h):
                maybe.append((len(new) + len(maybe), item))
                continue
            bloom.add(h)
            recent.add(url)
            hq = self._host(host_port(url))
            if self._room(hq):
                hq.window.append(item)
                self._in_memory += 1
                state = WINDOWED
                touched.add(hq.name)
            else:
                state = QUEUED
                self._spill(hq, 1)
            rows.append(self._row(item, hq, state))
            positions.append(len(new) + len(maybe))
            new.append(item)
        if rows:
            store.submit(INSERT, rows)
            self._seen += len(rows)
            self.scheduler.added(len(rows))
            for host in touched:
                self.scheduler.schedule(host)
        if maybe:
            fresh = await self._put_maybe(maybe)
            if fresh:  # merge back into the order given
                both = [*zip(positions, new, strict=True), *fresh]
                both.sort(key=lambda pair: pair[0])
                new = [item for _, item in both]
        await store.backpressure()
        return new

    def _row(self, item: CrawlItem, hq: _HostQueue, state: int) -> tuple[Any, ...]:
        """The ``urls`` table row of a new URL (column order of the INSERT statement)."""
        return (
            item.url,
            hq.id,
            state,
            next(self._seq),
            item.tries,
            item.redirects_left,
            item.depth,
            item.hops,
            item.via,
            item.extra,
            item.found_by,
        )

    async def _put_maybe(self, maybe: list[tuple[int, CrawlItem]]) -> list[tuple[int, CrawlItem]]:
        """Ask the database about URLs the Bloom filter could not rule out (exact)."""
        rows = []
        hosts = []
        for _, item in maybe:
            hq = self._host(host_port(item.url))
            hosts.append(hq)
            rows.append(self._row(item, hq, WINDOWED if self._room(hq) else QUEUED))
        # Pending lookups count towards join until answered: nothing joins under a put.
        self.scheduler.added(len(rows))
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[list[tuple[int, CrawlItem]]] = loop.create_future()

        def on_result(result: Any, error: BaseException | None) -> None:
            fresh: list[tuple[int, CrawlItem]] = []
            touched: set[str] = set()
            for n, ((pos, item), hq, row) in enumerate(zip(maybe, hosts, rows, strict=True)):
                if error is None and result[n]:
                    self._recent.add(item.url)
                    self._seen += 1
                    fresh.append((pos, item))
                    if row[2] == WINDOWED:
                        hq.window.append(item)
                        self._in_memory += 1
                        touched.add(hq.name)
                    else:
                        self._spill(hq, 1)
                else:
                    if error is None:
                        self._recent.add(item.url)
                    self.scheduler.finished()
            for host in touched:
                self.scheduler.schedule(host)
            if answered.done():
                return
            if error is not None:
                answered.set_exception(error)
            else:
                answered.set_result(fresh)

        self._store.submit(MAYBE, rows, on_result)
        return await asyncio.shield(answered)

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        store = self._store
        store.check()
        item = lease.item
        captures = [(c.filename, c.start, c.end) for c in result.captures]
        retry = result.outcome is _RETRY
        # The write is issued before the scheduler runs: handing the freed slot to a waiting
        # worker, or releasing a retry due now, issues writes that must come after this one.
        try:
            if retry:
                due = self._wall() + max(result.retry_after or 0.0, 0.0)
                columns: tuple[str, ...] = SET_RETRY
                values: tuple[Any, ...] = (
                    WAITING,
                    item.tries + 1,  # item.retry()'s
                    due,
                    result.status,
                    result.reason,
                )
            else:
                columns = SET_FINISH
                values = (_FINAL_STATE[result.outcome], result.status, result.reason)
            store.submit(UPDATE, (item.url, columns, values, captures))
        finally:
            if retry:
                self._waiting += 1
            self._account(lease, result)
        await store.backpressure()

    def statistics(self) -> FrontierStats:
        return self._stats(
            queued=self._in_memory + self._on_disk + self._waiting,
            seen=self._seen,
            hosts=len(self._hosts),
        )

    # -- resume -----------------------------------------------------------------------------
    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        self._store.check()
        result: set[tuple[int, int]] = await self._store.run(self._db.committed, filename)
        return result

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        self._store.check()
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[int] = loop.create_future()

        def on_result(found: Any, error: BaseException | None) -> None:
            total = 0
            if error is None:
                for host_id, by_state in found.items():
                    hq = self._hosts_by_id[host_id]
                    count = sum(by_state.values())
                    total += count
                    self.outcomes.count(Outcome.DONE, -by_state.get(DONE, 0))
                    self.outcomes.count(Outcome.FAILED, -by_state.get(FAILED, 0))
                    self.outcomes.count(Outcome.SKIPPED, -by_state.get(SKIPPED, 0))
                    self.scheduler.added(count)
                    self._spill(hq, count)
            if not answered.done():
                if error is not None:
                    answered.set_exception(error)
                else:
                    answered.set_result(total)

        self._store.submit(CALL, (self._db.uncommit, (filename, offset)), on_result, commit=True)
        return await asyncio.shield(answered)

    # -- payload digests, captured URLs ----------------------------------------------------
    def digest_index(self) -> SqliteDigestIndex:
        """The crawl's payload digests, in this frontier's database (valid once it is open)."""
        return SqliteDigestIndex(self)

    def captured_urls(self) -> SqliteCapturedUrls:
        """The URLs the crawl captured, in this frontier's database (valid once it is open)."""
        return SqliteCapturedUrls(self._store)
