"""A large ``ignores`` file: 100,000 lines (``--quick``: 10,000), loaded, grown and searched.

The lines are generated like those of shared ignore lists: sites (``^https?://(www\\.)?siteN
\\.example\\.com/``), paths with numbers (``/calendar/\\d{4}/N/``), query parameters, case-
insensitive file names, and one line in a hundred with no literal text at all (``\\.(mp4|
webm)\\?start=\\d{N}``-like), which no prefilter can file. The URLs are a crawl's mix: most
match nothing, one in five matches a line.

Figures, each measured in this process (CPU-bound; the best of 3 for searches):

* **load**: the file parsed and compiled (``parse_ignores``), what a crawl does before its first
  lease;
* **grow**: the file read again after one line was appended (``archiver ignore``), with the
  previous version given (what the crawl's watcher does);
* **search**: microseconds per URL, once every bucket a URL needs exists.

The peer, measured in the same run on the same lines: one alternation of all the lines
(:func:`archiver.policy.ignores.combine`, how every file was searched before), compiled once
and searched per URL, and its reload (it compiles the whole file again). Both answer every
URL alike: the verdicts are compared.
"""

from __future__ import annotations

import os
import random
import re
import time
from typing import Any

from benchlib import environment

GOAL_LOAD_S = 10.0
GOAL_GROW_S = 1.0


def lines(count: int, seed: int = 8) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        kind = i % 100
        if kind == 99:
            out.append(rf"\.(mp4|webm)\?start=\d{{{1 + i % 7}}}x{{{i % 5 + 1}}}$")
        elif kind % 4 == 0:
            out.append(rf"^https?://(www\.)?site{i}\.example\.com/")
        elif kind % 4 == 1:
            out.append(rf"/calendar/\d{{4}}/{rnd.randrange(10**6)}/")
        elif kind % 4 == 2:
            out.append(rf"[?&]utm_{rnd.randrange(16**6):x}=")
        else:
            out.append(rf"(?i)/print/{rnd.randrange(10**6)}-[a-z]+\.html$")
    return out


def urls(patterns: list[str], count: int, seed: int = 9) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for j in range(count):
        if j % 5 == 0:  # one that a site line matches
            out.append(f"https://www.site{rnd.randrange(0, len(patterns), 100)}.example.com/a/{j}")
        else:
            out.append(f"https://www.example.org/news/{rnd.randrange(10**6)}/story-{j}.html?p={j}")
    return out


def _best(fn: Any, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def run(*, count: int, out: Any = print) -> dict[str, Any]:
    from archiver.policy.ignores import combine, parse_ignores  # noqa: PLC0415

    patterns = lines(count)
    text = "\n".join(patterns) + "\n"
    grown_text = text + "/an/appended/line/\n"
    sample = urls(patterns, 2000)
    out(f"== ignores: {count:,} lines, {len(sample):,} URLs")
    report: dict[str, Any] = {
        "kind": "ignores",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "lines": count,
        "urls": len(sample),
    }
    t0, c0 = time.perf_counter(), time.process_time()
    ignores = parse_ignores(text)
    report["load_s"] = time.perf_counter() - t0
    report["load_cpu_s"] = time.process_time() - c0
    t0 = time.perf_counter()
    grown = parse_ignores(grown_text, previous=ignores)
    report["grow_s"] = time.perf_counter() - t0
    mine = [grown.search(u) for u in sample]  # the first pass makes what the URLs need
    report["search_us"] = 1e6 * _best(lambda: [grown.search(u) for u in sample]) / len(sample)
    out(
        f"   archiver: load {report['load_s']:.2f} s ({report['load_cpu_s']:.2f} s CPU), grow by a line {report['grow_s']:.3f} s, "
        f"{report['search_us']:.1f} µs per URL"
    )

    compiled = [re.compile(p) for p in grown_text.split()]
    t0, c0 = time.perf_counter(), time.process_time()
    alternation = combine(compiled)
    report["peer_load_s"] = time.perf_counter() - t0
    report["peer_load_cpu_s"] = time.process_time() - c0

    def peer(url: str) -> bool:
        return any(r.search(url) for r in alternation)

    theirs = [peer(u) for u in sample[:200]]
    report["peer_search_us"] = 1e6 * _best(lambda: [peer(u) for u in sample[:200]], 1) / 200
    report["agree"] = mine[:200] == theirs
    report["load1"] = os.getloadavg()[0]
    report["matched"] = sum(mine)
    out(
        f"   one alternation (peer): compile {report['peer_load_s']:.2f} s (again at every "
        f"change), {report['peer_search_us']:.1f} µs per URL; verdicts agree: {report['agree']}"
    )
    return report


def format_report(r: dict[str, Any]) -> str:
    lines_ = environment.machine_lines(r["machine"])
    lines_ += [
        f"{r['when']}: an ignores file of {r['lines']:,} generated lines, {r['urls']:,} URLs "
        f"({r['matched']:,} ignored); 1-minute load average {r['load1']:.1f}",
        "",
        "| search | load s | load CPU s | one line appended s | µs per URL |",
        "|---|---:|---:|---:|---:|",
        f"| archiver (lines filed under their literal text) | {r['load_s']:.2f} "
        f"| {r['load_cpu_s']:.2f} | {r['grow_s']:.3f} | {r['search_us']:.1f} |",
        f"| one alternation of every line (peer: before) | {r['peer_load_s']:.2f} "
        f"| {r['peer_load_cpu_s']:.2f} | {r['peer_load_s']:.2f} | {r['peer_search_us']:,.1f} |",
        "",
        f"Verdicts agree on the URLs both searched: {'yes' if r['agree'] else 'NO'}.",
        f"Goals: loaded in under {GOAL_LOAD_S:.0f} s of CPU (wall time follows the machine's "
        f"load): {'met' if r['load_cpu_s'] < GOAL_LOAD_S else 'NOT met'}; a line appended in under "
        f"{GOAL_GROW_S:.0f} s: {'met' if r['grow_s'] < GOAL_GROW_S else 'NOT met'}.",
    ]
    return "\n".join(lines_)
