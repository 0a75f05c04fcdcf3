"""The crawl's log: JSON lines to ``crawl.log.jsonl``, readable lines on a terminal.

No global state: each crawl builds its own logger with :func:`crawl_logger`, so two crawls in
one process (tests, the Python API) never share handlers. One event per fetch carries url,
status, size, mime, duration, depth, via, retries and outcome; Browsertrix's JSON-lines logs are
the model.

An event is a dict (the bound fields, the call's fields, then ``event``, ``level`` and
``timestamp``, structlog's order) written as one JSON line by orjson. The readable console line
is structlog's ``ConsoleRenderer``: structlog is imported when the first such line is written,
not at start-up, since importing it imports ``structlog.dev`` and, through it, rich's traceback
module and pygments (a tenth of a second of CPU at every start of the command, measured in
BENCHMARKS.md) for a console that a quiet crawl never writes to.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from archiver.run.heritrix import HeritrixLog
from archiver.run.output import cut_torn_line
from archiver.timefmt import rfc3339_millis_at

LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


def _iso_now() -> str:
    """RFC 3339 UTC with milliseconds (one fetch event per URL: thousands a second on a fast
    crawl, so :data:`archiver.timefmt.rfc3339_millis_at` formats each second once)."""
    return rfc3339_millis_at(time.time())


class _TeeLogger:
    """Writes each event as a JSON line to the log file, and a readable line to the console.

    ``console_level`` None means nothing goes to the console (the progress display and the
    summary speak there instead).

    A log file that cannot be written (a full disk, an I/O error) is given up: the error is
    kept in ``failure``, ``on_failure`` is told once (the crawl stops, resumably: its records
    are in the WARC files and the frontier, not in the log), and later events are dropped
    instead of raising out of whatever was logging. A console that cannot be written (the
    terminal is gone) is given up silently.
    """

    def __init__(
        self,
        path: Path | None,
        console: IO[str] | None,
        console_level: int | None,
        heritrix: Path | None = None,
        on_failure: Callable[[OSError], None] | None = None,
    ):
        torn = cut_torn_line(path) if path else 0
        self._path = path
        self._file: IO[str] | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115
        self._console = console
        self._console_level = console_level
        self._renderer: Any = None  # structlog's ConsoleRenderer, made when first needed
        self._lock = threading.Lock()
        #: --heritrix-log: the same events as crawl.log lines (fetch and some skip events)
        self._heritrix = HeritrixLog(heritrix) if heritrix is not None else None
        self._on_failure = on_failure
        #: why the log file (or crawl.log) could not be written, once it could not
        self.failure: OSError | None = None
        if torn:  # an earlier run was killed mid-line; its fragment is gone, say so
            self.log(
                {"event": "log-repaired", "removed_bytes": torn, "level": "warning",
                 "timestamp": _iso_now()}
            )  # fmt: skip

    def log(self, event_dict: dict[str, Any]) -> None:
        line = orjson.dumps(event_dict, default=str).decode("utf-8")
        with self._lock:
            try:
                if self._file is not None:
                    self._file.write(line + "\n")
                if self._heritrix is not None:
                    self._heritrix.write_event(event_dict)
            except OSError as exc:
                self._give_up(exc)
            level = LEVELS.get(str(event_dict.get("level", "info")), 20)
            console, threshold = self._console, self._console_level
            if console is not None and threshold is not None and level >= threshold:
                self._show(console, event_dict)

    def _show(self, console: IO[str], event_dict: dict[str, Any]) -> None:
        if self._renderer is None:
            import structlog.dev  # noqa: PLC0415 - slow import, rarely needed

            self._renderer = structlog.dev.ConsoleRenderer(colors=console.isatty())
        shown = dict(event_dict)
        shown.pop("timestamp", None)
        try:
            console.write(str(self._renderer(None, "", shown)) + "\n")
        except (OSError, ValueError):  # the terminal hung up, or stderr was closed
            self._console = None

    def _give_up(self, exc: OSError) -> None:
        """Stop writing the files (with the lock held); tell ``on_failure`` once."""
        failure = self.failure
        first = failure is None
        if failure is None:
            where = exc.filename or (str(self._path) if self._path else None)
            failure = self.failure = OSError(exc.errno, exc.strerror or str(exc), where)
        for close in (self._close_file, self._close_heritrix):
            with contextlib.suppress(OSError):
                close()
        if first and self._on_failure is not None:
            self._on_failure(failure)

    def _close_file(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()  # when its last flush fails, the file is closed all the same

    def _close_heritrix(self) -> None:
        heritrix, self._heritrix = self._heritrix, None
        if heritrix is not None:
            heritrix.close()

    def flush(self) -> None:
        with self._lock:
            try:
                if self._file is not None:
                    self._file.flush()
            except OSError as exc:
                self._give_up(exc)

    def close(self) -> None:
        with self._lock:
            try:
                self._close_file()
                self._close_heritrix()
            except OSError as exc:
                self._give_up(exc)


class BoundLog:
    """A logger with fields bound to every event it writes: ``log.info("event", key=value)``
    (and ``debug``, ``warning``, ``error``, ``critical``); :meth:`bind` adds fields."""

    __slots__ = ("_context", "_tee")

    def __init__(self, tee: _TeeLogger, context: Mapping[str, Any] | None = None) -> None:
        self._tee = tee
        self._context: dict[str, Any] = dict(context or {})

    def bind(self, **values: Any) -> BoundLog:
        return BoundLog(self._tee, {**self._context, **values})

    def _write(self, level: str, event: str, fields: dict[str, Any]) -> None:
        event_dict = {**self._context, **fields}
        event_dict["event"] = event
        event_dict.setdefault("level", level)
        event_dict.setdefault("timestamp", _iso_now())
        self._tee.log(event_dict)

    def debug(self, event: str, **fields: Any) -> None:
        self._write("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._write("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._write("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._write("error", event, fields)

    def critical(self, event: str, **fields: Any) -> None:
        self._write("critical", event, fields)


class CrawlLog:
    """A crawl's logger and the file behind it."""

    def __init__(
        self,
        path: Path | None,
        *,
        console: IO[str] | None = None,
        console_level: str | None = None,
        heritrix: Path | None = None,
        on_failure: Callable[[OSError], None] | None = None,
    ) -> None:
        self._tee = _TeeLogger(
            path, console, LEVELS[console_level] if console_level else None, heritrix, on_failure
        )
        self.logger = BoundLog(self._tee)

    def bind(self, **values: Any) -> BoundLog:
        return self.logger.bind(**values)

    def info_event(self, event: str, fields: dict[str, Any]) -> None:
        """Log an ``info`` event the way the bound logger does (fields, then ``event``,
        ``level`` and ``timestamp``), in the dict given, not a copy: the per-fetch line is
        written thousands of times a second."""
        fields["event"] = event
        fields["level"] = "info"
        fields["timestamp"] = _iso_now()
        self._tee.log(fields)

    @property
    def failure(self) -> OSError | None:
        """Why the log file could not be written, once it could not (see :class:`_TeeLogger`)."""
        return self._tee.failure

    def flush(self) -> None:
        self._tee.flush()

    def close(self) -> None:
        self._tee.close()


def console_level(*, quiet: bool = False, verbose: int = 0) -> str:
    """What a crawl shows on the console: errors with ``--quiet``, warnings by default,
    everything with ``-v`` (``-vv``: debug too)."""
    if quiet:
        return "error"
    if verbose >= 2:
        return "debug"
    return "info" if verbose == 1 else "warning"


def crawl_logger(
    path: Path | None,
    *,
    quiet: bool = False,
    verbose: int = 0,
    console: IO[str] | None = None,
    heritrix: Path | None = None,
) -> CrawlLog:
    """The logger for one crawl: file always; console for warnings, or everything with -v."""
    return CrawlLog(
        path,
        console=console or sys.stderr,
        console_level=console_level(quiet=quiet, verbose=verbose),
        heritrix=heritrix,
    )
