"""Exchange -> WARC records (WARC 1.1): pure, with the clock and record ids injectable.

The records are built here and serialised by the single writer (:mod:`archiver.warc.writer`). Blocks
are never parsed or re-serialised: the response block is the raw bytes the capture layer
recorded, and the digests are the ones computed while those bytes streamed in. (warcio's
``WARCWriter`` would parse and re-serialise HTTP headers and compute payload digests over chunk
framing, against WARC 1.1 section 5.9's "transfer encoding removed": warcio#74/#75/#128.)

A capture is written as adjacent records, in this order, never split across files:

1. ``response`` (or ``revisit``), the record the index points at;
2. ``request``, with ``WARC-Concurrent-To`` naming the response (what warcio's
   ``write_request_response_pair`` and cdxj-indexer's pairing expect; WARC 1.1 section 5.7);
3. optionally ``metadata`` (``application/warc-fields``), Concurrent-To the response: the
   outcome of a failed TLS certificate verification, interim (1xx) responses that came before
   the final one.

All records of a capture share one ``WARC-Date`` with microseconds (WARC 1.1 section 5.4).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from archiver import digest
from archiver.httphead import head_end, parse_status_line, start_line
from archiver.models import Exchange, Original, Truncation
from archiver.spool import Spool
from archiver.timefmt import Clock, utcnow, warc_date

WARC_VERSION = "WARC/1.1"
PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
CT_RESPONSE = "application/http;msgtype=response"
CT_REQUEST = "application/http;msgtype=request"
CT_FIELDS = "application/warc-fields"
_MIME_SPLIT = re.compile(r"[;\s]")
_UNSAFE_VALUE = re.compile(r"[\x00-\x1f\x7f]")

IdFactory = Callable[[], str]


def new_record_id() -> str:
    """``<urn:uuid:…>`` of a random (version 4) UUID, as ``uuid.uuid4()`` would write it (RFC
    9562 section 5.4), without building the UUID object: two or three per capture."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC variant
    h = raw.hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


def safe_value(value: str) -> str:
    """A WARC header value cannot carry control characters (no header injection)."""
    return _UNSAFE_VALUE.sub(" ", value)


@dataclass(slots=True)
class PendingRecord:
    """One record ready for the writer. The writer adds WARC-Warcinfo-ID and Content-Length."""

    record_type: str
    headers: list[tuple[str, str]]
    block: bytes | Spool
    length: int

    @property
    def record_id(self) -> str:
        return self.get("WARC-Record-ID") or ""

    def get(self, name: str) -> str | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


@dataclass(slots=True)
class IndexFields:
    """What the CDXJ line of the capture's primary record says (cdxj-indexer's field rules)."""

    url: str
    mime: str | None
    status: int | None
    digest: str | None
    #: the request as sent, for a response whose request has a body that the index key
    #: includes (POST, PUT: :mod:`archiver.index.postquery`; cdxj-indexer pairs only response
    #: and request records, so a revisit's key stays its URL); None otherwise
    request: bytes | None = None


@dataclass(slots=True)
class PendingCapture:
    """The records of one capture, in write order, and what its index line needs."""

    url: str
    records: list[PendingRecord]
    index: IndexFields | None
    payload_digest: str | None = None
    notes: dict[str, str] = field(default_factory=dict)

    def close(self) -> None:
        """Release spooled blocks (temporary files) once written or abandoned."""
        for record in self.records:
            if isinstance(record.block, Spool):
                record.block.close()


def cdx_mime(content_type: str | None) -> str | None:
    """The CDX ``mime`` of an HTTP Content-Type, exactly as cdxj-indexer derives it: None
    without the header, ``""`` for a header with no media type (``Content-Type:``), which
    cdxj-indexer writes as ``"mime": ""``."""
    if content_type is None:
        return None
    return _MIME_SPLIT.split(content_type, 1)[0].strip()


class RecordFactory:
    """Builds the records of captures. ``new_id`` and ``clock`` are injectable for golden tests."""

    def __init__(
        self,
        *,
        algorithm: str = "sha1",
        new_id: IdFactory = new_record_id,
        clock: Clock = utcnow,
        redact_cookies: bool = False,
    ) -> None:
        self.algorithm = algorithm
        self.new_id = new_id
        self.clock = clock
        #: request records carry ``Cookie`` values replaced (``--redact-cookies``)
        self.redact_cookies = redact_cookies

    @staticmethod
    def _common(
        record_type: str, record_id: str, date: str, shared: list[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """The fields every record of a capture starts with; ``shared`` is :meth:`_shared`."""
        return [
            ("WARC-Type", record_type),
            ("WARC-Record-ID", record_id),
            ("WARC-Date", date),
            *shared,
        ]

    def _shared(self, ex: Exchange) -> list[tuple[str, str]]:
        """The fields the records of one capture have in common (worked out once)."""
        fields = [("WARC-Target-URI", safe_value(ex.target_uri))]
        if ex.ip_address:
            fields.append(("WARC-IP-Address", ex.ip_address))
        fields.extend(self._protocols(ex))
        return fields

    @staticmethod
    def _protocols(ex: Exchange) -> list[tuple[str, str]]:
        """Repeated WARC-Protocol fields, innermost last (iipc/warc-specifications#42)."""
        fields = []
        status_line = _status_version(ex)
        if status_line:
            fields.append(("WARC-Protocol", status_line))
        if ex.tls is not None:
            fields.append(("WARC-Protocol", ex.tls.version))
            if ex.tls.cipher_suite:
                fields.append(("WARC-Cipher-Suite", ex.tls.cipher_suite))
        return fields

    def capture(self, ex: Exchange) -> PendingCapture:
        """A full capture: response + request (+ metadata when TLS verification failed)."""
        date = warc_date(ex.date)
        response_id = self.new_id()
        shared = self._shared(ex)
        headers = self._common("response", response_id, date, shared)
        if ex.truncated is not None:
            headers.append(("WARC-Truncated", ex.truncated.value))
        headers += [
            ("WARC-Block-Digest", ex.block_digest),
            ("WARC-Payload-Digest", ex.payload_digest),
            ("Content-Type", CT_RESPONSE),
        ]
        response = PendingRecord("response", headers, ex.response, ex.response_length)
        records = [response, self._request(ex, date, response_id, shared)]
        records.extend(self._capture_metadata(ex, date, response_id))
        return PendingCapture(
            url=ex.target_uri,
            records=records,
            index=IndexFields(
                url=ex.target_uri,
                mime=cdx_mime(ex.header("Content-Type")),
                status=ex.status,
                digest=ex.payload_digest,
                request=_keyed_request(ex),
            ),
            payload_digest=ex.payload_digest,
        )

    def revisit(
        self, ex: Exchange, original: Original, *, profile: str = PROFILE_IDENTICAL
    ) -> PendingCapture:
        """A revisit: the response's header block only, pointing at an identical original.

        WARC 1.1 section 6.7.2: with the identical-payload-digest profile the payload digest
        is required; a kept header block needs ``WARC-Truncated: length``. pywb resolves the
        original through WARC-Refers-To-Target-URI + WARC-Refers-To-Date (WARC 1.1 sections
        5.11 and 5.12), which are therefore always written.
        """
        date = warc_date(ex.date)
        revisit_id = self.new_id()
        head = _header_block(ex)
        shared = self._shared(ex)
        headers = self._common("revisit", revisit_id, date, shared)
        headers.append(("WARC-Profile", profile))
        if original.record_id:
            headers.append(("WARC-Refers-To", original.record_id))
        headers += [
            ("WARC-Refers-To-Target-URI", safe_value(original.target_uri)),
            ("WARC-Refers-To-Date", original.date),
            ("WARC-Truncated", Truncation.LENGTH.value),
            ("WARC-Block-Digest", digest.digest_bytes(self.algorithm, head)),
            ("WARC-Payload-Digest", ex.payload_digest),
            ("Content-Type", CT_RESPONSE),
        ]
        revisit = PendingRecord("revisit", headers, head, len(head))
        records = [revisit, self._request(ex, date, revisit_id, shared)]
        records.extend(self._capture_metadata(ex, date, revisit_id))
        ex.response.close()  # the body is not stored: drop the spool now
        return PendingCapture(
            url=ex.target_uri,
            records=records,
            index=IndexFields(
                url=ex.target_uri, mime="warc/revisit", status=ex.status, digest=ex.payload_digest
            ),
            payload_digest=ex.payload_digest,
        )

    def _request(
        self, ex: Exchange, date: str, concurrent_to: str, shared: list[tuple[str, str]]
    ) -> PendingRecord:
        headers = self._common("request", self.new_id(), date, shared)
        block, block_digest = ex.request, ex.request_block_digest
        if self.redact_cookies:
            redacted = redact_cookies(block)
            if redacted != block:
                block, block_digest = redacted, digest.digest_bytes(self.algorithm, redacted)
        headers += [
            ("WARC-Concurrent-To", concurrent_to),
            ("WARC-Block-Digest", block_digest),
            ("WARC-Payload-Digest", ex.request_payload_digest),
            ("Content-Type", CT_REQUEST),
        ]
        return PendingRecord("request", headers, block, len(block))

    def _capture_metadata(self, ex: Exchange, date: str, concurrent_to: str) -> list[PendingRecord]:
        """What the capture's records cannot say themselves, as one metadata record beside
        them: a TLS certificate that failed verification, and the interim (1xx) responses
        received before the final one (kept out of the response record so replay and
        indexing see the final status; each one here as a readable status line and its
        exact bytes in base64), and the empty lines passed over before a status line
        (:meth:`archiver.fetch.httpframe.ResponseFramer`), in base64."""
        fields: list[tuple[str, str]] = []
        tls = ex.tls
        if tls is not None and not tls.verified:
            fields.append(("tls-certificate-verified", "false"))
            if tls.verify_error:
                fields.append(("tls-verify-error", tls.verify_error))
        for interim in ex.interim:
            if not interim.strip(b"\r\n"):  # empty lines before a status line, passed over
                fields.append(("http-skipped-line-ends-base64", base64.b64encode(interim).decode()))
                continue
            fields.append(("http-interim-response", start_line(interim).decode("latin-1")))
            fields.append(("http-interim-response-base64", base64.b64encode(interim).decode()))
        if not fields:
            return []
        return [self.metadata(ex.target_uri, date, fields, concurrent_to=concurrent_to)]

    def resource(self, target_uri: str, content_type: str, data: bytes) -> PendingCapture:
        """A ``resource`` record (WARC 1.1 section 6.6): something the crawler made rather than
        received, such as a page's screenshot (``urn:screenshot:URL``, as Browsertrix names
        them). Its payload is its whole block, so both digests are the block's."""
        return self._whole_block("resource", target_uri, content_type, data)

    def described(
        self, target_uri: str, content_type: str, data: bytes, *, refers_to: str | None = None
    ) -> PendingCapture:
        """A ``metadata`` record (WARC 1.1 section 6.6) that describes a capture rather than
        being one, such as the info JSON yt-dlp resolved for a page (``urn:yt-dlp:URL``): its
        own target URI keeps it apart from the page in an index and in replay, and
        ``WARC-Refers-To`` names the record it describes (section 5.11). Indexed as
        cdxj-indexer indexes a metadata record that is not ``application/warc-fields``."""
        refers = (("WARC-Refers-To", refers_to),) if refers_to else ()
        return self._whole_block("metadata", target_uri, content_type, data, refers)

    def _whole_block(
        self,
        warc_type: str,
        target_uri: str,
        content_type: str,
        data: bytes,
        after_target: Iterable[tuple[str, str]] = (),
    ) -> PendingCapture:
        """A capture of one record whose block is its payload (not an HTTP message), so both
        digests are the block's; ``after_target`` are fields written after
        ``WARC-Target-URI``."""
        block_digest = digest.digest_bytes(self.algorithm, data)
        headers = [
            ("WARC-Type", warc_type),
            ("WARC-Record-ID", self.new_id()),
            ("WARC-Date", warc_date(self.clock())),
            ("WARC-Target-URI", safe_value(target_uri)),
            *after_target,
            ("WARC-Block-Digest", block_digest),
            ("WARC-Payload-Digest", block_digest),
            ("Content-Type", content_type),
        ]
        return PendingCapture(
            url=target_uri,
            records=[PendingRecord(warc_type, headers, data, len(data))],
            index=IndexFields(
                url=target_uri, mime=cdx_mime(content_type), status=None, digest=block_digest
            ),
            payload_digest=block_digest,
        )

    def metadata(
        self,
        target_uri: str,
        date: str,
        fields: Iterable[tuple[str, str]],
        *,
        concurrent_to: str | None = None,
    ) -> PendingRecord:
        block = fields_block(fields)
        headers = [
            ("WARC-Type", "metadata"),
            ("WARC-Record-ID", self.new_id()),
            ("WARC-Date", date),
            ("WARC-Target-URI", safe_value(target_uri)),
        ]
        if concurrent_to:
            headers.append(("WARC-Concurrent-To", concurrent_to))
        headers += [
            ("WARC-Block-Digest", digest.digest_bytes(self.algorithm, block)),
            ("Content-Type", CT_FIELDS),
        ]
        return PendingRecord("metadata", headers, block, len(block))

    def warcinfo(self, filename: str, fields: Iterable[tuple[str, str]]) -> PendingRecord:
        """The first record of every file (WARC 1.1 section 6.2, guidelines #3)."""
        block = fields_block(fields)
        headers = [
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", self.new_id()),
            ("WARC-Date", warc_date(self.clock())),
            ("WARC-Filename", filename),
            ("WARC-Block-Digest", digest.digest_bytes(self.algorithm, block)),
            ("Content-Type", CT_FIELDS),
        ]
        return PendingRecord("warcinfo", headers, block, len(block))


#: What a redacted cookie's value becomes (``--redact-cookies``).
REDACTED = b"redacted"


def redact_cookies(request: bytes) -> bytes:
    """The request with the value of every cookie in its ``Cookie`` header fields replaced by
    :data:`REDACTED`, their names kept (RFC 6265 section 4.2.1: ``name=value`` pairs joined by
    ``"; "``). Nothing else changes: the request line, the other fields, their order and case,
    the body (so the payload digest stays). Not byte-exact any more, which the warcinfo record
    of such a crawl says."""
    end = request.find(b"\r\n\r\n")
    head, rest = (request, b"") if end < 0 else (request[:end], request[end:])
    lines = head.split(b"\r\n")
    changed = False
    for i, line in enumerate(lines[1:], start=1):
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"cookie":
            pairs = [pair.strip() for pair in value.split(b";") if pair.strip()]
            names = [pair.partition(b"=")[0].strip() for pair in pairs]
            lines[i] = name + b": " + b"; ".join(n + b"=" + REDACTED for n in names)
            changed = True
    return b"\r\n".join(lines) + rest if changed else request


def _keyed_request(ex: Exchange) -> bytes | None:
    """The request, when its body is part of the capture's index key (POST, PUT)."""
    return ex.request if ex.request.startswith((b"POST ", b"PUT ")) else None


def fields_block(fields: Iterable[tuple[str, str]]) -> bytes:
    """An ``application/warc-fields`` block: ``name: value`` lines, UTF-8, no folding."""
    lines = [f"{name}: {safe_value(str(value))}\r\n" for name, value in fields if value != ""]
    return "".join(lines).encode("utf-8")


def _header_block(ex: Exchange) -> bytes:
    """The response's raw header block, up to and including the empty line."""
    head = ex.response.head(256 * 1024)
    end = head_end(head)
    return head[:end] if end is not None else head


def _status_version(ex: Exchange) -> str | None:
    """``http/1.1`` from the status line (WARC-Protocol); a long line's reason may be cut."""
    status_line = parse_status_line(start_line(ex.response.head(64)))
    return status_line.protocol if status_line is not None else None
