"""Per-host politeness: how many fetches may be in flight to a host, and when the next may start.

A crawl must never hammer one site, whatever the global worker count: each host gets
``concurrency`` slots and consecutive request *starts* are at least ``delay`` seconds apart
(raised by a robots.txt ``Crawl-delay``, capped). A 429 or 503 pauses the host for its
``Retry-After`` (seconds or an HTTP date; capped), and a host that keeps failing is paused with
exponential backoff instead of being hammered.

The gate only answers "when may this host start its next fetch?"; the frontier uses that answer
to hand workers URLs of hosts that are ready, so no worker idles behind one slow host while
others have work. Time comes from an injectable monotonic clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from archiver.models import Outcome, TaskResult

Clock = Callable[[], float]

#: Consecutive failures after which a host is paused with backoff.
FAILURE_THRESHOLD = 3


@dataclass(slots=True)
class HostState:
    in_flight: int = 0
    next_start: float = 0.0  #: earliest start of the next request (delay spacing)
    paused_until: float = 0.0  #: backoff after 429/503/repeated failures
    delay: float | None = None  #: per-host override (robots Crawl-delay)
    failures: int = 0  #: consecutive failed fetches
    last_start: float = -math.inf  #: when the latest request to the host started


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
        clock: Clock = time.monotonic,
    ) -> None:
        self.concurrency = concurrency
        self.delay = delay
        self.max_pause = max_pause
        self.max_crawl_delay = max_crawl_delay
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
        return self.delay if state.delay is None else state.delay

    def acquire(self, host: str) -> None:
        state = self._state(host)
        now = self.clock()
        state.in_flight += 1
        state.last_start = max(now, state.next_start)
        state.next_start = state.last_start + self._delay(state)

    def reserve(self, host: str) -> float:
        """Book one more request start inside a lease (the page after its robots.txt): the
        seconds to wait before starting it; later leases are pushed back behind it."""
        state = self._state(host)
        now = self.clock()
        start = max(now, state.next_start, state.paused_until)
        state.last_start = start
        state.next_start = start + self._delay(state)
        return start - now

    def release(self, host: str, result: TaskResult | None = None) -> None:
        """A fetch to ``host`` ended; ``result`` tells whether the host asked us to back off."""
        state = self._state(host)
        state.in_flight = max(state.in_flight - 1, 0)
        if result is None:
            return
        now = self.clock()
        pause = result.host_pause
        server_error = result.status is not None and result.status >= 500
        no_response = result.outcome in (Outcome.RETRY, Outcome.FAILED) and result.status is None
        if server_error or no_response:
            state.failures += 1
            if state.failures >= FAILURE_THRESHOLD:
                backoff = min(2.0 ** (state.failures - FAILURE_THRESHOLD) * 5.0, self.max_pause)
                pause = backoff if pause is None else max(pause, backoff)
        elif result.outcome is Outcome.DONE:
            state.failures = 0
        if pause is not None:
            state.paused_until = max(state.paused_until, now + min(pause, self.max_pause))

    def set_crawl_delay(self, host: str, seconds: float) -> None:
        """Honour a robots.txt Crawl-delay (capped at ``max_crawl_delay``)."""
        state = self._state(host)
        state.delay = max(self.delay, min(seconds, self.max_crawl_delay))
        # learnt inside a lease: the next start counts from the latest one with the new delay
        state.next_start = max(state.next_start, state.last_start + state.delay)

    def paused_hosts(self) -> dict[str, float]:
        """Hosts currently paused, with seconds left (for the progress display)."""
        now = self.clock()
        return {h: s.paused_until - now for h, s in self._hosts.items() if s.paused_until > now}
