"""Scheduled crawls: one job directory holds every run of one crawl, one directory per run.

::

    JOBDIR/
      job.lock                     flock held while a run of this job is going
      runs/20250102T021500Z/       an archiver output directory (warcs/, index.cdxj, summary.json…)
      runs/20250103T021500Z/
      runs.jsonl                   one line per finished run: status, exit code, counts
      latest -> runs/20250103T021500Z   the newest completed run (for replay and scripts)

Rules, and why:

* **One run at a time.** ``job.lock`` is taken (``flock``, released by the kernel if the process
  dies) before anything is read or written, so a daily timer that fires while yesterday's run is
  still going makes the new process exit at once with a "locked" error (exit 4) instead of two
  runs writing one job.
* **A run directory per run**, named by its UTC start time (``%Y%m%dT%H%M%SZ``, sortable; a
  ``-N`` suffix if two runs start in one second).
* **Interrupted runs are resumed.** When the newest run stopped resumably (``interrupted``, or
  ``running`` left by a process that died, since the job lock proves nobody is running it), the
  next invocation continues it instead of starting over: a crawl cut by a reboot or a full disk
  is finished, not abandoned. ``--overwrite`` means "start a new run anyway". A ``failed`` run
  (a bug or a bad setting) is not resumed.
* **"previous"** in ``dedup_from`` / ``revalidate_from`` names the newest run that completed
  (``completed`` or ``limit``, the statuses :mod:`archiver.dedup.previous` accepts), so each run
  stores only what changed since the last good one. The first run of a job has no previous run and
  crawls in full.
* WARC files are named after the job (``warc_prefix`` defaults to the job directory's name), so
  every run's files are distinguishable once copied together.

Pruning old runs is out of scope: a run's revisits refer to earlier runs (its ``summary.json``
lists the WARC files in ``depends_on``), so deleting runs needs that graph.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archiver.config.settings import Settings
from archiver.dedup.sources import PREVIOUS, USABLE_STATUSES, crawl_status
from archiver.errors import LockedError
from archiver.run.output import OutputLock
from archiver.timefmt import rfc3339_at
from archiver.warc.naming import safe_name_part

RUN_FORMAT = "%Y%m%dT%H%M%SZ"
#: Statuses of a run that the next invocation continues.
RESUMABLE_STATUSES = ("interrupted", "running")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run directory of a job and its crawl status (None: no crawl state yet)."""

    name: str
    path: Path
    status: str | None


class Job:
    """A job directory (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def lock_file(self) -> Path:
        return self.root / "job.lock"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def log_file(self) -> Path:
        return self.root / "runs.jsonl"

    @property
    def latest_link(self) -> Path:
        return self.root / "latest"

    def runs(self) -> list[RunInfo]:
        """Every run directory, oldest first."""
        if not self.runs_dir.is_dir():
            return []
        found = [
            RunInfo(p.name, p, crawl_status(p))
            for p in self.runs_dir.iterdir()
            if p.is_dir() and not p.name.startswith(".")
        ]
        return sorted(found, key=lambda r: r.name)

    def latest_usable(self, *, before: str | None = None) -> Path | None:
        """The newest run that completed (``completed`` or ``limit``), older than ``before``."""
        for run in reversed(self.runs()):
            if before is not None and run.name >= before:
                continue
            if run.status in USABLE_STATUSES:
                return run.path
        return None

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold ``job.lock``; :class:`LockedError` at once when another run holds it."""
        self.root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(self.lock_file)
        try:
            lock.acquire()
        except LockedError:
            holder = ""
            with contextlib.suppress(OSError):
                holder = self.lock_file.read_text(encoding="ascii", errors="replace").strip()
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise LockedError(
                f"job {self.root} is locked: another run of it is in progress{who}; "
                "not starting a second one"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def new_run_name(self, now: datetime) -> str:
        base = now.astimezone(UTC).strftime(RUN_FORMAT)
        name, n = base, 0
        while (self.runs_dir / name).exists():
            n += 1
            name = f"{base}-{n}"
        return name


@dataclass(slots=True)
class JobRun:
    """One run of a job, prepared under the job lock: where it writes and its settings."""

    job: Job
    directory: Path
    resumed: bool
    previous: Path | None  #: the newest completed run before this one, if any
    settings: Settings  #: the crawl's settings: output, WARC prefix and sources resolved
    started: str
    notes: list[str] = field(default_factory=list)  #: worth telling the operator

    def finish(
        self,
        status: str,
        exit_code: int,
        reason: str | None = None,
        summary: Mapping[str, Any] | None = None,
    ) -> None:
        """Append the run's outcome to ``runs.jsonl``; point ``latest`` at it if it completed."""
        summary = summary or {}
        entry = {
            "run": self.directory.name,
            "path": str(self.directory),
            "started": self.started,
            "ended": rfc3339_at(time.time()),
            "status": status,
            "exit_code": exit_code,
            "reason": reason,
            "resumed": self.resumed,
            "previous": str(self.previous) if self.previous else None,
        }
        for key in ("captures", "pages", "revisits", "bytes_written", "duration_seconds"):
            if key in summary:
                entry[key] = summary[key]
        with open(self.job.log_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if status in USABLE_STATUSES:
            _point(self.job.latest_link, Path("runs") / self.directory.name)


def _point(link: Path, target: Path) -> None:
    """Replace the symlink ``link`` atomically (a reader never sees it missing)."""
    tmp = link.with_name(f".{link.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        tmp.symlink_to(target, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        tmp.unlink(missing_ok=True)  # a filesystem without symlinks: runs.jsonl still says it


def resolve_sources(paths: tuple[Path, ...], previous: Path | None) -> tuple[Path, ...]:
    """``previous`` replaced by the job's newest completed run, or dropped when there is none."""
    out: list[Path] = []
    for path in paths:
        if str(path) == PREVIOUS:
            if previous is not None and previous not in out:
                out.append(previous)
        elif path not in out:
            out.append(path)
    return tuple(out)


@contextlib.contextmanager
def open_run(job_dir: Path, settings: Settings, *, now: datetime | None = None) -> Iterator[JobRun]:
    """Take the job lock, pick the run directory (resume or new), resolve the settings.

    The lock is held until the block ends: run the crawl inside it. Raises :class:`LockedError`
    when another run of the job holds the lock.
    """
    job = Job(job_dir)
    with job.lock():
        job.runs_dir.mkdir(parents=True, exist_ok=True)
        runs = job.runs()
        last = runs[-1] if runs else None
        resumed = (
            last is not None
            and not settings.overwrite
            and (last.status in RESUMABLE_STATUSES or last.status is None)
        )
        if resumed and last is not None:
            directory = last.path
        else:
            directory = job.runs_dir / job.new_run_name(now or datetime.now(UTC))
        previous = job.latest_usable(before=directory.name)
        notes: list[str] = []
        if resumed:
            notes.append(
                f"resuming run {directory.name} (it stopped as {last.status if last else None})"
            )
        wants_previous = any(
            str(p) == PREVIOUS for p in (*settings.dedup_from, *settings.revalidate_from)
        )
        if wants_previous and previous is None:
            notes.append("no earlier completed run: this run stores everything in full")
        resolved = dataclasses.replace(
            settings,
            output=directory,
            overwrite=False,
            warc_prefix=settings.warc_prefix or safe_name_part(job.name, default="job"),
            dedup_from=resolve_sources(settings.dedup_from, previous),
            revalidate_from=resolve_sources(settings.revalidate_from, previous),
        )
        started = rfc3339_at(time.time())
        yield JobRun(job, directory, resumed, previous, resolved, started, notes)


__all__ = [
    "RESUMABLE_STATUSES",
    "RUN_FORMAT",
    "Job",
    "JobRun",
    "RunInfo",
    "open_run",
    "resolve_sources",
]
