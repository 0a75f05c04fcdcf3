"""``archiver report DIR``: one self-contained HTML file describing a finished crawl.

Everything is inline (CSS and hand-drawn SVG charts, no script at all) and a
``Content-Security-Policy`` of ``default-src 'none'`` forbids the page to load anything, so the
report opens offline, from an e-mail attachment or a file share, and cannot phone home.

Sources: ``summary.json`` (the counts the crawl kept: status, MIME, hosts, largest resources,
captures per second, traps, files) and, when present, ``crawl.log.jsonl``, read once as a
stream for what the summary only counts: example URLs for each failure and skip reason, the
URLs that answered 4xx/5xx, and warnings. The examples kept are bounded, so a report of a crawl
with millions of log lines stays small.

Every value that came from the crawl (URLs, MIME types, host names, error messages, even the
seeds) is hostile input and goes through :func:`html.escape`; nothing from the crawl is ever
written into an attribute without it, nor into a URL the reader could click.
"""

from __future__ import annotations

import base64
import contextlib
import html
import itertools
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver import atomicfile
from archiver.errors import ArchiverError
from archiver.run.stats import BrowserSummary, Summary, human_bytes
from archiver.timefmt import readable_utc_at
from archiver.version import __version__
from archiver.warc.reader import read_prefix_at

EXAMPLES_PER_REASON = 10
HTTP_ERROR_EXAMPLES = 25
WARNING_EXAMPLES = 20
MAX_SCREENSHOTS_LISTED = 500
#: Pages whose screenshot is shown as a picture (read back from its WARC record and inlined).
SCREENSHOTS_SHOWN = 6
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"
MAX_BARS = 12
MAX_COLUMNS = 120
LABEL_CHARS = 28

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")
STATUS_COLORS = {
    "1xx": "#9c9c9c",
    "2xx": "#59a14f",
    "3xx": "#4e79a7",
    "4xx": "#f28e2b",
    "5xx": "#e15759",
}
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class ReportError(ArchiverError):
    """The directory is not a crawl that can be reported on."""


@dataclass(slots=True)
class Example:
    url: str
    via: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Screenshot:
    """A page's screenshot: the page, its resource record's URI and where the record is."""

    url: str
    uri: str
    warc: str
    offset: int
    length: int
    kind: str = "view"  #: view, full or thumbnail (archiver.browser.screenshots)


@dataclass(slots=True)
class LogFindings:
    """What the report takes from crawl.log.jsonl (bounded samples)."""

    failures: dict[str, list[Example]] = field(default_factory=dict)
    skips: dict[str, list[Example]] = field(default_factory=dict)
    http_errors: list[Example] = field(default_factory=list)
    http_error_count: int = 0
    warnings: Counter[str] = field(default_factory=Counter)
    warning_examples: list[tuple[str, str, str]] = field(default_factory=list)
    runs: int = 0
    lines: int = 0
    screenshots: list[Screenshot] = field(default_factory=list)


def _keep(bucket: dict[str, list[Example]], key: str, example: Example) -> None:
    examples = bucket.setdefault(key, [])
    if len(examples) < EXAMPLES_PER_REASON:
        examples.append(example)


def scan_log(lines: Iterable[str]) -> LogFindings:
    """Read the crawl log once; unreadable lines (a crash mid-write) are skipped."""
    found = LogFindings()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        found.lines += 1
        kind = str(event.get("event", ""))
        url = str(event.get("url", ""))
        via = event.get("via")
        via = str(via) if via else None
        if kind == "crawl-start":
            found.runs += 1
        elif kind == "fetch" and event.get("outcome") == "failed":
            reason = str(event.get("reason") or "unknown")
            _keep(found.failures, reason, Example(url, via, _text(event.get("error"))))
        elif kind == "fetch" and event.get("outcome") == "captured":
            status = event.get("status")
            if isinstance(status, int) and status >= 400:
                found.http_error_count += 1
                if len(found.http_errors) < HTTP_ERROR_EXAMPLES:
                    found.http_errors.append(Example(url, via, str(status)))
        elif kind == "skip":
            _keep(found.skips, str(event.get("reason") or "unknown"), Example(url, via))
        elif kind == "browser-page" and (event.get("screenshots") or event.get("screenshot")):
            _screenshots(found, url, event)
        if event.get("level") in ("warning", "error", "critical"):
            found.warnings[kind] += 1
            if len(found.warning_examples) < WARNING_EXAMPLES:
                detail = _text(event.get("error") or event.get("file") or event.get("url"))
                found.warning_examples.append((str(event.get("level")), kind, detail or ""))
    return found


def _screenshots(found: LogFindings, url: str, event: Mapping[str, Any]) -> None:
    """The page's screenshots: ``screenshots``, a list of ``{kind, uri, warc, offset,
    length}``, or the one view of an earlier version's event (``screenshot``,
    ``screenshot_warc``...)."""
    shots = event.get("screenshots")
    if not isinstance(shots, list):
        shots = [
            {
                "kind": "view",
                "uri": event.get("screenshot"),
                "warc": event.get("screenshot_warc"),
                "offset": event.get("screenshot_offset"),
                "length": event.get("screenshot_length"),
            }
        ]
    for shot in shots:
        if len(found.screenshots) >= MAX_SCREENSHOTS_LISTED:
            return
        if not isinstance(shot, Mapping):
            continue
        offset, length = shot.get("offset"), shot.get("length")
        if isinstance(offset, int) and isinstance(length, int):
            found.screenshots.append(
                Screenshot(
                    url,
                    str(shot.get("uri")),
                    str(shot.get("warc")),
                    offset,
                    length,
                    str(shot.get("kind") or "view"),
                )
            )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# -- formatting ------------------------------------------------------------------------------


def e(value: Any) -> str:
    """Escape for HTML text and double-quoted attributes."""
    return html.escape(str(value), quote=True)


def human_duration(seconds: float) -> str:
    whole = int(max(seconds, 0))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{seconds:.1f} s"


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- charts (hand-written SVG) -----------------------------------------------------------------


def bar_chart(
    items: Sequence[tuple[str, int]],
    *,
    colors: Mapping[str, str] | None = None,
    value_text: Mapping[str, str] | None = None,
    label: str,
) -> str:
    """Horizontal bars, one per (label, value); labels cut to fit, full text in a tooltip."""
    if not items:
        return '<p class="empty">None.</p>'
    shown = list(items[:MAX_BARS])
    if len(items) > MAX_BARS:
        shown.append((f"{len(items) - MAX_BARS} others", sum(v for _, v in items[MAX_BARS:])))
    top = max(1, *(v for _, v in shown))
    row, label_w, bar_w, value_w = 24, 230, 210, 80
    width = label_w + bar_w + value_w
    height = row * len(shown) + 4
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'role="img" aria-label="{e(label)}">'
    ]
    for n, (name, value) in enumerate(shown):
        y = n * row + 2
        length = max(round(bar_w * value / top), 1 if value else 0)
        color = (colors or {}).get(name, PALETTE[n % len(PALETTE)])
        shown_value = (value_text or {}).get(name, f"{value:,}")
        parts.append(
            f"<g><title>{e(name)}: {e(shown_value)}</title>"
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end">{e(_short(name))}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{length}" height="{row - 8}" rx="3" '
            f'fill="{e(color)}"/>'
            f'<text x="{label_w + length + 6}" y="{y + 16}" class="value">{e(shown_value)}</text>'
            "</g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _bins(series: Sequence[Sequence[int]], duration: float) -> tuple[list[int], float]:
    """Per-second counts grouped into at most MAX_COLUMNS columns; returns (counts, seconds
    per column)."""
    last = max([int(duration)] + [int(s) for s, _ in series]) + 1
    per = max(1.0, last / MAX_COLUMNS)
    columns = [0] * max(1, min(MAX_COLUMNS, int(last / per + 0.999)))
    for second, count in series:
        index = min(int(second / per), len(columns) - 1)
        columns[index] += int(count)
    return columns, per


def time_chart(series: Sequence[Sequence[int]], duration: float) -> str:
    """Captures over time: one column per time slice, axes with the peak and the time span."""
    if not series:
        return '<p class="empty">No captures.</p>'
    columns, per = _bins(series, duration)
    top = max(1, *columns)
    left, bottom, width, height = 56, 28, 900, 220
    plot_w, plot_h = width - left - 10, height - bottom - 10
    step = plot_w / len(columns)
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" '
        f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="captures over time">',
        f'<line x1="{left}" y1="10" x2="{left}" y2="{10 + plot_h}" class="axis"/>',
        f'<line x1="{left}" y1="{10 + plot_h}" x2="{left + plot_w}" y2="{10 + plot_h}" '
        'class="axis"/>',
        f'<text x="{left - 6}" y="16" text-anchor="end">{top:,}</text>',
        f'<text x="{left - 6}" y="{10 + plot_h}" text-anchor="end">0</text>',
    ]
    unit = "per second" if per == 1 else f"per {per:.0f} s"
    parts.append(
        f'<text x="12" y="{10 + plot_h / 2}" transform="rotate(-90 12 {10 + plot_h / 2})" '
        f'text-anchor="middle">captures {e(unit)}</text>'
    )
    for n, count in enumerate(columns):
        if not count:
            continue
        h = plot_h * count / top
        x = left + n * step
        start = n * per
        parts.append(
            f'<rect x="{x + 0.5:.1f}" y="{10 + plot_h - h:.1f}" width="{max(step - 1, 1):.1f}" '
            f'height="{h:.1f}" fill="{PALETTE[0]}"><title>{e(human_duration(start))}: '
            f"{count:,} captures</title></rect>"
        )
    total = len(columns) * per
    for frac in (0.0, 0.5, 1.0):
        x = left + plot_w * frac
        anchor = "start" if frac == 0 else "end" if frac == 1 else "middle"
        parts.append(
            f'<text x="{x:.1f}" y="{height - 8}" text-anchor="{anchor}">'
            f"{e(human_duration(total * frac))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# -- the page ----------------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, numeric: int = 0) -> str:
    """A table; the last ``numeric`` columns are right-aligned."""
    head = "".join(
        f'<th class="{"num" if i >= len(headers) - numeric else ""}">{e(h)}</th>'
        for i, h in enumerate(headers)
    )
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="{"num" if i >= len(row) - numeric else ""}">{cell}</td>'
            for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    if not body:
        return '<p class="empty">None.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _url(url: str) -> str:
    """A URL as text (never a link: the report must not lead anyone to the live web)."""
    return f'<span class="url" title="{e(url)}">{e(url)}</span>'


def _examples(bucket: Mapping[str, list[Example]], counts: Mapping[str, int]) -> str:
    reasons = sorted(set(counts) | set(bucket), key=lambda r: -int(counts.get(r, 0)))
    if not reasons:
        return '<p class="empty">None.</p>'
    blocks = []
    for reason in reasons:
        examples = bucket.get(reason, [])
        rows = [
            (
                _url(ex.url),
                _url(ex.via) if ex.via else '<span class="dim">seed</span>',
                e(ex.detail or ""),
            )
            for ex in examples
        ]
        count = int(counts.get(reason, len(examples)))
        more = f" (first {len(examples)} shown)" if count > len(examples) and examples else ""
        blocks.append(
            f"<details><summary><b>{e(reason)}</b> · {count:,} URL{'' if count == 1 else 's'}"
            f"{e(more)}</summary>"
            f"{_table(('URL', 'found on', 'detail'), rows)}</details>"
        )
    return "".join(blocks)


def _file_rows(crawl_dir: Path, summary: Summary) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for name in summary.warc_files:
        rows.append(("WARC", name, _size(crawl_dir / name)))
    for label, name in (
        ("index (CDXJ)", "index.cdxj"),
        ("index (CDX)", "index.cdx"),
        ("crawl log (JSON lines)", "crawl.log.jsonl"),
        ("crawl log (Heritrix)", "crawl.log"),
        ("summary", "summary.json"),
    ):
        path = crawl_dir / name
        if path.exists():
            rows.append((label, name, _size(path)))
    for path in sorted(crawl_dir.glob("*.wacz")):
        rows.append(("WACZ", path.name, _size(path)))
    return rows


def _size(path: Path) -> str:
    try:
        return human_bytes(path.stat().st_size)
    except OSError:
        return "missing"


def _card(label: str, value: str, note: str = "") -> str:
    small = f"<small>{e(note)}</small>" if note else ""
    return f'<div class="card"><div class="v">{e(value)}</div><div>{e(label)}</div>{small}</div>'


STYLE = """
:root { --fg:#1f2933; --dim:#6b7785; --line:#d9dee4; --bg:#f6f7f9; --ok:#59a14f;
        --warn:#f28e2b; --bad:#e15759; }
* { box-sizing: border-box; }
body { margin:0; font:15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#24364b; color:#fff; padding:20px 32px; }
header h1 { margin:0 0 4px; font-size:22px; }
header .meta { color:#c9d3de; font-size:13px; }
.badge { display:inline-block; padding:2px 10px; border-radius:10px; font-weight:600;
         font-size:13px; margin-left:8px; vertical-align:middle; }
.badge.completed, .badge.limit { background:var(--ok); }
.badge.interrupted { background:var(--warn); }
.badge.failed { background:var(--bad); }
main { max-width:1200px; margin:0 auto; padding:16px 32px 40px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px;
          padding:14px 20px; margin:16px 0; overflow-x:auto; }
section h2 { margin:0 0 10px; font-size:17px; }
.grid { display:grid; grid-template-columns:repeat(auto-fit, minmax(520px, 1fr)); gap:0 16px; }
.cards { display:grid; grid-template-columns:repeat(auto-fit, minmax(150px, 1fr)); gap:12px;
         margin-top:16px; }
.card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:10px 14px; }
.card .v { font-size:22px; font-weight:700; }
.card small { color:var(--dim); }
svg.chart { max-width:100%; height:auto; font-size:12px; fill:var(--fg); }
svg.chart .value { fill:var(--dim); }
svg.chart .axis { stroke:var(--dim); stroke-width:1; }
table { border-collapse:collapse; width:100%; font-size:13px; }
th, td { text-align:left; padding:4px 8px; border-bottom:1px solid var(--line);
         vertical-align:top; }
th { color:var(--dim); font-weight:600; }
.num { text-align:right; white-space:nowrap; }
.url { word-break:break-all; font-family:ui-monospace, Menlo, Consolas, monospace;
       font-size:12px; }
.dim, .empty { color:var(--dim); }
details { margin:6px 0; }
summary { cursor:pointer; }
footer { color:var(--dim); text-align:center; font-size:12px; padding:16px; }
.shots { display:flex; flex-wrap:wrap; gap:12px; margin:12px 0; }
.shots figure { margin:0; width:240px; }
.shots img { width:240px; border:1px solid var(--line); }
.qa-pair { display:flex; flex-wrap:wrap; gap:12px; align-items:flex-start; margin:12px 0; }
.qa-pair p { flex-basis:100%; margin:0; }
.qa-pair figure { margin:0; width:300px; max-height:600px; overflow:hidden; }
.qa-pair img { width:300px; border:1px solid var(--line); }
"""


def _runs_table(s: Summary) -> str:
    """One row per run of the crawl: when, how long, how it ended, what it captured."""
    rows = "".join(
        f"<tr><td>{e(run.started or '?')}</td><td>{e(human_duration(run.duration_seconds))}</td>"
        f"<td>{e(run.status or 'killed')}</td><td>{e(run.reason or '')}</td>"
        f"<td class=num>{run.captures:,}</td><td class=num>{run.pages:,}</td>"
        f"<td class=num>{e(human_bytes(run.bytes_written))}</td></tr>"
        for run in s.runs
    )
    return (
        "<table><tr><th>started</th><th>duration</th><th>status</th><th>reason</th>"
        f"<th>captures</th><th>pages</th><th>WARC</th></tr>{rows}</table>"
    )


def render(crawl_dir: Path, summary: Summary, log: LogFindings | None) -> str:
    """The report's HTML text."""
    s = summary
    seeds = s.seeds
    status = s.status or "unknown"
    duration = s.duration_seconds
    title = seeds[0] if seeds else str(crawl_dir.name)
    reason = f" — {s.reason}" if s.reason else ""
    sections = [("Captures over time", time_chart(s.captures_over_time, duration))]
    if len(s.runs) > 1:  # the figures are the sum of the runs: say which
        sections.append(("Runs", _runs_table(s)))

    def block(name: str, content: str) -> str:
        return f"<section><h2>{e(name)}</h2>{content}</section>"

    seeds_text = ", ".join(seeds) if seeds else "(no seeds recorded)"
    count = max(len(s.runs), log.runs if log is not None else 0)
    runs = f" · {count} runs (resumed)" if count > 1 else ""
    generated = readable_utc_at(time.time())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Crawl report: {e(_short(title, 80))}</title>
<style>{STYLE}</style></head>
<body>
<header><h1>Crawl report <span class="badge {e(status)}">{e(status)}</span></h1>
<div class="meta">seeds: {e(seeds_text)}{e(reason)}<br>
started {e(s.started or "?")} · {e(human_duration(duration))}{e(runs)} · output
{e(s.output or crawl_dir)}</div></header>
<main>
<div class="cards">{_cards(s, duration)}</div>
{"".join(block(n, c) for n, c in sections)}
<div class="grid">{"".join(block(n, c) for n, c in _charts(s))}</div>
{"".join(block(n, c) for n, c in _details(crawl_dir, s, log))}
</main>
<footer>archiver {e(s.version or __version__)} · report generated {e(generated)} by
archiver {e(__version__)}</footer>
</body></html>
"""


def _cards(s: Summary, duration: float) -> str:
    """The headline figures."""
    return "".join(
        [
            _card("captures", f"{s.captures:,}", f"{s.revisits} revisits"),
            _card("pages", f"{s.pages:,}", f"{s.pages_per_second} /s"),
            _card("duration", human_duration(duration), s.started),
            _card("received", human_bytes(s.bytes_received)),
            _card("WARC written", human_bytes(s.bytes_written)),
            _card("dedup saved", human_bytes(s.dedup_bytes_saved)),
            _card("failures", f"{sum(s.failures.values()):,}", f"{s.retries} retries"),
            _card("skipped", f"{sum(s.skips.values()):,}"),
        ]
    )


def _charts(s: Summary) -> list[tuple[str, str]]:
    """Captures by status, MIME type and host; failures by reason."""
    failures = dict(s.failures)
    by_status_class = list(s.by_status_class.items())
    by_status = sorted(s.by_status.items())
    by_mime = list(s.by_mime.items())
    by_host = list(s.by_host.items())
    return [
        (
            "Status",
            bar_chart(by_status_class, colors=STATUS_COLORS, label="captures by status class")
            + _table(
                ("status code", "captures"), ((e(k), f"{v:,}") for k, v in by_status), numeric=1
            ),
        ),
        ("MIME types", bar_chart(by_mime, label="captures by MIME type")),
        ("Top hosts", bar_chart(by_host, label="captures by host")),
        (
            "Failures by reason",
            bar_chart(sorted(failures.items(), key=lambda kv: -kv[1]), label="failures"),
        ),
    ]


def _details(crawl_dir: Path, s: Summary, log: LogFindings | None) -> list[tuple[str, str]]:
    """The tables: largest resources, failed and skipped URLs, HTTP errors, traps, warnings,
    files written."""
    failures, skips = dict(s.failures), dict(s.skips)
    largest_rows = [
        (_url(item.url), e(item.mime), e(human_bytes(item.bytes))) for item in s.largest
    ]
    trap_rows = [
        (e(t.get("kind", "")), _url(str(t.get("pattern", ""))), e(t.get("skipped", "")))
        for t in s.traps
    ]
    sections = []
    if s.by_seed:
        sections.append(("Seeds", _seeds(s)))
    sections += [
        ("Largest resources", _table(("URL", "MIME type", "size"), largest_rows, numeric=1)),
        ("Failed URLs", _examples(log.failures if log else {}, failures)),
        ("Skipped URLs", _examples(log.skips if log else {}, skips)),
    ]
    if log is not None and log.http_errors:
        more = (
            f" (first {len(log.http_errors)} of {log.http_error_count:,})"
            if log.http_error_count > len(log.http_errors)
            else ""
        )
        rows = [
            (e(ex.detail), _url(ex.url), _url(ex.via) if ex.via else "seed")
            for ex in log.http_errors
        ]
        sections.append((f"HTTP errors{more}", _table(("status", "URL", "found on"), rows)))
    sections.append(
        ("Crawl traps", _table(("kind", "pattern", "URLs skipped"), trap_rows, numeric=1))
    )
    if log is not None and log.warnings:
        rows = [(e(level), e(kind), _url(detail)) for level, kind, detail in log.warning_examples]
        counts = ", ".join(f"{e(k)} {v:,}" for k, v in log.warnings.most_common())
        sections.append(
            ("Warnings and errors", f"<p>{counts}</p>" + _table(("level", "event", "detail"), rows))
        )
    if s.browser is not None:
        sections.append(("Browser", _browser(crawl_dir, s.browser, log)))
    qa_section = _qa(crawl_dir, s.qa)
    if qa_section is not None:
        sections.append(("Replay check (archiver qa)", qa_section))
    files = _table(
        ("kind", "file", "size"),
        ((e(k), _url(f), e(z)) for k, f, z in _file_rows(crawl_dir, s)),
        numeric=1,
    )
    sections.append(("Files written", f'<p>in <span class="url">{e(crawl_dir)}</span></p>' + files))
    return sections


def _seeds(s: Summary) -> str:
    """What each seed's URLs came to: every URL is judged by one seed's rules (the seed whose
    site it is on), and counted there."""
    rows = [
        (
            _url(row.seed),
            f"{row.pages:,}",
            f"{row.captures:,}",
            f"{row.done:,}",
            f"{row.failed:,}",
            f"{row.skipped:,}",
        )
        for row in s.by_seed
    ]
    headers = ("seed", "pages", "captures", "done", "failed", "skipped")
    return _table(headers, rows, numeric=5)


def _browser(crawl_dir: Path, browser: BrowserSummary, log: LogFindings | None) -> str:
    """What the browser did, and the screenshots (the first few shown, read from the WARC)."""
    refused, why = browser.refused, browser.why
    rows: list[tuple[str, object]] = [
        ("pages loaded in the browser", browser.pages),
        ("pages failed in the browser", browser.failed),
        ("loads tried again", browser.retried),
        ("requests the pages made", browser.requests),
        ("answered from records already captured", browser.from_records),
        ("fetched and recorded", browser.fetched),
        ("refused", ", ".join(f"{k} {v}" for k, v in refused.items()) or 0),
        ("screenshots", browser.screenshots),
        ("why pages went to the browser", ", ".join(f"{k} {v}" for k, v in why.items()) or "-"),
    ]
    text = _table(("", ""), ((e(k), e(v)) for k, v in rows + _behavior_rows(browser)))
    shots = log.screenshots if log is not None else []
    if not shots:
        return text
    pictures = []
    for shot in _shown(shots):
        picture = _read_screenshot(crawl_dir / "warcs" / shot.warc, shot)
        if picture is not None:
            media = "image/jpeg" if picture.startswith(JPEG_SIGNATURE) else "image/png"
            data = base64.b64encode(picture).decode("ascii")
            pictures.append(
                f'<figure><img alt="" src="data:{media};base64,{data}">'
                f"<figcaption>{_url(shot.url)}</figcaption></figure>"
            )
    listing = _table(
        ("page", "kind", "record", "WARC file", "offset"),
        ((_url(x.url), e(x.kind), _url(x.uri), _url(x.warc), e(x.offset)) for x in shots),
    )
    return text + f'<div class="shots">{"".join(pictures)}</div>' + listing


def _behavior_rows(browser: BrowserSummary) -> list[tuple[str, object]]:
    """What the behaviours did, when any ran: the browser table's last rows."""
    if not browser.behaviors:
        return []

    def table(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "0"

    return [
        ("pages each behaviour ran on", table(browser.behaviors)),
        ("clicks, media played, search boxes typed into",
         f"{browser.clicks}, {browser.plays}, {browser.typed}"),
        ("URLs the behaviours found", table(browser.behavior_links)),
        ("behaviours stopped at a bound (steps or time)", table(browser.behavior_bounds)),
        ("navigations away and windows refused",
         f"{browser.navigations_blocked}, {browser.popups_blocked}"),
        ("hash routes rendered as pages", browser.routes),
    ]  # fmt: skip


def _shown(shots: list[Screenshot]) -> list[Screenshot]:
    """One picture for each of the first :data:`SCREENSHOTS_SHOWN` pages: its thumbnail, else
    its viewport, else the whole page."""
    best: dict[str, Screenshot] = {}
    order = {"thumbnail": 0, "view": 1, "full": 2}
    for shot in shots:
        kept = best.get(shot.url)
        if kept is None and len(best) >= SCREENSHOTS_SHOWN:
            continue
        if kept is None or order.get(shot.kind, 3) < order.get(kept.kind, 3):
            best[shot.url] = shot
    return list(best.values())


#: Pages of the replay check shown with their screenshots (the worst first).
QA_PAGES_SHOWN = 8
#: Pages of the replay check listed with their missing URLs.
QA_PAGES_LISTED = 200
#: Missing URLs listed per page.
QA_MISSES_LISTED = 50
#: A screenshot larger than this is not inlined (the report stays small).
QA_MAX_INLINE = 4 * 1024 * 1024
_QA_ORDER = {"failed": 0, "incomplete": 1, "differs": 2, "unreplayable": 3, "complete": 4}


def qa_lines(crawl_dir: Path) -> list[dict[str, Any]]:
    """The lines of ``qa.jsonl``, a page's last line only (a page checked again), the worst
    page first: failed, incomplete, unreplayable, complete; then by missing URLs (most first)
    and by similarity (lowest first)."""
    path = crawl_dir / "qa.jsonl"
    pages: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                if isinstance(line, dict) and isinstance(line.get("url"), str):
                    pages[line["url"]] = line
    lines = list(pages.values())

    def worst(line: dict[str, Any]) -> tuple[int, int, float, str]:
        scores = [
            float(value)
            for value in (line.get("text_similarity"), line.get("screenshot_similarity"))
            if isinstance(value, int | float)
        ]
        return (
            _QA_ORDER.get(str(line.get("status")), 0),
            -len(line.get("misses") or []),
            min(scores, default=1.0),
            str(line["url"]),
        )

    return sorted(lines, key=worst)


def _qa(crawl_dir: Path, totals: Any) -> str | None:
    """The replay check: totals, the worst pages with their replay and reference screenshots
    side by side, and the URLs each page lacked."""
    lines = qa_lines(crawl_dir)
    if not lines and not isinstance(totals, dict):
        return None
    t = totals if isinstance(totals, dict) else {}
    rows = [
        ("pages checked", t.get("pages", len(lines))),
        ("complete", t.get("complete", 0)),
        ("incomplete (URLs missing)", t.get("incomplete", 0)),
        ("unreplayable (a WebSocket: no fetch can fix it)", t.get("unreplayable", 0)),
        ("differs (nothing missing, yet reads unlike the crawl's page)", t.get("differs", 0)),
        ("failed (the page itself could not be replayed)", t.get("failed", 0)),
        ("URLs missing", t.get("missing_urls", 0)),
        ("URLs served by fuzzy matching (another capture)", t.get("fuzzy_urls", 0)),
        ("mean text similarity", t.get("text_similarity", "-")),
        ("mean screenshot similarity", t.get("screenshot_similarity", "-")),
    ]
    parts = [_table(("", ""), ((e(k), e("-" if v is None else v)) for k, v in rows))]
    figures = []
    for line in lines[:QA_PAGES_SHOWN]:
        pictures = [
            _qa_picture(crawl_dir, line.get(name), label)
            for name, label in (("screenshot", "replay"), ("reference_screenshot", "reference"))
        ]
        if any(pictures):
            figures.append(
                f'<div class="qa-pair"><p>{_url(line["url"])} · {e(line.get("status"))}</p>'
                f"{''.join(p for p in pictures if p)}</div>"
            )
    parts.append("".join(figures))
    listed = []
    for line in lines[:QA_PAGES_LISTED]:
        misses = list(line.get("misses") or [])
        fuzzy = list(line.get("fuzzy") or [])
        unfixable = list(line.get("unfixable") or [])
        scores = ", ".join(
            f"{label} {line[key]}"
            for key, label in (("text_similarity", "text"), ("screenshot_similarity", "screenshot"))
            if line.get(key) is not None
        )
        rows_missing = [
            (_url(str(m.get("url"))), e(m.get("type", "")), e(m.get("initiator", "")),
             _url(str(m.get("navigation") or "")) if m.get("navigation") else "page load")
            for m in misses[:QA_MISSES_LISTED]
        ]  # fmt: skip
        rows_fuzzy = [
            (_url(str(f.get("url"))), _url(str(f.get("served"))), e(f.get("reason", "")))
            for f in fuzzy[:QA_MISSES_LISTED]
        ]
        body = _table(("missing URL", "type", "initiator", "during"), rows_missing)
        if rows_fuzzy:
            body += "<p>served by another capture:</p>" + _table(
                ("asked for", "served", "why"), rows_fuzzy
            )
        if unfixable:
            body += "<p>no fetch can fix:</p>" + _table(
                ("URL", "why"), ((_url(str(u.get("url"))), e(u.get("reason"))) for u in unfixable)
            )
        listed.append(
            f"<details><summary><b>{e(line.get('status'))}</b> {_url(line['url'])} · "
            f"{len(misses)} missing{e(' · ' + scores if scores else '')}</summary>{body}"
            "</details>"
        )
    parts.append("".join(listed))
    return "".join(parts)


def _qa_picture(crawl_dir: Path, name: Any, label: str) -> str | None:
    """A screenshot of the check (a file under ``DIR/qa/``) inlined; None when absent."""
    if not isinstance(name, str) or not name.startswith("qa/") or ".." in name:
        return None
    path = crawl_dir / name
    try:
        if path.stat().st_size > QA_MAX_INLINE:
            note = f"{e(label)}: {_url(name)} (too large to show)"
            return f"<figure><figcaption>{note}</figcaption></figure>"
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    encoded = base64.b64encode(data).decode("ascii")
    return (
        f'<figure><img alt="" src="data:image/png;base64,{encoded}">'
        f"<figcaption>{e(label)}</figcaption></figure>"
    )


def _read_screenshot(path: Path, shot: Screenshot) -> bytes | None:
    """A screenshot (PNG or JPEG) from its resource record; None when it cannot be read as
    one."""
    for candidate in (path, path.with_name(path.name + ".open")):
        try:
            prefix = read_prefix_at(candidate, shot.offset, shot.length, 16 << 20)
        except (OSError, ArchiverError):
            continue
        if prefix.whole and prefix.block.startswith((PNG_SIGNATURE, JPEG_SIGNATURE)):
            return prefix.block
    return None


def read_summary(crawl_dir: Path) -> dict[str, Any]:
    path = crawl_dir / "summary.json"
    if not crawl_dir.is_dir():
        raise ReportError(f"{crawl_dir} is not a directory")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(
            f"no summary.json in {crawl_dir}: is it a crawl directory? (a crawl writes it "
            "when it stops)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path} is unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path} is not a crawl summary")
    return data


def scan_logs(crawl_dir: Path) -> LogFindings | None:
    """The crawl's log, and the logs of its processes when several shared the crawl (each
    keeps its own in ``state/PROCESS/``), read as one. Runs are counted in the crawl's own log
    when there is one (``--processes N`` writes it: each of its processes starts too)."""
    own = crawl_dir / "crawl.log.jsonl"
    paths = [own, *sorted(crawl_dir.glob("state/*/crawl.log.jsonl"))]
    paths = [path for path in paths if path.is_file()]
    if not paths:
        return None
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(p, encoding="utf-8", errors="replace")) for p in paths]
        findings = scan_log(itertools.chain.from_iterable(files))
    if own.is_file() and len(paths) > 1:
        with open(own, encoding="utf-8", errors="replace") as fh:
            findings.runs = scan_log(fh).runs
    return findings


def write_report(crawl_dir: Path, output: Path) -> Path:
    """Write the HTML report of the crawl in ``crawl_dir`` to ``output``; returns ``output``."""
    summary = Summary.from_json(read_summary(crawl_dir))
    text = render(crawl_dir, summary, scan_logs(crawl_dir))
    atomicfile.write_text(output, text, fsync=False)
    return output
