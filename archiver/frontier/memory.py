"""The in-memory frontier: per-host FIFO queues, a seen set, and a dispatcher for ready hosts.

For small crawls and tests; nothing survives the process. The scheduling core
(:class:`HostScheduler`) is shared with the SQLite backend, which keeps the same in-memory
dispatch in front of its on-disk queue.

Dispatch is O(log hosts) per URL: hosts with queued work sit in a heap keyed by the time the
politeness gate lets them start their next fetch; a waiting ``get`` is handed a lease directly
(no thundering herd), and one timer wakes the dispatcher when the earliest paused host becomes
ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable

from archiver.frontier.base import Lease
from archiver.models import CrawlItem, FrontierStats, Outcome, ResumeInfo, TaskResult
from archiver.policy.politeness import HostGate
from archiver.urls import host_port


class HostScheduler:
    """Hands out items of ready hosts to waiting workers; owns the join count.

    Storage hooks let a backend keep its queue elsewhere: ``pop_item(host)`` takes the host's
    next item, ``has_items(host)`` says whether it has one, ``requeue(item, front)`` stores an
    item again and returns its host. This class only knows which hosts have work and when each
    may go next.
    """

    def __init__(
        self,
        gate: HostGate,
        pop_item: Callable[[str], CrawlItem | None],
        has_items: Callable[[str], bool],
        requeue: Callable[[CrawlItem, bool], str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.gate = gate
        self._pop_item = pop_item
        self._has_items = has_items
        self._requeue = requeue
        self._clock = clock
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._waiters: deque[asyncio.Future[Lease]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf
        self._tokens = itertools.count(1)
        self._delayed: list[tuple[float, int, CrawlItem]] = []  # retries not yet due
        self.unfinished = 0
        self.in_flight = 0
        self._joined = asyncio.Event()
        self._joined.set()

    # -- bookkeeping ----------------------------------------------------------------------

    def added(self, count: int) -> None:
        """``count`` new items entered the queue (they count towards join)."""
        if count:
            self.unfinished += count
            self._joined.clear()

    def schedule(self, host: str) -> None:
        """``host`` may have become ready (new work, a freed slot): reconsider it."""
        self._push(host)
        self.dispatch()

    def _push(self, host: str) -> None:
        ready = self.gate.ready_at(host)
        if ready != math.inf:
            heapq.heappush(self._heap, (ready, next(self._seq), host))

    def delay(self, item: CrawlItem, seconds: float) -> None:
        """Hold a retry back for ``seconds``; it stays unfinished meanwhile."""
        heapq.heappush(self._delayed, (self._clock() + seconds, next(self._seq), item))
        self.dispatch()

    def finished(self) -> None:
        self.unfinished -= 1
        if self.unfinished <= 0:
            self.unfinished = 0
            self._joined.set()

    async def join(self) -> None:
        await self._joined.wait()

    # -- dispatch -------------------------------------------------------------------------

    def _release_due_retries(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, _, item = heapq.heappop(self._delayed)
            self._push(self._requeue(item, False))

    def take(self) -> Lease | None:
        """A lease for the next ready host's next item, or None (a timer is armed if useful)."""
        now = self._clock()
        if self._delayed and self._delayed[0][0] <= now:
            self._release_due_retries(now)
        while self._heap:
            ready, _, host = self._heap[0]
            if ready > now:
                break
            heapq.heappop(self._heap)
            actual = self.gate.ready_at(host)
            if actual == math.inf or not self._has_items(host):
                continue  # at capacity (rescheduled on release) or drained
            if actual > now:
                heapq.heappush(self._heap, (actual, next(self._seq), host))
                continue
            item = self._pop_item(host)
            if item is None:
                continue
            self.gate.acquire(host)
            self.in_flight += 1
            if self._has_items(host):
                nxt = self.gate.ready_at(host)
                if nxt != math.inf:
                    heapq.heappush(self._heap, (nxt, next(self._seq), host))
            return Lease(item=item, host=host, token=next(self._tokens))
        self._arm_timer(now)
        return None

    def _arm_timer(self, now: float) -> None:
        candidates = []
        if self._heap:
            candidates.append(self._heap[0][0])
        if self._delayed:
            candidates.append(self._delayed[0][0])
        if not candidates or not self._waiters:
            return
        when = min(candidates)
        if self._timer is not None and self._timer_at <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer_at = when
        self._timer = loop.call_later(max(when - now, 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        self.dispatch()

    def dispatch(self) -> None:
        """Give ready work to waiting workers."""
        while self._waiters:
            if self._waiters[0].done():  # cancelled getter
                self._waiters.popleft()
                continue
            lease = self.take()
            if lease is None:
                return
            self._waiters.popleft().set_result(lease)

    async def get(self) -> Lease:
        if not self._waiters:
            lease = self.take()
            if lease is not None:
                return lease
        future: asyncio.Future[Lease] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self.dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.give_back(future.result())
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(future)
            raise

    def give_back(self, lease: Lease) -> None:
        """Undo a lease that no worker started (cancellation race): back to the queue front."""
        self.in_flight -= 1
        self.gate.release(lease.host)
        self.schedule(self._requeue(lease.item, True))

    def returned(self, lease: Lease, result: TaskResult) -> None:
        """A leased item ended (``task_done``)."""
        self.in_flight -= 1
        self.gate.release(lease.host, result)
        self.schedule(lease.host)


class MemoryFrontier:
    """A frontier that lives in this process only (not resumable)."""

    persistent = False

    def __init__(self, gate: HostGate | None = None) -> None:
        self.gate = gate or HostGate()
        self._seen: set[str] = set()
        self._queues: dict[str, deque[CrawlItem]] = {}
        self._queued = 0
        self._done = 0
        self._failed = 0
        self._skipped = 0
        self.scheduler = HostScheduler(
            self.gate, self._pop_item, self._has_items, self._append, clock=self.gate.clock
        )

    async def open(self) -> ResumeInfo:
        return ResumeInfo()

    async def close(self) -> None:
        return None

    def _pop_item(self, host: str) -> CrawlItem | None:
        queue = self._queues.get(host)
        if not queue:
            return None
        self._queued -= 1
        return queue.popleft()

    def _has_items(self, host: str) -> bool:
        return bool(self._queues.get(host))

    def _append(self, item: CrawlItem, front: bool = False) -> str:
        host = host_port(item.url)
        queue = self._queues.get(host)
        if queue is None:
            queue = self._queues[host] = deque()
        if front:
            queue.appendleft(item)
        else:
            queue.append(item)
        self._queued += 1
        return host

    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        hosts: set[str] = set()
        new: list[CrawlItem] = []
        for item in items:
            if item.url in self._seen:
                continue
            self._seen.add(item.url)
            hosts.add(self._append(item))
            new.append(item)
        self.scheduler.added(len(new))
        for host in hosts:
            self.scheduler.schedule(host)
        return new

    async def get(self) -> Lease:
        return await self.scheduler.get()

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        if result.outcome is Outcome.RETRY:
            self.scheduler.returned(lease, result)
            self.scheduler.delay(lease.item.retry(), result.retry_after or 0.0)
            return
        if result.outcome is Outcome.DONE:
            self._done += 1
        elif result.outcome is Outcome.FAILED:
            self._failed += 1
        else:
            self._skipped += 1
        self.scheduler.returned(lease, result)
        self.scheduler.finished()

    async def join(self) -> None:
        await self.scheduler.join()

    def statistics(self) -> FrontierStats:
        return FrontierStats(
            queued=self._queued + len(self.scheduler._delayed),
            in_flight=self.scheduler.in_flight,
            done=self._done,
            failed=self._failed,
            skipped=self._skipped,
            seen=len(self._seen),
            hosts=len(self._queues),
        )

    def set_host_delay(self, host: str, seconds: float) -> None:
        self.gate.set_crawl_delay(host, seconds)

    def reserve(self, host: str) -> float:
        return self.gate.reserve(host)

    def give_back(self, lease: Lease) -> None:
        self.scheduler.give_back(lease)

    async def flush(self) -> None:
        return None

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        return set()  # nothing persists: a memory crawl is never resumed

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        return 0
