"""ARC records (the Internet Archive's ARC file format, versions 1 and 2) read as WARC heads.

ARC is what crawls wrote before WARC (Heritrix 1, Alexa, the Internet Archive's collections up
to 2008): a record is one header line, ``URL IP-address Archive-date Content-type
Archive-length`` (version 1) or ``URL IP-address Archive-date Content-type Result-code Checksum
Location Offset Filename Archive-length`` (version 2), then ``Archive-length`` bytes (the HTTP
response as received, headers included), then a newline. The first record, ``filedesc://NAME``,
describes the file (its block holds the version line and the field names).

archiver reads ARC files for ``index``, ``verify`` and ``--dedup-from`` rather than refuse them:
warcio reads them and cdxj-indexer indexes them, so pywb replays them, and a collection that
holds them is still deduplicated against. A record is given the head warcio's ARC-to-WARC reading
gives it (``arc2warc``): ``filedesc://`` becomes a ``warcinfo`` record, every other record a
``response`` whose block is ``application/http``, its date the 14-digit archive date as a
``WARC-Date``. It has no record id, no digests: its payload digest is computed when one is
needed (:mod:`archiver.index.payload`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from archiver.timefmt import warc_date_of_timestamp

#: The first bytes of an ARC file (its ``filedesc://`` record).
FILEDESC = "filedesc://"
#: An archive date: 14 digits (``yyyyMMddHHmmss``), some writers 12 or up to 17.
_DATE = re.compile(r"\d{12,18}\Z")
_LENGTH = re.compile(r"\d{1,19}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The longest header line read as one (URLs are long, but not this long).
MAX_LINE = 64 << 10


@dataclass(frozen=True, slots=True)
class ArcHeader:
    """One ARC header line, read."""

    version: int  #: 1 or 2 (by the number of fields)
    url: str
    ip: str
    date: str  #: the archive date as written
    content_type: str
    length: int  #: Archive-length: the bytes after the header line, not counting its newline

    def warc_headers(self) -> tuple[tuple[str, str], ...]:
        """The record's fields as warcio's ARC-to-WARC reading names them."""
        date = warc_date_of_timestamp(self.date)
        if self.url.startswith(FILEDESC):
            return (
                ("WARC-Type", "warcinfo"),
                ("WARC-Filename", self.url[len(FILEDESC) :]),
                ("WARC-IP-Address", self.ip),
                ("WARC-Date", date),
                ("Content-Type", self.content_type),
                ("Content-Length", str(self.length)),
            )
        return (
            ("WARC-Type", "response"),
            ("WARC-Target-URI", self.url),
            ("WARC-IP-Address", self.ip),
            ("WARC-Date", date),
            ("Content-Type", "application/http;msgtype=response"),
            ("Content-Length", str(self.length)),
        )


class ArcLineError(ValueError):
    """A line that is not an ARC header line, with why."""


class ArcLengthError(ArcLineError):
    """An ARC header line whose Archive-length is no length: the record cannot be located."""


def parse_header_line(line: bytes) -> ArcHeader:
    """Read an ARC header line (without its newline). Raises :class:`ArcLineError`.

    The version is told by the fields, not by the file: a URL may hold spaces, so the fields
    are counted from the end (as warcio does), version 2's ten first, then version 1's five.
    """
    text = line.rstrip(b"\r").decode("utf-8", "replace")
    tokens = text.split(" ")
    for version, count, date_at in ((2, 10, -8), (1, 5, -3)):
        if len(tokens) < count or not _DATE.match(tokens[date_at]):
            continue
        if version == 2 and not tokens[-7]:
            continue
        length = tokens[-1]
        if not _LENGTH.match(length):
            raise ArcLengthError(f"ARC record with Archive-length {length[:20]!r}")
        url = " ".join(tokens[: len(tokens) - count + 1])
        if not url or _CONTROL.search(url):
            break  # no URL holds a control character (nor starts a gzip member, 0x1f 0x8b)
        return ArcHeader(
            version=version,
            url=url,
            ip=tokens[-count + 1],
            date=tokens[date_at],
            content_type=tokens[date_at + 1],
            length=int(length),
        )
    raise ArcLineError(f"not an ARC header line: {line[:60]!r}")


def looks_like_header_line(line: bytes) -> bool:
    """Whether ``line`` reads as an ARC header line (where a resynchronising walk may resume)."""
    try:
        parse_header_line(line)
    except ArcLineError:
        return False
    return True


__all__ = [
    "FILEDESC",
    "MAX_LINE",
    "ArcHeader",
    "ArcLengthError",
    "ArcLineError",
    "looks_like_header_line",
]
