"""The pump: all of one process's Redis frontier traffic, one pipelined round trip at a time.

Pending ``put_many`` calls and outcomes (in call order), digest lookups and additions, a claim
for the workers waiting in ``get()`` right now (never more: a claimed URL holds a host slot),
the heartbeat when due, and (at most every :data:`STATS_INTERVAL`) a read of the counters go out
together. While a round trip is in flight, new calls queue up and go in the next one, so the
batch grows with the load. Outcomes do not wait for Redis: they are flushed within
``ack_interval`` or with the next round trip, whichever comes first (at once when
:data:`FLUSH_BATCH` are pending, or when a host asked us to slow down); puts and gets wake the
pump at once. When nothing is ready the pump polls with backoff (5 ms doubling to
``poll_interval``, or until the next host is due), so an idle process costs Redis a few cheap
calls a second.

This is group commit, like the SQLite frontier's store thread, but the two share the idea and
not code: here a batch is a network round trip to a server that several processes share, and a
failed round trip is sent again in full, in order, once Redis answers (every script tolerates
being applied twice); there a batch is a local transaction on a thread, and a failure is final.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

from redis.exceptions import NoScriptError, ResponseError

from archiver.errors import FrontierError
from archiver.frontier.base import Lease
from archiver.frontier.redis.codec import decode_lease
from archiver.frontier.redis.link import TRANSIENT, Log, RedisLink, script_error
from archiver.frontier.redis.lua import SCRIPTS
from archiver.models import CrawlItem
from archiver.policy.politeness import HostGate

#: Pending outcomes that are sent at once instead of waiting for ``ack_interval``.
FLUSH_BATCH = 64
#: How often the counters are read back (they ride along with other calls when there are any).
STATS_INTERVAL = 0.1
#: How long the commit record of a WARC file outlives its last update.
COMMITS_TTL = 7 * 24 * 3600
#: The fields of ``P:counts`` read back with the statistics.
COUNT_FIELDS = ("unfinished", "queued", "leased", "d", "f", "s", "hosts", "seen")
#: Operations per round trip at most, and per PUT or ACK script call.
MAX_ROUND_OPS = 1000
MAX_CALL_OPS = 200


# -- pending work ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Put:
    entries: list[tuple[bytes, str, bytes, CrawlItem]]  # url-key, host, PUT argument, item
    future: asyncio.Future[list[int]]


@dataclass(slots=True)
class Ack:
    lease: Lease
    record: bytes


@dataclass(slots=True)
class Release:
    tokens: list[int]


@dataclass(slots=True)
class Command:
    """A plain command (set a host's delay, forget a closed file's commits)."""

    args: tuple[Any, ...]


@dataclass(slots=True)
class ScriptCall:
    """A small script call with no caller waiting (a host's delay, a reservation)."""

    name: str
    args: tuple[Any, ...]


@dataclass(slots=True)
class Query:
    """A plain command whose caller waits for the reply (a dedup digest lookup)."""

    args: tuple[Any, ...]
    future: asyncio.Future[Any]


@dataclass(slots=True)
class Barrier:
    future: asyncio.Future[None]


Op = Put | Ack | Release | Command | ScriptCall | Query | Barrier


@dataclass(slots=True)
class _Round:
    """What one round trip carries, and how to read its replies."""

    ops: list[Op] = field(default_factory=list)
    calls: list[tuple[str, list[Op]]] = field(default_factory=list)
    claim: int = 0
    renew_tokens: list[int] | None = None
    stats: bool = False


class Pump:
    """The round trips of one Redis frontier. The frontier pushes operations and registers
    waiting ``get`` calls; the pump sends, settles the replies, and keeps the leases this
    process holds, the heartbeat and the counters."""

    def __init__(
        self,
        link: RedisLink,
        gate: HostGate,
        *,
        process_id: str,
        lease_timeout: float,
        max_claim: int,
        ack_interval: float,
        poll_interval: float,
        max_pending: int,
        log: Log | None,
    ) -> None:
        self.link = link
        self.gate = gate
        self.process_id = process_id
        self.lease_timeout = lease_timeout
        self.max_claim = max_claim
        self.ack_interval = ack_interval
        self.poll_interval = poll_interval
        self.max_pending = max_pending
        self.log = log
        backoff = gate.backoff
        self._ack_fixed = [
            gate.concurrency,
            repr(min(gate.max_pause, 1e12)),
            backoff.threshold,
            repr(backoff.first),
            repr(backoff.factor),
            COMMITS_TTL,
        ]
        #: leases this process holds (claimed, outcome not yet in Redis), by token
        self.held: dict[int, Lease] = {}
        #: the counters last read from ``P:counts``
        self.counts: dict[str, int] = {}
        #: claim round trips completed (tests wait on it to know a claim was tried)
        self.claims = 0
        #: set by the frontier's ``close``: no more claims
        self.closing = False
        self.failure: FrontierError | None = None
        self._ops: deque[Op] = deque()
        self._waiters: deque[asyncio.Future[Lease]] = deque()
        self._stat_waiters: list[asyncio.Future[int]] = []
        self._wake: asyncio.Event | None = None
        self._space: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._flush_at = float("inf")
        self._poll_at = 0.0
        self._stats_at = 0.0
        self._idle = 0.0
        self._renew_at = 0.0
        self._connected_since = 0.0
        self._epoch = 0
        self._recover = False

    # -- life cycle ------------------------------------------------------------------------

    def politeness_changed(self) -> None:
        """The gate's concurrency changed (control.toml): outcomes sent from now on free slots
        against the new number."""
        self._ack_fixed[0] = self.gate.concurrency

    def start(self, counts: list[Any]) -> None:
        """Start pumping, with the counters ``open`` read."""
        self.apply_counts(counts)
        self._wake = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        now = time.monotonic()
        self._connected_since = now
        self._renew_at = now + self.lease_timeout / 3
        self._task = asyncio.create_task(self._run(), name="redis-frontier")

    @property
    def running(self) -> bool:
        return self._task is not None

    @property
    def waiting(self) -> int:
        """``get`` calls waiting for a lease."""
        return self._live_waiters()

    async def stop(self) -> None:
        """Stop at once; waiting ``get`` calls are cancelled."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, FrontierError):
                await task
        for waiter in self._waiters:
            waiter.cancel()

    def check(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self._task is None:
            raise FrontierError("the Redis frontier is not open")

    # -- what the frontier asks for --------------------------------------------------------

    def push(self, op: Op, *, urgent: bool = False) -> None:
        self._ops.append(op)
        if urgent or len(self._ops) >= FLUSH_BATCH:
            self._flush_at = 0.0
        else:
            self._flush_at = min(self._flush_at, time.monotonic() + self.ack_interval)
        self._kick()

    def send(self, *args: Any) -> None:
        """Send a plain command with the next round trip; nobody waits for its reply."""
        self.check()
        self.push(Command(args))

    async def ask(self, *args: Any) -> Any:
        """Send a plain command with the next round trip (at once) and return its reply."""
        self.check()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.push(Query(args, future), urgent=True)
        return await future

    def claim(self) -> asyncio.Future[Lease]:
        """A future for the next lease claimed for this process (a waiting ``get``)."""
        future: asyncio.Future[Lease] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._kick()
        return future

    def read_unfinished(self) -> asyncio.Future[int]:
        """A future for the join count at the next read of the counters."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._stat_waiters.append(future)
        self._kick()
        return future

    def give_back(self, leases: list[Lease]) -> None:
        for lease in leases:
            self.gate.release(lease.host)
        self.push(Release([lease.token for lease in leases]), urgent=True)

    async def wait_for_space(self) -> None:
        """Wait while ``max_pending`` operations are queued (Redis is slow or away)."""
        if len(self._ops) >= self.max_pending:
            assert self._space is not None
            self._space.clear()
            await self._space.wait()

    def apply_counts(self, counts: list[Any]) -> None:
        self.counts = {
            name: int(value) if value is not None else 0
            for name, value in zip(COUNT_FIELDS, counts, strict=True)
        }
        self.counts["unfinished"] = max(self.counts["unfinished"], 0)

    # -- internals -------------------------------------------------------------------------

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _live_waiters(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    def _fail(self, error: FrontierError) -> None:
        """A fatal error: every caller, now and later, gets it."""
        self.failure = error
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)
        while self._ops:
            op = self._ops.popleft()
            if isinstance(op, Put | Query | Barrier) and not op.future.done():
                op.future.set_exception(error)
        if self._space is not None:
            self._space.set()

    def _next_wake(self, now: float) -> float:
        at = self._renew_at
        if self._ops:
            at = min(at, self._flush_at)
        if self._live_waiters() and not self.closing:
            at = min(at, self._poll_at)
        if self._stat_waiters:
            at = min(at, self._stats_at)
        return at - now

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            timeout = self._next_wake(time.monotonic())
            if timeout > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
            self._wake.clear()
            try:
                await self._round()
            except FrontierError as exc:
                self._fail(exc)
                return
            except Exception as exc:  # a bug or an unexpected reply: loud, never a hang
                self._fail(FrontierError(f"the Redis frontier failed: {exc!r}"))
                return

    def _plan(self, now: float) -> _Round:
        plan = _Round()
        waiting = 0 if self.closing else self._live_waiters()
        if self._ops and (now >= self._flush_at or waiting):
            while self._ops and len(plan.ops) < MAX_ROUND_OPS:
                plan.ops.append(self._ops.popleft())
            self._flush_at = self._flush_at_for_rest(now)
        writes = any(isinstance(op, Put | Ack | Release) for op in plan.ops)
        if waiting and (now >= self._poll_at or writes):
            plan.claim = min(waiting, self.max_claim)
        if self.link.epoch != self._epoch:  # reconnected: renew now, recover lost claims
            self._epoch = self.link.epoch
            self._recover = True
            self._connected_since = now
        if now >= self._renew_at or self._recover:
            reported = {op.lease.token for op in plan.ops if isinstance(op, Ack)}
            plan.renew_tokens = [token for token in self.held if token not in reported]
        return plan

    def _flush_at_for_rest(self, now: float) -> float:
        if not self._ops:
            return float("inf")
        if len(self._ops) >= FLUSH_BATCH:
            return 0.0
        urgent = any(isinstance(op, Put | Release | Query | Barrier) for op in self._ops)
        return 0.0 if urgent else now + self.ack_interval

    async def _round(self) -> None:
        now = time.monotonic()
        plan = self._plan(now)
        busy = plan.ops or plan.claim or plan.renew_tokens is not None
        barrier = any(isinstance(op, Barrier) for op in plan.ops)
        plan.stats = barrier or (now >= self._stats_at and bool(busy or self._stat_waiters))
        if not busy and not plan.stats:
            return
        link = self.link
        meta = link.meta_key
        pipe = link.client.pipeline(transaction=False)
        conc = self.gate.concurrency
        self._group(plan, pipe)
        if plan.renew_tokens is not None:
            fixed = [self.process_id, self.lease_timeout, int(self._recover), conc]
            pipe.evalsha(*SCRIPTS["renew"].args(meta, fixed, plan.renew_tokens))
        if plan.claim:
            may_reap = int(now - self._connected_since >= self.lease_timeout)
            fixed = [
                self.process_id,
                plan.claim,
                conc,
                repr(self.gate.delay),
                repr(self.lease_timeout),
                may_reap,
            ]
            pipe.evalsha(*SCRIPTS["claim"].args(meta, fixed))
        if plan.stats:
            pipe.hmget(link.key("counts"), list(COUNT_FIELDS))
        try:
            replies = await pipe.execute(raise_on_error=False)
        except TRANSIENT as exc:
            await self._retry_later(plan, exc)
            return
        for reply in replies:
            if isinstance(reply, (NoScriptError, *TRANSIENT)):
                await self._retry_later(plan, cast(BaseException, reply))
                return
        if link.down_since is not None:
            link.came_up()
        self._settle(plan, replies, now)

    def _group(self, plan: _Round, pipe: Any) -> None:
        """Consecutive puts share one PUT call, consecutive outcomes one ACK call."""
        meta = self.link.meta_key
        conc = self.gate.concurrency
        run: list[Op] = []
        kind = ""

        def emit() -> None:
            if kind == "put":
                data = [entry[2] for op in run if isinstance(op, Put) for entry in op.entries]
                pipe.evalsha(*SCRIPTS["put"].args(meta, [conc], data))
            elif kind == "ack":
                records = [op.record for op in run if isinstance(op, Ack)]
                pipe.evalsha(*SCRIPTS["ack"].args(meta, self._ack_fixed, records))
            if run:
                plan.calls.append((kind, list(run)))

        for op in plan.ops:
            this = "put" if isinstance(op, Put) else "ack" if isinstance(op, Ack) else ""
            if this != kind or len(run) >= MAX_CALL_OPS:
                emit()
                run, kind = [], this
            if this:
                run.append(op)
            elif isinstance(op, Release):
                pipe.evalsha(*SCRIPTS["release"].args(meta, [conc], op.tokens))
                plan.calls.append(("release", [op]))
            elif isinstance(op, Command):
                pipe.execute_command(*op.args)
                plan.calls.append(("command", [op]))
            elif isinstance(op, Query):
                pipe.execute_command(*op.args)
                plan.calls.append(("query", [op]))
            elif isinstance(op, ScriptCall):
                pipe.evalsha(*SCRIPTS[op.name].args(meta, op.args))
                plan.calls.append(("command", [op]))
            # a Barrier sends nothing: it is settled once everything before it was
        emit()

    async def _retry_later(self, plan: _Round, exc: BaseException) -> None:
        """Nothing of this round is known to have happened: send it all again, in order, once
        Redis answers (every script tolerates being applied twice)."""
        self._ops.extendleft(reversed(plan.ops))
        self._flush_at = 0.0 if self._ops else float("inf")
        if isinstance(exc, NoScriptError):  # SCRIPT FLUSH, or a failover to a fresh replica
            with contextlib.suppress(*TRANSIENT):
                await self.link.load_scripts()
                return
        self.link.went_down(exc)
        await self.link.reconnect()

    def _settle(self, plan: _Round, replies: list[Any], now: float) -> None:
        index = self._settle_calls(plan, replies)
        if plan.renew_tokens is not None:
            self._settle_renew(_checked(replies[index]), now)
            index += 1
        if plan.claim:
            self._settle_claim(plan.claim, _checked(replies[index]), now)
            index += 1
        if plan.stats:
            self.apply_counts(replies[index])
            self._stats_at = now + STATS_INTERVAL
            waiters, self._stat_waiters = self._stat_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(self.counts["unfinished"])
        if self._space is not None and len(self._ops) < self.max_pending:
            self._space.set()

    def _settle_calls(self, plan: _Round, replies: list[Any]) -> int:
        """The replies to the round's operations, in order; returns how many it read."""
        for index, (kind, ops) in enumerate(plan.calls):
            reply = _checked(replies[index])
            if kind == "put":
                self._settle_puts(ops, reply)
            elif kind == "ack":
                for op in ops:
                    assert isinstance(op, Ack)
                    self.held.pop(op.lease.token, None)
            elif kind == "release":
                for op in ops:
                    assert isinstance(op, Release)
                    for token in op.tokens:
                        self.held.pop(token, None)
            elif kind == "query":
                for op in ops:
                    assert isinstance(op, Query)
                    if not op.future.done():
                        op.future.set_result(reply)
        for op in plan.ops:
            if isinstance(op, Barrier) and not op.future.done():
                op.future.set_result(None)
        return len(plan.calls)

    def _settle_renew(self, reply: list[Any], now: float) -> None:
        lost, recovered = reply
        if (lost or recovered) and self.log is not None:
            self.log.warning(
                "redis-leases-lost",
                lost=len(lost),
                recovered=int(recovered),
                note="leases expired or were claimed while this process could not renew them",
            )
        self._recover = False
        self._renew_at = now + self.lease_timeout / 3

    def _settle_puts(self, ops: list[Op], reply: list[int]) -> None:
        new = [int(i) for i in reply]
        start = 0
        for op in ops:
            assert isinstance(op, Put)
            end = start + len(op.entries)
            mine = [i - start for i in new if start <= i < end]
            if not op.future.done():
                op.future.set_result(mine)
            start = end
        if new:
            self._poll_at = 0.0  # new work: worth claiming at once
            self._idle = 0.0

    def _settle_claim(self, wanted: int, reply: list[Any], now: float) -> None:
        flat, hint_text, reaped, _stale = reply
        self.claims += 1
        leases = []
        for raw in flat:
            lease = decode_lease(raw)
            self.held[lease.token] = lease
            self.gate.acquire(lease.host)  # this process's mirror (``reserve``, paused hosts)
            leases.append(lease)
        if int(reaped) and self.log is not None:
            self.log.warning("redis-leases-reaped", count=int(reaped))
        unused: list[Lease] = []
        for lease in leases:
            while self._waiters and self._waiters[0].done():
                self._waiters.popleft()
            if self._waiters:
                self._waiters.popleft().set_result(lease)
            else:
                unused.append(lease)
        if unused:
            self.give_back(unused)
        if len(leases) >= wanted:
            self._idle = 0.0
            self._poll_at = 0.0
            return
        self._idle = min(max(self._idle * 2, 0.005), self.poll_interval)
        wait = self._idle
        hint = float(hint_text)
        if hint >= 0:
            wait = min(wait, max(hint, 0.001))
        self._poll_at = now + wait


def _checked(reply: Any) -> Any:
    """A script's reply, or the FrontierError its error reply means."""
    if isinstance(reply, ResponseError):
        raise script_error(reply)
    return reply
