"""The tools a benchmark round runs side by side, each measured as a whole process.

Every runner returns a :class:`Row`: how many URLs the tool fetched (every HTTP response it
received: pages, requisites, redirects, 404s) and the process's wall time, CPU and peak RSS.

* ``archiver``: the crawler under test, from the repo's venv; URLs = ``captures`` in its
  ``summary.json`` (response + revisit records written).
* ``wget``: GNU wget, recursive with page requisites and ``--warc-file`` (serial: one
  connection, one request at a time); URLs = ``response`` records in its WARC.
* ``archiver-xN``: the same crawl as ``archiver crawl --processes N`` (its private
  redis-server is inside the measured process tree, so its CPU counts); URLs = ``captures`` in
  the crawl's ``summary.json``.
* ``bare`` / ``bare+parse``: :mod:`bare_client` over the site's list of files, without and with
  selectolax link extraction; the ceiling an aiohttp crawler can reach on this machine.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import REPO, measure

ARCHIVER = REPO / ".venv" / "bin" / "archiver"
BARE_CLIENT = Path(__file__).resolve().parent / "bare_client.py"


@dataclass
class Row:
    tool: str
    urls: int
    m: measure.Measurement
    warc_bytes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.urls / self.m.wall_s if self.m.wall_s else 0.0

    @property
    def ok(self) -> bool:
        """Finished normally (wget exits 8 when the server answered some request with an
        error status: the sites have 404s on purpose)."""
        good_rc = self.m.rc == 0 or (self.tool == "wget" and self.m.rc == 8)
        return good_rc and not self.m.timed_out and self.urls > 0

    @property
    def loop_per_second(self) -> float:
        """URLs/s inside the tool's own loop, without interpreter start-up and exit, when the
        tool reports its loop time (archiver: summary.json duration; bare client: its loop)."""
        seconds = self.extra.get("duration_seconds") or self.extra.get("seconds")
        if isinstance(seconds, (int, float)) and seconds > 0:
            return self.urls / seconds
        return self.per_second

    @property
    def cpu_ms_per_url(self) -> float:
        return 1000 * self.m.cpu_s / self.urls if self.urls else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "urls": self.urls,
            "per_second": round(self.per_second, 1),
            "loop_per_second": round(self.loop_per_second, 1),
            "cpu_ms_per_url": round(self.cpu_ms_per_url, 4),
            "warc_bytes": self.warc_bytes,
            **self.m.as_dict(),
            "extra": self.extra,
        }


def frontier_choice(override: str | None) -> tuple[list[str], str]:
    """The ``--frontier`` arguments for archiver and a note saying which backend ran."""
    if override:
        return ["--frontier", override], f"--frontier {override} (chosen on the command line)"
    frontier = REPO / "archiver" / "frontier"
    if (frontier / "sqlite").is_dir() or (frontier / "sqlite.py").exists():  # package or module
        return [], "--frontier sqlite (the default)"
    return [
        "--frontier",
        "memory",
    ], "--frontier memory (the SQLite backend is not in this tree yet)"


def read_summary(out: Path) -> dict[str, Any]:
    """A crawl's summary.json, or nothing when it was not written."""
    with contextlib.suppress(OSError, ValueError):
        data = json.loads((out / "summary.json").read_text())
        if isinstance(data, dict):
            return data
    return {}


def politeness_off(workers: int) -> list[str]:
    """Politeness off for the benchmark: per-host concurrency = workers, no delay, no robots."""
    return [
        "--workers", str(workers),
        "--per-host-concurrency", str(workers),
        "--per-host-delay", "0",
        "--robots", "ignore",
        "--sitemaps", "off",
    ]  # fmt: skip


def run_archiver(
    url: str,
    rundir: Path,
    *,
    workers: int,
    frontier_args: Sequence[str],
    extra_args: Sequence[str] = (),
    timeout: float = 600,
    on_sample: Callable[[int, float], None] | None = None,
) -> Row:
    rundir.mkdir(parents=True, exist_ok=True)
    out = rundir / "crawl"
    shutil.rmtree(out, ignore_errors=True)
    argv = [
        str(ARCHIVER),
        "crawl",
        url,
        "--output",
        str(out),
        *politeness_off(workers),
        "--quiet",
        "--progress",
        "off",
        *frontier_args,
        *extra_args,
    ]
    m = measure.run(
        argv, log=rundir / "archiver.log", timeout=timeout, cwd=rundir, on_sample=on_sample
    )
    summary: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        summary = json.loads((out / "summary.json").read_text())
    warcs = (
        sum(p.stat().st_size for p in (out / "warcs").rglob("*.warc.gz"))
        if (out / "warcs").is_dir()
        else 0
    )
    extra = {
        k: summary.get(k) for k in ("status", "duration_seconds", "pages", "by_status", "failures")
    }
    extra["argv"] = argv
    return Row("archiver", int(summary.get("captures", 0) or 0), m, warcs, extra)


def run_archiver_processes(
    url: str, rundir: Path, *, processes: int, workers: int, timeout: float = 600
) -> Row:
    """One crawl as ``archiver crawl --processes N``: the supervisor, its redis-server (a
    child of its keeper) and the N crawler processes are one measured process tree. The
    ``workers`` are split between the processes (``--workers`` is per process), so the
    concurrency is the other tools'; per-host concurrency is global in Redis, so politeness
    stays off for the crawl as a whole. URLs = the crawl's summary.json ``captures``."""
    rundir.mkdir(parents=True, exist_ok=True)
    out = rundir / "crawl"
    shutil.rmtree(out, ignore_errors=True)
    each = str(max(workers // processes, 1))  # the later --workers wins
    argv = [
        str(ARCHIVER), "crawl", url, "--output", str(out), *politeness_off(workers),
        "--workers", each, "--processes", str(processes), "--quiet", "--progress", "off",
    ]  # fmt: skip
    m = measure.run(argv, log=rundir / "archiver.log", timeout=timeout, cwd=rundir, sum_rss=True)
    summary: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        summary = json.loads((out / "summary.json").read_text())
    warcs = sum(p.stat().st_size for p in out.glob("warcs/*.warc.gz"))
    extra = {
        k: summary.get(k) for k in ("status", "duration_seconds", "pages", "by_status", "failures")
    }
    extra["processes"] = processes
    extra["argv"] = argv
    return Row(f"archiver-x{processes}", int(summary.get("captures", 0) or 0), m, warcs, extra)


def count_warc_responses(paths: list[Path]) -> int:
    from fastwarc.warc import ArchiveIterator, WarcRecordType  # noqa: PLC0415

    n = 0
    for path in paths:
        with open(path, "rb") as fh:
            for _ in ArchiveIterator(fh, record_types=WarcRecordType.response, parse_http=False):
                n += 1
    return n


def run_wget(url: str, rundir: Path, *, timeout: float = 600) -> Row:
    out, tmp = rundir / "out", rundir / "tmp"
    for d in (out, tmp):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    argv = [
        shutil.which("wget") or "wget", "--recursive", "--level=inf", "--no-parent", "--page-requisites",
        "--no-verbose", "--delete-after", f"--directory-prefix={tmp}/mirror", f"--warc-file={out}/wget", url,
    ]  # fmt: skip
    m = measure.run(argv, log=rundir / "wget.log", timeout=timeout, cwd=tmp)
    warcs = sorted(out.glob("*.warc.gz"))
    shutil.rmtree(tmp, ignore_errors=True)
    return Row(
        "wget", count_warc_responses(warcs), m, sum(p.stat().st_size for p in warcs), {"argv": argv}
    )


def run_wget_one(url: str, rundir: Path, *, timeout: float = 600) -> Row:
    """wget fetching one URL into a WARC file (no recursion); URLs = its response records."""
    out, tmp = rundir / "out", rundir / "tmp"
    for d in (out, tmp):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    argv = [
        shutil.which("wget") or "wget", "--no-verbose", "--delete-after",
        f"--directory-prefix={tmp}/mirror", f"--warc-file={out}/wget", url,
    ]  # fmt: skip
    m = measure.run(argv, log=rundir / "wget.log", timeout=timeout, cwd=tmp)
    warcs = sorted(out.glob("*.warc.gz"))
    shutil.rmtree(tmp, ignore_errors=True)
    return Row(
        "wget", count_warc_responses(warcs), m, sum(p.stat().st_size for p in warcs), {"argv": argv}
    )


def run_bare(base: str, urls_file: Path, rundir: Path, *, concurrency: int, parse: bool,
             timeout: float = 600) -> Row:  # fmt: skip
    name = "bare+parse" if parse else "bare"
    rundir.mkdir(parents=True, exist_ok=True)
    log = rundir / f"{name}.log"
    log.unlink(missing_ok=True)
    argv = [
        sys.executable,
        str(BARE_CLIENT),
        base,
        str(urls_file),
        "--concurrency",
        str(concurrency),
    ]
    if parse:
        argv.append("--parse")
    m = measure.run(argv, log=log, timeout=timeout, cwd=rundir)
    inner: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError, IndexError):
        inner = json.loads(log.read_text().strip().splitlines()[-1])
    return Row(name, int(inner.get("requests", 0) or 0), m, 0, inner)
