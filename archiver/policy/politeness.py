"""Per-host politeness: how many fetches may be in flight to a host, and when the next may start.

A crawl must never hammer one site, whatever the global worker count: each host gets
``concurrency`` slots and consecutive request *starts* are at least ``delay`` seconds apart
(raised by a robots.txt ``Crawl-delay``, capped). A 429 or 503 pauses the host for its
``Retry-After`` (seconds or an HTTP date; capped), and a host that keeps failing is paused with
exponential backoff instead of being hammered.

The gate only answers "when may this host start its next fetch?"; the frontier uses that answer
to hand workers URLs of hosts that are ready, so no worker idles behind one slow host while
others have work. Time comes from an injectable monotonic clock.

What one outcome means for its host (is it a failure, does the host pause, for how long) is
:func:`host_verdict`, a pure function: :class:`HostGate` applies it in this process, and the Redis
frontier applies it for every process of a shared crawl (its ACK script receives the
:class:`Backoff` numbers as arguments, so the rule is written once).
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from archiver.models import Outcome, TaskResult

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Politeness:
    """The per-host limits a crawl runs with: the least delay between two request starts and
    the fetches in flight at once (``--per-host-delay``, ``--per-host-concurrency``, changed
    while the crawl runs through its ``control.toml``)."""

    delay: float
    concurrency: int


class HostReport(enum.IntEnum):
    """What one outcome says about its host's health (the number is what the Redis ACK script
    receives)."""

    NEUTRAL = 0  #: nothing: a skip, a 4xx, a retry after an answer (a bot challenge)
    HEALTHY = 1  #: the host answered and the URL is done: a failure streak ends
    FAILING = 2  #: a 5xx, or no response at all (connection refused, reset, timeout)


# Enum members as module globals: an ``Enum.MEMBER`` lookup costs ~0.1 us on Python 3.11, and
# the verdict runs for every outcome.
_DONE, _RETRY, _FAILED = Outcome.DONE, Outcome.RETRY, Outcome.FAILED
_NEUTRAL, _HEALTHY, _FAILING = HostReport.NEUTRAL, HostReport.HEALTHY, HostReport.FAILING


def host_report(result: TaskResult) -> HostReport:
    """A 5xx (RFC 9110 section 15.6: the server failed) or no response at all is a failure of
    the host; a finished fetch with any other answer is a sign of health."""
    outcome = result.outcome
    if result.status is None:
        if outcome is _RETRY or outcome is _FAILED:
            return _FAILING
    elif result.status >= 500:
        return _FAILING
    return _HEALTHY if outcome is _DONE else _NEUTRAL


@dataclass(frozen=True, slots=True)
class Backoff:
    """How a host that keeps failing is paused: after ``threshold`` failures in a row for
    ``first`` seconds, multiplied by ``factor`` with each further failure (capped by the gate's
    ``max_pause``), so a host that is down is asked less and less often."""

    threshold: int = 3
    first: float = 5.0
    factor: float = 2.0

    def pause(self, failures: int, max_pause: float) -> float | None:
        """Seconds to pause a host after ``failures`` consecutive failures; None below the
        threshold."""
        if failures < self.threshold:
            return None
        return min(self.first * self.factor ** (failures - self.threshold), max_pause)


#: The backoff every gate uses unless told otherwise.
BACKOFF = Backoff()


def host_verdict(
    result: TaskResult, failures: int, *, max_pause: float, backoff: Backoff = BACKOFF
) -> tuple[int, float | None]:
    """What ``result`` means for a host that had ``failures`` consecutive failures before it:
    ``(failures, pause)``, the host's consecutive failures with this outcome, and the seconds it
    stays away from now on (None: no pause).

    The pause is the longest of what the host asked for (a 429/503 Retry-After, a bot
    challenge: :attr:`~archiver.models.TaskResult.host_pause`) and the failure backoff, never
    more than ``max_pause``. (A plain tuple: this runs for every outcome.)
    """
    report = host_report(result)
    pause = result.host_pause
    if report is _FAILING:
        failures += 1
        backoff_pause = backoff.pause(failures, max_pause)
        if backoff_pause is not None:
            pause = backoff_pause if pause is None else max(pause, backoff_pause)
    elif report is _HEALTHY:
        failures = 0
    return failures, None if pause is None else min(pause, max_pause)


@dataclass(slots=True)
class HostState:
    in_flight: int = 0
    next_start: float = 0.0  #: earliest start of the next request (delay spacing)
    paused_until: float = 0.0  #: backoff after 429/503/repeated failures
    delay: float | None = None  #: the host's robots.txt Crawl-delay (capped), when it has one
    #: a seed's ``per_host_delay`` for the host, instead of the crawl's (the longest of them)
    spacing: float | None = None
    failures: int = 0  #: consecutive failed fetches
    last_start: float = -math.inf  #: when the latest request to the host started
    booking: int = -1  #: the lease that made the latest booking (-1: a reserve, or none)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max((moment - current).total_seconds(), 0.0)


class HostGate:
    """In-process politeness state for every host (the Redis frontier keeps its own)."""

    def __init__(
        self,
        *,
        concurrency: int = 2,
        delay: float = 0.5,
        max_pause: float = 600.0,
        max_crawl_delay: float = 30.0,
        backoff: Backoff = BACKOFF,
        clock: Clock = time.monotonic,
    ) -> None:
        self.concurrency = concurrency
        self.delay = delay
        self.max_pause = max_pause
        self.max_crawl_delay = max_crawl_delay
        self.backoff = backoff
        self.clock = clock
        self._hosts: dict[str, HostState] = {}

    def _state(self, host: str) -> HostState:
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = HostState()
        return state

    def ready_at(self, host: str) -> float:
        """Monotonic time at which ``host`` may start a fetch; ``inf`` while all slots are busy."""
        state = self._hosts.get(host)
        if state is None:
            return 0.0
        if state.in_flight >= self.concurrency:
            return math.inf
        return max(state.next_start, state.paused_until)

    def _delay(self, state: HostState) -> float:
        """The host's spacing: the crawl's delay (or the one its seeds give it), or its
        Crawl-delay when that is longer (either may change while the crawl runs)."""
        base = self.delay if state.spacing is None else state.spacing
        robots = state.delay
        return base if robots is None or robots < base else robots

    def configure(self, *, delay: float, concurrency: int) -> None:
        """New crawl-wide politeness while the crawl runs (the operator's ``control.toml``):
        every host's next start is counted again from its latest one with the new spacing, so
        a longer delay applies to the very next request and a shorter one frees hosts at once."""
        self.delay = delay
        self.concurrency = concurrency
        for state in self._hosts.values():
            if state.last_start != -math.inf:
                state.next_start = state.last_start + self._delay(state)

    def hosts(self) -> list[str]:
        """Every host the gate has a state for (the ones that were fetched from)."""
        return list(self._hosts)

    def acquire(self, host: str, booking: int = -1) -> None:
        """A lease starts on ``host``: a slot taken and the next start pushed back by the
        delay. ``booking`` names the lease, for :meth:`refund`."""
        state = self._state(host)
        now = self.clock()
        state.in_flight += 1
        state.last_start = max(now, state.next_start)
        state.next_start = state.last_start + self._delay(state)
        state.booking = booking

    def refund(self, host: str, booking: int) -> None:
        """The lease ``booking`` sent no request: when no booking came after it, the host's
        next start goes back to the start that lease had (the delay was never used)."""
        state = self._hosts.get(host)
        if state is not None and state.booking == booking and booking >= 0:
            state.next_start = state.last_start
            state.booking = -1

    def reserve(self, host: str) -> float:
        """Book one more request start inside a lease (the page after its robots.txt): the
        seconds to wait before starting it; later leases are pushed back behind it."""
        state = self._state(host)
        now = self.clock()
        start = max(now, state.next_start, state.paused_until)
        state.last_start = start
        state.next_start = start + self._delay(state)
        state.booking = -1  # the lease's booking is used now: nothing to give back
        return start - now

    def release(self, host: str, result: TaskResult | None = None) -> None:
        """A fetch to ``host`` ended; ``result`` tells whether the host asked us to back off."""
        state = self._state(host)
        state.in_flight = max(state.in_flight - 1, 0)
        if result is None:
            return
        state.failures, pause = host_verdict(
            result, state.failures, max_pause=self.max_pause, backoff=self.backoff
        )
        if pause is not None:
            state.paused_until = max(state.paused_until, self.clock() + pause)

    def set_crawl_delay(self, host: str, seconds: float) -> None:
        """Honour a robots.txt Crawl-delay (capped at ``max_crawl_delay``)."""
        state = self._state(host)
        state.delay = min(seconds, self.max_crawl_delay)
        # learnt inside a lease: the next start counts from the latest one with the new delay
        state.next_start = max(state.next_start, state.last_start + self._delay(state))

    def set_spacing(self, host: str, seconds: float) -> None:
        """A seed's ``per_host_delay`` for ``host``, instead of the crawl's: a host reached
        through seeds with different delays is spaced by the longest of them. The next start
        counts from the latest one with it (a shorter one frees the host at once)."""
        state = self._state(host)
        state.spacing = seconds if state.spacing is None else max(state.spacing, seconds)
        if state.last_start != -math.inf:
            state.next_start = state.last_start + self._delay(state)

    def paused_hosts(self) -> dict[str, float]:
        """Hosts currently paused, with seconds left (for the progress display)."""
        now = self.clock()
        return {h: s.paused_until - now for h, s in self._hosts.items() if s.paused_until > now}
