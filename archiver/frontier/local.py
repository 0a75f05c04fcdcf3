"""In-process dispatch, shared by the memory and SQLite frontiers.

Both keep their queue in their own way (a dict of deques; a window of SQLite rows per host) and
put the same two things in front of it: :class:`HostScheduler`, which hands workers items of
hosts that :class:`~archiver.policy.politeness.HostGate` says may go now, and
:class:`LocalFrontier`, the base class with what is the same in both frontiers: the outcome
counters, the statistics snapshot, the cancel-safe ``get`` / ``join`` / ``give_back``
delegations to the scheduler, and the whole of host politeness
(:class:`~archiver.frontier.base.HostPoliteness`: the gate, in this process only). (The Redis
frontier decides on the server instead: per-host limits must hold for every process of a shared
crawl.)

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
from collections.abc import Callable

from archiver.frontier.base import Lease, Outcomes
from archiver.models import CrawlItem, FrontierStats, Outcome, TaskResult
from archiver.policy.politeness import HostGate

_RETRY = Outcome.RETRY  # a module global: Enum member lookups are slow on Python 3.11


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

    def reschedule(self, hosts: list[str]) -> None:
        """The gate's limits changed: reconsider every one of ``hosts`` (a host at capacity
        may have a free slot now, a waiting one an earlier start)."""
        for host in hosts:
            self._push(host)
        self.dispatch()

    def delay(self, item: CrawlItem, seconds: float) -> None:
        """Hold a retry back for ``seconds``; it stays unfinished meanwhile."""
        heapq.heappush(self._delayed, (self._clock() + seconds, next(self._seq), item))
        self.dispatch()

    @property
    def delayed(self) -> int:
        """Retries held back, not yet due."""
        return len(self._delayed)

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
            token = next(self._tokens)
            self.gate.acquire(host, token)
            self.in_flight += 1
            if self._has_items(host):
                nxt = self.gate.ready_at(host)
                if nxt != math.inf:
                    heapq.heappush(self._heap, (nxt, next(self._seq), host))
            return Lease(item=item, host=host, token=token)
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
        self.gate.refund(lease.host, lease.token)
        self.gate.release(lease.host)
        self.schedule(self._requeue(lease.item, True))

    def returned(self, lease: Lease, result: TaskResult) -> None:
        """A leased item ended (``task_done``)."""
        self.in_flight -= 1
        if result.unsent:
            self.gate.refund(lease.host, lease.token)
        self.gate.release(lease.host, result)
        self.schedule(lease.host)


class LocalFrontier:
    """What the memory and SQLite frontiers share: a gate and a :class:`HostScheduler` in front
    of the subclass's storage, and the outcome counters.

    A subclass stores items and implements the scheduler's three storage hooks
    (``_pop_item``, ``_has_items``, ``_requeue``), ``put_many``, ``statistics`` (with
    :meth:`_stats`) and ``task_done`` (recording the outcome, then calling :meth:`_account`).
    """

    def __init__(self, gate: HostGate | None = None) -> None:
        self.gate = gate or HostGate()
        self.outcomes = Outcomes()
        self.scheduler = HostScheduler(
            self.gate, self._pop_item, self._has_items, self._requeue, clock=self.gate.clock
        )

    # -- storage hooks for the scheduler ----------------------------------------------------
    def _pop_item(self, host: str) -> CrawlItem | None:
        """Take ``host``'s next queued item (None when it has none in memory)."""
        raise NotImplementedError

    def _has_items(self, host: str) -> bool:
        """Whether ``host`` has an item ready to pop."""
        raise NotImplementedError

    def _requeue(self, item: CrawlItem, front: bool) -> str:
        """Queue ``item`` again (at the front: a lease given back; at the back: a retry that
        is due) and return its host."""
        raise NotImplementedError

    def _check(self) -> None:
        """Raise when the frontier cannot take calls (not open, failed)."""

    # -- the queue (the shared part of CrawlQueue) --------------------------------------------
    async def get(self) -> Lease:
        self._check()
        return await self.scheduler.get()

    async def join(self) -> None:
        await self.scheduler.join()

    def give_back(self, lease: Lease) -> None:
        """Return a lease no worker started (a stopping crawl): to the front of its host's
        queue, no try counted, no host failure recorded."""
        self.scheduler.give_back(lease)

    def stop_waiting(self) -> None:
        """Nothing to do: an in-process store is never unreachable."""

    # -- host politeness (HostPoliteness): the gate, which the scheduler consults -----------
    def set_host_delay(self, host: str, seconds: float) -> None:
        self.gate.set_crawl_delay(host, seconds)

    def reserve(self, host: str) -> float:
        return self.gate.reserve(host)

    def set_host_spacing(self, host: str, seconds: float) -> None:
        self.gate.set_spacing(host, seconds)
        self.scheduler.reschedule([host])

    def set_politeness(self, delay: float, concurrency: int) -> None:
        """New per-host delay and concurrency for the rest of the crawl (control.toml)."""
        self.gate.configure(delay=delay, concurrency=concurrency)
        self.scheduler.reschedule(self.gate.hosts())

    async def shared_politeness(self) -> tuple[float, int] | None:
        """Nothing to learn: no other process shares this crawl."""
        return None

    # -- bookkeeping for the subclass's task_done and statistics ----------------------------
    def _account(self, lease: Lease, result: TaskResult) -> None:
        """The in-memory side of ``task_done``, once the subclass recorded it: the host's slot
        freed and its verdict applied, then the outcome counted and the join count lowered,
        or a retry held back for ``retry_after`` seconds (still unfinished)."""
        scheduler = self.scheduler
        scheduler.returned(lease, result)
        if result.outcome is _RETRY:
            scheduler.delay(lease.item.retry(), max(result.retry_after or 0.0, 0.0))
        else:
            self.outcomes.count(result.outcome)
            scheduler.finished()

    def _stats(self, *, queued: int, seen: int, hosts: int) -> FrontierStats:
        return self.outcomes.stats(
            queued=queued, in_flight=self.scheduler.in_flight, seen=seen, hosts=hosts
        )
