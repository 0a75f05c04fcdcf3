"""What a crawl shows while it runs and when it ends: a live display on a terminal, a JSON
stats line every few seconds otherwise, and the summary tables at the end.

The display polls the crawl's :meth:`~archiver.run.crawler.CrawlControl.snapshot` (a cheap,
frozen :class:`~archiver.run.stats.Snapshot`) from a coroutine every half second; the crawler
knows nothing about it, so there are no callbacks into the crawl and a slow terminal cannot slow
a worker down. Where it goes:

- ``--quiet``: nothing.
- a terminal (``--progress auto``) or ``--progress on``: a rich ``Live`` panel on stderr,
  redrawn in place. It is *transient*: at the end it is erased and the summary tables take its
  place, so the final screen shows each number once, and a crawl never leaves a stale
  half-updated panel above its summary. Log lines (warnings, ``-v`` fetch lines) are printed
  above the panel through :attr:`Display.log_stream`.
- otherwise (cron, CI, ``--progress off``): one compact JSON line ``{"event":"stats",…}`` every
  ``--stats-interval`` seconds (none when it is 0), in the spirit of Browsertrix's JSON-lines
  stats and Heritrix's ``progress-statistics.log``.

rich is imported here and nowhere else.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import enum
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, cast

from rich import box
from rich.columns import Columns
from rich.console import Console, Group, RenderableType
from rich.file_proxy import FileProxy
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from archiver.run.stats import BrowserSnapshot, QaSnapshot, Snapshot, Summary, human_bytes
from archiver.timefmt import rfc3339_millis_at

if TYPE_CHECKING:
    from archiver.config.settings import Settings
    from archiver.run.crawler import CrawlResult

#: Seconds between redraws of the live display.
REFRESH_SECONDS = 0.5
#: The "now" rate is measured over this many seconds of recent snapshots.
RATE_WINDOW_SECONDS = 10.0
TOP_HOSTS = 5
SUMMARY_ROWS = 8

STATUS_STYLES = {
    "2xx": "green",
    "3xx": "cyan",
    "4xx": "yellow",
    "5xx": "red",
}
RESULT_STYLES = {
    "completed": "bold green",
    "limit": "bold green",
    "interrupted": "bold yellow",
    "failed": "bold red",
}


class SnapshotSource(Protocol):
    """What the display polls: a :class:`archiver.run.crawler.CrawlControl` satisfies it."""

    def snapshot(self) -> Snapshot: ...


class Mode(enum.StrEnum):
    LIVE = "live"  #: rich Live panel, redrawn in place
    LINES = "lines"  #: a JSON stats line every stats_interval
    OFF = "off"  #: nothing


def choose_mode(*, quiet: bool, progress: str, stats_interval: float | None, is_tty: bool) -> Mode:
    """``--quiet`` wins; then ``--progress on`` (or ``auto`` on a terminal) draws the panel;
    otherwise stats lines, unless their interval is 0."""
    if quiet:
        return Mode.OFF
    if progress == "on" or (progress == "auto" and is_tty):
        return Mode.LIVE
    if stats_interval:
        return Mode.LINES
    return Mode.OFF


def human_duration(seconds: float) -> str:
    """``0:01:23`` (hours grow past 24 rather than adding days)."""
    whole = int(max(seconds, 0))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _iso_now() -> str:
    return rfc3339_millis_at(time.time())


def stats_line(snapshot: Snapshot, *, now: str | None = None) -> str:
    """The compact JSON stats line for one snapshot (no newline)."""
    data: dict[str, Any] = {"event": "stats", "timestamp": now or _iso_now()}
    for key, value in snapshot.to_json().items():
        data[key] = {str(host): count for host, count in value} if key == "top_hosts" else value
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)


class _Rate:
    """Pages per second over the last few seconds (the average since the start hides stalls)."""

    def __init__(self, window: float = RATE_WINDOW_SECONDS) -> None:
        self.window = window
        self._samples: collections.deque[tuple[float, int]] = collections.deque()

    def add(self, at: float, pages: int) -> float | None:
        samples = self._samples
        samples.append((at, pages))
        while len(samples) > 2 and at - samples[1][0] >= self.window:
            samples.popleft()
        first_at, first_pages = samples[0]
        if at - first_at < 1e-3:
            return None
        return (pages - first_pages) / (at - first_at)


def _counts(items: Mapping[str, int] | Sequence[Sequence[Any]], limit: int = 6) -> Text:
    """``a 3 · b 2`` from a mapping or ``[(key, count), …]``; ``-`` when empty."""
    pairs = list(items.items()) if isinstance(items, Mapping) else [(k, v) for k, v in items]
    if not pairs:
        return Text("-", style="dim")
    text = Text()
    for n, (key, count) in enumerate(pairs[:limit]):
        if n:
            text.append(" · ", style="dim")
        text.append(str(key), style=STATUS_STYLES.get(str(key), ""))
        text.append(f" {count}", style="bold")
    if len(pairs) > limit:
        text.append(f" · +{len(pairs) - limit} more", style="dim")
    return text


def render_snapshot(
    snapshot: Snapshot, *, title: str = "", rate_now: float | None = None
) -> RenderableType:
    """The live panel for one snapshot (pure: the tests render it into a recording console)."""
    s = snapshot
    done, queued, in_flight = s.done, s.queued, s.in_flight
    known = done + queued + in_flight
    head = Text()
    head.append("archiver ", style="bold")
    state = "stopping… " if s.stopping else "paused " if s.paused else "crawling "
    head.append(state, style="bold red" if s.paused and not s.stopping else "yellow")
    if title:
        head.append(title + "  ")
    head.append(human_duration(s.elapsed), style="dim")
    if s.processes is not None:  # a crawl of several processes (--processes N): how many run
        head.append(f"  {s.processes} processes", style="dim")

    bar = Table.grid(padding=(0, 1))
    bar.add_row(
        ProgressBar(total=max(known, 1), completed=done, width=30),
        Text.assemble(
            (f"{done}", "bold"),
            " done · ",
            (f"{queued}", "bold"),
            " queued · ",
            (f"{in_flight}", "bold"),
            " in flight",
        ),
    )

    rate = Text.assemble((f"{s.pages_per_second:.1f}", "bold"), " pages/s")
    if rate_now is not None:
        rate.append(f" (now {rate_now:.1f})", style="dim")

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold blue", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(
        "pages",
        Text.assemble(
            (str(s.pages), "bold"),
            "  captures ",
            (str(s.captures), "bold"),
            "  revisits ",
            (str(s.revisits), "bold"),
            "  ",
            rate,
        ),
    )
    grid.add_row(
        "bytes",
        Text.assemble(
            "received ",
            (human_bytes(s.bytes_received), "bold"),
            "  WARC written ",
            (human_bytes(s.bytes_written), "bold"),
        ),
    )
    if s.browser is not None:
        grid.add_row("browser", _browser_text(s.browser))
    if s.qa is not None:
        grid.add_row("replay", _qa_text(s.qa))
    grid.add_row("WARC", Text(s.warc_file or "-", overflow="ellipsis"))
    grid.add_row("status", _counts(s.by_status_class))
    grid.add_row("failed", _counts(s.failures))
    grid.add_row("skipped", _counts(s.skips))
    grid.add_row("hosts", _counts(s.top_hosts, TOP_HOSTS))
    return Group(head, bar, grid)


def _browser_text(browser: BrowserSnapshot) -> Text:
    """Pages through the browser, the requests they made, how many came from records."""
    text = Text.assemble(
        (str(browser.pages), "bold"),
        " pages  requests ",
        (str(browser.requests), "bold"),
        "  from records ",
        (str(browser.from_records), "bold"),
    )
    if browser.refused:
        text.append(f"  refused {browser.refused}")
    if browser.failed:
        text.append(f"  failed {browser.failed}", style="red")
    return text


def _qa_text(qa: QaSnapshot) -> Text:
    """The replay check of each page (``--qa``): pages checked, how they replay, what their
    checks found missing and how much of it was captured since."""
    text = Text.assemble(
        (str(qa.checked), "bold"),
        " checked  complete ",
        (str(qa.complete), "bold"),
        "  misses found ",
        (str(qa.misses_found), "bold"),
        "  patched ",
        (str(qa.misses_patched), "bold"),
    )
    if qa.incomplete:
        text.append(f"  incomplete {qa.incomplete}", style="red")
    return text


class Display:
    """Progress for one crawl run. Build it before the crawler (which writes its console log
    lines to :attr:`log_stream`), then ``async with display.watching(crawler): await run()``.

    ``console`` replaces the stderr console (tests pass a recording one); ``refresh`` and
    ``clock`` are there for tests too.
    """

    def __init__(
        self,
        settings: Settings,
        stream: IO[str],
        *,
        console: Console | None = None,
        refresh: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        is_tty = console.is_terminal if console is not None else _isatty(stream)
        self.mode = choose_mode(
            quiet=settings.quiet,
            progress=settings.progress,
            stats_interval=settings.stats_interval,
            is_tty=is_tty,
        )
        self.stream = stream
        self.console = console or Console(
            file=stream,
            force_terminal=True if self.mode is Mode.LIVE else None,
            highlight=False,
        )
        self.refresh = refresh
        self.stats_interval = settings.stats_interval or 0.0
        self.title = _title(settings)
        self._clock = clock
        self._rate = _Rate()
        self.frames = 0  #: live redraws so far
        self.lines = 0  #: stats lines written so far
        #: Where the crawl's console log lines go: above the live panel, or straight to stderr.
        self.log_stream: IO[str] = (
            cast(IO[str], FileProxy(self.console, stream)) if self.mode is Mode.LIVE else stream
        )

    def render(self, snapshot: Snapshot) -> RenderableType:
        rate_now = self._rate.add(self._clock(), snapshot.pages)
        return render_snapshot(snapshot, title=self.title, rate_now=rate_now)

    @contextlib.asynccontextmanager
    async def watching(self, source: SnapshotSource) -> AsyncIterator[None]:
        """Show progress of ``source`` while the block runs."""
        if self.mode is Mode.LIVE:
            live = Live(
                self.render(source.snapshot()),
                console=self.console,
                auto_refresh=False,  # redrawn by _redraw: no thread of rich's own
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            with contextlib.suppress(OSError):  # the terminal may be gone (a hang-up)
                live.start(refresh=True)  # as entering it does
            try:
                async with _background(self._redraw(source, live)):
                    yield
            finally:
                with contextlib.suppress(OSError):
                    live.stop()
        elif self.mode is Mode.LINES and self.stats_interval > 0:
            async with _background(self._stats_lines(source)):
                yield
        else:
            yield

    async def _redraw(self, source: SnapshotSource, live: Live) -> None:
        """Redraw until cancelled, or until the terminal is gone (a hang-up: EIO)."""
        with contextlib.suppress(OSError):
            while True:
                await asyncio.sleep(self.refresh)
                live.update(self.render(source.snapshot()), refresh=True)
                self.frames += 1

    async def _stats_lines(self, source: SnapshotSource) -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                await asyncio.sleep(self.stats_interval)
                self.stream.write(stats_line(source.snapshot()) + "\n")
                self.stream.flush()
                self.lines += 1

    def print_summary(self, result: CrawlResult) -> None:
        """The end-of-crawl tables (after the live panel has gone)."""
        self.console.print(summary_renderable(result))


@contextlib.asynccontextmanager
async def _background(coro: Any) -> AsyncIterator[None]:
    task = asyncio.create_task(coro, name="progress")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _title(settings: Settings) -> str:
    seeds = settings.seeds
    if not seeds:
        return ""
    more = f" (+{len(seeds) - 1} seeds)" if len(seeds) > 1 else ""
    return f"{seeds[0]}{more}"


# -- the summary -----------------------------------------------------------------------------


def _table(
    title: str, rows: Sequence[tuple[str, Any]], *, styles: Mapping[str, str] | None = None
) -> Table:
    styles = styles or {}
    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        show_header=False,
        padding=(0, 1),
    )
    table.add_column("", overflow="fold", max_width=48)
    table.add_column("", justify="right")
    for key, value in rows[:SUMMARY_ROWS]:
        table.add_row(Text(str(key), style=styles.get(str(key), "")), str(value))
    if len(rows) > SUMMARY_ROWS:
        rest = sum(int(v) for _, v in rows[SUMMARY_ROWS:] if isinstance(v, int))
        table.add_row(Text(f"{len(rows) - SUMMARY_ROWS} more", style="dim"), str(rest))
    return table


def summary_renderable(result: CrawlResult) -> RenderableType:
    """The summary of a finished crawl, from ``result.summary`` (what summary.json holds)."""
    status = result.status
    head = Text()
    head.append(f"archiver: {status}", style=RESULT_STYLES.get(status, "bold"))
    if result.reason:
        head.append(f" ({result.reason})")
    if not result.summary:
        return Group(head, _files(result))
    s = Summary.from_json(result.summary)
    duration = s.duration_seconds
    totals = Table.grid(padding=(0, 2))
    totals.add_column(style="bold blue", no_wrap=True)
    totals.add_column(justify="right", style="bold")
    totals.add_column(style="dim")
    totals.add_row("duration", f"{duration:.1f} s", human_duration(duration))
    totals.add_row("pages", str(s.pages), f"{s.pages_per_second:.1f} pages/s")
    totals.add_row(
        "captures",
        str(s.captures),
        f"{s.captures_per_second:.1f}/s, {_plural(s.revisits, 'revisit')}",
    )
    totals.add_row("received", human_bytes(s.bytes_received), "HTTP responses")
    totals.add_row("written", human_bytes(s.bytes_written), "WARC files (gzip)")
    totals.add_row(
        "dedup saved", human_bytes(s.dedup_bytes_saved), "identical payloads stored as revisits"
    )
    if s.retries:
        totals.add_row("retries", str(s.retries), "transient failures tried again")
    if s.browser is not None:
        totals.add_row(
            "browser",
            str(s.browser.pages),
            f"pages; {s.browser.requests} requests, {s.browser.from_records} answered from records",
        )
    if s.qa is not None:
        qa = QaSnapshot.from_totals(s.qa)
        totals.add_row(
            "replay",
            f"{qa.complete}/{qa.checked}",
            f"pages complete; {qa.incomplete} incomplete, {qa.misses_found} misses found, "
            f"{qa.misses_patched} patched",
        )

    tables: list[RenderableType] = [
        _table("Status", list(s.by_status_class.items()), styles=STATUS_STYLES),
        _table("MIME types", list(s.by_mime.items())),
        _table("Hosts", list(s.by_host.items())),
    ]
    if s.failures:
        tables.append(_table("Failures", list(s.failures.items())))
    if s.skips:
        tables.append(_table("Skipped", list(s.skips.items())))
    if s.truncated:
        tables.append(_table("Truncated", list(s.truncated.items())))
    parts: list[RenderableType] = [head, totals, Text(""), Columns(tables, padding=(0, 3))]
    if s.traps:
        trap_table = Table(
            title="Traps", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD
        )
        trap_table.add_column("kind")
        trap_table.add_column("pattern", overflow="fold")
        trap_table.add_column("URLs skipped", justify="right")
        for trap in s.traps[:SUMMARY_ROWS]:
            trap_table.add_row(
                str(trap.get("kind", "")), str(trap.get("pattern", "")), str(trap.get("skipped"))
            )
        parts.append(trap_table)
    parts += [Text(""), _files(result)]
    return Group(*parts)


def _files(result: CrawlResult) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold blue", no_wrap=True)
    grid.add_column(overflow="fold")
    root = result.output
    grid.add_row("output", str(root))
    warcs = result.warc_files
    for n, path in enumerate(warcs[:3]):
        grid.add_row("WARC" if n == 0 else "", _relative(path, root))
    if len(warcs) > 3:
        grid.add_row("", Text(f"… and {len(warcs) - 3} more WARC files", style="dim"))
    extras: tuple[tuple[str, Path | None], ...] = (
        ("index", result.index),
        ("CDX", result.cdx11),
        ("WACZ", result.wacz),
        ("log", root / "crawl.log.jsonl"),
        ("Heritrix log", root / "crawl.log"),
        ("summary", root / "summary.json"),
    )
    for label, extra in extras:
        if extra is not None and extra.exists():
            grid.add_row(label, _relative(extra, root))
    if result.status == "interrupted":
        grid.add_row("resume", "run the same command again to continue this crawl")
    if result.warc_files and result.index is not None:
        grid.add_row("next", f"archiver report {root}   ·   archiver replay {root}")
    return grid


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
