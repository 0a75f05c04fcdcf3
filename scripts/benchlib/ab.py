"""Interleaved A/B runs: the same crawl by two versions of archiver, in turns.

Runs minutes apart drift by ±10 % on a shared 2-core machine, more than most single changes;
so two versions are compared in the same minutes, alternating (A B, B A, A B, ...), several
rounds, and the medians of each side's CPU and wall time are set side by side with the median
of the per-round ratios. Version A is a git revision, checked out into
``bench-out/ab/REV`` (a detached worktree); version B is the working tree. Both are run by
the repo's venv, importing the tree's own ``archiver`` first on ``sys.path`` (the venv's
editable install points at the main checkout), from a directory outside both trees.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import REPO, WORK, environment, measure, peers
from benchlib.nginx import Nginx, Site
from benchlib.throughput import prepare_sites

RUNNER = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from archiver.commands.cli import main; sys.exit(main(sys.argv[1:]))"
)


def checkout(rev: str) -> Path:
    """A detached worktree of ``rev`` under bench-out/ab (made once, reused)."""
    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", rev],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    tree = WORK / "ab" / sha
    if not (tree / "archiver").is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=False)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "archiver")], check=True)
    return tree


def crawl(tree: Path, seed: str, rundir: Path, *, workers: int, extra: list[str]) -> dict[str, Any]:
    out = rundir / "crawl"
    shutil.rmtree(out, ignore_errors=True)
    rundir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", RUNNER, str(tree), "crawl", seed, "--output", str(out),
            *peers.politeness_off(workers), "--quiet", "--progress", "off", *extra]  # fmt: skip
    m = measure.run(argv, log=rundir / "archiver.log", timeout=900, cwd=WORK)
    summary = peers.read_summary(out)
    shutil.rmtree(out, ignore_errors=True)
    if m.rc != 0:
        raise SystemExit(f"bench-ab: {tree} failed (rc {m.rc}); see {rundir / 'archiver.log'}")
    return {
        "cpu_s": m.cpu_s,
        "wall_s": m.wall_s,
        "loop_s": summary.get("duration_seconds"),
        "urls": summary.get("captures", 0),
        "load1": m.load1,
    }


def run(rev: str, *, site: str, pages: int, rounds: int, workers: int, extra: list[str]) -> str:
    a_tree, b_tree = checkout(rev), REPO
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "archiver")], check=True)
    data = prepare_sites([site], pages)[0]
    work = WORK / "runs" / "ab"
    sides: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    with Nginx(WORK / "nginx-ab", [Site(site, data.root, site == "synth")]) as nginx:
        seed = nginx.base(site) + "/"
        for number in range(rounds):
            order = ("A", "B") if number % 2 == 0 else ("B", "A")
            for side in order:
                tree = a_tree if side == "A" else b_tree
                result = crawl(tree, seed, work / side, workers=workers, extra=extra)
                sides[side].append(result)
                print(
                    f"   round {number + 1} {side}: {result['urls']} URLs, "
                    f"{result['cpu_s']:.2f} s CPU, {result['wall_s']:.2f} s wall, "
                    f"load {result['load1']:.2f}",
                    flush=True,
                )
    return report(rev, data.desc, sides, extra)


def report(rev: str, site: str, sides: dict[str, list[dict[str, Any]]], extra: list[str]) -> str:
    def med(side: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in sides[side])

    pairs = list(zip(sides["A"], sides["B"], strict=True))
    cpu_ratio = statistics.median(b["cpu_s"] / a["cpu_s"] for a, b in pairs)
    wall_ratio = statistics.median(b["wall_s"] / a["wall_s"] for a, b in pairs)
    info = environment.machine()
    lines = [
        f"A/B {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: A = {rev}, B = the working "
        f"tree ({info['archiver']}); {site}; {len(pairs)} interleaved rounds; extra args: "
        f"{' '.join(extra) or '-'}; load median {med('A', 'load1'):.2f}",
        "",
        "| | URLs | CPU s | wall s | loop s |",
        "|---|---:|---:|---:|---:|",
    ]
    for side in ("A", "B"):
        lines.append(
            f"| {side} | {med(side, 'urls'):.0f} | {med(side, 'cpu_s'):.2f} "
            f"| {med(side, 'wall_s'):.2f} | {med(side, 'loop_s'):.2f} |"
        )
    lines.append("")
    lines.append(
        f"B / A, median of the per-round ratios: CPU {cpu_ratio:.3f} ({(cpu_ratio - 1) * 100:+.1f} %), "
        f"wall {wall_ratio:.3f} ({(wall_ratio - 1) * 100:+.1f} %)"
    )
    return "\n".join(lines)
