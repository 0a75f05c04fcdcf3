"""Frontier benchmark: enqueue 1,000,000 URLs like a crawl would, then drain part of them.

Not a test: it prints figures (the targets: peak RSS under 300 MB with the SQLite
frontier for 1M queued URLs; per-URL cost small enough for ~2,000 URLs/s crawls). With the
SQLite frontier, ``archiver queue`` then lists the 1M URLs from its database: its time and
peak RSS (the target: that of a bare interpreter with archiver's imports, under 100 MB, as it
streams). Each backend
runs in its own child process so peak RSS (``ru_maxrss``) is its own.

The workload imitates pages of a site: every "page" offers ``--links`` links, of which
``--new`` are new URLs, ``--old`` point at random earlier URLs (cache misses: the seen check
has to ask the database), and the rest are navigation links repeated on every page (the common
case: one set lookup). Phase 1 offers pages until ``--urls`` URLs are queued (no fetching);
phase 2 runs ``--workers`` coroutines that get / put_many (links all already seen) / task_done
for ``--drain`` URLs. A ticker task measures the event loop's longest stall meanwhile.

Usage: scripts/bench-frontier [--urls 1000000] [--backends sqlite,memory] [--drain 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archiver.frontier.base import Frontier  # noqa: E402
from archiver.frontier.memory import MemoryFrontier  # noqa: E402
from archiver.models import CrawlItem, Hop, Outcome, TaskResult  # noqa: E402
from archiver.policy.politeness import HostGate  # noqa: E402

HOSTS = 4
NAV_LINKS = 30


def url_of(n: int) -> str:
    return f"http://www{n % HOSTS}.example.org/section/{n // 1000}/page-{n}.html"


class Ticker:
    """Measures how late a periodic timer fires: the event loop's longest stall."""

    def __init__(self, period: float = 0.002) -> None:
        self.period = period
        self.max_stall = 0.0
        self.stalls_over_10ms = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(self.period)
            late = loop.time() - start - self.period
            self.max_stall = max(self.max_stall, late)
            if late > 0.010:
                self.stalls_over_10ms += 1

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class GcTimer:
    """Longest garbage-collector pause (a loop stall the frontier's heap shape causes)."""

    def __init__(self) -> None:
        self.max_pause = 0.0
        self.total = 0.0
        self.over_10ms = 0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            pause = time.perf_counter() - self._start
            self.total += pause
            self.max_pause = max(self.max_pause, pause)
            self.over_10ms += pause > 0.010


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)]


def dir_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_backend(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    gate = HostGate(concurrency=64, delay=0.0)
    workdir = Path(tempfile.mkdtemp(prefix="bench-frontier-"))
    frontier: Frontier
    if args.backend == "sqlite":
        from archiver.frontier.sqlite import SqliteFrontier  # noqa: PLC0415

        # a crawl directory's layout, so that archiver queue lists it afterwards
        (workdir / "state").mkdir()
        frontier = SqliteFrontier(workdir / "state" / "frontier.sqlite", gate)
    else:
        frontier = MemoryFrontier(gate)
    base_rss = rss_mb()
    await frontier.open()
    nav = [CrawlItem(url_of(n)) for n in range(NAV_LINKS)]
    await frontier.put_many(nav)
    made = NAV_LINKS
    ticker = Ticker()
    ticker.start()
    gc_timer = GcTimer()
    in_put = 0.0  # seconds spent inside frontier calls (the driver's own work excluded)
    put_times: list[float] = []

    # -- phase 1: enqueue -------------------------------------------------------------------
    offered = 0
    pages = 0
    began = time.perf_counter()
    cpu_began = time.thread_time()
    parent = CrawlItem(url_of(0))
    while made < args.urls:
        links = [parent.child(url_of(made + k), Hop.LINK) for k in range(args.new)]
        made += args.new
        links += [parent.child(url_of(rng.randrange(made)), Hop.LINK) for _ in range(args.old)]
        links += [parent.child(item.url, Hop.LINK) for item in nav[: args.links - len(links)]]
        t0 = time.perf_counter()
        await frontier.put_many(links)
        spent = time.perf_counter() - t0
        in_put += spent
        put_times.append(spent)
        offered += len(links)
        pages += 1
        await asyncio.sleep(0)  # a crawler yields between pages: the ticker runs too
    put_seconds = time.perf_counter() - began
    put_cpu = time.thread_time() - cpu_began
    stats = frontier.statistics()
    enqueue_rss = rss_mb()

    # -- phase 2: drain through workers -----------------------------------------------------
    drained = 0
    in_drain = 0.0
    done_times: list[float] = []
    drain_began = time.perf_counter()
    drain_cpu_began = time.thread_time()

    async def worker() -> None:
        nonlocal drained, in_drain
        while drained < args.drain:
            t0 = time.perf_counter()
            lease = await frontier.get()
            in_drain += time.perf_counter() - t0
            drained += 1
            links = [
                lease.item.child(url_of(rng.randrange(made)), Hop.LINK) for _ in range(args.old)
            ]
            links += [
                lease.item.child(item.url, Hop.LINK) for item in nav[: args.links - len(links)]
            ]
            t0 = time.perf_counter()
            await frontier.put_many(links)
            t1 = time.perf_counter()
            await frontier.task_done(lease, TaskResult(Outcome.DONE, status=200))
            t2 = time.perf_counter()
            done_times.append(t2 - t1)
            in_drain += t2 - t0
            await asyncio.sleep(0)  # the fetch a real worker would await

    await asyncio.gather(*(worker() for _ in range(args.workers)))
    drain_seconds = time.perf_counter() - drain_began
    drain_cpu = time.thread_time() - drain_cpu_began
    await ticker.stop()
    close_began = time.perf_counter()
    await frontier.close()
    close_seconds = time.perf_counter() - close_began
    result: dict[str, Any] = {
        "backend": args.backend,
        "urls_queued": stats.queued,
        "seen": stats.seen,
        "pages_offered": pages,
        "links_offered": offered,
        "put_seconds": round(put_seconds, 2),
        "links_per_second": round(offered / put_seconds),
        "new_urls_per_second": round((made - NAV_LINKS) / put_seconds),
        "us_per_page_in_put_many": round(in_put / pages * 1e6, 1),
        "loop_cpu_us_per_page": round(put_cpu / pages * 1e6, 1),
        "drained": drained,
        "drain_seconds": round(drain_seconds, 2),
        "gets_per_second": round(drained / drain_seconds),
        "us_per_url_in_frontier": round(in_drain / drained * 1e6, 1),
        "loop_cpu_us_per_url": round(drain_cpu / drained * 1e6, 1),
        "process_cpu_s": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 1),
        "put_many_p99_ms": round(percentile(put_times, 0.99) * 1000, 3),
        "put_many_p999_ms": round(percentile(put_times, 0.999) * 1000, 3),
        "put_many_max_ms": round(max(put_times) * 1000, 2),
        "task_done_p999_ms": round(percentile(done_times, 0.999) * 1000, 3),
        "task_done_max_ms": round(max(done_times) * 1000, 2),
        "max_loop_stall_ms": round(ticker.max_stall * 1000, 2),
        "stalls_over_10ms": ticker.stalls_over_10ms,
        "max_gc_pause_ms": round(gc_timer.max_pause * 1000, 2),
        "gc_seconds": round(gc_timer.total, 2),
        "gc_pauses_over_10ms": gc_timer.over_10ms,
        "rss_before_mb": round(base_rss, 1),
        "rss_after_enqueue_mb": round(enqueue_rss, 1),
        "peak_rss_mb": round(rss_mb(), 1),
        "close_seconds": round(close_seconds, 2),
    }
    if args.backend == "sqlite":
        from archiver.frontier.sqlite import SqliteFrontier  # noqa: PLC0415

        assert isinstance(frontier, SqliteFrontier)
        st = frontier.store_stats
        result.update(
            db_mb=round(dir_bytes(workdir) / 1e6, 1),
            db_operations=st.operations,
            db_batches=st.batches,
            db_commits=st.commits,
            db_max_batch_ms=round(st.max_batch_seconds * 1000, 1),
            db_max_commit_ms=round(st.max_commit_seconds * 1000, 1),
        )
        reopen = SqliteFrontier(workdir / "state" / "frontier.sqlite", HostGate())
        opened = time.perf_counter()
        await reopen.open()
        result["reopen_seconds"] = round(time.perf_counter() - opened, 2)
        await reopen.close()
        result.update(list_queue(workdir))
    shutil.rmtree(workdir)
    return result


#: archiver queue, then its process's peak RSS (VmHWM, kB) on a line of its own: ru_maxrss
#: of a child counts what its parent held before the exec, /proc's VmHWM only its own.
QUEUE_AND_PEAK = (
    "import sys; from archiver.commands.cli import main; code = main(['queue', sys.argv[1]]); "
    "print(open('/proc/self/status').read().split('VmHWM:')[1].split()[0], file=sys.stderr); "
    "sys.exit(code)"
)


def list_queue(crawl_dir: Path) -> dict[str, Any]:
    """``archiver queue`` over the frontier just measured (every URL, to /dev/null): how long it
    takes, how many it lists, and the peak RSS of its process (it streams: no list of URLs)."""
    status = {"status": "interrupted", "settings": {"frontier": "sqlite"}}
    (crawl_dir / "state" / "crawl.json").write_text(json.dumps(status))
    began = time.perf_counter()
    with open(os.devnull, "w") as sink:
        proc = subprocess.run(
            [sys.executable, "-c", QUEUE_AND_PEAK, str(crawl_dir)],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            check=False,
        )
    seconds = time.perf_counter() - began
    lines = proc.stderr.strip().splitlines()
    if proc.returncode != 0 or len(lines) < 2:
        return {"queue_error": proc.stderr[-500:]}
    return {
        "queue_listed": int(lines[-2].rsplit(" listed", 1)[0].rsplit(" ", 1)[1]),
        "queue_seconds": round(seconds, 2),
        "queue_peak_rss_mb": round(int(lines[-1]) / 1024, 1),
    }


def child(args: argparse.Namespace) -> None:
    try:
        import uvloop  # noqa: PLC0415

        outcome = uvloop.run(run_backend(args))
    except ImportError:
        outcome = asyncio.run(run_backend(args))
    print(json.dumps(outcome))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--drain", type=int, default=200_000)
    parser.add_argument("--links", type=int, default=50, help="links per page")
    parser.add_argument("--new", type=int, default=10, help="new URLs per page")
    parser.add_argument("--old", type=int, default=2, help="links to random earlier URLs")
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--backends", default="sqlite,memory")
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.backend:
        child(args)
        return 0
    print(
        f"frontier benchmark: {args.urls:,} URLs queued ({args.links} links per page: "
        f"{args.new} new, {args.old} old, rest navigation), then {args.drain:,} drained by "
        f"{args.workers} workers; python {sys.version.split()[0]}",
        flush=True,
    )
    rows = []
    for backend in args.backends.split(","):
        cmd = [sys.executable, __file__, "--backend", backend]
        for name in ("urls", "drain", "links", "new", "old", "workers", "seed"):
            cmd += [f"--{name}", str(getattr(args, name))]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=os.environ)
        if proc.returncode != 0:
            print(f"{backend}: failed\n{proc.stderr}", file=sys.stderr)
            return 1
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    keys = list(rows[0])
    for row in rows[1:]:
        keys += [k for k in row if k not in keys]
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  " + "  ".join(f"{r['backend']:>12}" for r in rows))
    for key in keys[1:]:
        print(f"{key:{width}}  " + "  ".join(f"{r.get(key, '-')!s:>12}" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
