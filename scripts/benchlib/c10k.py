"""C10K: 10,000 fetches in flight at once against a slow local server.

The server (:mod:`slowserver`, its own process) answers ``/fan/N`` at once with a page linking
to N URLs and holds each of those for ``hold`` seconds (10 s) before a small answer. archiver
runs with N workers and N per-host slots, so after the first page it opens N connections and
has N fetches in flight until the server lets go. The server counts requests in flight (its
peak is the proof of concurrency) and requests the client dropped (errors); archiver's peak RSS
is read from /proc while it runs. Bytes per in-flight fetch = peak RSS / peak in flight; the
marginal figure subtracts the peak RSS of the same crawler crawling one page (its fixed cost).
The bare aiohttp client with N concurrent GETs on the same URLs is the reference.
The open-files limit is raised (RLIMIT_NOFILE) before the server and the crawler start.
"""

from __future__ import annotations

import json
import resource
import shutil
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from benchlib import WORK, environment, measure, peers
from benchlib.slowserver import ServerProcess

GOAL_RSS = 1_000_000_000
GOAL_PER_FETCH = 100_000


def _server_stats(base: str) -> dict[str, int]:
    try:
        with urllib.request.urlopen(f"{base}/__stats", timeout=2) as response:
            return dict(json.loads(response.read()))
    except (OSError, ValueError):
        return {}


def run(
    *, count: int, hold: float, frontier: str | None, keep: bool, out: Callable[[str], None] = print
) -> dict[str, Any]:
    frontier_args, frontier_note = peers.frontier_choice(frontier)
    work = WORK / "runs" / "c10k"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    out(
        f"== C10K: {count:,} fetches held {hold:g} s each by a local server; archiver --workers {count}; "
        f"open-files limit {nofile[0]}; {frontier_note}"
    )
    if nofile[0] < count + 1000:
        out(f"   !! the open-files limit {nofile[0]} is below {count + 1000}: expect failures")
    timeouts = ["--connect-timeout", "60", "--fetch-timeout", "60", "--read-timeout", "60",
                "--max-links-per-page", str(2 * count)]  # fmt: skip
    report: dict[str, Any] = {
        "kind": "c10k",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "count": count,
        "hold_s": hold,
        "frontier": frontier_note,
        "nofile": nofile[0],
    }
    t0 = time.monotonic()
    with ServerProcess(work / "server-base", delay=hold) as server:
        row = peers.run_archiver(
            f"{server.base}/fan/0",
            work / "base",
            workers=count,
            frontier_args=frontier_args,
            extra_args=timeouts,
        )
        report["baseline"] = row.as_dict()
        out(
            f"   archiver crawling one page (its fixed cost): peak RSS {row.m.peak_rss_kb / 1024:.0f} MB"
        )

    timeline: list[tuple[float, int, int]] = []  # (elapsed s, crawler RSS kB, server in-flight)
    with ServerProcess(work / "server", delay=hold) as server:
        last = [0.0]

        def sample(pid: int, elapsed: float) -> None:
            if elapsed - last[0] >= 0.5:
                last[0] = elapsed
                rss = sum(measure.status_kb(p, "VmRSS") for p in measure.tree(pid))
                timeline.append(
                    (round(elapsed, 2), rss, _server_stats(server.base).get("in_flight", -1))
                )

        row = peers.run_archiver(
            f"{server.base}/fan/{count}",
            work / "archiver",
            workers=count,
            frontier_args=frontier_args,
            extra_args=timeouts,
            timeout=hold * 6 + 120,
            on_sample=sample,
        )
    report["archiver"] = row.as_dict()
    report["server"] = server.stats
    report["timeline"] = timeline
    s = server.stats
    out(
        f"   archiver: {row.urls} captures in {row.m.wall_s:.1f} s, {row.m.cpu_s:.1f} s CPU, peak RSS "
        f"{row.m.peak_rss_kb / 1024:.0f} MB; server: peak {s.get('peak_in_flight')} in flight, "
        f"{s.get('peak_open_connections')} connections, {s.get('errors')} dropped; rc={row.m.rc}"
    )

    leaves = work / "leaves.txt"
    leaves.write_text("".join(f"/fan/{count}/{i}\n" for i in range(count)))
    with ServerProcess(work / "server-bare", delay=hold) as server:
        bare = peers.run_bare(
            server.base,
            leaves,
            work / "bare",
            concurrency=count,
            parse=False,
            timeout=hold * 6 + 120,
        )
    report["bare"] = bare.as_dict()
    report["bare_server"] = server.stats
    out(
        f"   bare aiohttp: {bare.urls} responses in {bare.m.wall_s:.1f} s, peak RSS {bare.m.peak_rss_kb / 1024:.0f} MB; "
        f"server: peak {server.stats.get('peak_in_flight')} in flight"
    )
    report["elapsed_s"] = round(time.monotonic() - t0, 1)
    if not keep:
        shutil.rmtree(work / "archiver" / "crawl", ignore_errors=True)
        shutil.rmtree(work / "base" / "crawl", ignore_errors=True)
    return report


def format_report(r: dict[str, Any]) -> str:
    a, s, base, bare = r["archiver"], r["server"], r["baseline"], r["bare"]
    in_flight = max(int(s.get("peak_in_flight") or 0), 1)
    peak = a["peak_rss_kb"] * 1024
    per_fetch = peak / in_flight
    marginal = (peak - base["peak_rss_kb"] * 1024) / in_flight
    bare_peak = bare["peak_rss_kb"] * 1024
    bare_in_flight = max(int(r["bare_server"].get("peak_in_flight") or 0), 1)
    extra = a.get("extra") or {}
    failures = extra.get("failures") or {}
    statuses = extra.get("by_status") or {}
    errors = int(s.get("errors") or 0) + sum(int(v) for v in failures.values())
    errors += sum(int(v) for k, v in statuses.items() if k != "200")
    clean = errors == 0 and a["rc"] == 0 and a["urls"] >= r["count"] + 1
    together = in_flight >= r["count"]
    ramp = s.get("last_delayed_s")
    lines = environment.machine_lines(r["machine"])
    lines += [
        f"{r['when']}: {r['count']:,} URLs held {r['hold_s']:g} s each by a local asyncio server; archiver "
        f"--workers {r['count']} --per-host-concurrency {r['count']} --per-host-delay 0 --robots ignore "
        f"--sitemaps off --connect/--fetch/--read-timeout 60; {r['frontier']}; open-files limit {r['nofile']}",
        "",
        "| client | responses | peak in flight (server) | dropped / errors | wall s | CPU s | peak RSS MB "
        "| bytes per in-flight fetch | marginal bytes per fetch |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| archiver | {a['urls']} | {in_flight} | {errors} | {a['wall_s']:.1f} | {a['cpu_s']:.1f} "
        f"| {peak / 2**20:.0f} | {per_fetch / 1024:,.1f} KiB | {marginal / 1024:,.1f} KiB |",
        f"| bare aiohttp (reference) | {bare['urls']} | {bare_in_flight} | {r['bare_server'].get('errors')} "
        f"| {bare['wall_s']:.1f} | {bare['cpu_s']:.1f} | {bare_peak / 2**20:.0f} | {bare_peak / bare_in_flight / 1024:,.1f} KiB | - |",
        "",
        f"archiver crawling a single page peaks at {base['peak_rss_kb'] / 1024:.0f} MB (the marginal column "
        "subtracts that).",
        f"Goals: all {r['count']:,} fetched with no errors: {'met' if clean else 'NOT met'}; all "
        f"{r['count']:,} in flight at once: {'met' if together else 'NOT met'} (peak {in_flight:,}); peak RSS "
        f"≤ 1 GB: {'met' if peak <= GOAL_RSS else 'NOT met'}; ≤ 100 KB per in-flight fetch: "
        f"{'met' if per_fetch <= GOAL_PER_FETCH else 'NOT met'} ({per_fetch / 1000:,.1f} kB).",
    ]
    if ramp is not None:
        lines.append(
            f"archiver sent its {r['count']:,} held requests over {ramp:.1f} s (first to last arrival at the "
            f"server; the peak was reached at {s.get('peak_in_flight_s', 0):.1f} s): "
            + (
                "within the hold, so all were in flight together."
                if ramp < r["hold_s"]
                else f"longer than the {r['hold_s']:g} s hold, so the first answers came back before the last "
                "requests went out (the ramp is CPU-bound: see CPU s)."
            )
        )
    if failures:
        lines.append(f"archiver failures: {failures}")
    tl = r.get("timeline") or []
    if tl:
        at_peak = max(tl, key=lambda t: (t[2], t[1]))
        started = next((t[0] for t in tl if t[2] > 0), None)
        lines.append(
            f"At the sample with most requests in flight ({at_peak[2]} at {at_peak[0]:.1f} s after start) "
            f"archiver's RSS was {at_peak[1] / 1024:.0f} MB; the first held request was seen at "
            f"{started if started is not None else '?'} s (samples every 0.5 s)."
        )
    lines.append(f"\n(benchmark took {r['elapsed_s']} s)")
    return "\n".join(lines)
