"""The figures of a crawl, typed: :class:`Snapshot` (a running crawl, read every half second by
the progress display, ``/status``, ``/metrics`` and the stats lines) and :class:`Summary` (a
finished run: ``summary.json``, the end-of-crawl tables, the report).

Both are frozen and read by field, so a renamed counter is a type error rather than a zero
shown silently. Their JSON (:meth:`Snapshot.to_json`, :meth:`Summary.to_json`) is the shape
``/status``, the stats lines and ``summary.json`` have always had; :meth:`Snapshot.from_json`
and :meth:`Summary.from_json` read it back leniently (another version's summary, a process's
stats line): a missing or mistyped field reads as its default. ``merged()`` makes the figures of
a crawl run by several processes (``--processes N``) from theirs: counters summed, tables
merged, the shared queue's figures taken from the latest report, the time series put on the
supervisor's clock.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from archiver.pipeline.counters import (
    OTHER_SEEDS,
    BrowserCounters,
    CrawlStats,
    QaCounters,
    SeedCounts,
    extractor_table,
)
from archiver.timefmt import parse_w3c_datetime, rfc3339_at, utcnow

#: name -> count: by status class, MIME type, host; failures and skips by reason
Table = Mapping[str, int]
_Figures = TypeVar("_Figures")
#: Rows kept in a summary's per-MIME and per-host tables.
TABLE_ROWS = 50
#: Largest resources kept in a summary.
LARGEST_KEPT = 25
#: Hosts in a snapshot's ``top_hosts`` and ``by_host``.
TOP_HOSTS = 5
#: Seeds listed in a summary (``seeds``, ``by_seed``; a crawl may have a million).
SUMMARY_SEEDS = 100
SNAPSHOT_HOSTS = 20


def human_bytes(count: float) -> str:
    """``1.2 MB`` (SI units, as the sizes on the command line)."""
    if count < 1000:
        return f"{int(count)} B"
    for unit in ("KB", "MB", "GB", "TB"):
        count /= 1000
        if count < 1000 or unit == "TB":
            return f"{count:.1f} {unit}"
    return f"{count:.1f} TB"  # pragma: no cover - the loop returns


# -- a running crawl --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrowserSnapshot:
    """What the browser did so far, in a crawl that uses one."""

    pages: int = 0
    requests: int = 0
    from_records: int = 0
    refused: int = 0
    failed: int = 0

    @classmethod
    def of(cls, counters: BrowserCounters) -> BrowserSnapshot:
        return cls(
            counters.pages,
            counters.requests,
            counters.from_records,
            sum(counters.refused.values()),
            counters.failed,
        )


@dataclass(frozen=True, slots=True)
class QaSnapshot:
    """What the replay check of each page did so far (``--qa``): at the end, equal to
    ``summary.json``'s ``qa`` totals of a crawl run at once."""

    checked: int = 0
    complete: int = 0
    incomplete: int = 0
    misses_found: int = 0
    misses_patched: int = 0

    @classmethod
    def from_totals(cls, totals: Mapping[str, Any]) -> QaSnapshot:
        """The figures of ``summary.json``'s ``qa`` totals."""
        return cls(
            _int(totals.get("pages")),
            _int(totals.get("complete")),
            _int(totals.get("incomplete")),
            _int(totals.get("misses_found")),
            _int(totals.get("misses_patched")),
        )

    def as_totals(self) -> dict[str, int]:
        """These figures in the fields of ``summary.json``'s ``qa``."""
        return {
            "pages": self.checked,
            "complete": self.complete,
            "incomplete": self.incomplete,
            "misses_found": self.misses_found,
            "misses_patched": self.misses_patched,
        }

    @classmethod
    def of(cls, counters: QaCounters) -> QaSnapshot:
        return cls(
            counters.checked,
            counters.by_status["complete"],
            counters.by_status["incomplete"],
            counters.misses_found,
            counters.misses_patched,
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A cheap view of a running crawl (see the module docstring)."""

    elapsed: float = 0.0
    captures: int = 0
    pages: int = 0
    revisits: int = 0
    pages_per_second: float = 0.0
    captures_per_second: float = 0.0
    queued: int = 0  #: the queue's figures: the whole crawl's when it is shared
    in_flight: int = 0
    done: int = 0
    seen: int = 0
    bytes_received: int = 0
    bytes_written: int = 0
    warc_file: str | None = None
    failures: Table = field(default_factory=dict)
    skips: Table = field(default_factory=dict)
    by_status_class: Table = field(default_factory=dict)
    top_hosts: tuple[tuple[str, int], ...] = ()
    retries: int = 0
    by_host: Table = field(default_factory=dict)
    stopping: bool = False
    dedup_bytes_saved: int = 0
    browser: BrowserSnapshot | None = None
    #: crawler processes running, in a crawl of several (``--processes N``)
    processes: int | None = None
    #: the operator paused the crawl (``DIR/paused``): no new fetch starts
    paused: bool = False
    #: the replay check of each page as it is captured (``--qa``)
    qa: QaSnapshot | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``/status`` and the stats lines (``browser``, ``processes`` and
        ``qa`` only when there are)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["failures"] = dict(self.failures)
        data["skips"] = dict(self.skips)
        data["by_status_class"] = dict(self.by_status_class)
        data["top_hosts"] = [list(pair) for pair in self.top_hosts]
        data["by_host"] = dict(self.by_host)
        if self.browser is None:
            del data["browser"]
        else:
            data["browser"] = dataclasses.asdict(self.browser)
        if self.processes is None:
            del data["processes"]
        if self.qa is None:
            del data["qa"]
        else:
            data["qa"] = dataclasses.asdict(self.qa)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        """A snapshot read back from its JSON (a crawler process's stats line, where
        ``top_hosts`` is an object)."""
        browser = data.get("browser")
        qa = data.get("qa")
        return cls(
            elapsed=_float(data.get("elapsed")),
            captures=_int(data.get("captures")),
            pages=_int(data.get("pages")),
            revisits=_int(data.get("revisits")),
            pages_per_second=_float(data.get("pages_per_second")),
            captures_per_second=_float(data.get("captures_per_second")),
            queued=_int(data.get("queued")),
            in_flight=_int(data.get("in_flight")),
            done=_int(data.get("done")),
            seen=_int(data.get("seen")),
            bytes_received=_int(data.get("bytes_received")),
            bytes_written=_int(data.get("bytes_written")),
            warc_file=_str(data.get("warc_file")),
            failures=_table(data.get("failures")),
            skips=_table(data.get("skips")),
            by_status_class=_table(data.get("by_status_class")),
            top_hosts=tuple(_table(data.get("top_hosts")).items()),
            retries=_int(data.get("retries")),
            by_host=_table(data.get("by_host")),
            stopping=data.get("stopping") is True,
            dedup_bytes_saved=_int(data.get("dedup_bytes_saved")),
            browser=_read(BrowserSnapshot, browser) if isinstance(browser, Mapping) else None,
            processes=_int(data["processes"]) if "processes" in data else None,
            paused=data.get("paused") is True,
            qa=_read(QaSnapshot, qa) if isinstance(qa, Mapping) else None,
        )

    @classmethod
    def merged(
        cls,
        parts: Sequence[Snapshot],
        *,
        queue: Snapshot | None,
        elapsed: float,
        stopping: bool,
        processes: int,
    ) -> Snapshot:
        """The crawl's snapshot from its processes' (those of ended runs too: their counts stay
        in the sum). The queue's figures are the same for every process: they are taken from
        ``queue``, the latest report."""
        elapsed = max(elapsed, 1e-9)
        pages = sum(p.pages for p in parts)
        captures = sum(p.captures for p in parts)
        files = [p.warc_file for p in parts if p.warc_file]
        hosts = _added(p.by_host or dict(p.top_hosts) for p in parts)
        browsers = [p.browser for p in parts if p.browser is not None]
        checks = [p.qa for p in parts if p.qa is not None]
        return cls(
            elapsed=round(elapsed, 1),
            captures=captures,
            pages=pages,
            revisits=sum(p.revisits for p in parts),
            pages_per_second=round(pages / elapsed, 2),
            captures_per_second=round(captures / elapsed, 2),
            queued=queue.queued if queue else 0,
            in_flight=sum(p.in_flight for p in parts),
            done=queue.done if queue else 0,
            seen=queue.seen if queue else 0,
            bytes_received=sum(p.bytes_received for p in parts),
            bytes_written=sum(p.bytes_written for p in parts),
            warc_file=files[-1] if files else None,
            failures=dict(_added(p.failures for p in parts).most_common()),
            skips=dict(_added(p.skips for p in parts).most_common()),
            by_status_class=dict(_added(p.by_status_class for p in parts).most_common()),
            top_hosts=tuple(_added(dict(p.top_hosts) for p in parts).most_common(TOP_HOSTS)),
            retries=sum(p.retries for p in parts),
            by_host=dict(hosts.most_common(SNAPSHOT_HOSTS)),
            stopping=stopping,
            dedup_bytes_saved=sum(p.dedup_bytes_saved for p in parts),
            browser=_summed(BrowserSnapshot, browsers) if browsers else None,
            processes=processes,
            qa=_summed(QaSnapshot, checks) if checks else None,
        )


# -- a finished run ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run of a crawl, as the crawl's summary lists its runs (``runs``)."""

    started: str = ""
    duration_seconds: float = 0.0
    status: str | None = None
    reason: str | None = None
    resumed: bool = False
    captures: int = 0
    pages: int = 0
    bytes_received: int = 0
    bytes_written: int = 0

    @classmethod
    def of(cls, summary: Summary) -> RunEntry:
        return cls(
            started=summary.started,
            duration_seconds=summary.duration_seconds,
            status=summary.status,
            reason=summary.reason,
            resumed=summary.resumed,
            captures=summary.captures,
            pages=summary.pages,
            bytes_received=summary.bytes_received,
            bytes_written=summary.bytes_written,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunEntry:
        return cls(
            started=_str(data.get("started")) or "",
            duration_seconds=_float(data.get("duration_seconds")),
            status=_str(data.get("status")),
            reason=_str(data.get("reason")),
            resumed=data.get("resumed") is True,
            captures=_int(data.get("captures")),
            pages=_int(data.get("pages")),
            bytes_received=_int(data.get("bytes_received")),
            bytes_written=_int(data.get("bytes_written")),
        )


#: Seeds listed in ``summary.json`` at most (the rest are counted).
SUMMARY_SEEDS = 100


@dataclass(frozen=True, slots=True)
class BrowserSummary:
    """What the browser did in a run that used one."""

    pages: int = 0  #: pages loaded in the browser and read
    failed: int = 0  #: pages given up with reason ``browser`` (after their retries)
    retried: int = 0  #: loads that failed and were tried again later
    requests: int = 0  #: requests the pages made (each answered or refused once)
    from_records: int = 0  #: requests answered from a capture the crawl already held
    fetched: int = 0  #: requests performed by the fetcher and recorded
    refused: Table = field(default_factory=dict)  #: requests refused, by reason
    screenshots: int = 0
    why: Table = field(default_factory=dict)  #: why pages went to the browser
    behaviors: Table = field(default_factory=dict)  #: pages each behaviour ran on
    behavior_links: Table = field(default_factory=dict)  #: URLs each behaviour found
    #: pages on which a behaviour stopped at its step limit or its time
    behavior_bounds: Table = field(default_factory=dict)
    routes: int = 0  #: hash routes rendered as pages of their own
    clicks: int = 0  #: elements the behaviours clicked
    plays: int = 0  #: media elements played
    typed: int = 0  #: search boxes typed into
    navigations_blocked: int = 0  #: navigations away from a page, prevented
    popups_blocked: int = 0  #: windows pages tried to open, refused

    def as_snapshot(self) -> BrowserSnapshot:
        refused = sum(self.refused.values())
        return BrowserSnapshot(self.pages, self.requests, self.from_records, refused, self.failed)

    @classmethod
    def of(cls, counters: BrowserCounters) -> BrowserSummary:
        return cls(
            pages=counters.pages,
            failed=counters.failed,
            retried=counters.retried,
            requests=counters.requests,
            from_records=counters.from_records,
            fetched=counters.fetched,
            refused=dict(counters.refused.most_common()),
            screenshots=counters.screenshots,
            why=dict(counters.by_reason.most_common(20)),
            behaviors=dict(counters.behaviors.most_common()),
            behavior_links=dict(counters.behavior_links.most_common()),
            behavior_bounds=dict(counters.behavior_bounds.most_common()),
            routes=counters.routes,
            clicks=counters.clicks,
            plays=counters.plays,
            typed=counters.typed,
            navigations_blocked=counters.navigations_blocked,
            popups_blocked=counters.popups_blocked,
        )


@dataclass(frozen=True, slots=True)
class Largest:
    """One of the largest resources captured."""

    url: str
    bytes: int
    mime: str


@dataclass(frozen=True, slots=True)
class SeedFigures:
    """What one seed's URLs came to in a run (``summary.json``'s ``by_seed``): its URL (or
    ``(the crawl's rules)`` for URLs no seed judges, ``(other seeds)`` past the seeds counted
    each on its own), and its counts (:class:`archiver.pipeline.counters.SeedCounts`)."""

    seed: str
    pages: int = 0
    captures: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0


#: The names ``by_seed`` gives what is not one seed.
CRAWL_RULES = "(the crawl's rules)"
OTHER_SEEDS_NAME = "(other seeds)"


def seed_figures(
    counts: Mapping[int, SeedCounts], name: Callable[[int], str | None]
) -> tuple[SeedFigures, ...]:
    """``by_seed`` from a run's counts: the :data:`SUMMARY_SEEDS` seeds with the most captures
    (then the most URLs done), each named by ``name(key)``; the rest in one row."""
    rows = [
        SeedFigures(_seed_name(key, name), c.pages, c.captures, c.done, c.failed, c.skipped)
        for key, c in counts.items()
    ]
    return _top_seeds(rows)


def _seed_name(key: int, name: Callable[[int], str | None]) -> str:
    if key == 0:
        return CRAWL_RULES
    if key == OTHER_SEEDS:
        return OTHER_SEEDS_NAME
    return name(key) or f"(seed {key:012x})"


def _top_seeds(rows: Iterable[SeedFigures]) -> tuple[SeedFigures, ...]:
    """The rows by name (added up: the processes of a crawl), the :data:`SUMMARY_SEEDS`
    busiest first, the rest in one row."""
    by_name: dict[str, SeedFigures] = {}
    for row in rows:
        known = by_name.get(row.seed)
        by_name[row.seed] = row if known is None else _seed_sum(row.seed, [known, row])
    ordered = sorted(by_name.values(), key=lambda r: (-r.captures, -r.done, r.seed))
    if len(ordered) <= SUMMARY_SEEDS:
        return tuple(ordered)
    kept = [r for r in ordered[:SUMMARY_SEEDS] if r.seed != OTHER_SEEDS_NAME]
    rest = [r for r in ordered if r not in kept]
    return (*kept, _seed_sum(OTHER_SEEDS_NAME, rest))


def _seed_sum(name: str, rows: Sequence[SeedFigures]) -> SeedFigures:
    return SeedFigures(
        name,
        sum(r.pages for r in rows),
        sum(r.captures for r in rows),
        sum(r.done for r in rows),
        sum(r.failed for r in rows),
        sum(r.skipped for r in rows),
    )


def _seed_row(row: Mapping[str, Any]) -> SeedFigures:
    return SeedFigures(
        _str(row.get("seed")) or "",
        _int(row.get("pages")),
        _int(row.get("captures")),
        _int(row.get("done")),
        _int(row.get("failed")),
        _int(row.get("skipped")),
    )


@dataclass(frozen=True, slots=True)
class Summary:
    """A run's figures and how it ended: ``summary.json`` (see the module docstring)."""

    started: str = ""  #: UTC, ``2024-01-02T03:04:05Z``
    duration_seconds: float = 0.0
    captures: int = 0  #: response and revisit records written
    pages: int = 0  #: HTML captures with a 2xx status
    revisits: int = 0
    dedup_bytes_saved: int = 0
    bytes_received: int = 0
    bytes_written: int = 0
    captures_per_second: float = 0.0
    pages_per_second: float = 0.0
    retries: int = 0
    by_status_class: Table = field(default_factory=dict)
    by_status: Table = field(default_factory=dict)  #: by code (``"200"``), in numeric order
    by_mime: Table = field(default_factory=dict)
    by_host: Table = field(default_factory=dict)
    failures: Table = field(default_factory=dict)
    skips: Table = field(default_factory=dict)
    truncated: Table = field(default_factory=dict)
    #: per extractor: ``{"queued": N, "4xx": M}`` (the URLs it queued, those that came back 4xx)
    extractors: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    largest: tuple[Largest, ...] = ()
    captures_over_time: tuple[tuple[int, int], ...] = ()  #: (second, captures)
    browser: BrowserSummary | None = None
    #: per seed, the busiest first (:func:`seed_figures`)
    by_seed: tuple[SeedFigures, ...] = ()
    # how the run ended, and what it wrote (None in a process's figures read from its last
    # stats line: it was killed before it could say)
    status: str | None = None
    reason: str | None = None
    output: str | None = None
    resumed: bool = False
    #: the first :data:`SUMMARY_SEEDS` seeds (a seeds file may hold millions: the summary
    #: keeps their count, ``seeds_count``, not their list)
    seeds: tuple[str, ...] = ()
    seeds_count: int = 0  #: seeds handed to the frontier by the run
    warc_files: tuple[str, ...] = ()
    index: str | None = None
    wacz: str | None = None
    #: what later runs deduplicating against this one inherit originals through
    dedup_sources: tuple[str, ...] = ()
    #: the earlier WARC files this run's revisits need for replay
    depends_on: tuple[Mapping[str, Any], ...] = ()
    traps: tuple[Mapping[str, Any], ...] = ()
    robots: Mapping[str, Any] | None = None
    frontier: Mapping[str, Any] | None = None
    version: str | None = None
    wacz_error: str | None = None
    #: why the WACZ is unsigned (``--wacz-sign``, ``--wacz-sign-key``), or who signed it
    wacz_signing_error: str | None = None
    wacz_signed_by: str | None = None
    #: a crawl of several processes: how many, and each run of each
    processes: Mapping[str, Any] | None = None
    #: the totals of the latest replay check (``archiver qa``, written by :mod:`archiver.qa`)
    qa: Mapping[str, Any] | None = None
    #: every run of the crawl, first to last (this one last); the figures above are their sum
    runs: tuple[RunEntry, ...] = ()

    @classmethod
    def counted(
        cls, stats: CrawlStats, seed_name: Callable[[int], str | None] = lambda _: None
    ) -> Summary:
        """The figures one run's pipeline counted (its ending is added by the run);
        ``seed_name`` names a seed by its key."""
        elapsed = stats.elapsed
        rate_time = max(elapsed, 1e-9)
        return cls(
            started=rfc3339_at(stats.started),
            duration_seconds=round(elapsed, 3),
            captures=stats.captures,
            pages=stats.pages,
            revisits=stats.revisits,
            dedup_bytes_saved=stats.dedup_bytes_saved,
            bytes_received=stats.bytes_received,
            bytes_written=stats.bytes_written,
            captures_per_second=round(stats.captures / rate_time, 2),
            pages_per_second=round(stats.pages / rate_time, 2),
            retries=stats.retries,
            by_status_class=dict(stats.by_status.most_common()),
            by_status={str(k): v for k, v in sorted(stats.by_status_code.items())},
            by_mime=dict(stats.by_mime.most_common(TABLE_ROWS)),
            by_host=dict(stats.by_host.most_common(TABLE_ROWS)),
            failures=dict(stats.failures.most_common()),
            skips=dict(stats.skips.most_common()),
            truncated=dict(stats.truncated),
            extractors=stats.extractors(),
            largest=tuple(Largest(url, size, mime) for size, url, mime in stats.largest()),
            captures_over_time=tuple(sorted(stats.per_second.items())),
            browser=BrowserSummary.of(stats.browser) if stats.browser is not None else None,
            by_seed=seed_figures(stats.by_seed, seed_name),
            seeds_count=stats.seeds,
        )

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot) -> Summary:
        """What a process killed before it wrote its summary counted: its last stats line."""
        return cls(
            captures=snapshot.captures,
            pages=snapshot.pages,
            revisits=snapshot.revisits,
            dedup_bytes_saved=snapshot.dedup_bytes_saved,
            bytes_received=snapshot.bytes_received,
            bytes_written=snapshot.bytes_written,
            retries=snapshot.retries,
            by_status_class=snapshot.by_status_class,
            by_host=snapshot.by_host or dict(snapshot.top_hosts),
            failures=snapshot.failures,
            skips=snapshot.skips,
        )

    def as_snapshot(self) -> Snapshot:
        """What an ended run of a process adds to the crawl's live figures."""
        return Snapshot(
            captures=self.captures,
            pages=self.pages,
            revisits=self.revisits,
            bytes_received=self.bytes_received,
            bytes_written=self.bytes_written,
            failures=self.failures,
            skips=self.skips,
            by_status_class=self.by_status_class,
            top_hosts=tuple(self.by_host.items()),
            retries=self.retries,
            by_host=self.by_host,
            dedup_bytes_saved=self.dedup_bytes_saved,
            browser=None if self.browser is None else self.browser.as_snapshot(),
            qa=None if self.qa is None else QaSnapshot.from_totals(self.qa),
        )

    @classmethod
    def merged(
        cls, parts: Sequence[tuple[float, Summary]], *, started: float, duration: float
    ) -> Summary:
        """The crawl's figures from its processes' summaries: ``(offset, summary)``, the offset
        being the seconds from the supervisor's start to the process's. ``started`` is the
        supervisor's start (epoch seconds), ``duration`` its run time. Traps and robots.txt
        figures are merged from the summaries that are whole (not read from a stats line)."""
        summaries = [part for _, part in parts]
        whole = [part for part in summaries if part.status is not None]
        rate_time = max(duration, 1e-9)
        captures = sum(s.captures for s in summaries)
        pages = sum(s.pages for s in summaries)
        browsers = [s.browser for s in summaries if s.browser is not None]
        largest = heapq.nlargest(
            LARGEST_KEPT, (e for s in summaries for e in s.largest), key=lambda e: e.bytes
        )
        by_status = _added(s.by_status for s in summaries)
        return cls(
            started=rfc3339_at(started),
            duration_seconds=round(rate_time, 3),
            captures=captures,
            pages=pages,
            revisits=sum(s.revisits for s in summaries),
            dedup_bytes_saved=sum(s.dedup_bytes_saved for s in summaries),
            bytes_received=sum(s.bytes_received for s in summaries),
            bytes_written=sum(s.bytes_written for s in summaries),
            captures_per_second=round(captures / rate_time, 2),
            pages_per_second=round(pages / rate_time, 2),
            retries=sum(s.retries for s in summaries),
            by_status_class=dict(_added(s.by_status_class for s in summaries).most_common()),
            by_status={k: by_status[k] for k in sorted(by_status, key=_status_order)},
            by_mime=dict(_added(s.by_mime for s in summaries).most_common(TABLE_ROWS)),
            by_host=dict(_added(s.by_host for s in summaries).most_common(TABLE_ROWS)),
            failures=dict(_added(s.failures for s in summaries).most_common()),
            skips=dict(_added(s.skips for s in summaries).most_common()),
            truncated=dict(_added(s.truncated for s in summaries).most_common()),
            extractors=_merged_extractors(s.extractors for s in summaries),
            largest=tuple(largest),
            captures_over_time=_series(parts),
            browser=_summed(BrowserSummary, browsers) if browsers else None,
            by_seed=_top_seeds(row for s in summaries for row in s.by_seed),
            traps=_merged_traps(s.traps for s in whole),
            robots=_merged_robots([s.robots for s in whole if s.robots is not None]),
            # every process feeds the whole seeds file (the shared frontier keeps each once)
            seeds_count=max((s.seeds_count for s in summaries), default=0),
        )

    def across_runs(self, earlier: Summary | None, history: Sequence[RunEntry] = ()) -> Summary:
        """The whole crawl: this run added to the ones before it, with the list of runs. How
        the crawl stands (status, reason, files, seeds, …) is this run's; its figures are the
        sum, so no rerun or resume lowers a count (a run that captures nothing adds nothing).

        ``earlier`` is what summary.json said before this run (every earlier run that wrote
        one, added up: its tables, its time series); ``history`` the earlier runs as
        ``state/crawl.json`` records them, with the figures each reached (written at its end,
        and every couple of seconds while it ran: a run killed before it wrote a summary is
        counted there). The counts are the larger of the two sums, plus this run's."""
        entry = RunEntry.of(self)
        known = earlier if earlier is not None and (earlier.started or earlier.runs) else None
        runs = tuple(history) or (known.runs or (RunEntry.of(known),) if known else ())
        total = self
        if known is not None:
            total = Summary.merged(
                [(0.0, known), (known.duration_seconds, self)],
                started=_epoch(known.started),
                duration=known.duration_seconds + self.duration_seconds,
            )
        counts: dict[str, Any] = {
            f.name: getattr(total, f.name) for f in dataclasses.fields(Summary) if f.name in _SUMMED
        }
        for name in ("captures", "pages", "bytes_received", "bytes_written", "duration_seconds"):
            before = max(sum(getattr(run, name) for run in runs), getattr(known, name, 0) or 0)
            counts[name] = before + getattr(self, name)
        first = next((run.started for run in runs if run.started), None)
        counts["started"] = first or (known.started if known else self.started)
        elapsed = max(counts["duration_seconds"], 1e-9)
        counts["captures_per_second"] = round(counts["captures"] / elapsed, 2)
        counts["pages_per_second"] = round(counts["pages"] / elapsed, 2)
        return dataclasses.replace(
            self,
            **counts,
            seeds_count=max(known.seeds_count if known else 0, self.seeds_count),
            runs=(*runs, entry),
        )

    def to_json(self) -> dict[str, Any]:
        """``summary.json``'s object (``browser``, the WACZ's errors and signer, and
        ``processes`` only when there are)."""
        data: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, tuple):
                value = [_json_item(item) for item in value]
            elif dataclasses.is_dataclass(value):
                value = dataclasses.asdict(value)  # type: ignore[arg-type]
            data[f.name] = value
        for optional in (
            "browser",
            "wacz_error",
            "wacz_signing_error",
            "wacz_signed_by",
            "processes",
            "qa",
        ):
            if data[optional] is None:
                del data[optional]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """A summary read back from ``summary.json`` (see the module docstring)."""
        browser = data.get("browser")
        return cls(
            started=_str(data.get("started")) or "",
            duration_seconds=_float(data.get("duration_seconds")),
            captures=_int(data.get("captures")),
            pages=_int(data.get("pages")),
            revisits=_int(data.get("revisits")),
            dedup_bytes_saved=_int(data.get("dedup_bytes_saved")),
            bytes_received=_int(data.get("bytes_received")),
            bytes_written=_int(data.get("bytes_written")),
            captures_per_second=_float(data.get("captures_per_second")),
            pages_per_second=_float(data.get("pages_per_second")),
            retries=_int(data.get("retries")),
            by_status_class=_table(data.get("by_status_class")),
            by_status=_table(data.get("by_status")),
            by_mime=_table(data.get("by_mime")),
            by_host=_table(data.get("by_host")),
            failures=_table(data.get("failures")),
            skips=_table(data.get("skips")),
            truncated=_table(data.get("truncated")),
            extractors=_extractors(data.get("extractors")),
            largest=tuple(
                Largest(_str(e.get("url")) or "", _int(e.get("bytes")), _str(e.get("mime")) or "")
                for e in _list(data.get("largest"))
                if isinstance(e, Mapping)
            ),
            captures_over_time=tuple(
                (_int(point[0]), _int(point[1]))
                for point in _list(data.get("captures_over_time"))
                if isinstance(point, list | tuple) and len(point) == 2
            ),
            browser=_read(BrowserSummary, browser) if isinstance(browser, Mapping) else None,
            by_seed=tuple(_seed_row(row) for row in _objects(data.get("by_seed"))),
            status=_str(data.get("status")),
            reason=_str(data.get("reason")),
            output=_str(data.get("output")),
            resumed=data.get("resumed") is True,
            seeds=tuple(s for s in _list(data.get("seeds")) if isinstance(s, str)),
            seeds_count=_int(data.get("seeds_count")),
            runs=tuple(
                RunEntry.from_json(run)
                for run in _list(data.get("runs"))
                if isinstance(run, Mapping)
            ),
            warc_files=tuple(s for s in _list(data.get("warc_files")) if isinstance(s, str)),
            index=_str(data.get("index")),
            wacz=_str(data.get("wacz")),
            dedup_sources=tuple(s for s in _list(data.get("dedup_sources")) if isinstance(s, str)),
            depends_on=_objects(data.get("depends_on")),
            traps=_objects(data.get("traps")),
            robots=_object(data.get("robots")),
            frontier=_object(data.get("frontier")),
            version=_str(data.get("version")),
            wacz_error=_str(data.get("wacz_error")),
            wacz_signing_error=_str(data.get("wacz_signing_error")),
            wacz_signed_by=_str(data.get("wacz_signed_by")),
            processes=_object(data.get("processes")),
            qa=_object(data.get("qa")),
        )


# -- reading JSON leniently -------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _object(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def _objects(value: Any) -> tuple[Mapping[str, Any], ...]:
    return tuple(item for item in _list(value) if isinstance(item, Mapping))


def _table(value: Any) -> dict[str, int]:
    """A table from an object, or from ``[[name, count], ...]`` (``top_hosts``)."""
    if isinstance(value, Mapping):
        pairs: Iterable[Any] = value.items()
    elif isinstance(value, list):
        pairs = (pair for pair in value if isinstance(pair, list | tuple) and len(pair) == 2)
    else:
        return {}
    return {str(name): _int(count) for name, count in pairs}


def _read(kind: type[_Figures], data: Mapping[str, Any]) -> _Figures:
    """A figures dataclass (counts and tables) from a JSON object."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(kind):  # type: ignore[arg-type]
        value = data.get(f.name)
        values[f.name] = _table(value) if _is_table(f) else _int(value)
    return kind(**values)


def _is_table(f: dataclasses.Field[Any]) -> bool:
    """Whether a field of a figures dataclass is a table (the counts are ints)."""
    return f.default_factory is dict


#: The figures a crawl's summary adds up over its runs (:meth:`Summary.across_runs`).
_SUMMED = frozenset(
    {
        "started", "duration_seconds", "captures", "pages", "revisits", "dedup_bytes_saved",
        "bytes_received", "bytes_written", "captures_per_second", "pages_per_second",
        "retries", "by_status_class", "by_status", "by_mime", "by_host", "failures", "skips",
        "truncated", "largest", "captures_over_time", "browser", "traps", "robots", "by_seed",
    }
)  # fmt: skip


def _epoch(started: str) -> float:
    """Epoch seconds of a summary's ``started`` (``2024-01-02T03:04:05Z``); now when unread."""
    moment = parse_w3c_datetime(started)
    return moment.timestamp() if moment is not None else utcnow().timestamp()


def _json_item(item: Any) -> Any:
    if dataclasses.is_dataclass(item):
        return dataclasses.asdict(item)  # type: ignore[arg-type]
    if isinstance(item, tuple):
        return list(item)
    if isinstance(item, Mapping):
        return dict(item)
    return item


# -- merging ----------------------------------------------------------------------------------


def _added(tables: Iterable[Table]) -> Counter[str]:
    total: Counter[str] = Counter()
    for table in tables:
        for name, count in table.items():
            total[name] += count
    return total


def _summed(kind: type[_Figures], parts: Sequence[_Figures]) -> _Figures:
    """Figures of several processes added up, field by field (tables merged)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(kind):  # type: ignore[arg-type]
        if _is_table(f):
            values[f.name] = dict(_added(getattr(p, f.name) for p in parts).most_common())
        else:
            values[f.name] = sum(getattr(p, f.name) for p in parts)
    return kind(**values)


def _series(parts: Sequence[tuple[float, Summary]]) -> tuple[tuple[int, int], ...]:
    """captures_over_time on the supervisor's clock: each process's seconds shifted by when
    it started."""
    total: Counter[int] = Counter()
    for offset, part in parts:
        for second, count in part.captures_over_time:
            total[int(offset) + second] += count
    return tuple(sorted(total.items()))


def _status_order(code: str) -> tuple[int, str]:
    return (int(code), code) if code.isdigit() else (10**6, code)


def _merged_robots(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The robots.txt figures of every process, added up (None when none had any)."""
    if not parts:
        return None
    merged: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, Mapping):
                merged[key] = dict(_added([merged.get(key, {}), _table(value)]))
            else:
                merged[key] = merged.get(key, 0) + _int(value)
    return merged


def _extractors(value: Any) -> dict[str, dict[str, int]]:
    """The per-extractor table of a summary read back (entries that are not one dropped)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(name): {"queued": _int(counts.get("queued")), "4xx": _int(counts.get("4xx"))}
        for name, counts in value.items()
        if isinstance(counts, Mapping)
    }


def _merged_extractors(
    tables: Iterable[Mapping[str, Mapping[str, int]]],
) -> dict[str, dict[str, int]]:
    """The processes' per-extractor tables added up."""
    queued: Counter[str] = Counter()
    client_errors: Counter[str] = Counter()
    for table in tables:
        for name, counts in table.items():
            queued[name] += _int(counts.get("queued"))
            client_errors[name] += _int(counts.get("4xx"))
    return extractor_table(queued, client_errors)


def _merged_traps(
    parts: Iterable[Sequence[Mapping[str, Any]]],
) -> tuple[Mapping[str, Any], ...]:
    """The traps every process found: one row per kind and pattern, URLs skipped summed."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for traps in parts:
        for trap in traps:
            key = (str(trap.get("kind")), str(trap.get("pattern")))
            row = rows.setdefault(key, {**trap, "skipped": 0})
            row["skipped"] = _int(row["skipped"]) + _int(trap.get("skipped"))
    return tuple(sorted(rows.values(), key=lambda r: -_int(r.get("skipped"))))


__all__ = [
    "BrowserSnapshot",
    "BrowserSummary",
    "Largest",
    "QaSnapshot",
    "Snapshot",
    "Summary",
    "Table",
    "human_bytes",
]
