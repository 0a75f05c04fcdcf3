"""URLs this crawl has captured, and their responses read back from its own WARC records.

A page loaded in a browser asks for what other pages asked for already (the site's scripts,
styles, fonts, the navigation's JSON): a crawl that archives what the browser requests must
send each of those to the server once and answer every later request from the record it
wrote, so the browser sees exactly what the WARC holds. This is URL-level deduplication within a
crawl, beside the payload-level kind (:mod:`archiver.dedup.digests`).

:class:`CapturedUrls` maps a URL (requested with GET) to the
:class:`~archiver.models.RecordLocation` of its latest capture's primary record (the response,
or a revisit). Its implementations live with the frontier's store, as the digest index's do: in
memory (:class:`MemoryCapturedUrls`), in the SQLite database (survives a resume), or in Redis
(shared by every process of a crawl whose WARC files are in one directory). Only captures the
frontier has committed are added, so a location never points at a record that a resume cut
from its file.

:func:`read_response` gives a capture back as the browser is to be answered: status, header
fields as received, and the payload with the transfer coding removed (content coding kept). A
revisit (WARC 1.1 section 6.7.2) has the header block of its own response; its payload is read
from the record it refers to, found by ``WARC-Refers-To-Target-URI`` and checked by
``WARC-Payload-Digest``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from archiver.errors import WarcFormatError
from archiver.fetch.httpframe import dechunk
from archiver.httphead import Fields, ResponseHead, field_values, parse_response_head
from archiver.models import RecordLocation
from archiver.warc.naming import OPEN_SUFFIX
from archiver.warc.reader import RecordPrefix, read_prefix_at

#: Room for the HTTP head in front of the payload when a record is read back.
HEAD_ROOM = 1 << 20


class CapturedUrls(Protocol):
    """URL -> where its latest capture's primary record is (see the module docstring)."""

    async def lookup(self, url: str) -> RecordLocation | None: ...

    async def add(self, url: str, location: RecordLocation) -> None: ...

    async def close(self) -> None: ...


class MemoryCapturedUrls:
    """The captured URLs of one run, in memory (the memory frontier's crawl)."""

    def __init__(self) -> None:
        self._locations: dict[str, RecordLocation] = {}

    async def lookup(self, url: str) -> RecordLocation | None:
        return self._locations.get(url)

    async def add(self, url: str, location: RecordLocation) -> None:
        self._locations[url] = location

    async def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        return len(self._locations)


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """A capture as read back: what the browser is answered with."""

    record_type: str  #: ``response`` or ``revisit``
    date: str  #: the record's WARC-Date
    status: int
    reason: str
    headers: list[tuple[str, str]]  #: as received (latin-1 decoded: byte for byte)
    payload: bytes | None
    """Transfer coding removed, content coding kept; None for a revisit (its payload is in
    the record it refers to) or a payload over the limit read."""
    payload_digest: str | None
    refers_to: str | None  #: a revisit's WARC-Refers-To-Target-URI
    too_large: bool = False

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)


def warc_path(warcs: Path, filename: str) -> Path:
    """A WARC file by its final name, or by its ``.open`` name while it is still written."""
    path = warcs / filename
    if path.exists():
        return path
    open_path = warcs / (filename + OPEN_SUFFIX)
    return open_path if open_path.exists() else path


def read_response(warcs: Path, location: RecordLocation, *, max_body: int) -> StoredResponse | None:
    """The response stored at ``location``; None when no HTTP response can be read there."""
    prefix = _read(warcs, location, max_body)
    if prefix is None:
        return None
    head = prefix.head
    kind = head.record_type
    if kind not in ("response", "revisit"):
        return None
    http = parse_response_head(prefix.block, HEAD_ROOM)
    if http is None:
        return None
    payload: bytes | None = None
    too_large = False
    if kind == "response":
        payload, too_large = _payload(prefix, http.fields, http.end, max_body)
    return StoredResponse(
        record_type=kind,
        date=head.date or "",
        status=http.status,
        reason=_reason(http),
        headers=http.text_fields(),
        payload=payload,
        payload_digest=head.get("WARC-Payload-Digest"),
        refers_to=head.get("WARC-Refers-To-Target-URI") if kind == "revisit" else None,
        too_large=too_large,
    )


def read_payload(
    warcs: Path, location: RecordLocation, digest: str | None, *, max_body: int
) -> tuple[bytes | None, bool]:
    """The payload of the response stored at ``location`` if its payload digest is
    ``digest``: ``(payload, too_large)``; ``(None, False)`` when it is not there."""
    prefix = _read(warcs, location, max_body)
    if prefix is None or prefix.head.record_type != "response":
        return None, False
    if digest is not None and prefix.head.get("WARC-Payload-Digest") != digest:
        return None, False
    http = parse_response_head(prefix.block, HEAD_ROOM)
    if http is None:
        return None, False
    return _payload(prefix, http.fields, http.end, max_body)


def response_parts(raw: bytes) -> tuple[int, str, list[tuple[str, str]], bytes] | None:
    """Status, reason, header fields and payload of a whole HTTP/1.x response as received
    (its bytes as a response record holds them); None when it has no HTTP head."""
    http = parse_response_head(raw, HEAD_ROOM)
    if http is None:
        return None
    body = raw[http.end :]
    if b"chunked" in b",".join(http.values(b"transfer-encoding")).lower():
        body, _error = dechunk(body)
    return http.status, _reason(http), http.text_fields(), body


def _read(warcs: Path, location: RecordLocation, max_body: int) -> RecordPrefix | None:
    try:
        return read_prefix_at(
            warc_path(warcs, location.filename),
            location.offset,
            location.length,
            max_body + HEAD_ROOM,
        )
    except (OSError, WarcFormatError):
        return None


def _reason(http: ResponseHead) -> str:
    return http.status_line.reason.decode("latin-1").strip()


def _payload(
    prefix: RecordPrefix, headers: Fields, body_start: int, max_body: int
) -> tuple[bytes | None, bool]:
    """The payload after the head: de-chunked when it was sent chunked (RFC 9112 section 7.1);
    ``(None, True)`` when it is larger than ``max_body``."""
    if not prefix.whole:
        return None, True
    body = prefix.block[body_start:]
    codings = b",".join(field_values(headers, b"transfer-encoding")).lower()
    if b"chunked" in codings:
        body, _error = dechunk(body)  # a capture cut short: what arrived is what there is
    if len(body) > max_body:
        return None, True
    return body, False


__all__ = [
    "CapturedUrls",
    "MemoryCapturedUrls",
    "StoredResponse",
    "read_payload",
    "read_response",
    "response_parts",
    "warc_path",
]
