"""What the pipeline of one run counts: captures, pages, bytes, failures, skips, and what the
browser did; ``summary.json``, the progress display and the report show them.

Updated by the pipeline as captures, failures and skips happen; read by the run's figures
(:mod:`archiver.run.stats`). Memory stays bounded: per-host and per-MIME tables are capped, the
time series is per second with a cap, and only the largest resources are kept.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

MAX_TABLE = 10_000
OTHER = "(other)"
MAX_SERIES = 86_400 * 2
LARGEST_KEPT = 25
#: Seeds counted each on its own; the seeds past them share one row (:data:`OTHER_SEEDS`).
MAX_SEEDS = 10_000
OTHER_SEEDS = -1

K = TypeVar("K", str, int)


def extractor_table(queued: Counter[str], client_errors: Counter[str]) -> dict[str, dict[str, int]]:
    """``{extractor: {"queued": N, "4xx": M}}``, most queued first (then by name)."""
    names = sorted(set(queued) | set(client_errors), key=lambda name: (-queued[name], name))
    return {name: {"queued": queued[name], "4xx": client_errors[name]} for name in names}


def status_class(status: int | None) -> str:
    if status is None:
        return "none"
    return f"{status // 100}xx" if 100 <= status < 600 else "other"


@dataclass(slots=True)
class BrowserCounters:
    """What the browser did in a crawl that uses one (``--browser all|auto``)."""

    pages: int = 0  #: pages loaded in the browser and read
    failed: int = 0  #: pages given up with reason ``browser`` (after their retries)
    retried: int = 0  #: loads that failed and were tried again later
    requests: int = 0  #: requests the pages made (each answered or refused once)
    from_records: int = 0  #: requests answered from a capture the crawl already held
    fetched: int = 0  #: requests performed by the fetcher and recorded
    refused: Counter[str] = field(default_factory=Counter)  #: requests refused, by reason
    screenshots: int = 0
    by_reason: Counter[str] = field(default_factory=Counter)  #: why pages went to the browser
    behaviors: Counter[str] = field(default_factory=Counter)  #: pages each behaviour ran on
    #: URLs each behaviour found (links a click inserted, targets it stopped, added by scripts)
    behavior_links: Counter[str] = field(default_factory=Counter)
    #: pages on which a behaviour stopped at its step limit or its time, not at its end
    behavior_bounds: Counter[str] = field(default_factory=Counter)
    routes: int = 0  #: hash routes rendered as pages of their own
    clicks: int = 0  #: elements the behaviours clicked
    plays: int = 0  #: media elements played
    typed: int = 0  #: search boxes typed into
    navigations_blocked: int = 0  #: navigations away from a page, prevented (queued as links)
    popups_blocked: int = 0  #: windows pages tried to open, refused (queued as links)


def _take(table: Counter[K], key: K, other: K | None = None) -> None:
    """One less of ``key``: of ``other`` (``(other)``) where a full table counted it so."""
    if other is not None and key not in table:
        key = other
    table[key] -= 1
    if table[key] <= 0:
        del table[key]


@dataclass(frozen=True, slots=True)
class Counted:
    """What one capture added to the figures (:meth:`CrawlStats.capture`): kept by its lease so
    that a capture the frontier never commits (a lease abandoned when the login session ended:
    the next run's resume cuts it from the WARC file) can be taken back out of them."""

    host: str
    status: int | None
    mime: str
    size: int
    revisit: bool
    is_page: bool
    truncated: str | None
    second: int


@dataclass(slots=True)
class QaCounters:
    """What the replay check of each page did during the crawl (``--qa``): the same figures
    as ``summary.json``'s ``qa`` totals over ``qa.jsonl``, counted as each page's line is
    written."""

    checked: int = 0  #: pages checked (each counted once, with its last check's status)
    by_status: Counter[str] = field(default_factory=Counter)  #: complete, incomplete...
    misses_found: int = 0  #: URLs a page's replay asked for and the archive lacked
    misses_patched: int = 0  #: of those, captured by the page's lease


@dataclass(slots=True)
class SeedCounts:
    """What the URLs judged by one seed's rules came to (:mod:`archiver.policy.seeds`)."""

    pages: int = 0  #: its URLs captured as pages (HTML, 2xx)
    captures: int = 0  #: captures its leases wrote (robots.txt and a browser's included)
    done: int = 0
    failed: int = 0
    skipped: int = 0


@dataclass(slots=True)
class CrawlStats:
    started: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.monotonic)
    captures: int = 0  #: response + revisit records written
    pages: int = 0  #: HTML captures with a 2xx status
    revisits: int = 0
    dedup_bytes_saved: int = 0
    bytes_received: int = 0  #: response bytes as received (headers + body)
    bytes_written: int = 0  #: WARC bytes written (set from the writer)
    retries: int = 0
    seeds: int = 0  #: seeds handed to the frontier (a seeds file's, batch by batch)
    by_status: Counter[str] = field(default_factory=Counter)
    by_status_code: Counter[int] = field(default_factory=Counter)
    by_mime: Counter[str] = field(default_factory=Counter)
    by_host: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    skips: Counter[str] = field(default_factory=Counter)
    truncated: Counter[str] = field(default_factory=Counter)
    seeds_ended: int = 0  #: seeds whose lease ended in this run (not to be retried)
    seeds_captured: int = 0  #: of those, the ones captured (or recalled from a browser's)
    per_second: Counter[int] = field(default_factory=Counter)
    #: per extractor (archiver.extract.found.Extractor): URLs it queued, and how many of those
    #: (or the targets they redirected to) came back 4xx, the noise measure of an extractor
    extractor_queued: Counter[str] = field(default_factory=Counter)
    extractor_4xx: Counter[str] = field(default_factory=Counter)
    #: set when the crawl uses a browser
    browser: BrowserCounters | None = None
    #: set when each page is checked as it is captured (``--qa``)
    qa: QaCounters | None = None
    #: per seed (its key; 0: the crawl's own rules), the first :data:`MAX_SEEDS` seeds
    by_seed: dict[int, SeedCounts] = field(default_factory=dict)
    _largest: list[tuple[int, str, str]] = field(default_factory=list)

    def seed(self, key: int) -> SeedCounts:
        """The counts of the seed ``key`` (past :data:`MAX_SEEDS` seeds, those of the rest)."""
        counts = self.by_seed.get(key)
        if counts is None:
            if len(self.by_seed) >= MAX_SEEDS:
                key = OTHER_SEEDS
                counts = self.by_seed.get(key)
            if counts is None:
                counts = self.by_seed[key] = SeedCounts()
        return counts

    def _bump(self, table: Counter[str], key: str) -> None:
        if key in table or len(table) < MAX_TABLE:
            table[key] += 1
        else:
            table[OTHER] += 1

    def capture(
        self,
        *,
        url: str,
        host: str,
        status: int | None,
        mime: str | None,
        size: int,
        revisit: bool,
        is_page: bool,
        truncated: str | None = None,
    ) -> Counted:
        self.captures += 1
        self.bytes_received += size
        if revisit:
            self.revisits += 1
        if is_page:
            self.pages += 1
        self._bump(self.by_status, status_class(status))
        if status is not None:
            self.by_status_code[status] += 1
        self._bump(self.by_mime, mime or "(none)")
        self._bump(self.by_host, host)
        if truncated:
            self.truncated[truncated] += 1
        second = int(time.monotonic() - self.started_monotonic)
        if second < MAX_SERIES:
            self.per_second[second] += 1
        entry = (size, url, mime or "")
        if len(self._largest) < LARGEST_KEPT:
            heapq.heappush(self._largest, entry)
        elif size > self._largest[0][0]:
            heapq.heapreplace(self._largest, entry)
        return Counted(host, status, mime or "(none)", size, revisit, is_page, truncated, second)

    def withdraw(self, counted: Counted) -> None:
        """Take a capture back out of the figures (see :class:`Counted`). The list of the
        largest resources keeps it: it is a list of sizes seen, not of what was kept."""
        self.captures -= 1
        self.bytes_received -= counted.size
        self.revisits -= counted.revisit
        self.pages -= counted.is_page
        _take(self.by_status, status_class(counted.status), OTHER)
        if counted.status is not None:
            _take(self.by_status_code, counted.status)
        _take(self.by_mime, counted.mime, OTHER)
        _take(self.by_host, counted.host, OTHER)
        if counted.truncated:
            _take(self.truncated, counted.truncated)
        if counted.second < MAX_SERIES:
            _take(self.per_second, counted.second)

    def queued_by(self, extractor: str) -> None:
        """A URL found by ``extractor`` was queued (new to the frontier)."""
        self.extractor_queued[extractor] += 1

    def client_error_of(self, extractor: str) -> None:
        """A URL found by ``extractor`` came back with a 4xx status."""
        self.extractor_4xx[extractor] += 1

    def extractors(self) -> dict[str, dict[str, int]]:
        """``{extractor: {"queued": N, "4xx": M}}``, most queued first."""
        return extractor_table(self.extractor_queued, self.extractor_4xx)

    def failure(self, reason: str) -> None:
        self.failures[reason] += 1

    def skip(self, reason: str) -> None:
        self.skips[reason] += 1

    def seed_ended(self, *, captured: bool) -> None:
        self.seeds_ended += 1
        self.seeds_captured += captured

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started_monotonic

    def largest(self) -> list[tuple[int, str, str]]:
        """The largest resources captured, largest first: (bytes, URL, MIME type)."""
        return sorted(self._largest, reverse=True)
