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

import sys
import threading
import time
from collections.abc import Mapping
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
    """

    def __init__(
        self,
        path: Path | None,
        console: IO[str] | None,
        console_level: int | None,
        heritrix: Path | None = None,
    ):
        torn = cut_torn_line(path) if path else 0
        self._file: IO[str] | None = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115
        self._console = console
        self._console_level = console_level
        self._renderer: Any = None  # structlog's ConsoleRenderer, made when first needed
        self._lock = threading.Lock()
        #: --heritrix-log: the same events as crawl.log lines (fetch and some skip events)
        self._heritrix = HeritrixLog(heritrix) if heritrix is not None else None
        if torn:  # an earlier run was killed mid-line; its fragment is gone, say so
            self.log(
                {"event": "log-repaired", "removed_bytes": torn, "level": "warning",
                 "timestamp": _iso_now()}
            )  # fmt: skip

    def log(self, event_dict: dict[str, Any]) -> None:
        line = orjson.dumps(event_dict, default=str).decode("utf-8")
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
            if self._heritrix is not None:
                self._heritrix.write_event(event_dict)
            level = LEVELS.get(str(event_dict.get("level", "info")), 20)
            console, threshold = self._console, self._console_level
            if console is not None and threshold is not None and level >= threshold:
                if self._renderer is None:
                    import structlog.dev  # noqa: PLC0415 - slow import, rarely needed

                    self._renderer = structlog.dev.ConsoleRenderer(colors=console.isatty())
                shown = dict(event_dict)
                shown.pop("timestamp", None)
                console.write(str(self._renderer(None, "", shown)) + "\n")

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            if self._heritrix is not None:
                self._heritrix.close()
                self._heritrix = None


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
    ) -> None:
        self._tee = _TeeLogger(
            path, console, LEVELS[console_level] if console_level else None, heritrix
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

    def flush(self) -> None:
        self._tee.flush()

    def close(self) -> None:
        self._tee.close()


def crawl_logger(
    path: Path | None,
    *,
    quiet: bool = False,
    verbose: int = 0,
    console: IO[str] | None = None,
    heritrix: Path | None = None,
) -> CrawlLog:
    """The logger for one crawl: file always; console for warnings, or everything with -v."""
    level: str | None
    if quiet:
        level = "error"
    elif verbose >= 2:
        level = "debug"
    elif verbose == 1:
        level = "info"
    else:
        level = "warning"
    return CrawlLog(path, console=console or sys.stderr, console_level=level, heritrix=heritrix)
