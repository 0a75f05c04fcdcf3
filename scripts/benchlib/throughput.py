# ruff: noqa: RUF001 - the reports print multiplication and division signs on purpose
"""The throughput benchmark: archiver, wget (WARC) and the bare-client ceiling, side by side.

Two sites on one local nginx: the synthetic site (:mod:`sitegen`) and the HTML of Debian's
python3-doc. Each round runs every tool once per site, in an order rotated from round to round
(so slow drift of a shared machine spreads over all of them). The table shows medians over the
rounds; the ratio columns are medians of per-round ratios, i.e. always between figures measured
minutes apart at most, side by side.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import WORK, environment, peers, sitegen
from benchlib.nginx import Nginx, Site

TOOLS = ("wget", "archiver", "bare", "bare+parse")
LABELS = {
    "wget": "wget --warc-file (serial)",
    "archiver": "archiver (WARC, digests, links, scope, index)",
    "bare": "bare aiohttp GET loop (no parsing, no WARC)",
    "bare+parse": "bare aiohttp + selectolax links (the ceiling)",
}
#: the scale-out row: "archiver-xN" (``archiver crawl --processes N``, redis-server included)
MULTI_PREFIX = "archiver-x"


def label(tool: str) -> str:
    if tool.startswith(MULTI_PREFIX):
        n = tool.removeprefix(MULTI_PREFIX)
        return f"archiver --processes {n} (its redis-server included)"
    return LABELS.get(tool, tool)


#: the throughput goals (URLs/s over the whole process, on this 2-core machine)
GOALS = {"synth": 2000.0, "docs": 640.0}
GOAL_CEILING = 0.70
GOAL_WGET = 4.0


@dataclass
class SiteData:
    name: str
    root: Path
    urls_file: Path
    files: int
    bytes: int
    html: int
    desc: str
    redirect_old: bool = False


def prepare_sites(names: list[str], pages: int) -> list[SiteData]:
    sites = []
    for name in names:
        if name == "synth":
            out = WORK / "sites" / f"synth-{pages}"
            t0 = time.monotonic()
            m = sitegen.ensure(out, pages=pages)
            if time.monotonic() - t0 > 0.5:
                print(
                    f"bench: generated the synthetic site in {time.monotonic() - t0:.1f} s",
                    flush=True,
                )
            desc = (
                f"synthetic, {pages} pages of {int(m['page_bytes_min']) // 1024}-"
                f"{int(m['page_bytes_max']) // 1024} KB (mean {int(m['page_bytes_mean']) / 1024:.0f} KB)"
            )
            sites.append(
                SiteData(
                    "synth",
                    out / "root",
                    out / "urls.txt",
                    int(m["files"]),
                    int(m["total_bytes"]),
                    int(m["html_files"]),
                    desc,
                    True,
                )
            )
        elif name == "docs":
            root = environment.docs_root()
            if root is None:
                raise SystemExit("bench: python3-doc HTML not found")
            files, total, html = [], 0, 0
            for dirpath, _dirs, names_ in os.walk(root, followlinks=True):
                for fn in names_:
                    full = os.path.join(dirpath, fn)
                    if not os.path.exists(full):
                        continue
                    files.append("/" + os.path.relpath(full, root))
                    total += os.path.getsize(full)
                    html += fn.endswith(".html")
            urls = WORK / "sites" / "docs-urls.txt"
            urls.parent.mkdir(parents=True, exist_ok=True)
            urls.write_text("".join(f + "\n" for f in sorted(files)))
            version = environment._first_line(
                ["dpkg-query", "-W", "-f", "${Version}", "python3-doc"]
            )
            sites.append(
                SiteData("docs", root, urls, len(files), total, html, f"python3-doc {version} HTML")
            )
        else:
            raise SystemExit(f"bench: unknown site {name!r} (synth, docs)")
    return sites


def median(values: list[Any]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def run(
    *,
    sites: list[str],
    pages: int,
    rounds: int,
    workers: int,
    frontier: str | None,
    keep: bool,
    tools: tuple[str, ...] = TOOLS,
    processes: int = 1,
    out: Callable[[str], None] = print,
) -> dict[str, Any]:
    """``processes`` ≥ 2 adds the scale-out row (needs redis-server)."""
    if processes >= 2:
        tools = (*tools, f"{MULTI_PREFIX}{processes}")
    site_data = prepare_sites(sites, pages)
    frontier_args, frontier_note = peers.frontier_choice(frontier)
    runs_dir = WORK / "runs" / "throughput"
    shutil.rmtree(runs_dir, ignore_errors=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {
        s.name: {t: [] for t in tools} for s in site_data
    }
    loads: list[float] = []
    nginx = Nginx(WORK / "nginx", [Site(s.name, s.root, s.redirect_old) for s in site_data])
    out(
        f"== throughput: {', '.join(tools)} on {', '.join(s.name for s in site_data)}; "
        f"{rounds} round(s), concurrency {workers}"
    )
    out(
        f"   archiver with politeness OFF for this benchmark: --workers {workers} --per-host-concurrency "
        f"{workers} --per-host-delay 0 --robots ignore --sitemaps off; {frontier_note}"
    )
    t_start = time.monotonic()
    with nginx:
        for s in site_data:
            out(
                f"   {s.name}: {s.desc}: {s.files} files, {s.bytes / 1e6:.1f} MB, {s.html} HTML, "
                f"served at {nginx.base(s.name)}/"
            )
        for r in range(rounds):
            out(f"-- round {r + 1}/{rounds}: 1-min load average {os.getloadavg()[0]:.2f} at start")
            for s in site_data:
                order = list(tools[r % len(tools) :] + tools[: r % len(tools)])
                for tool in order:
                    rundir = runs_dir / s.name / tool / f"r{r + 1}"
                    rundir.mkdir(parents=True, exist_ok=True)
                    base = nginx.base(s.name)
                    if tool == "archiver":
                        row = peers.run_archiver(
                            base + "/", rundir, workers=workers, frontier_args=frontier_args
                        )
                    elif tool.startswith(MULTI_PREFIX):
                        row = peers.run_archiver_processes(
                            base + "/", rundir, processes=processes, workers=workers
                        )
                    elif tool == "wget":
                        row = peers.run_wget(base + "/", rundir)
                    else:
                        row = peers.run_bare(
                            base,
                            s.urls_file,
                            rundir,
                            concurrency=workers,
                            parse=tool == "bare+parse",
                        )
                    d = row.as_dict()
                    d["round"] = r + 1
                    results[s.name][tool].append(d)
                    loads.append(row.m.load1)
                    problem = ""
                    if not row.ok:
                        problem = f"  !! rc={row.m.rc}{' TIMEOUT' if row.m.timed_out else ''} (log in {rundir})"
                    out(
                        f"   {s.name:5} {tool:10} {row.urls:6d} URLs {row.m.wall_s:7.2f} s wall "
                        f"{row.m.cpu_s:7.2f} s CPU {row.m.peak_rss_kb / 1024:6.0f} MB "
                        f"{row.per_second:7.0f} URLs/s  load {row.m.load1:.2f}{problem}"
                    )
                    if not keep or r + 1 < rounds:
                        for d_ in ("crawl", "out"):
                            shutil.rmtree(rundir / d_, ignore_errors=True)
    report = {
        "kind": "throughput",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "rounds": rounds,
        "workers": workers,
        "frontier": frontier_note,
        "sites": {
            s.name: {"desc": s.desc, "files": s.files, "bytes": s.bytes, "html": s.html}
            for s in site_data
        },
        "results": results,
        "load1": {"median": median(loads), "max": max(loads) if loads else None},
        "elapsed_s": round(time.monotonic() - t_start, 1),
    }
    return report


def _ratio_median(
    rows_a: list[dict[str, Any]], rows_b: list[dict[str, Any]], key: str = "per_second"
) -> float | None:
    """Median over rounds of a[key] / b[key], pairing rows of the same round."""
    by_round_b = {r["round"]: r for r in rows_b}
    ratios = []
    for a in rows_a:
        b = by_round_b.get(a["round"])
        if b and b[key]:
            ratios.append(float(a[key]) / float(b[key]))
    return median(ratios)


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def format_report(report: dict[str, Any]) -> str:
    lines: list[str] = []
    lines.extend(environment.machine_lines(report["machine"]))
    load = report["load1"]
    lines.append(
        f"{report['when']}; {report['rounds']} round(s), concurrency {report['workers']}; 1-min load average "
        f"after each run: median {_fmt(load['median'], '.2f')}, max {_fmt(load['max'], '.2f')} "
        f"(2 cores: well above 2 means other work shared the machine; trust the ratios more than the absolutes)"
    )
    lines.append(
        f"archiver: politeness off (--per-host-concurrency = --workers = {report['workers']}, "
        f"--per-host-delay 0, --robots ignore, --sitemaps off), {report['frontier']}"
    )
    lines.append("")
    lines.append(
        "| site | tool | URLs | wall s | URLs/s | URLs/s in loop | CPU s | CPU ms/URL | peak RSS MB "
        "| WARC MB | ÷ ceiling | × wget |"
    )
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    results: dict[str, dict[str, list[dict[str, Any]]]] = report["results"]
    goals: list[str] = []
    for site, tools in results.items():
        ceiling = tools.get("bare+parse", [])
        wget = tools.get("wget", [])
        for tool, rows in tools.items():
            if not rows:
                continue

            def med(key: str, rows: list[dict[str, Any]] = rows) -> float | None:
                return median([float(r[key]) for r in rows])

            vs_ceiling = _ratio_median(rows, ceiling) if ceiling else None
            vs_wget = _ratio_median(rows, wget) if wget else None
            rss, warc = med("peak_rss_kb"), med("warc_bytes")
            lines.append(
                f"| {site} | {label(tool)} | {_fmt(med('urls'), '.0f')} | {_fmt(med('wall_s'), '.2f')} "
                f"| {_fmt(med('per_second'), ',.0f')} | {_fmt(med('loop_per_second'), ',.0f')} "
                f"| {_fmt(med('cpu_s'), '.2f')} | {_fmt(med('cpu_ms_per_url'), '.2f')} "
                f"| {_fmt(rss / 1024 if rss else None, '.0f')} | {_fmt(warc / 1e6 if warc else None, '.1f')} "
                f"| {_fmt(vs_ceiling, '.2f')} | {_fmt(vs_wget, '.2f')} |"
            )
            if tool == "archiver" or tool.startswith(MULTI_PREFIX):
                goals.extend(
                    _goal_lines(
                        site,
                        heading=site if tool == "archiver" else f"{site}, {label(tool)}",
                        rows=rows,
                        vs_ceiling=vs_ceiling,
                        vs_wget=vs_wget,
                        ceiling=ceiling,
                        report=report,
                    )
                )
    lines.append("")
    lines.append(
        "URLs = every HTTP response the tool received (pages, requisites, redirects, 404s); URLs/s, "
        "CPU and RSS are per whole process (interpreter start-up and exit included); "
        "'in loop' = URLs over the tool's own loop time (archiver: summary.json duration_seconds; "
        "bare client: its fetch loop; wget: whole process). ÷ ceiling and × wget are medians of "
        "per-round URLs/s ratios to the bare+selectolax client and to wget. The --processes N row "
        "measures archiver's whole process tree: the supervisor, the N crawl processes and "
        "redis-server (CPU of all of them; peak RSS = the largest sum of their peaks); its "
        "workers are split between the processes, so the concurrency is the same as the other "
        "rows'."
    )
    if goals:
        lines.append("")
        lines.append("Goals:")
        lines.extend(goals)
    lines.append(f"\n(benchmark took {report['elapsed_s']} s)")
    return "\n".join(lines)


def _goal_lines(
    site: str,
    *,
    heading: str,
    rows: list[dict[str, Any]],
    vs_ceiling: float | None,
    vs_wget: float | None,
    ceiling: list[dict[str, Any]],
    report: dict[str, Any],
) -> list[str]:
    ups = median([r["per_second"] for r in rows])
    checks = []
    goal = GOALS.get(site)
    if goal:
        checks.append(f"{_fmt(ups, ',.0f')} URLs/s (goal ≥ {goal:,.0f}: {_verdict(ups, goal)})")
    if vs_ceiling is not None:
        checks.append(
            f"{vs_ceiling:.2f} × ceiling (goal ≥ {GOAL_CEILING:.2f}: {_verdict(vs_ceiling, GOAL_CEILING)})"
        )
    if vs_wget is not None and site == "synth":
        checks.append(
            f"{vs_wget:.2f} × wget (goal ≥ {GOAL_WGET:.0f}: {_verdict(vs_wget, GOAL_WGET)})"
        )
    info = [f"{_fmt(median([r['loop_per_second'] for r in rows]), ',.0f')} URLs/s inside the crawl "
            "(summary.json duration_seconds, i.e. without start-up and exit)"]  # fmt: skip
    cpu_ratio = _ratio_median(rows, ceiling, key="cpu_ms_per_url") if ceiling else None
    if cpu_ratio is not None:
        info.append(
            f"CPU per URL {cpu_ratio:.1f} × the ceiling's (70 % of its rate needs ≤ {1 / GOAL_CEILING:.2f} ×)"
        )
    pages = median([(r["extra"] or {}).get("pages") for r in rows])
    served = report["sites"].get(site, {}).get("html")
    if pages is not None and served:
        info.append(f"{pages:.0f} of {served} HTML files captured")
    return [f"- {heading}: " + "; ".join(checks), "  " + "; ".join(info)]


def _verdict(value: float | None, goal: float) -> str:
    if value is None:
        return "not measured"
    return "met" if value >= goal else "NOT met"


def save(report: dict[str, Any], text: str) -> Path:
    results = WORK / "results"
    results.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = results / f"{report['kind']}-{stamp}.json"
    path.write_text(json.dumps(report, indent=1, default=str))
    path.with_suffix(".md").write_text(text + "\n")
    return path
