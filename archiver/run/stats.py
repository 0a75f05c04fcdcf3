"""Crawl counters: what the summary, ``summary.json``, the progress display and the report show.

Updated by the crawler as captures, failures and skips happen; read as immutable snapshots.
Memory stays bounded: per-host and per-MIME tables are capped, the time series is per second
with a cap, and only the largest resources are kept.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MAX_TABLE = 10_000
MAX_SERIES = 86_400 * 2
LARGEST_KEPT = 25


def human_bytes(count: float) -> str:
    """``1.2 MB`` (SI units, as the sizes on the command line)."""
    if count < 1000:
        return f"{int(count)} B"
    for unit in ("KB", "MB", "GB", "TB"):
        count /= 1000
        if count < 1000 or unit == "TB":
            return f"{count:.1f} {unit}"
    return f"{count:.1f} TB"  # pragma: no cover - the loop returns


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

    def summary(self) -> dict[str, Any]:
        return {
            "pages": self.pages,
            "failed": self.failed,
            "retried": self.retried,
            "requests": self.requests,
            "from_records": self.from_records,
            "fetched": self.fetched,
            "refused": dict(self.refused.most_common()),
            "screenshots": self.screenshots,
            "why": dict(self.by_reason.most_common(20)),
        }


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
    #: set when the crawl uses a browser
    browser: BrowserCounters | None = None
    _largest: list[tuple[int, str, str]] = field(default_factory=list)

    def _bump(self, table: Counter[str], key: str) -> None:
        if key in table or len(table) < MAX_TABLE:
            table[key] += 1
        else:
            table["(other)"] += 1

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
    ) -> None:
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

    def summary(self) -> dict[str, Any]:
        elapsed = max(self.elapsed, 1e-9)
        return {
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "duration_seconds": round(self.elapsed, 3),
            "captures": self.captures,
            "pages": self.pages,
            "revisits": self.revisits,
            "dedup_bytes_saved": self.dedup_bytes_saved,
            "bytes_received": self.bytes_received,
            "bytes_written": self.bytes_written,
            "captures_per_second": round(self.captures / elapsed, 2),
            "pages_per_second": round(self.pages / elapsed, 2),
            "retries": self.retries,
            "by_status_class": dict(self.by_status.most_common()),
            "by_status": {str(k): v for k, v in sorted(self.by_status_code.items())},
            "by_mime": dict(self.by_mime.most_common(50)),
            "by_host": dict(self.by_host.most_common(50)),
            "failures": dict(self.failures.most_common()),
            "skips": dict(self.skips.most_common()),
            "truncated": dict(self.truncated),
            "largest": [
                {"url": url, "bytes": size, "mime": mime}
                for size, url, mime in sorted(self._largest, reverse=True)
            ],
            "captures_over_time": [
                [second, count] for second, count in sorted(self.per_second.items())
            ],
            **({"browser": self.browser.summary()} if self.browser is not None else {}),
        }
