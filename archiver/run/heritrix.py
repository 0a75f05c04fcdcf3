"""Heritrix-compatible ``crawl.log`` lines from the crawler's per-fetch log events.

Heritrix's ``crawl.log`` is the lingua franca of crawl logs (warcprox imitates it; QA scripts,
crawl-log viewers and OutbackCDX feeders read it), so ``--heritrix-log`` writes one next to
``crawl.log.jsonl``. The layout is Heritrix 3's ``UriProcessingFormatter`` (documented in
heritrix3 ``docs/operating.rst``, "crawl.log"): twelve space-separated fields, ``-`` for an
empty one::

    2024-01-02T03:04:05.678Z   200       1299 http://example.org/a.html L http://example.org/ \
text/html #003 20240102030405600+78 sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV - 2t

    1  log timestamp, ISO 8601 UTC, milliseconds      7  MIME type (no parameters), no-type
    2  fetch status, right-aligned in 5 columns        8  worker id, ``#`` + 3 digits
    3  document size (payload bytes), right-aligned 10 9  fetch begin (17 digits) + duration ms
    4  URL                                            10  payload digest (``sha1:`` Base32)
    5  discovery path (hop letters; ``-`` for seeds)  11  source tag (``-``: not used)
    6  via (the referring URL; ``-`` for seeds)       12  annotations, comma-separated

As in Heritrix, a URL is logged once, when it is finished: a fetch that will be retried is not
logged (its final attempt is, annotated ``Nt`` for N tries), and neither are discovered URLs
that scope rules turned away. Failures carry Heritrix's negative fetch status codes (heritrix3
``docs/glossary.rst``, "Status codes"); see :data:`FAIL_STATUS` and :data:`SKIP_STATUS`.

This module only formats and appends lines; the crawl log (:mod:`archiver.run.log`) feeds it the
same event dicts it writes as JSON. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from archiver import atomicfile
from archiver.run.output import cut_torn_line
from archiver.timefmt import parse_w3c_datetime, rfc3339_millis, timestamp17

#: Heritrix fetch status codes for fetches that produced no HTTP response, by archiver's
#: :class:`~archiver.models.FailReason` value. Heritrix codes: -2 HTTP connect failed, -3 HTTP
#: connect broken (Heritrix's FetchHTTP maps every I/O error after connecting there, including
#: unreadable responses), -4 HTTP timeout, -5 unexpected runtime exception, -6 prerequisite
#: domain lookup failed (the code an http URL gets when its host does not resolve; -1 is the
#: ``dns:`` URL's own code, which archiver does not log), -61 prerequisite robots.txt fetch
#: failed, -5001 blocked from fetch by a user setting (the private-address guard, which
#: ``--allow-private`` lifts).
FAIL_STATUS: dict[str, int] = {
    "dns-error": -6,
    "connect-error": -2,
    "proxy-error": -2,
    "tls-error": -2,
    "disconnect": -3,
    "bad-response": -3,
    "headers-too-large": -3,
    "timeout": -4,
    "blocked-address": -5001,
    "robots-unreachable": -61,
    "write-error": -5,
    "internal-error": -5,
}
#: Used for a failure reason not in :data:`FAIL_STATUS`.
UNKNOWN_FAILURE = -5

#: Skip events Heritrix would log (URLs it scheduled, then refused to fetch): -9998 robots.txt
#: rules precluded the fetch, -5003 blocked by a quota (archiver's page/byte/host budgets).
#: Other skips are scope decisions on discovered links, which Heritrix never logs.
SKIP_STATUS: dict[str, int] = {
    "robots": -9998,
    "budget": -5003,
    "host-budget": -5003,
    "media-budget": -5003,
}

#: Heritrix's annotations for ``WARC-Truncated`` reasons; others are written ``truncated:REASON``.
TRUNCATION_ANNOTATIONS = {"length": "lenTrunc", "time": "timeTrunc"}

#: Heritrix keeps the last 50 hops of a discovery path, prefixed with the number left out.
MAX_PATH = 50

NA = "-"
NO_TYPE = "no-type"  #: Heritrix's MimetypeUtils.NO_TYPE_MIMETYPE
_WORKER_DIGITS = re.compile(r"(\d+)$")
_UNSAFE = re.compile(r"\s")


def _field(value: Any) -> str:
    """One space-free field; ``-`` when empty (URLs should never hold spaces, but a log line
    must keep its twelve fields whatever a server sent)."""
    if value is None:
        return NA
    text = str(value)
    if not text:
        return NA
    return _UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", text)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    return parse_w3c_datetime(value)


def log_timestamp(moment: datetime) -> str:
    """Field 1: ``2024-01-02T03:04:05.678Z`` (Heritrix's ``getLog17Date``)."""
    return rfc3339_millis(moment)


def discovery_path(hops: str | None) -> str:
    """Field 5: the hop letters (``LLE``), the last 50 with a ``N+`` prefix, ``-`` for a seed."""
    if not hops:
        return NA
    if len(hops) > MAX_PATH:
        return f"{len(hops) - MAX_PATH}+{hops[-MAX_PATH:]}"
    return hops


def worker_id(value: Any) -> str:
    """Field 8: ``#007``. Accepts a number or a task name ending in one (``worker-7``)."""
    number = 0
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        match = _WORKER_DIGITS.search(value)
        number = int(match.group(1)) if match else 0
    return f"#{number:03d}"


def fetch_status(event: Mapping[str, Any]) -> int | None:
    """Field 2 for an event, or None when the event does not belong in crawl.log."""
    kind = event.get("event")
    if kind == "skip":
        return SKIP_STATUS.get(str(event.get("reason")))
    if kind != "fetch" or event.get("outcome") in ("retry", "recalled"):
        return None  # a recalled URL's line was written when a browser's request fetched it
    status = event.get("status")
    if isinstance(status, int) and not isinstance(status, bool):
        return status
    return FAIL_STATUS.get(str(event.get("reason")), UNKNOWN_FAILURE)


def annotation_list(event: Mapping[str, Any]) -> list[str]:
    """Field 12: Heritrix's annotations that apply (``duplicate:digest``, ``lenTrunc``, ``3t``)."""
    notes: list[str] = []
    if event.get("record") == "revisit":
        notes.append("duplicate:digest")
    truncated = event.get("truncated")
    if truncated:
        notes.append(TRUNCATION_ANNOTATIONS.get(str(truncated), f"truncated:{truncated}"))
    retries = event.get("retries")
    if isinstance(retries, int) and retries > 0:
        notes.append(f"{retries + 1}t")
    return notes


def format_event(event: Mapping[str, Any]) -> str | None:
    """The crawl.log line (without newline) for one crawl-log event dict, or None.

    ``event`` is what :meth:`archiver.run.crawler.Crawler._fetch_log` logs (``event="fetch"``: url,
    status, size, mime, duration, hops, via, retries, digest, record, truncated, outcome,
    reason, timestamp; optionally ``payload_size``, ``fetch_began`` and ``worker``) or a
    ``skip`` event. Fields the event lacks are written ``-``.
    """
    status = fetch_status(event)
    if status is None:
        return None
    logged = _parse_time(event.get("timestamp")) or datetime.now(UTC)
    size = event.get("payload_size", event.get("size"))
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        size = None
    duration = event.get("duration")
    fetched = "status" in event and isinstance(duration, int | float)
    timing = NA
    if fetched:
        assert isinstance(duration, int | float)
        began = _parse_time(event.get("fetch_began")) or logged - timedelta(seconds=duration)
        timing = f"{timestamp17(began)}+{round(duration * 1000)}"
    notes = annotation_list(event)
    fields = [
        log_timestamp(logged),
        f"{status:>5}",
        f"{_field(size):>10}",
        _field(event.get("url")),
        _field(discovery_path(event.get("hops"))),
        _field(event.get("via")),
        _field(event.get("mime") or NO_TYPE),
        worker_id(event.get("worker")),
        timing,
        _field(event.get("digest") if fetched else None),
        NA,
        _field(",".join(notes)),
    ]
    return " ".join(fields)


class HeritrixLog:
    """Appends crawl.log lines to a file; feed it every crawl-log event with :meth:`write_event`.

    Lines are flushed as they are written so ``tail -f crawl.log`` works as with Heritrix. A
    resumed crawl appends to the same file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        cut_torn_line(path)  # a killed run's half line would glue onto the next run's first
        self._file: IO[str] | None = open(  # noqa: SIM115 - closed by close()
            path, "a", encoding="utf-8", newline="\n"
        )
        self.lines = 0

    def write_event(self, event: Mapping[str, Any]) -> bool:
        """Write the line for ``event`` if it has one; True when a line was written."""
        line = format_event(event)
        if line is None or self._file is None:
            return False
        self._file.write(line + "\n")
        self._file.flush()
        self.lines += 1
        return True

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()  # a full disk raises here; the file is given up all the same

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def events_from_jsonl(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    """The event dicts of a ``crawl.log.jsonl`` (lines that are not JSON objects are skipped:
    a crawl killed mid-write may leave a partial last line)."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def convert(jsonl: Path, output: Path) -> int:
    """Write ``output`` (a crawl.log) from a crawl's ``crawl.log.jsonl``; returns the lines
    written. For crawls run without ``--heritrix-log``."""
    tmp = atomicfile.tmp_path(output)
    tmp.unlink(missing_ok=True)
    try:
        with open(jsonl, encoding="utf-8") as src, HeritrixLog(tmp) as log:
            for event in events_from_jsonl(src):
                log.write_event(event)
            count = log.lines
        tmp.replace(output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return count
