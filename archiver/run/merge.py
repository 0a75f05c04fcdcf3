"""One crawl's figures from the figures of its processes (``--processes N``).

Each crawler process of a crawl reports what *it* did: a JSON stats line every second while it
runs (:meth:`archiver.run.crawler.Crawler.snapshot`), its ``summary.json`` when it stops. The
supervisor shows and keeps the crawl's: the counters summed, the tables merged, the frontier's
figures (which every process reads from the one shared queue) taken from the latest report, and
the time series put on the supervisor's clock. A process killed before it wrote a summary counts
with its last stats line (at most a second old): the captures it made are in the WARC files
and the index whatever the figures say.
"""

from __future__ import annotations

import heapq
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: Counters of a snapshot or a summary that add up across processes.
SUMMED = (
    "captures",
    "pages",
    "revisits",
    "dedup_bytes_saved",
    "bytes_received",
    "bytes_written",
    "retries",
    "in_flight",
)
#: Tables (name -> count) that add up across processes.
TABLES = (
    "by_status_class",
    "by_status",
    "by_mime",
    "by_host",
    "failures",
    "skips",
    "truncated",
)
#: Figures of the shared frontier: the same queue for every process, so not summed.
FRONTIER = ("queued", "done", "seen")
#: Rows kept in a summary's per-MIME and per-host tables (as a single process keeps).
TABLE_ROWS = 50
LARGEST_KEPT = 25
TOP_HOSTS = 5
#: Hosts in a snapshot's ``by_host`` (as a single process's snapshot has).
SNAPSHOT_HOSTS = 20


def json_object(line: bytes) -> dict[str, Any]:
    """One JSON stats line as a dict (ValueError when it is not an object)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _table(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, list):  # top_hosts: [[host, count], ...]
        return {str(pair[0]): pair[1] for pair in value if isinstance(pair, list | tuple)}
    return {}


def add_tables(tables: Iterable[Any]) -> Counter[str]:
    total: Counter[str] = Counter()
    for table in tables:
        for key, count in _table(table).items():
            total[str(key)] += _number(count)
    return total


def _browser(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    browsers = [p["browser"] for p in parts if isinstance(p.get("browser"), Mapping)]
    if not browsers:
        return None
    merged: dict[str, Any] = {}
    for browser in browsers:
        for key, value in browser.items():
            if isinstance(value, Mapping):
                merged[key] = add_tables([merged.get(key, {}), value])
            else:
                merged[key] = merged.get(key, 0) + _number(value)
    return {k: dict(v.most_common()) if isinstance(v, Counter) else v for k, v in merged.items()}


def merge_extractors(parts: Iterable[Any]) -> dict[str, dict[str, int]]:
    """The processes' per-extractor tables (``{name: {"queued": N, "4xx": M}}``) added up."""
    queued: Counter[str] = Counter()
    client_errors: Counter[str] = Counter()
    for part in parts:
        for name, counts in _table(part).items():
            if isinstance(counts, Mapping):
                queued[str(name)] += _number(counts.get("queued"))
                client_errors[str(name)] += _number(counts.get("4xx"))
    names = sorted(set(queued) | set(client_errors), key=lambda n: (-queued[n], n))
    return {name: {"queued": queued[name], "4xx": client_errors[name]} for name in names}


def merge_snapshots(
    parts: Sequence[Mapping[str, Any]], *, elapsed: float, stopping: bool
) -> dict[str, Any]:
    """The crawl's live snapshot from its processes' latest ones (and those of ended
    processes: their counts stay in the sum). ``parts`` in the order received, the latest
    last: the frontier's figures come from it."""
    elapsed = max(elapsed, 1e-9)
    snapshot: dict[str, Any] = {"elapsed": round(elapsed, 1)}
    for key in SUMMED:
        snapshot[key] = sum(_number(p.get(key)) for p in parts)
    snapshot["pages_per_second"] = round(snapshot["pages"] / elapsed, 2)
    snapshot["captures_per_second"] = round(snapshot["captures"] / elapsed, 2)
    latest: Mapping[str, Any] = next((p for p in reversed(parts) if "queued" in p), {})
    for key in FRONTIER:
        snapshot[key] = _number(latest.get(key))
    files = [p.get("warc_file") for p in parts if p.get("warc_file")]
    snapshot["warc_file"] = files[-1] if files else None
    for key in ("failures", "skips", "by_status_class"):
        snapshot[key] = dict(add_tables(p.get(key) for p in parts).most_common())
    snapshot["top_hosts"] = add_tables(p.get("top_hosts") for p in parts).most_common(TOP_HOSTS)
    hosts = add_tables(p.get("by_host") or p.get("top_hosts") for p in parts)
    snapshot["by_host"] = dict(hosts.most_common(SNAPSHOT_HOSTS))
    snapshot["stopping"] = stopping
    browser = _browser(parts)
    if browser is not None:
        snapshot["browser"] = browser
    return snapshot


def partial_summary(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """What a process killed before its summary counted, from its last stats line."""
    part: dict[str, Any] = {key: _number(snapshot.get(key)) for key in SUMMED}
    part.pop("in_flight", None)
    for key in ("failures", "skips", "by_status_class"):
        part[key] = dict(_table(snapshot.get(key)))
    part["by_host"] = dict(_table(snapshot.get("by_host") or snapshot.get("top_hosts")))
    return part


def _largest(parts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    entries = [e for p in parts for e in p.get("largest") or [] if isinstance(e, Mapping)]
    top = heapq.nlargest(LARGEST_KEPT, entries, key=lambda e: _number(e.get("bytes")))
    return [dict(e) for e in top]


def _series(parts: Sequence[tuple[float, Mapping[str, Any]]]) -> list[list[int]]:
    """captures_over_time on the supervisor's clock: each process's seconds shifted by when
    it started."""
    total: Counter[int] = Counter()
    for offset, part in parts:
        for point in part.get("captures_over_time") or []:
            if isinstance(point, list | tuple) and len(point) == 2:
                total[int(offset) + _number(point[0])] += _number(point[1])
    return [[second, count] for second, count in sorted(total.items())]


def merge_summaries(
    parts: Sequence[tuple[float, Mapping[str, Any]]], *, started: float, duration: float
) -> dict[str, Any]:
    """The crawl's summary counters from its processes' summaries: ``(offset, summary)``, the
    offset being the seconds from the supervisor's start to the process's. ``started`` is the
    supervisor's start (epoch seconds), ``duration`` its run time."""
    summaries = [part for _, part in parts]
    duration = max(duration, 1e-9)
    merged: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_seconds": round(duration, 3),
    }
    for key in SUMMED:
        if key != "in_flight":
            merged[key] = sum(_number(s.get(key)) for s in summaries)
    merged["captures_per_second"] = round(merged["captures"] / duration, 2)
    merged["pages_per_second"] = round(merged["pages"] / duration, 2)
    for key in TABLES:
        table = add_tables(s.get(key) for s in summaries)
        rows = TABLE_ROWS if key in ("by_mime", "by_host") else None
        if key == "by_status":
            merged[key] = {k: table[k] for k in sorted(table, key=_status_order)}
        else:
            merged[key] = dict(table.most_common(rows))
    merged["extractors"] = merge_extractors(s.get("extractors") for s in summaries)
    merged["largest"] = _largest(summaries)
    merged["captures_over_time"] = _series(parts)
    browser = _browser(summaries)
    if browser is not None:
        merged["browser"] = browser
    return merged


def _status_order(code: str) -> tuple[int, str]:
    return (int(code), code) if code.isdigit() else (10**6, code)


def merge_robots(parts: Iterable[Any]) -> dict[str, Any] | None:
    """The robots.txt figures of every process, added up (None when none had any)."""
    found = [p for p in parts if isinstance(p, Mapping)]
    if not found:
        return None
    merged: dict[str, Any] = {}
    for part in found:
        for key, value in part.items():
            if isinstance(value, Mapping):
                merged[key] = dict(add_tables([merged.get(key, {}), value]))
            else:
                merged[key] = merged.get(key, 0) + _number(value)
    return merged


def merge_traps(parts: Iterable[Any]) -> list[dict[str, Any]]:
    """The traps every process found: one row per kind and pattern, URLs skipped summed."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for traps in parts:
        for trap in traps if isinstance(traps, list) else []:
            if not isinstance(trap, Mapping):
                continue
            key = (str(trap.get("kind")), str(trap.get("pattern")))
            row = rows.setdefault(key, {**trap, "skipped": 0})
            row["skipped"] = _number(row["skipped"]) + _number(trap.get("skipped"))
    return sorted(rows.values(), key=lambda r: -_number(r.get("skipped")))


__all__ = [
    "add_tables",
    "json_object",
    "merge_robots",
    "merge_snapshots",
    "merge_summaries",
    "merge_traps",
    "partial_summary",
]
