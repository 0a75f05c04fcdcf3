# ruff: noqa: RUF001 - the reports print multiplication and division signs on purpose
"""Latency-bound crawl: 200 workers against a server that answers every request after 50 ms.

The server (:mod:`slowserver`, its own process, uvloop) serves a tree of TOTAL small pages
(about 2 KB, 20 links each, all reachable from ``/tree/TOTAL/0``). With W workers and latency L
no crawler can beat W / L URLs/s (200 / 0.05 s = 4,000); the goal is 80 % of that, or the CPU
ceiling when that is lower. The CPU ceiling is measured on the same pages from a second server
without delay: 70 % of what the bare aiohttp + selectolax client reaches there (the throughput
goal's rule). archiver without delay is shown too: when its rate with 50 ms latency is close
to that, the latency is fully hidden and the crawl is CPU-bound.

wget (serial) crawls a 200-page tree from the same 50 ms server: about 1 / L = 20 URLs/s.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import WORK, environment, peers
from benchlib.slowserver import ServerProcess

WGET_PAGES = 200


def _urls_file(base: str, total: int, path: Path) -> Path:
    with urllib.request.urlopen(f"{base}/tree/{total}/urls.txt", timeout=30) as response:
        path.write_bytes(response.read())
    return path


def run(
    *,
    total: int,
    workers: int,
    delay: float,
    rounds: int,
    frontier: str | None,
    keep: bool,
    processes: int = 1,
    out: Callable[[str], None] = print,
) -> dict[str, Any]:
    """``processes`` ≥ 2 adds ``archiver crawl --processes N`` (the ``workers`` split between
    the processes)."""
    frontier_args, frontier_note = peers.frontier_choice(frontier)
    work = WORK / "runs" / "latency"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    results: dict[str, list[dict[str, Any]]] = {}
    out(
        f"== latency: {total:,} pages of ~2 KB, server delay {delay * 1000:.0f} ms, {workers} workers "
        f"(bound: {workers / delay:,.0f} URLs/s); {rounds} round(s)"
    )
    out(
        f"   archiver with politeness OFF: --workers {workers} --per-host-concurrency {workers} "
        f"--per-host-delay 0 --robots ignore --sitemaps off; {frontier_note}"
    )
    t0 = time.monotonic()
    with (
        ServerProcess(work / "slow", delay=delay) as slow,
        ServerProcess(work / "fast", delay=0) as fast,
    ):
        urls = _urls_file(slow.base, total, work / "urls.txt")
        runs: list[tuple[str, Callable[[Path], peers.Row]]] = [
            ("archiver", lambda d: peers.run_archiver(
                f"{slow.base}/tree/{total}/0", d, workers=workers, frontier_args=frontier_args)),
            ("bare+parse", lambda d: peers.run_bare(slow.base, urls, d, concurrency=workers, parse=True)),
            ("bare", lambda d: peers.run_bare(slow.base, urls, d, concurrency=workers, parse=False)),
            ("wget", lambda d: peers.run_wget(f"{slow.base}/tree/{WGET_PAGES}/0", d)),
            ("archiver, no delay", lambda d: peers.run_archiver(
                f"{fast.base}/tree/{total}/0", d, workers=workers, frontier_args=frontier_args)),
            ("bare+parse, no delay", lambda d: peers.run_bare(fast.base, urls, d, concurrency=workers, parse=True)),
        ]  # fmt: skip
        if processes >= 2:
            runs.insert(1, (multi_name(processes), lambda d: peers.run_archiver_processes(
                f"{slow.base}/tree/{total}/0", d, processes=processes, workers=workers)))  # fmt: skip
        for r in range(rounds):
            out(f"-- round {r + 1}/{rounds}: 1-min load average {os.getloadavg()[0]:.2f}")
            order = runs[r % len(runs) :] + runs[: r % len(runs)]
            for name, fn in order:
                rundir = work / name.replace(" ", "").replace(",", "-") / f"r{r + 1}"
                rundir.mkdir(parents=True, exist_ok=True)
                row = fn(rundir)
                d = row.as_dict()
                d["round"] = r + 1
                results.setdefault(name, []).append(d)
                out(
                    f"   {name:22} {row.urls:6d} URLs {row.m.wall_s:7.2f} s wall {row.m.cpu_s:7.2f} s CPU "
                    f"{row.m.peak_rss_kb / 1024:5.0f} MB {row.per_second:7.0f} URLs/s  load {row.m.load1:.2f}"
                    + ("" if row.ok else f"  !! rc={row.m.rc}, log in {rundir}")
                )
                if not keep or r + 1 < rounds:
                    for sub in ("crawl", "out"):
                        shutil.rmtree(rundir / sub, ignore_errors=True)
    return {
        "kind": "latency",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "total": total,
        "workers": workers,
        "delay": delay,
        "rounds": rounds,
        "frontier": frontier_note,
        "server": {"slow": slow.stats, "fast": fast.stats},
        "results": results,
        "elapsed_s": round(time.monotonic() - t0, 1),
    }


def multi_name(processes: int) -> str:
    return f"archiver --processes {processes}"


def _med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(r[key]) for r in rows)


def format_report(r: dict[str, Any]) -> str:
    bound = r["workers"] / r["delay"]
    lines = environment.machine_lines(r["machine"])
    lines.append(
        f"{r['when']}: {r['total']:,} pages (~2 KB, 20 links each) from a local server answering after "
        f"{r['delay'] * 1000:.0f} ms; {r['workers']} workers; medians of {r['rounds']} round(s)"
    )
    lines.append(
        f"archiver: politeness off (--per-host-concurrency {r['workers']}, --per-host-delay 0, "
        f"--robots ignore, --sitemaps off), {r['frontier']}"
    )
    lines += [
        "",
        "| tool | server delay | URLs | wall s | URLs/s | URLs/s in loop | CPU s | CPU ms/URL | peak RSS MB "
        "| in loop ÷ workers/latency |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    res = r["results"]
    for name, rows in res.items():
        no_delay = "no delay" in name
        ups = _med(rows, "per_second")
        loop = _med(rows, "loop_per_second")
        delay = "0" if no_delay else f"{r['delay'] * 1000:.0f} ms"
        vs_bound = "-" if no_delay or name == "wget" else f"{loop / bound:.2f}"
        lines.append(
            f"| {name.replace(', no delay', '')}{f' ({WGET_PAGES} pages)' if name == 'wget' else ''} "
            f"| {delay} | {_med(rows, 'urls'):.0f} | {_med(rows, 'wall_s'):.2f} "
            f"| {ups:,.0f} | {loop:,.0f} | {_med(rows, 'cpu_s'):.2f} | {_med(rows, 'cpu_ms_per_url'):.2f} "
            f"| {_med(rows, 'peak_rss_kb') / 1024:.0f} | {vs_bound} |"
        )
    lines.append("")
    if "archiver" in res and "bare+parse, no delay" in res:
        archiver = _med(res["archiver"], "loop_per_second")
        ceiling = _med(res["bare+parse, no delay"], "loop_per_second")
        goal = min(0.80 * bound, 0.70 * ceiling)
        which = (
            "80 % of workers/latency"
            if goal == 0.80 * bound
            else "70 % of the bare+selectolax CPU ceiling"
        )
        lines.append(
            f"Goal (sustained, i.e. in-loop rates): ≥ {goal:,.0f} URLs/s = min(80 % × {bound:,.0f}, "
            f"70 % × {ceiling:,.0f} (bare+selectolax on the same pages without delay)), i.e. {which}; "
            f"archiver sustains {archiver:,.0f} URLs/s: {'met' if archiver >= goal else 'NOT met'}."
        )
        for name, rows in res.items():
            if name.startswith("archiver --processes"):
                multi = _med(rows, "loop_per_second")
                lines.append(
                    f"{name} (the workers split between them, redis-server's CPU included): "
                    f"{multi:,.0f} URLs/s sustained: {'met' if multi >= goal else 'NOT met'}."
                )
        if "archiver, no delay" in res:
            with_delay = _med(res["archiver"], "cpu_ms_per_url")
            without = _med(res["archiver, no delay"], "cpu_ms_per_url")
            lines.append(
                f"archiver's CPU per URL: {with_delay:.2f} ms with {r['delay'] * 1000:.0f} ms latency, "
                f"{without:.2f} ms without (waiting costs no CPU); one core at that cost allows about "
                f"{1000 / with_delay:,.0f} URLs/s, so the {archiver:,.0f} URLs/s above are "
                + (
                    "CPU-bound: the 200 workers hide the latency."
                    if archiver >= 0.75 * 1000 / with_delay
                    else "below what the CPU allows."
                )
            )
        if "wget" in res:
            lines.append(
                f"wget (serial) manages {_med(res['wget'], 'per_second'):.0f} URLs/s at this latency."
            )
    slow = r["server"].get("slow") or {}
    if slow:
        lines.append(
            f"Server (50 ms): peak {slow.get('peak_in_flight')} requests in flight, "
            f"{slow.get('peak_open_connections')} connections open at most, {slow.get('errors')} errors."
        )
    lines.append(f"\n(benchmark took {r['elapsed_s']} s)")
    return "\n".join(lines)
