"""The output directory: its layout, its lock, and whether a run starts fresh or resumes.

::

    OUTPUT/
      warcs/*.warc.gz          the WARC files (``.warc.gz.open`` while written)
      index.cdxj               every capture, sorted (pywb); index.cdx with --cdx11
      crawl.log.jsonl          structlog JSON lines; crawl.log with --heritrix-log
      summary.json             counts by status, MIME type, host; bytes; failures
      OUTPUT-NAME.wacz         with --wacz
      state/crawl.json         status (running, completed, limit, interrupted, failed) and runs
      state/frontier.sqlite    the persistent frontier (queue, seen set, per-URL state)
      state/journals/*.cdxj    per-WARC index lines written by the writer
      state/cookies.txt        the cookie jar (a resumed crawl sends these; Redis keeps a
                               shared crawl's)
      state/lock               held while a run writes here
      state/reserve            room kept for the last writes of a run on a full disk
                               (:mod:`archiver.run.disk`), while a run writes here
      ignores                  the operator's: URL patterns to skip, re-read while the crawl
                               runs (archiver ignore DIR PATTERN appends one)
      control.toml             the operator's: per-host delay and concurrency, re-read while the
                               crawl runs
      paused                   the operator's: while it exists no new fetch starts
                               (archiver pause DIR / archiver unpause DIR)
      add/*.urls               the operator's: URLs to queue (archiver add DIR URL...), taken up
                               by the running crawl, or by the next run

With a Redis frontier the processes of one crawl on one machine share the directory:
``warcs/`` and ``index.cdxj`` (merged by the last process to leave, or ``archiver index``) are
shared, and each process keeps its own state, log and summary in ``state/{hostname}-{pid}/``
(``Layout(root, process=...)``); its WARC names carry the same ``{hostname}-{pid}``.

A directory is never wiped silently: starting over needs ``--overwrite``, and even then only
archiver's own files are removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver import atomicfile
from archiver.errors import LockedError, OutputExistsError
from archiver.timefmt import rfc3339_at

#: Bytes of the output directory's name kept in the WACZ's file name (255 minus ".wacz.tmp").
WACZ_NAME_BYTES = 246

STATUS_RUNNING = "running"
STATUS_COMPLETED = "completed"
STATUS_LIMIT = "limit"
STATUS_INTERRUPTED = "interrupted"
STATUS_FAILED = "failed"

#: files the operator writes into a crawl directory (:mod:`archiver.run.control`): they may be
#: there before the first run, and ``--overwrite`` keeps them
OPERATOR_FILES = ("ignores", "control.toml", "paused", "add")

_OWNED = (
    "warcs",
    "state",
    "index.cdxj",
    "index.cdx",
    "crawl.log.jsonl",
    "crawl.log",
    "summary.json",
    "report.html",
)


@dataclass(frozen=True, slots=True)
class Layout:
    root: Path
    #: ``{hostname}-{pid}`` when several processes share the directory (Redis frontier)
    process: str | None = None

    @property
    def warcs(self) -> Path:
        return self.root / "warcs"

    @property
    def state(self) -> Path:
        if self.process is not None:
            return self.root / "state" / self.process
        return self.root / "state"

    @property
    def part_index(self) -> Path:
        """This process's own sorted index (its part of the shared one)."""
        return self.state / "index.cdxj"

    @property
    def journals(self) -> Path:
        return self.state / "journals"

    @property
    def status_file(self) -> Path:
        return self.state / "crawl.json"

    @property
    def lock_file(self) -> Path:
        return self.state / "lock"

    @property
    def frontier_db(self) -> Path:
        return self.state / "frontier.sqlite"

    @property
    def cookies(self) -> Path:
        """The cookie jar of a crawl this process owns (cookies.txt format, owner-only)."""
        return self.state / "cookies.txt"

    @property
    def ignores(self) -> Path:
        """URL patterns to skip, one per line (shared by the processes writing here)."""
        return self.root / "ignores"

    @property
    def control(self) -> Path:
        """Politeness changed while the crawl runs (shared by the processes writing here)."""
        return self.root / "control.toml"

    @property
    def paused(self) -> Path:
        """While it exists, no new fetch starts (``archiver pause``, ``archiver unpause``)."""
        return self.root / "paused"

    @property
    def additions(self) -> Path:
        """URLs the operator adds to the crawl (``archiver add``): files the crawl takes up."""
        return self.root / "add"

    @property
    def index(self) -> Path:
        return self.root / "index.cdxj"

    @property
    def cdx11(self) -> Path:
        return self.root / "index.cdx"

    @property
    def log(self) -> Path:
        return (self.state if self.process else self.root) / "crawl.log.jsonl"

    @property
    def heritrix_log(self) -> Path:
        return (self.state if self.process else self.root) / "crawl.log"

    @property
    def summary(self) -> Path:
        return (self.state if self.process else self.root) / "summary.json"

    @property
    def wacz(self) -> Path:
        """``OUTPUT-NAME.wacz``, the name cut so that it and its ``.tmp`` sibling fit in a
        file name (255 bytes): a long directory name must not break the end of every crawl."""
        name = self.root.name.encode("utf-8", "surrogateescape")[:WACZ_NAME_BYTES]
        return self.root / f"{name.decode('utf-8', 'ignore')}.wacz"

    @property
    def pages(self) -> Path:
        return self.state / "pages.jsonl"


def layouts(crawl_dir: Path) -> list[Layout]:
    """The layouts writing into ``crawl_dir``: the single run's (``state/journals``), and/or
    one per process sharing it (``state/{hostname}-{pid}/``, each with its lock)."""
    found = []
    state = crawl_dir / "state"
    if (state / "journals").is_dir():
        found.append(Layout(crawl_dir))
    if state.is_dir():
        for child in sorted(state.iterdir()):
            if child.is_dir() and (child / "lock").exists():
                found.append(Layout(crawl_dir, process=child.name))
    return found


def journal_dirs(crawl_dir: Path) -> list[Path]:
    """Every journal directory of a crawl directory (one per process when shared)."""
    return [layout.journals for layout in layouts(crawl_dir) if layout.journals.is_dir()]


class OutputLock:
    """An exclusive ``flock`` on ``state/lock``: two runs never write one output."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = ""
            with contextlib.suppress(OSError):
                holder = os.read(fd, 100).decode("ascii", "replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder else ""
            raise LockedError(
                f"{self.path.parent.parent} is locked by another archiver run{who}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_status(layout: Layout) -> dict[str, Any] | None:
    try:
        data = json.loads(layout.status_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise OutputExistsError(f"{layout.status_file} is unreadable: {exc}") from exc
    return data if isinstance(data, dict) else None


def crawl_status(crawl_dir: Path) -> dict[str, Any] | None:
    """The state a crawl directory records (``state/crawl.json``): the crawl's own, or, for a
    crawl shared through a ``redis://`` frontier, the latest of its processes' here; None when
    the directory holds no crawl."""
    found = read_status(Layout(crawl_dir))
    if found is not None:
        return found
    shared = [layout for layout in layouts(crawl_dir) if layout.process is not None]
    statuses = [read_status(layout) for layout in shared if layout.status_file.is_file()]
    known = [status for status in statuses if status is not None]
    return max(known, key=lambda status: str(status.get("created", ""))) if known else None


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``, or ``{}`` when it is missing, unreadable or not an object.

    For optional files (a run's summary): their absence must not stop what reads them.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cut_torn_line(path: Path) -> int:
    """Cut a line log back to its last complete line; returns the bytes removed.

    A process killed while writing a line leaves a fragment without its newline; the next run
    appends to the same file, and its first line would be glued to the fragment (two broken
    JSON lines, or a crawl.log line no reader can split). Called before opening for append.
    """
    try:
        with open(path, "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            fh.seek(size - 1)
            if fh.read(1) == b"\n":
                return 0
            keep = 0
            position = size
            while position > 0:  # find the last newline, reading backwards in blocks
                start = max(position - 65536, 0)
                fh.seek(start)
                block = fh.read(position - start)
                newline = block.rfind(b"\n")
                if newline >= 0:
                    keep = start + newline + 1
                    break
                position = start
            fh.truncate(keep)
            return size - keep
    except FileNotFoundError:
        return 0


def write_json_atomic(path: Path, data: Any, *, fsync: bool = True) -> None:
    """``path`` replaced by ``data`` as JSON, whole or not at all (no ``.tmp`` left behind)."""
    text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    atomicfile.write_text(path, text, fsync=fsync)


def write_status(layout: Layout, data: dict[str, Any], *, fsync: bool = True) -> None:
    layout.state.mkdir(parents=True, exist_ok=True)
    write_json_atomic(layout.status_file, data, fsync=fsync)


@dataclass(slots=True)
class RunStart:
    resumed: bool
    previous_status: str | None
    status: dict[str, Any]


def prepare(
    layout: Layout, *, overwrite: bool, settings_json: dict[str, Any], processes: int = 1
) -> RunStart:
    """Decide fresh start or resume. Call with the lock held.

    Fresh: the directory is missing or empty (apart from our lock). Resume: it holds an archiver
    crawl that did not complete. ``overwrite`` removes archiver's files first. ``processes``:
    the supervisor of ``--processes N`` (N >= 2) prepares the crawl's directory; its queue is in
    the crawl's own redis-server, a single process's in ``state/frontier.sqlite``, so one kind
    of crawl is never resumed as the other (it would start again from the seeds).
    """
    root = layout.root
    previous = read_status(layout) if root.exists() else None
    if previous is not None and not overwrite and layout.process is None:
        _check_processes(root, int(previous.get("processes") or 1), processes)
    if overwrite and layout.process is not None:
        raise OutputExistsError(
            "--overwrite would delete the other processes' files: with a redis:// frontier, "
            "start over with a new --crawl-id and --output"
        )
    if overwrite and root.exists():
        _remove_owned(root)
        previous = None
    if previous is None:
        others = sorted(_files_in(root)) if root.exists() else []
        if layout.process is not None:  # the other processes of the crawl write here too
            others = [name for name in others if name not in _OWNED]
        if others:
            raise OutputExistsError(
                f"{root} is not empty and holds no archiver crawl ({', '.join(others[:5])}"
                f"); choose another --output"
            )
    now = rfc3339_at(time.time())
    if previous is not None:
        before = str(previous.get("status"))  # read before the dict becomes this run's status
        status = previous
        status.setdefault("runs", []).append({"started": now, "status": STATUS_RUNNING})
        status["status"] = STATUS_RUNNING
        status["settings"] = settings_json
        status["cwd"] = os.getcwd()
        if processes > 1:
            status["processes"] = processes
        return RunStart(True, before, status)
    status = {
        "format": "archiver-crawl-state/1",
        "status": STATUS_RUNNING,
        "created": now,
        "settings": settings_json,
        #: where the run was started: its settings' relative file names are relative to it
        "cwd": os.getcwd(),
        "runs": [{"started": now, "status": STATUS_RUNNING}],
    }
    if processes > 1:
        status["processes"] = processes
    return RunStart(False, None, status)


def _files_in(root: Path) -> set[str]:
    """The names in ``root`` that hold something: the operator's files, ``state/lock`` and
    empty directories do not count. So a directory whose ``warcs/`` or ``state/`` is a mount
    point of its own (a volume for the WARC files) is still a new crawl's."""
    found = set()
    for path in root.iterdir():
        if path.name in OPERATOR_FILES:
            continue
        if path.is_dir() and not path.is_symlink():
            inside = [p for p in path.rglob("*") if not p.is_dir() or p.is_symlink()]
            if path.name == "state":
                inside = [p for p in inside if p != path / "lock"]
            if not inside:
                continue
        found.add(path.name)
    return found


def _check_processes(root: Path, before: int, now: int) -> None:
    if before > 1 and now <= 1:
        raise OutputExistsError(
            f"{root} holds a crawl run with --processes {before} (its queue is in the crawl's "
            f"own redis-server): resume it with --processes 2 or more, or start over with "
            f"--overwrite"
        )
    if before <= 1 < now:
        raise OutputExistsError(
            f"{root} holds a crawl run by one process (its queue is in state/frontier.sqlite): "
            f"resume it without --processes, or start over with --overwrite"
        )


def finish_status(status: dict[str, Any], final: str, reason: str | None) -> None:
    now = rfc3339_at(time.time())
    status["status"] = final
    status["reason"] = reason
    runs = status.setdefault("runs", [])
    if runs:
        runs[-1].update({"ended": now, "status": final, "reason": reason})


def _remove_owned(root: Path) -> None:
    """archiver's own files in ``root``, and nothing else (``--overwrite``)."""
    for name in _OWNED:
        path = root / name
        if path.is_dir() and name == "state":
            for child in path.iterdir():
                if child.name != "lock":
                    _remove(child)
        elif path.exists():
            _remove(path)
    for wacz in root.glob("*.wacz"):
        wacz.unlink()


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
