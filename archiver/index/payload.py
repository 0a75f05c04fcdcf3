"""The payload digest of a stored record, computed as the writer computes it.

WARC 1.1 section 5.9: the payload of an ``application/http`` block is its entity body, the bytes
after the HTTP header block with the chunked transfer coding removed and any content coding kept
(RFC 2616 sections 4.3 and 7.2.1, iipc/warc-specifications#22); the payload of any other block is
the block itself. ``archiver verify`` checks every declared ``WARC-Payload-Digest`` with it, and
``archiver index`` gives a record that declares none (an ARC record, a ``resource`` some tools
write without one) the digest it computes here, so both read a record the same way.

cdxj-indexer makes up a digest for such a record too, over the body as stored: for a chunked
body that includes the chunk framing, which is not the payload, so the two indexes differ there
(docs/foreign-files.md lists it).
"""

from __future__ import annotations

from archiver.digest import label, new_hasher
from archiver.fetch.httpframe import ChunkedDecoder, Framing, ResponseFramer, State
from archiver.httphead import HEAD_END, field_values, split_head
from archiver.warc.reader import RecordHead

#: Largest HTTP header block looked for (the crawler refuses bigger ones long before this).
MAX_HTTP_HEAD = 1 << 20
#: Bytes handed to the HTTP framer per call. ChunkedDecoder copies the rest of its input to look
#: for each line end, so its cost grows with (piece size x number of chunks): small pieces keep
#: a body of tiny chunks linear (200,000 one-byte chunks: 0.5 s at 4 KiB, 6 s at 1 MiB).
_FRAMER_PIECE = 4 << 10


class HttpPayload:
    """Digest of the payload of an ``application/http`` block, fed piece by piece.

    The payload is the entity body: the bytes after the HTTP header block with the chunked
    transfer coding removed and any content coding kept (WARC 1.1 section 5.9, RFC 2616
    section 4.3 / 7.2.1, iipc/warc-specifications#22). When the stored body is not valid chunked
    coding, the stored bytes are the only reading of it; when the record was truncated inside
    the coding, the de-chunked prefix is the payload (that is what the writer hashed).
    """

    __slots__ = (
        "_chunked",
        "_framer",
        "_head",
        "_live",
        "_plain",
        "_raw",
        "_seen",
        "body_start",
    )

    def __init__(self, algorithm: str, *, request: bool) -> None:
        self._raw = new_hasher(algorithm)  # the body as stored
        self._plain = new_hasher(algorithm)  # the body with chunking removed
        self._seen = 0
        self._live = True  # framing code still needs the bytes
        self._head = bytearray()
        self._chunked: ChunkedDecoder | None = None
        self._framer = (
            None
            if request
            else ResponseFramer(on_body=self._plain.update, max_header_bytes=MAX_HTTP_HEAD)
        )
        self.body_start: int | None = None

    def feed(self, data: memoryview) -> None:
        start = self._seen
        self._seen += len(data)
        if self._live:
            if self._framer is not None:
                self._feed_framer(data)
            else:
                self._feed_request(data, start)
        if self.body_start is None:
            if self._framer is None or not self._framer_found_head():
                return
            self.body_start = self._framer.header_length
        self._raw.update(data[max(0, self.body_start - start) :])

    def _framer_found_head(self) -> bool:
        framer = self._framer
        assert framer is not None
        return framer.state in (State.BODY, State.DONE) or (
            framer.state is State.ERROR and framer.header_length > 0
        )

    def _feed_framer(self, data: memoryview) -> None:
        # ResponseFramer (not a plain CRLF CRLF search) so interim 1xx responses count as head.
        framer = self._framer
        assert framer is not None
        for i in range(0, len(data), _FRAMER_PIECE):
            framer.feed(data[i : i + _FRAMER_PIECE])
            if framer.state is State.HEADERS:
                continue
            if framer.state is not State.BODY or framer.framing is not Framing.CHUNKED:
                self._live = False  # only chunked bodies need the framer after the head
                return

    def _feed_request(self, data: memoryview, start: int) -> None:
        if self._chunked is not None:
            for i in range(0, len(data), _FRAMER_PIECE):
                self._chunked.feed(data[i : i + _FRAMER_PIECE])
                if self._chunked.done or self._chunked.error is not None:
                    self._live = False
                    return
            return
        before = len(self._head)
        self._head += data[: MAX_HTTP_HEAD + 4 - before]
        match = HEAD_END.search(self._head, max(0, before - 3))
        if match is None:
            if len(self._head) > MAX_HTTP_HEAD:
                self._live = False
            return
        self.body_start = match.end()
        _, headers = split_head(bytes(self._head[: match.start()]))
        self._head = bytearray()
        codings = b",".join(field_values(headers, b"transfer-encoding")).lower().split(b",")
        if codings[-1].strip() != b"chunked":
            self._live = False
            return
        self._chunked = ChunkedDecoder(self._plain.update)
        self._feed_request(data[self.body_start - start :], self.body_start)

    def result(self) -> bytes | str:
        """The payload digest, or why the payload cannot be located."""
        if self.body_start is None:
            if self._framer is not None and self._framer.error is not None:
                return f"HTTP header block not readable: {self._framer.error}"
            return "end of the HTTP header block not found"
        if self._framer is not None:
            chunked = self._framer.framing is Framing.CHUNKED
            broken = self._framer.state is State.ERROR
        else:
            chunked = self._chunked is not None
            broken = self._chunked is not None and self._chunked.error is not None
        return self._plain.digest() if chunked and not broken else self._raw.digest()


class BlockPayload:
    """The payload of a block that is not HTTP: the block itself (WARC 1.1 section 5.9)."""

    __slots__ = ("_hasher",)

    def __init__(self, algorithm: str) -> None:
        self._hasher = new_hasher(algorithm)

    def feed(self, data: memoryview) -> None:
        self._hasher.update(data)

    def result(self) -> bytes | str:
        return self._hasher.digest()


def has_http_head(head: RecordHead) -> bool:
    """Whether warcio (and so cdxj-indexer and pywb) parses an HTTP head in this record's
    block (``load_http_headers``): a response or revisit with a block, for an http(s) URI."""
    return (
        head.record_type in ("response", "revisit")
        and head.content_length > 0
        and head.target.startswith(("http:", "https:"))
    )


def payload_for(head: RecordHead, algorithm: str = "sha1") -> HttpPayload | BlockPayload | None:
    """What computes the payload digest of a record that declares none: a response, resource
    or metadata record (cdxj-indexer gives each an index digest; a revisit's payload is its
    original's, and a warcinfo has none); None for any other record or one with a digest."""
    if head.get("WARC-Payload-Digest") is not None or head.record_type not in (
        "response",
        "resource",
        "metadata",
    ):
        return None
    if has_http_head(head):
        return HttpPayload(algorithm, request=False)
    return BlockPayload(algorithm)


def computed_digest(payload: HttpPayload | BlockPayload, algorithm: str = "sha1") -> str | None:
    """The labelled digest (``sha1:`` and Base32 for sha1) of a payload fed whole; None when the
    payload could not be located."""
    result = payload.result()
    return None if isinstance(result, str) else label(algorithm, result)


__all__ = [
    "MAX_HTTP_HEAD",
    "BlockPayload",
    "HttpPayload",
    "computed_digest",
    "has_http_head",
    "payload_for",
]
