"""Every timestamp format of WARC files, CDX(J) indexes and crawl state, written once.

* ``WARC-Date``: W3C-DTF in UTC, here with microseconds, as WARC/1.1 allows (section 5.4);
* the 14-digit CDX timestamp ``yyyyMMddHHmmss`` of a ``WARC-Date`` (CDXJ's second field);
* the 17-digit ``yyyyMMddHHmmssSSS`` of WARC file names (the IIPC/Heritrix naming convention)
  and of Heritrix's crawl.log fetch-timing field (``get17DigitDate``);
* RFC 3339 in whole seconds (WACZ ``created``/``modified``, the crawl's state files).

The clock is injectable everywhere a record or a name is dated (:data:`Clock`), so tests fix it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: What dates records, file names and packages: ``utcnow`` unless a test gives its own.
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def warc_date(moment: datetime) -> str:
    """W3C-DTF in UTC with microseconds, as WARC/1.1 allows (section 5.4)."""
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # isoformat is C code (this runs several times per capture): "…:05.000123+00:00" -> "…Z"
    return moment.isoformat(timespec="microseconds")[:-6] + "Z"


def timestamp14(date: str) -> str:
    """The 14-digit CDX timestamp of a ``WARC-Date`` (or any date written with its digits in
    that order): its first 14 digits, as cdxj-indexer writes them."""
    return "".join(ch for ch in date if ch.isdigit())[:14]


def timestamp17(moment: datetime) -> str:
    """``yyyyMMddHHmmssSSS`` in UTC, milliseconds truncated (Heritrix's ``get17DigitDate``)."""
    return moment.astimezone(UTC).strftime("%Y%m%d%H%M%S%f")[:17]


def rfc3339(moment: datetime) -> str:
    """RFC 3339 in UTC, whole seconds: ``2024-01-02T03:04:05Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["Clock", "rfc3339", "timestamp14", "timestamp17", "utcnow", "warc_date"]
