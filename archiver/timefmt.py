"""Every timestamp format of WARC files, CDX(J) indexes and crawl state, written once.

* ``WARC-Date``: W3C-DTF in UTC, here with microseconds, as WARC/1.1 allows (section 5.4);
* the 14-digit CDX timestamp ``yyyyMMddHHmmss`` of a ``WARC-Date`` (CDXJ's second field);
* the 17-digit ``yyyyMMddHHmmssSSS`` of WARC file names (the IIPC/Heritrix naming convention)
  and of Heritrix's crawl.log fetch-timing field (``get17DigitDate``);
* RFC 3339 in whole seconds (WACZ ``created``/``modified``, the crawl's state files, the
  summary's start time, a job's run history);
* RFC 3339 with milliseconds (the crawl log's timestamps, the progress display's JSON lines,
  Heritrix's crawl.log ``getLog17Date``);
* the report's readable ``2024-01-02 03:04:05 UTC``;
* W3C Datetime, which ``WARC-Date`` is and sitemaps write ``<lastmod>`` in (read:
  :func:`parse_w3c_datetime`).

A moment is a timezone-aware ``datetime``, or (the ``_at`` functions) seconds since the epoch,
as ``time.time()`` gives them to code that never needs a ``datetime``.

The clock is injectable everywhere a record or a name is dated (:data:`Clock`), so tests fix it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

#: What dates records, file names and packages: ``utcnow`` unless a test gives its own.
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class _WarcDates:
    """W3C-DTF in UTC with microseconds, as WARC/1.1 allows (section 5.4).

    A capture's records, its fetch log line and its page entry all carry its one date: the text
    of the last moment asked for is kept and given again for the same object. (The kept pair is
    one tuple, replaced whole: a reader on another thread sees an old pair or a new one.)"""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[datetime | None, str] = (None, "")

    def __call__(self, moment: datetime) -> str:
        last = self._last
        if last[0] is moment:
            return last[1]
        utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
        # isoformat is C code: "…:05.000123+00:00" -> "…Z"
        text = utc.isoformat(timespec="microseconds")[:-6] + "Z"
        self._last = (moment, text)
        return text


warc_date = _WarcDates()


def timestamp14(date: str) -> str:
    """The 14-digit CDX timestamp of a ``WARC-Date`` (or any date written with its digits in
    that order): its first 14 digits, as cdxj-indexer writes them."""
    return "".join(ch for ch in date if ch.isdigit())[:14]


def warc_date_of_timestamp(digits: str) -> str:
    """The ``WARC-Date`` of a 12 to 14-digit CDX or ARC timestamp (``yyyyMMddHHmm[ss]``),
    seconds padded with zeros, further digits dropped: ``20140216050221`` ->
    ``2014-02-16T05:02:21Z`` (how warcio reads an ARC record's date as a WARC one)."""
    d = digits[:14].ljust(14, "0")
    return f"{d[0:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}Z"


def timestamp17(moment: datetime) -> str:
    """``yyyyMMddHHmmssSSS`` in UTC, milliseconds truncated (Heritrix's ``get17DigitDate``)."""
    return moment.astimezone(UTC).strftime("%Y%m%d%H%M%S%f")[:17]


def rfc3339(moment: datetime) -> str:
    """RFC 3339 in UTC, whole seconds: ``2024-01-02T03:04:05Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_at(seconds: float) -> str:
    """:func:`rfc3339` of a moment given in seconds since the epoch."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def rfc3339_millis(moment: datetime) -> str:
    """RFC 3339 in UTC with milliseconds (truncated): ``2024-01-02T03:04:05.678Z``."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


class _MillisAt:
    """:func:`rfc3339_millis` of a moment given in seconds since the epoch.

    Log lines want it thousands of times a second: the text of the whole second is kept and
    formatted again only when the second changes. (The kept pair is one tuple, replaced whole:
    a reader on another thread sees an old pair or a new one.)"""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, seconds: float) -> str:
        second = int(seconds)
        last = self._last
        if last[0] != second:
            last = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
            self._last = last
        return f"{last[1]}.{int((seconds - second) * 1000):03d}Z"


rfc3339_millis_at = _MillisAt()


def readable_utc_at(seconds: float) -> str:
    """``2024-01-02 03:04:05 UTC``: for people (the HTML report's "generated" line)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?)?)?)?"
)


def parse_w3c_datetime(text: str) -> datetime | None:
    """A W3C Datetime (https://www.w3.org/TR/NOTE-datetime, what sitemaps.org prescribes for
    ``<lastmod>``): ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``, or a date and time with a time zone
    (``Z`` or ``+hh:mm``); fractions of a second are allowed. A time without a zone is read as
    UTC (the note requires one; sites omit it). A missing month or day is the first. Returns
    an aware datetime, or None for anything else."""
    match = _W3C.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    tz = UTC
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))
    try:
        return datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=tz,
        )
    except ValueError:  # month 13, day 31 of a 30-day month, hour 25, zone past 24 h
        return None


__all__ = [
    "Clock",
    "parse_w3c_datetime",
    "readable_utc_at",
    "rfc3339",
    "rfc3339_at",
    "rfc3339_millis",
    "rfc3339_millis_at",
    "timestamp14",
    "timestamp17",
    "utcnow",
    "warc_date",
    "warc_date_of_timestamp",
]
