"""The frontier interface: the seed design's joinable queue, made host-aware and persistent.

Its callers divide into three roles, each a protocol of its own (one backend implements all
three over one store; :class:`Frontier` is their union, with the life cycle):

* :class:`CrawlQueue`, the queue: the workers and discovery;
* :class:`HostPoliteness`, host politeness: robots.txt Crawl-delay, a page's second request
  inside its lease, the operator's live changes;
* :class:`CaptureLedger`, the ledger of committed captures: what resume and the sealing of
  WARC files read.

Workers see a joinable queue (``put`` / ``get`` / ``task_done`` / ``join``), whatever the
backend (memory, SQLite, Redis). On top of ``asyncio.Queue`` semantics:

* ``put`` marks the URL seen, in one place, and returns False when it was seen before, so
  redirect chains that meet and links found twice fetch their URL once;
* ``get`` returns a :class:`Lease` for a URL whose host may be fetched now (politeness: per-host
  slots and delay, backoff), so no worker waits behind one slow host while others have work;
* ``task_done`` takes the :class:`~archiver.models.TaskResult`: done (with where the capture
  was written), failed, skipped, or retry-later (the item goes to the back of the queue after
  ``retry_after`` seconds and the join count does not drop);
* ``join`` returns when nothing is queued, waiting for a retry, or leased anywhere.

What every backend shares beyond the protocol is here too: :class:`Outcomes`, the counters a
:class:`~archiver.models.FrontierStats` snapshot is built from. The in-process dispatch that the
memory and SQLite backends share is :mod:`archiver.frontier.local`; what an outcome means for
its host is :func:`archiver.policy.politeness.host_verdict`, for every backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from archiver.models import CrawlItem, FrontierStats, Outcome, ResumeInfo, TaskResult


@dataclass(frozen=True, slots=True)
class Lease:
    """A URL handed to one worker. Pass it back to ``task_done`` exactly once."""

    item: CrawlItem
    host: str  #: the politeness key (``host`` or ``host:port``)
    token: int = 0  #: backend-specific claim id


# Enum members as module globals: an ``Enum.MEMBER`` lookup costs ~0.1 us on Python 3.11, and
# these run for every URL.
_DONE, _FAILED, _SKIPPED = Outcome.DONE, Outcome.FAILED, Outcome.SKIPPED


@dataclass(slots=True)
class Outcomes:
    """How many URLs ended each way: the final outcomes of :class:`~archiver.models.Outcome`
    (a RETRY is not an end)."""

    done: int = 0
    failed: int = 0
    skipped: int = 0

    def count(self, outcome: Outcome, n: int = 1) -> None:
        """``n`` URLs ended with ``outcome`` (a negative ``n`` takes them back: resume)."""
        if outcome is _DONE:
            self.done += n
        elif outcome is _FAILED:
            self.failed += n
        elif outcome is _SKIPPED:
            self.skipped += n
        else:
            raise ValueError(f"{outcome} is not a final outcome")

    def stats(self, *, queued: int, in_flight: int, seen: int, hosts: int) -> FrontierStats:
        """A :class:`~archiver.models.FrontierStats` snapshot with these outcome counts."""
        return FrontierStats(
            queued=queued,
            in_flight=in_flight,
            done=self.done,
            failed=self.failed,
            skipped=self.skipped,
            seen=seen,
            hosts=hosts,
        )


class CrawlQueue(Protocol):
    """The queue: what the workers and discovery need (the seed design's joinable queue).

    Five verbs and a snapshot, as in Scrapy's scheduler: queue URLs (the seen set checked
    here, in one place), lease one, report how it ended, give back one never started, wait
    until nothing is left.
    """

    async def put(self, item: CrawlItem) -> bool:
        """Queue ``item`` unless its URL was seen; returns True when it was queued."""
        ...

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        """Queue several items; returns the ones that were new (in the order given)."""
        ...

    async def get(self) -> Lease:
        """Wait for a URL whose host is ready, and claim it."""
        ...

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        """Report how a leased URL ended (its captures go to the ledger in the same step)."""
        ...

    def give_back(self, lease: Lease) -> None:
        """Return a lease no worker started (a stop began): queued again, no try counted."""
        ...

    async def join(self) -> None:
        """Wait until no URL is queued, waiting for a retry, or in flight."""
        ...

    def statistics(self) -> FrontierStats:
        """A snapshot of the counters (cheap; for progress display)."""
        ...


class HostPoliteness(Protocol):
    """Host politeness: when a host may be asked again (per-host slots and delay, robots.txt
    Crawl-delay, the operator's changes), apart from the queue, like Scrapy's downloader
    ``Slot``. The queue consults the same limits when it hands out a lease; these calls are
    what the rest of a crawl tells it or asks it while the crawl runs."""

    def reserve(self, host: str) -> float:
        """Book one more request to ``host`` inside the current lease (the page after its
        robots.txt); returns the seconds to wait before sending it."""
        ...

    def set_host_delay(self, host: str, seconds: float) -> None:
        """Apply a robots.txt Crawl-delay to a host (RFC 9309 leaves it to the crawler)."""
        ...

    def set_politeness(self, delay: float, concurrency: int) -> None:
        """Change the per-host delay and concurrency of the running crawl (the operator's
        ``control.toml``); a shared crawl publishes them to every process."""
        ...

    def set_host_spacing(self, host: str, seconds: float) -> None:
        """Space the requests to ``host`` by a seed's ``per_host_delay`` instead of the crawl's
        delay (the longest, when seeds give the host several; a Crawl-delay still wins when it
        is longer); a shared crawl keeps it for every process."""
        ...

    async def shared_politeness(self) -> tuple[float, int] | None:
        """``(delay, concurrency)`` another process of a shared crawl set since this one last
        asked (already applied here), or None."""
        ...


class CaptureLedger(Protocol):
    """The ledger of committed captures: which byte ranges of which WARC file belong to a lease
    whose outcome the frontier committed. It is written by :meth:`CrawlQueue.task_done`, in
    the same step as the outcome (a capture is committed exactly when its lease is); resume
    reads it to cut an ``.open`` WARC file back to what was committed."""

    #: True when the state survives the process (resume is possible).
    persistent: bool

    async def flush(self) -> None:
        """Wait until every call made so far is durable in the backend (before WARC files
        whose captures it committed are sealed)."""
        ...

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        """``(start, end)`` of every capture in WARC ``filename`` committed by ``task_done``.

        Resume uses it to cut an ``.open`` file back to its committed captures.
        """
        ...

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        """Re-queue the URLs whose captures in ``filename`` start at or after ``offset``.

        Called after resume cut those captures from the file; returns how many were re-queued.
        """
        ...


@runtime_checkable
class Frontier(CrawlQueue, HostPoliteness, CaptureLedger, Protocol):
    """A whole frontier backend: the three roles over one store, and its life cycle. Every
    backend here implements all three; a caller that needs one role asks for that protocol."""

    async def open(self) -> ResumeInfo:
        """Prepare the backend; a persistent one re-queues URLs that were in flight."""
        ...

    async def close(self) -> None:
        """Flush and release resources. Leases not yet done stay 'in flight' for resume."""
        ...

    def stop_waiting(self) -> None:
        """The crawl is stopping: a backend that cannot be reached is no longer waited for.
        Calls waiting out an outage, and later ones, fail with a
        :class:`~archiver.errors.FrontierError` instead (what they would have stored is done
        again on resume), so that a stop takes seconds, not the length of the outage."""
        ...
