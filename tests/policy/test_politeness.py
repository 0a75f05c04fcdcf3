"""Per-host politeness: the host verdict, HostGate and host-aware dispatch (HostScheduler), with an
injected clock.

End-to-end checks under 64 workers against local servers are in ``test_polite_crawl.py``.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from archiver.frontier.memory import MemoryFrontier
from archiver.models import CrawlItem, Outcome, TaskResult
from archiver.policy.politeness import (
    BACKOFF,
    Backoff,
    HostGate,
    HostReport,
    host_report,
    host_verdict,
    parse_retry_after,
)


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


def done(status: int = 200, retry_after: float | None = None) -> TaskResult:
    return TaskResult(Outcome.DONE, status=status, retry_after=retry_after)


def failed() -> TaskResult:
    return TaskResult(Outcome.FAILED, reason="connect-error")


# -- Retry-After (RFC 9110 section 10.2.3) -----------------------------------------------------


def test_retry_after_seconds_and_dates() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(" 7 ") == 7.0
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(later, now=now) == 90.0
    earlier = format_datetime(now - timedelta(hours=1), usegmt=True)
    assert parse_retry_after(earlier, now=now) == 0.0
    assert parse_retry_after("Wed, 01 May 2024 12:00:30 GMT", now=now) == 30.0
    for bad in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(bad) is None


# -- the host verdict ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "report"),
    [
        (TaskResult(Outcome.DONE, status=200), HostReport.HEALTHY),
        (TaskResult(Outcome.DONE, status=404), HostReport.HEALTHY),
        (TaskResult(Outcome.DONE, status=429, retry_after=5.0), HostReport.HEALTHY),
        (TaskResult(Outcome.DONE, status=500), HostReport.FAILING),
        (TaskResult(Outcome.RETRY, status=503), HostReport.FAILING),
        (TaskResult(Outcome.RETRY, reason="timeout"), HostReport.FAILING),
        (TaskResult(Outcome.FAILED, reason="connect-error"), HostReport.FAILING),
        (TaskResult(Outcome.FAILED, status=403, reason="too-many-tries"), HostReport.NEUTRAL),
        (TaskResult(Outcome.RETRY, status=403, reason="challenge"), HostReport.NEUTRAL),
        (TaskResult(Outcome.SKIPPED, reason="robots"), HostReport.NEUTRAL),
    ],
)
def test_what_an_outcome_says_about_its_host(result: TaskResult, report: HostReport) -> None:
    assert host_report(result) is report
    failures, _ = host_verdict(result, 1, max_pause=600.0)
    assert failures == {HostReport.NEUTRAL: 1, HostReport.HEALTHY: 0, HostReport.FAILING: 2}[report]


def test_the_verdict_counts_failures_and_backs_off_exponentially() -> None:
    failure = TaskResult(Outcome.FAILED, reason="connect-error")
    failures, pauses = 0, []
    for _ in range(7):
        failures, pause = host_verdict(failure, failures, max_pause=30.0)
        pauses.append(pause)
    assert failures == 7
    assert pauses == [None, None, 5.0, 10.0, 20.0, 30.0, 30.0]  # capped at max_pause
    assert host_verdict(done(), failures, max_pause=30.0) == (0, None)  # the streak ends
    skipped = TaskResult(Outcome.SKIPPED, reason="robots")
    assert host_verdict(skipped, 2, max_pause=30.0) == (2, None)


def test_the_verdict_keeps_the_longer_of_retry_after_and_backoff() -> None:
    unavailable = TaskResult(Outcome.RETRY, status=503, retry_after=42.0)
    assert host_verdict(unavailable, 0, max_pause=600.0) == (1, 42.0)  # first failure
    assert host_verdict(unavailable, 5, max_pause=600.0) == (6, 42.0)  # backoff 40 s
    assert host_verdict(unavailable, 6, max_pause=600.0) == (7, 80.0)  # 5 * 2**4 s
    assert host_verdict(unavailable, 6, max_pause=60.0) == (7, 60.0)
    throttled = TaskResult(Outcome.DONE, status=429, retry_after=86_400.0)
    assert host_verdict(throttled, 9, max_pause=60.0) == (0, 60.0)
    challenge = TaskResult(Outcome.RETRY, status=403, reason="challenge")
    assert host_verdict(challenge, 1, max_pause=600.0) == (1, 30.0)


def test_a_gate_applies_its_own_backoff() -> None:
    rule = Backoff(threshold=1, first=0.5, factor=3.0)
    assert [rule.pause(n, 100.0) for n in range(4)] == [None, 0.5, 1.5, 4.5]
    clock = Clock()
    gate = HostGate(delay=0.0, backoff=rule, clock=clock)
    gate.acquire("h")
    gate.release("h", TaskResult(Outcome.DONE, status=502))
    assert gate.ready_at("h") == clock.now + 0.5


# -- HostGate -----------------------------------------------------------------------------------


def test_concurrency_slots() -> None:
    clock = Clock()
    gate = HostGate(concurrency=2, delay=0.0, clock=clock)
    assert gate.ready_at("h") == 0.0
    gate.acquire("h")
    assert gate.ready_at("h") <= clock.now
    gate.acquire("h")
    assert gate.ready_at("h") == math.inf  # both slots busy
    assert gate.ready_at("other") == 0.0  # hosts are independent
    gate.release("h", done())
    assert gate.ready_at("h") <= clock.now


def test_delay_spaces_request_starts() -> None:
    clock = Clock()
    gate = HostGate(concurrency=4, delay=0.5, clock=clock)
    gate.acquire("h")
    assert gate.ready_at("h") == clock.now + 0.5
    clock.now += 0.1
    gate.acquire("h")  # a scheduler never does this early; the gate still spaces the next one
    assert gate.ready_at("h") == 100.0 + 1.0
    gate.release("h", done())
    gate.release("h", done())
    clock.now += 10
    gate.acquire("h")
    assert gate.ready_at("h") == clock.now + 0.5


@pytest.mark.parametrize("status", [429, 503])
def test_429_and_503_pause_for_retry_after(status: int) -> None:
    clock = Clock()
    gate = HostGate(delay=0.0, max_pause=600.0, clock=clock)
    gate.acquire("h")
    gate.release("h", done(status, retry_after=42.0))
    assert gate.ready_at("h") == clock.now + 42.0
    assert gate.paused_hosts() == {"h": 42.0}


def test_retry_after_is_capped_and_has_a_default() -> None:
    clock = Clock()
    gate = HostGate(delay=0.0, max_pause=60.0, clock=clock)
    gate.acquire("a")
    gate.release("a", done(429, retry_after=86_400.0))
    assert gate.ready_at("a") == clock.now + 60.0
    gate.acquire("b")
    gate.release("b", done(503))
    assert gate.ready_at("b") == clock.now + 30.0


def test_a_host_that_keeps_failing_is_paused_with_backoff() -> None:
    clock = Clock()
    gate = HostGate(delay=0.0, max_pause=30.0, clock=clock)
    for _ in range(BACKOFF.threshold - 1):
        gate.acquire("h")
        gate.release("h", failed())
    assert gate.ready_at("h") <= clock.now  # a couple of failures: not yet
    pauses = []
    for _ in range(4):
        gate.acquire("h")
        gate.release("h", failed())
        pauses.append(gate.ready_at("h") - clock.now)
        clock.now = gate.ready_at("h")
    assert pauses == [5.0, 10.0, 20.0, 30.0]  # exponential, capped at max_pause
    gate.acquire("h")
    gate.release("h", done())  # one success resets the count
    gate.acquire("h")
    gate.release("h", failed())
    assert gate.ready_at("h") <= clock.now


def test_a_host_answering_5xx_to_everything_is_paused() -> None:
    clock = Clock()
    gate = HostGate(delay=0.0, clock=clock)
    for outcome in (Outcome.RETRY, Outcome.RETRY, Outcome.DONE):  # the crawler's 500 sequence
        gate.acquire("h")
        gate.release("h", TaskResult(outcome, status=500))
    assert gate.ready_at("h") > clock.now


def test_crawl_delay_is_capped_and_never_below_the_host_delay() -> None:
    clock = Clock()
    gate = HostGate(delay=0.5, max_crawl_delay=10.0, clock=clock)
    gate.set_crawl_delay("slow", 3600.0)
    gate.set_crawl_delay("fast", 0.1)
    gate.acquire("slow")
    gate.acquire("fast")
    assert gate.ready_at("slow") == clock.now + 10.0
    assert gate.ready_at("fast") == clock.now + 0.5


# -- dispatch: a worker skips to a ready host -------------------------------------------------


def item(host: str, n: int) -> CrawlItem:
    return CrawlItem(url=f"http://{host}/{n}")


async def test_a_worker_is_given_a_ready_host_not_the_busy_one() -> None:
    clock = Clock()
    gate = HostGate(concurrency=1, delay=5.0, clock=clock)
    frontier = MemoryFrontier(gate)
    frontier.scheduler._clock = clock
    await frontier.put_many([item("slow.test", i) for i in range(5)])
    await frontier.put_many([item("fast.test", i) for i in range(2)])
    first = frontier.scheduler.take()
    second = frontier.scheduler.take()
    assert first is not None and second is not None
    assert {first.host, second.host} == {"slow.test", "fast.test"}
    assert frontier.scheduler.take() is None  # both hosts busy: nothing, rather than waiting
    lease = first if first.host == "fast.test" else second
    await frontier.task_done(lease, done())
    assert frontier.scheduler.take() is None  # the fast host's delay has not passed
    clock.now += 5.0
    nxt = frontier.scheduler.take()
    assert nxt is not None and nxt.host == "fast.test"


async def test_a_paused_host_is_skipped_until_its_pause_ends() -> None:
    clock = Clock()
    gate = HostGate(concurrency=2, delay=0.0, clock=clock)
    frontier = MemoryFrontier(gate)
    frontier.scheduler._clock = clock
    await frontier.put_many([item("a.test", i) for i in range(3)])
    lease = frontier.scheduler.take()
    assert lease is not None
    await frontier.task_done(lease, done(429, retry_after=30.0))
    await frontier.put_many([item("b.test", 0)])
    nxt = frontier.scheduler.take()
    assert nxt is not None and nxt.host == "b.test"
    assert frontier.scheduler.take() is None
    clock.now += 30.0
    again = frontier.scheduler.take()
    assert again is not None and again.host == "a.test"


async def test_a_waiting_worker_is_woken_when_the_delay_passes() -> None:
    """The dispatcher arms one timer for the earliest ready host (real loop time here)."""
    gate = HostGate(concurrency=2, delay=0.05)
    frontier = MemoryFrontier(gate)
    await frontier.put_many([item("h.test", 0), item("h.test", 1)])
    loop = asyncio.get_running_loop()
    first = await frontier.get()
    started = loop.time()
    second = await asyncio.wait_for(frontier.get(), timeout=60)  # a hang guard
    assert loop.time() - started >= 0.04
    assert {first.item.url, second.item.url} == {"http://h.test/0", "http://h.test/1"}


def test_a_refund_gives_back_the_latest_booking_only() -> None:
    clock = [100.0]
    gate = HostGate(concurrency=2, delay=10.0, clock=lambda: clock[0])
    gate.acquire("h", 1)
    assert gate.ready_at("h") == 110.0
    gate.refund("h", 1)  # lease 1 sent nothing: its start is free again
    gate.release("h")
    assert gate.ready_at("h") == 100.0
    gate.acquire("h", 2)
    gate.acquire("h", 3)
    gate.refund("h", 2)  # lease 3 booked after it: nothing to give back
    gate.release("h")
    assert gate.ready_at("h") == 120.0
    gate.refund("h", 3)
    gate.release("h")
    assert gate.ready_at("h") == 110.0
    gate.acquire("h", 4)
    assert gate.reserve("h") == 20.0  # the lease's own second request (after robots.txt)
    gate.refund("h", 4)  # a request was booked in the lease: the delay stays
    gate.release("h")
    assert gate.ready_at("h") == 130.0
