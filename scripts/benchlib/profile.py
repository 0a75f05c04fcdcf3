"""Where archiver's CPU goes: py-spy samples of one crawl of the synthetic site.

``py-spy record --format raw`` writes collapsed stacks (``frame;frame;… count``); they are
aggregated here by function (self samples: the function was on top; inclusive: anywhere on
the stack) and by module (self samples by file, grouped into archiver modules and libraries).
The raw file stays in bench-out/runs/profile/ for flame-graph tools (speedscope.app reads it).
"""

from __future__ import annotations

import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchlib import REPO, WORK, environment, measure, peers
from benchlib.nginx import Nginx, Site
from benchlib.throughput import prepare_sites

RATE = 200  #: samples per second
_THREAD = re.compile(r"^thread \((\d+)\)(?::\s*(.*))?$")
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


def _where(path: str) -> str:
    """A short module name for a file path: archiver/x.py, aiohttp/y.py, asyncio/z.py …"""
    if not path:
        return "?"
    parts = path.split("/")
    for anchor in ("archiver", "site-packages"):
        if anchor in parts:
            i = len(parts) - 1 - parts[::-1].index(anchor)
            rest = parts[i:] if anchor == "archiver" else parts[i + 1 :]
            return "/".join(rest[:2]) if len(rest) > 1 else rest[0]
    if "python3.11" in parts:
        i = parts.index("python3.11")
        return "stdlib/" + "/".join(parts[i + 1 : i + 3])
    return parts[-1]


def _group(module: str) -> str:
    if module.startswith("archiver/"):
        return module
    return module.split("/", 1)[0]


def aggregate(raw: Path) -> dict[str, Any]:
    self_fn: Counter[str] = Counter()
    incl_fn: Counter[str] = Counter()
    self_mod: Counter[str] = Counter()
    incl_mod: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    thread_names: dict[str, str] = {}
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        while frames and frames[0].startswith(("process ", "thread ")):  # --threads prefixes
            m = _THREAD.match(frames.pop(0))
            if m:
                tid, name = m.group(1), m.group(2)
                if name:
                    thread_names[tid] = name.rstrip("_0123456789") or name
                threads[tid] += count
        names = []
        for frame in frames:
            m = _FRAME.match(frame.strip())
            func, file = (m.group("func"), m.group("file")) if m else (frame, "")
            mod = _where(file)
            names.append((f"{func} ({mod})", _group(mod)))
        if not names:
            continue
        self_fn[names[-1][0]] += count
        self_mod[names[-1][1]] += count
        for fn in {n for n, _ in names}:
            incl_fn[fn] += count
        for mod in {g for _, g in names}:
            incl_mod[mod] += count
    by_thread: Counter[str] = Counter()
    for tid, n in threads.items():
        by_thread[thread_names.get(tid, "MainThread" if not thread_names else f"thread {tid}")] += n
    return {"total": total, "self_fn": self_fn, "incl_fn": incl_fn, "self_mod": self_mod,
            "incl_mod": incl_mod, "threads": by_thread}  # fmt: skip


def run(*, pages: int, workers: int, frontier: str | None, install: bool) -> dict[str, Any]:
    py_spy = environment.ensure_py_spy(install)
    site = prepare_sites(["synth"], pages)[0]
    frontier_args, frontier_note = peers.frontier_choice(frontier)
    work = WORK / "runs" / "profile"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(
        f"== profile: py-spy ({RATE} Hz) on archiver crawling {site.desc}, twice: sampling the thread "
        f"that holds the GIL, then all threads; {frontier_note}",
        flush=True,
    )
    runs: dict[str, Any] = {}
    with Nginx(WORK / "nginx", [Site("synth", site.root, True)]) as nginx:
        for view, flags in (("gil", ["--gil"]), ("threads", [])):
            raw = work / f"archiver-{view}.pyspy.txt"
            crawl = work / "crawl"
            shutil.rmtree(crawl, ignore_errors=True)
            argv = [str(py_spy), "record", "--rate", str(RATE), "--format", "raw", "--threads", *flags,
                    "--output", str(raw), "--",
                    str(peers.ARCHIVER), "crawl", nginx.base("synth") + "/", "--output", str(crawl),
                    *peers.politeness_off(workers), "--quiet", "--progress", "off", *frontier_args]  # fmt: skip
            m = measure.run(argv, log=work / f"py-spy-{view}.log", timeout=600)
            if m.rc != 0 or not raw.exists():
                raise SystemExit(
                    f"bench: py-spy failed (rc {m.rc}); see {work / f'py-spy-{view}.log'}"
                )
            agg = aggregate(raw)
            runs[view] = {
                "wall_s": m.wall_s,
                "raw": str(raw.relative_to(REPO)),
                **{
                    k: (dict(v.most_common(80)) if isinstance(v, Counter) else v)
                    for k, v in agg.items()
                },
            }
    shutil.rmtree(work / "crawl", ignore_errors=True)
    return {
        "kind": "profile",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "site": site.desc,
        "frontier": frontier_note,
        "runs": runs,
    }


def format_report(r: dict[str, Any], top: int = 25) -> str:
    gil, threads = r["runs"]["gil"], r["runs"]["threads"]
    total = max(int(gil["total"]), 1)
    all_total = max(int(threads["total"]), 1)
    lines = environment.machine_lines(r["machine"])
    lines.append(
        f"{r['when']}: archiver crawling {r['site']} under py-spy at {RATE} Hz; {r['frontier']}"
    )
    lines.append(
        f"All threads ({threads['wall_s']:.1f} s wall, {all_total} samples): "
        + ", ".join(f"{name} {100 * n / all_total:.0f} %" for name, n in threads["threads"].items())
        + " (thread-pool workers waiting for work count as busy here: py-spy does not see that wait as idle)"
    )
    lines.append(
        f"GIL holder ({gil['wall_s']:.1f} s wall, {total} samples = {total / RATE:.1f} s holding the GIL): "
        + ", ".join(f"{name} {100 * n / total:.0f} %" for name, n in gil["threads"].items())
    )
    lines.append(
        "Python code runs one thread at a time, so the GIL-holder samples are the budget to cut; the tables "
        "below are shares of them. Raw stacks: " + ", ".join(x["raw"] for x in r["runs"].values())
    )
    lines += ["", "Self time by module:", ""]
    for mod, n in list(gil["self_mod"].items())[:top]:
        lines.append(f"  {100 * n / total:5.1f} %  {mod}")
    lines += ["", f"Top {top} functions by self time:", ""]
    for fn, n in list(gil["self_fn"].items())[:top]:
        lines.append(f"  {100 * n / total:5.1f} %  {fn}")
    lines += ["", f"Top {2 * top} archiver functions by inclusive time:", ""]
    shown = 0
    for fn, n in gil["incl_fn"].items():
        if "(archiver/" in fn and "<module>" not in fn:
            lines.append(f"  {100 * n / total:5.1f} %  {fn}")
            shown += 1
            if shown >= 2 * top:
                break
    imports = gil["incl_fn"].get("_find_and_load (<frozen importlib._bootstrap>)")
    if imports:
        lines.append(f"\nImports (start-up): {100 * imports / total:.1f} % of the GIL samples.")
    return "\n".join(lines)
