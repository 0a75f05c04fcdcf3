"""The SQLite frontier's queue: the :class:`~archiver.frontier.base.CrawlQueue` on disk.

In front of the database sit the in-memory structures the event loop works with: per host a
window of its oldest queued URLs (refilled from disk in batches when it runs low), the seen-set
caches (:mod:`~archiver.frontier.sqlite.bloom`), and the dispatch, host politeness and counters
shared with the memory frontier (:class:`~archiver.frontier.local.LocalFrontier`). Every change
is queued to the store thread (:mod:`~archiver.frontier.sqlite.store`) in call order, so a
page's links (``put_many``) reach the disk before its ``task_done``: a URL is never "done"
without its children, whatever moment a SIGKILL picks. ``task_done`` writes the lease's
captures into the ledger in the same operation as its outcome.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from archiver.frontier.base import Lease
from archiver.frontier.local import LocalFrontier
from archiver.frontier.sqlite.bloom import MASK64, Bloom, RecentUrls
from archiver.frontier.sqlite.codec import (
    DONE,
    FAILED,
    FINAL_STATE,
    IN_FLIGHT,
    QUEUED,
    SKIPPED,
    WAITING,
    WINDOWED,
    refilled_item,
    url_row,
)
from archiver.frontier.sqlite.database import OpenState
from archiver.frontier.sqlite.ops import (
    HOST,
    INSERT,
    MAYBE,
    REFILL,
    SET_FINISH,
    SET_REQUEUE,
    SET_RETRY,
    SET_STATE,
    UPDATE,
)
from archiver.frontier.sqlite.store import Store
from archiver.models import CrawlItem, FrontierStats, Outcome, TaskResult
from archiver.policy.politeness import HostGate
from archiver.urls import host_port

#: URLs held in memory per host (the oldest of its queue); refilled from disk below half.
WINDOW = 1024
#: URLs held in memory over all hosts; past it new URLs go to disk and refills shrink.
MEMORY_ITEMS = 100_000
#: Recent URLs kept for the cheap "already seen" answer (two generations of this size).
RECENT_URLS = 65_536

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


class SqliteQueue(LocalFrontier):
    """The queue over ``store``: windows of queued URLs in memory, the rest and every change
    on disk, in call order.

    ``window`` URLs per host and ``memory_items`` over all hosts live in memory;
    ``recent_urls`` sizes the seen-set cache; ``wall_clock`` dates retries (they survive a
    restart, so they are due at a wall-clock time).
    """

    def __init__(
        self,
        store: Store,
        gate: HostGate | None = None,
        *,
        window: int = WINDOW,
        memory_items: int = MEMORY_ITEMS,
        recent_urls: int = RECENT_URLS,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.window = max(window, 2)
        self.memory_items = max(memory_items, self.window)
        self._low = max(self.window // 2, 1)
        self._wall = wall_clock
        self._store = store
        self._recent = RecentUrls(max(recent_urls, 1))
        self._bloom = Bloom(1, max_bytes=64)
        self._hosts: dict[str, _HostQueue] = {}
        self._hosts_by_id: dict[int, _HostQueue] = {}
        self._host_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._in_memory = 0  #: URLs in host windows
        self._on_disk = 0  #: queued URLs not in any window
        self._waiting = 0  #: retries not yet due
        self._seen = 0
        super().__init__(gate)

    def restore(self, state: OpenState) -> int:
        """Take up what the database holds (the frontier just opened it); returns how many
        URLs are queued or waiting for a retry."""
        counts = state.counts
        self.outcomes.count(Outcome.DONE, counts.get(DONE, 0))
        self.outcomes.count(Outcome.FAILED, counts.get(FAILED, 0))
        self.outcomes.count(Outcome.SKIPPED, counts.get(SKIPPED, 0))
        self._seen = sum(counts.values())
        self._bloom = state.seen
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
        return queued + len(state.waiting)

    @property
    def seen(self) -> int:
        """URLs in the seen set."""
        return self._seen

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
            hq.window.extend(refilled_item(row) for row in rows)
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
            rows.append(url_row(item, hq.id, state, next(self._seq)))
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

    async def _put_maybe(self, maybe: list[tuple[int, CrawlItem]]) -> list[tuple[int, CrawlItem]]:
        """Ask the database about URLs the Bloom filter could not rule out (exact)."""
        rows = []
        hosts = []
        for _, item in maybe:
            hq = self._host(host_port(item.url))
            hosts.append(hq)
            state = WINDOWED if self._room(hq) else QUEUED
            rows.append(url_row(item, hq.id, state, next(self._seq)))
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
                values = (FINAL_STATE[result.outcome], result.status, result.reason)
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

    # -- the ledger's re-queued URLs ---------------------------------------------------------
    def requeue_uncommitted(self, found: dict[int, dict[int, int]]) -> int:
        """URLs the ledger put back in the queue on disk (``{host id: {previous state:
        count}}``, from ``Database.uncommit``): their outcomes are taken back and they count
        towards join again. Returns how many."""
        total = 0
        for host_id, by_state in found.items():
            hq = self._hosts_by_id[host_id]
            count = sum(by_state.values())
            total += count
            self.outcomes.count(Outcome.DONE, -by_state.get(DONE, 0))
            self.outcomes.count(Outcome.FAILED, -by_state.get(FAILED, 0))
            self.outcomes.count(Outcome.SKIPPED, -by_state.get(SKIPPED, 0))
            self.scheduler.added(count)
            self._spill(hq, count)
        return total
