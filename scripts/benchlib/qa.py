"""Replay checks: ``archiver qa`` over crawls of the client-rendered bench site, measured as a
whole process (its Chromium included: the processes are archiver's descendants).

The site is :mod:`benchlib.browser`'s (every page an empty application root filled from the
page's JSON). Two crawls of it are checked: a static one (it holds the home shell and its
script: every page lacks its JSON, image and font) and a ``--browser all`` one (complete). Each
is checked with no link clicked and with three links clicked in each page; beside them, the
``--browser all`` crawl itself is measured, the peer in the same run: what a page costs to
capture in the browser against what it costs to replay and check. Each crawl is also made with
``--qa`` (every page checked right after its capture, what it lacks captured in its lease),
beside the same crawl without it: what proving each page during the crawl adds.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from benchlib import WORK, environment, measure, peers
from benchlib.browser import generate
from benchlib.nginx import Nginx, Site

ARCHIVER = peers.ARCHIVER


def _qa(crawl: Path, rundir: Path, *, tabs: int, follow: int) -> dict[str, Any]:
    (crawl / "qa.jsonl").unlink(missing_ok=True)
    argv = [
        str(ARCHIVER), "qa", str(crawl), "--browser-tabs", str(tabs),
        "--follow-links", str(follow), "--fresh",
    ]  # fmt: skip
    m = measure.run(argv, log=rundir / f"qa-{follow}.log", timeout=3600, cwd=rundir)
    totals = json.loads((crawl / "summary.json").read_text()).get("qa", {})
    return {**m.as_dict(), "totals": totals}


def _patch(crawl: Path, rundir: Path, *, tabs: int) -> dict[str, Any]:
    """``archiver patch`` on the static crawl (its qa.jsonl from the last check: 3 links)."""
    argv = [str(ARCHIVER), "patch", str(crawl), "--browser-tabs", str(tabs), "--rounds", "5"]
    m = measure.run(argv, log=rundir / "patch.log", timeout=3600, cwd=rundir)
    summary = json.loads((crawl / "summary.json").read_text())
    return {
        **m.as_dict(),
        "totals": summary.get("qa", {}),
        "captures": summary.get("captures", 0),
        "rounds": (rundir / "patch.log").read_text().count("  round "),
    }


def _crawl_with_qa(seed: str, rundir: Path, extra: list[str], tabs: int) -> dict[str, Any]:
    """The same crawl with ``--qa``: each page checked as it is captured."""
    crawl = peers.run_archiver(
        seed, rundir, workers=tabs * 2, frontier_args=["--frontier", "sqlite"],
        extra_args=[*extra, "--wacz", "--qa", "--browser-tabs", str(tabs)], timeout=3600,
    )  # fmt: skip
    summary = json.loads((rundir / "crawl" / "summary.json").read_text())
    return {**crawl.m.as_dict(), "pages": summary.get("pages", 0), "totals": summary.get("qa", {})}


def run(*, pages: int, rounds: int, tabs: int, keep: bool) -> dict[str, Any]:
    site_dir = WORK / "sites" / f"spa-{pages}"
    generate(site_dir, pages)
    work = WORK / "runs" / "qa"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(
        f"== qa: archiver qa over crawls of a client-rendered site of {pages} pages "
        f"({tabs} tabs); {rounds} round(s)"
    )
    rows: list[dict[str, Any]] = []
    with Nginx(work / "nginx", [Site("spa", site_dir)]) as nginx:
        seed = nginx.base("spa") + "/"
        for round_no in range(1, rounds + 1):
            for mode in ("static", "all"):
                rundir = work / f"{mode}-{round_no}"
                extra = (
                    [] if mode == "static" else ["--browser", "all", "--browser-tabs", str(tabs)]
                )
                crawl = peers.run_archiver(
                    seed, rundir, workers=tabs * 2, frontier_args=["--frontier", "sqlite"],
                    extra_args=[*extra, "--wacz"], timeout=3600,
                )  # fmt: skip
                summary = json.loads((rundir / "crawl" / "summary.json").read_text())
                row: dict[str, Any] = {
                    "mode": mode,
                    "round": round_no,
                    "crawl": {**crawl.m.as_dict(), "pages": summary.get("pages", 0)},
                }
                for follow in (0, 3):
                    row[f"qa{follow}"] = _qa(rundir / "crawl", rundir, tabs=tabs, follow=follow)
                if mode == "static":
                    row["patch"] = _patch(rundir / "crawl", rundir, tabs=tabs)
                if not keep:
                    shutil.rmtree(rundir / "crawl", ignore_errors=True)
                row["crawl_qa"] = _crawl_with_qa(seed, work / f"{mode}-qa-{round_no}", extra, tabs)
                if not keep:
                    shutil.rmtree(work / f"{mode}-qa-{round_no}" / "crawl", ignore_errors=True)
                rows.append(row)
                q0 = row["qa0"]
                print(
                    f"   round {round_no} {mode:>6}: crawl {row['crawl']['pages']} pages in "
                    f"{crawl.m.wall_s:.1f} s; qa {q0['totals'].get('pages')} pages in "
                    f"{q0['wall_s']:.1f} s ({q0['cpu_s']:.1f} s CPU), "
                    f"{q0['totals'].get('missing_urls')} URLs missing; with --qa: "
                    f"{row['crawl_qa']['wall_s']:.1f} s, "
                    f"{row['crawl_qa']['totals'].get('misses_patched')} misses captured, "
                    f"{row['crawl_qa']['totals'].get('missing_urls')} left"
                )
    return {
        "kind": "qa",
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": environment.machine(),
        "pages": pages,
        "rounds": rounds,
        "tabs": tabs,
        "rows": rows,
    }


def format_report(r: dict[str, Any]) -> str:
    lines = environment.machine_lines(r["machine"])
    lines.append(
        f"{r['when']}; client-rendered site of {r['pages']} pages; {r['rounds']} round(s), "
        f"medians; --browser-tabs {r['tabs']}; CPU and RSS include Chromium's processes"
    )
    lines.append("")
    lines.append(
        "| crawl | run | pages | wall s | pages/s | CPU s/page | peak RSS MB | URLs missing |"
    )
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for mode in ("static", "all"):
        rows = [row for row in r["rows"] if row["mode"] == mode]
        if not rows:
            continue
        for label, key in (
            ("the crawl itself (peer)", "crawl"),
            ("the crawl with --qa (each page checked during the crawl)", "crawl_qa"),
            ("qa, no link clicked", "qa0"),
            ("qa, 3 links clicked per page", "qa3"),
        ):
            runs = [row[key] for row in rows]
            pages = statistics.median(
                run.get("pages") or run.get("totals", {}).get("pages", 0) for run in runs
            )
            wall = statistics.median(run["wall_s"] for run in runs)
            cpu = statistics.median(run["cpu_s"] for run in runs)
            rss = statistics.median(run["peak_rss_kb"] for run in runs) / 1024
            missing = (
                statistics.median(run["totals"].get("missing_urls", 0) for run in runs)
                if key != "crawl"
                else "-"
            )
            lines.append(
                f"| {mode} | {label} | {pages:.0f} | {wall:.1f} | "
                f"{pages / wall if wall else 0:.2f} | {cpu / pages if pages else 0:.3f} | "
                f"{rss:.0f} | {missing} |"
            )
    patches = [row["patch"] for row in r["rows"] if "patch" in row]
    if patches:
        lines.append("")
        lines.append(
            "| archiver patch on the static crawl | rounds | wall s | CPU s | peak RSS MB "
            "| pages checked | URLs missing after |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for patch in patches:
            lines.append(
                f"| fetch what qa named, check again | {patch['rounds']} | {patch['wall_s']:.1f} "
                f"| {patch['cpu_s']:.1f} | {patch['peak_rss_kb'] / 1024:.0f} "
                f"| {patch['totals'].get('pages', 0)} | {patch['totals'].get('missing_urls', 0)} |"
            )
    return "\n".join(lines)
