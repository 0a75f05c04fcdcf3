"""Incremental HTTP/1.x message framing: where a response ends, and its body without chunking.

aiohttp parses responses for the client, but it never says *where on the wire* a response ended,
and it forgets the bytes it parsed. The capture layer feeds the raw bytes received on a connection
through :class:`ResponseFramer`, which decides the message boundary by RFC 9112 section 6.3 and
hands the body, with the chunked transfer coding removed but any content coding kept, to a
callback: exactly the WARC payload (WARC 1.1 section 5.9; iipc/warc-specifications#22).
The verifier reads stored records back through the same code, so writer and judge agree. The
head itself (status line, header fields) is read by :mod:`archiver.httphead`, the one parser of
response heads, which every reader of stored records uses too.

Nothing here does I/O; everything is bounded (header block size, chunk-size line length).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable

from archiver.httphead import (
    HEAD_END,
    field_values,
    is_interim,
    parse_fields,
    parse_status_line,
    start_line,
)

DEFAULT_MAX_HEADER_BYTES = 256 * 1024
DEFAULT_MAX_HEADER_LINE = 32 * 1024
DEFAULT_MAX_HEADERS = 256
#: Longest chunk-size line (chunk extensions included) or trailer line, in bytes.
MAX_CHUNK_LINE = 4096
#: Largest chunk size: a signed 64-bit length (16 significant hex digits at most).
MAX_CHUNK_SIZE = (1 << 63) - 1
MAX_SIZE_DIGITS = 16
#: Most trailer field lines after the last chunk. A constant, not the configurable header
#: limits: the verifier must reach the same verdict on a stored body as the capture did. Below
#: aiohttp's own cap at the default header count, so a hostile trailer section is our verdict.
MAX_TRAILER_LINES = 128
_HTTP = b"HTTP/"
_CHUNK_SIZE = re.compile(rb"[ \t]*([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r?\n\Z")
_SIZE_DIGITS = re.compile(rb"[ \t]*0*([0-9A-Fa-f]*)")

BodyCallback = Callable[[memoryview], None]


class State(enum.Enum):
    HEADERS = "headers"
    BODY = "body"
    DONE = "done"
    ERROR = "error"


class Framing(enum.StrEnum):
    NONE = "none"  #: no body (HEAD, 1xx, 204, 304)
    LENGTH = "length"  #: Content-Length
    CHUNKED = "chunked"  #: Transfer-Encoding: chunked
    CLOSE = "close"  #: read until the connection closes


class FramingError(ValueError):
    """The bytes are not a well-formed HTTP/1.x response."""


class HeadersTooLarge(FramingError):  # noqa: N818 - a FramingError, named for what it is
    """The header block breaks the size, line-length or count limit."""


class ChunkedDecoder:
    """Removes the chunked transfer coding (RFC 9112 section 7.1) incrementally.

    ``chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF``, then ``last-chunk``, the
    trailer section and a final CRLF. A single LF is accepted wherever CRLF ends a line (the
    size line, the end of chunk data, trailer lines), as the framer accepts it in the header
    block: RFC 9112 section 2.2 lets a recipient recognise a bare LF as a line terminator, and
    browsers read such bodies (Chromium's HttpChunkedDecoder strips an optional CR before each
    LF). Anything else ends the body with :attr:`error` set, at the first byte that proves it:

    * chunk data followed by anything but CRLF (or LF);
    * a chunk-size line (chunk extensions included) or trailer line over
      :data:`MAX_CHUNK_LINE` bytes, more than :data:`MAX_TRAILER_LINES` trailer lines;
    * a chunk size over :data:`MAX_CHUNK_SIZE` (a signed 64-bit length, the most Chromium and
      llhttp accept), found as soon as its digits arrive, before the line ends.

    Spaces or tabs around the size (before an extension) are tolerated; the extension itself
    is not interpreted (``;`` then anything but CR or LF).
    """

    __slots__ = (
        "_line",
        "_on_data",
        "_remaining",
        "_state",
        "_trailers",
        "done",
        "error",
        "payload_length",
    )

    def __init__(self, on_data: BodyCallback | None = None) -> None:
        self._on_data = on_data
        self._state = "size"  # size | data | data_end | data_end_lf | trailer
        self._line = bytearray()
        self._remaining = 0
        self._trailers = 0
        self.done = False
        self.error: str | None = None
        self.payload_length = 0

    def feed(self, data: memoryview) -> int:
        """Consume bytes; returns how many belonged to the chunked body (less once it ended
        or broke: the bytes from the one that broke it on are not counted)."""
        pos = 0
        end = len(data)
        while pos < end and not self.done and self.error is None:
            state = self._state
            if state == "data":
                take = min(self._remaining, end - pos)
                if self._on_data is not None:
                    self._on_data(data[pos : pos + take])
                self.payload_length += take
                self._remaining -= take
                pos += take
                if self._remaining == 0:
                    self._state = "data_end"
            elif state in ("data_end", "data_end_lf"):
                pos = self._data_end(data[pos], pos)
            else:
                pos = self._feed_line(data, pos, end)
        return pos

    def _data_end(self, byte: int, pos: int) -> int:
        """One byte of the CRLF (or bare LF) that must follow chunk data."""
        if byte == 10:  # LF: the chunk is over
            self._state = "size"
            return pos + 1
        if byte == 13 and self._state == "data_end":
            self._state = "data_end_lf"
            return pos + 1
        self.error = "chunk data not followed by CRLF"
        return pos

    def _feed_line(self, data: memoryview, pos: int, end: int) -> int:
        """Collect a chunk-size or trailer line; act on it once its LF arrives."""
        # Look for the line end only within the longest line allowed: copying the whole rest
        # of the input for every tiny chunk would make hostile input quadratic.
        room = MAX_CHUNK_LINE - len(self._line)
        window = bytes(data[pos : min(end, pos + room)])
        nl = window.find(b"\n")
        if nl < 0:
            self._line += window
            if self._state == "size" and _size_digits(self._line) > MAX_SIZE_DIGITS:
                self.error = "chunk size too large"
            elif len(window) == room:  # MAX_CHUNK_LINE bytes and no LF: too long already
                self.error = "chunk-size or trailer line too long"
            else:
                return end
            return pos
        self._line += window[: nl + 1]
        line = bytes(self._line)
        self._line.clear()
        if self._state == "size":
            self._size_line(line)
        else:
            self._trailer_line(line)
        return pos + nl + 1

    def _size_line(self, line: bytes) -> None:
        match = _CHUNK_SIZE.match(line)
        if match is None:
            self.error = f"invalid chunk size line {line[:40]!r}"
            return
        size = int(match.group(1), 16)
        if size > MAX_CHUNK_SIZE:
            self.error = "chunk size too large"
        elif size == 0:
            self._state = "trailer"
        else:
            self._remaining = size
            self._state = "data"

    def _trailer_line(self, line: bytes) -> None:
        if line in (b"\r\n", b"\n"):  # the trailer section ends with an empty line
            self.done = True
            return
        self._trailers += 1
        if self._trailers > MAX_TRAILER_LINES:
            self.error = f"more than {MAX_TRAILER_LINES} trailer lines"


def _size_digits(line: bytearray) -> int:
    """Significant hex digits at the start of a (possibly unfinished) chunk-size line."""
    match = _SIZE_DIGITS.match(line)
    return len(match.group(1)) if match is not None else 0


class ResponseFramer:
    """Follows one HTTP/1.x response through a byte stream (interim 1xx responses included).

    Feed it the bytes as they arrive; :meth:`feed` returns how many belong to this response, so
    bytes after its end are never counted in. ``on_body`` receives the payload: the body with any
    chunked coding removed.
    """

    def __init__(
        self,
        *,
        method: str = "GET",
        on_body: BodyCallback | None = None,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        max_header_line: int = DEFAULT_MAX_HEADER_LINE,
        max_headers: int = DEFAULT_MAX_HEADERS,
        body_limit: int | None = None,
    ) -> None:
        self.max_header_line = max_header_line
        self.max_headers = max_headers
        #: the response failed because its header block broke a limit
        self.headers_too_large = False
        self.method = method.upper()
        #: stop consuming once this many raw body bytes were taken (``limit_reached`` is then set)
        self.body_limit = body_limit
        self.limit_reached = False
        self.on_body = on_body
        self.max_header_bytes = max_header_bytes
        self.state = State.HEADERS
        self.framing: Framing | None = None
        self.error: str | None = None
        self.status = 0
        self.reason = b""
        self.version = (1, 1)
        self.headers: list[tuple[bytes, bytes]] = []
        #: bytes of the header block(s), interim responses included
        self.header_length = 0
        #: where each interim (1xx) response ended, from the start of the stream
        self.interim_ends: list[int] = []
        self.consumed = 0  #: bytes of this response seen so far
        self.body_length = 0  #: raw body bytes (chunk framing included)
        self.payload_length = 0
        self._head = bytearray()
        self._head_start = 0
        #: CR and LF bytes before the next status line are still being passed over
        self._skipping = True
        self._remaining = 0
        self._chunked: ChunkedDecoder | None = None

    @property
    def done(self) -> bool:
        return self.state is State.DONE

    @property
    def failed(self) -> bool:
        return self.state is State.ERROR

    @property
    def headers_complete(self) -> bool:
        return self.state in (State.BODY, State.DONE) or (
            self.state is State.ERROR and self.framing is not None
        )

    def _payload(self, data: memoryview) -> None:
        self.payload_length += len(data)
        if self.on_body is not None:
            self.on_body(data)

    def feed(self, data: bytes | bytearray | memoryview) -> int:
        """Consume bytes; returns how many belong to this response."""
        view = memoryview(data)
        pos = 0
        while pos < len(view) and self.state in (State.HEADERS, State.BODY):
            if self.state is State.HEADERS:
                pos += self._feed_headers(view[pos:])
                continue
            rest = view[pos:]
            if self.body_limit is not None:
                allowed = self.body_limit - self.body_length
                if allowed <= 0:
                    self.limit_reached = True
                    break
                rest = rest[:allowed]
            pos += self._feed_body(rest)
        if (
            self.state is State.BODY
            and self.body_limit is not None
            and self.body_length >= self.body_limit
        ):
            self.limit_reached = True
        self.consumed += pos
        return pos

    def feed_eof(self) -> None:
        """The connection closed. Ends a close-delimited body; otherwise the response is cut."""
        if self.state is State.BODY and self.framing is Framing.CLOSE:
            self.state = State.DONE
        elif self.state is State.HEADERS:
            if self._head:
                self._fail("connection closed inside the header block")
            else:
                self._fail("connection closed before any response")
        elif self.state is State.BODY:
            self._fail("connection closed before the end of the body")

    def _fail(self, message: str) -> None:
        self.state = State.ERROR
        self.error = message

    def _too_large(self, message: str) -> None:
        self.headers_too_large = True
        self._fail(message)

    def _feed_headers(self, view: memoryview) -> int:
        before = len(self._head)
        self._head += view
        start = self._skip_empty_lines()
        if self._skipping:  # nothing but line ends yet
            if len(self._head) > self.max_header_bytes:
                self._too_large(f"header block larger than {self.max_header_bytes} bytes")
                return self.max_header_bytes + 1 - before
            return len(view)
        search_from = max(start, before - 3)
        # A failure consumes the bytes up to the one that decided it, however the bytes were
        # cut into pieces: the rest is not this response's (capture keeps it under its
        # diagnostic cap, not as the response).
        prefix = self._head[start : start + 5]
        if not _HTTP.startswith(prefix):  # decided at the first byte that cannot start it
            wrong = next(i for i, byte in enumerate(prefix) if byte != _HTTP[i])
            self._fail("no HTTP status line (HTTP/0.9 or not HTTP)")
            return start + wrong + 1 - before
        match = HEAD_END.search(self._head, search_from)
        if match is None:
            if len(self._head) > self.max_header_bytes:
                self._too_large(f"header block larger than {self.max_header_bytes} bytes")
                return self.max_header_bytes + 1 - before
            return len(view)
        end = match.end()
        if end > self.max_header_bytes:
            self._too_large(f"header block larger than {self.max_header_bytes} bytes")
            return self.max_header_bytes + 1 - before
        # Bytes after the header block are fed again by the caller's loop: drop them here.
        del self._head[end:]
        block = bytes(self._head[self._head_start : match.start()])
        used = end - before
        self.header_length = end
        try:
            self._start_message(block)
        except HeadersTooLarge as exc:
            self._too_large(str(exc))
            return used
        except FramingError as exc:
            self._fail(str(exc))
            return used
        if self.state is State.HEADERS:  # an interim 1xx response: the next one follows
            self._head_start = end
            self.interim_ends.append(end)
            self._skipping = True
        else:
            self._head = bytearray()
        return used

    def _skip_empty_lines(self) -> int:
        """Pass over the CR and LF bytes before a status line; where the message starts.

        llhttp (aiohttp's parser) and browsers ignore empty lines before a response's status
        line, at the start of the stream and after an interim response (RFC 9112 section 2.2
        asks the same robustness of a server before a request line). They are not part of the
        message that follows: like an interim response, the run becomes a piece of its own in
        :attr:`interim_ends`, so the stored response starts at its status line, where replay
        tools and indexers read its status.
        """
        start = self._head_start
        if not self._skipping:
            return start
        head = self._head
        end = len(head)
        at = start
        while at < end and head[at] in (13, 10):
            at += 1
        if at == end:
            return start  # only line ends so far: the status line has not begun
        self._skipping = False
        if at > start:
            self._head_start = at
            self.interim_ends.append(at)
        return at

    def _start_message(self, block: bytes) -> None:
        lines = block.split(b"\n")
        if len(lines) - 1 > self.max_headers:
            raise HeadersTooLarge(f"{len(lines) - 1} header lines (limit {self.max_headers})")
        longest = max(map(len, lines))
        if longest > self.max_header_line:
            raise HeadersTooLarge(f"header line of {longest} bytes (limit {self.max_header_line})")
        start = start_line(lines[0])
        status_line = parse_status_line(start)
        if status_line is None:
            raise FramingError(f"invalid status line {start[:60]!r}")
        self.version = status_line.version
        self.status = status_line.status
        self.reason = status_line.reason
        self.headers = headers = parse_fields(lines)
        if is_interim(self.status):
            return  # interim response; stay in HEADERS
        self.state = State.BODY
        te_values: list[bytes] = []
        lengths: set[bytes] = set()
        for name, value in headers:
            if len(name) in (14, 17):
                lname = name.lower()
                if lname == b"content-length":
                    lengths.add(value)
                elif lname == b"transfer-encoding":
                    te_values.append(value)
        te = b",".join(te_values).lower()
        if self.method == "HEAD" or self.status in (204, 304) or 100 <= self.status < 200:
            self.framing = Framing.NONE
        elif te:
            codings = [c.strip() for c in te.split(b",") if c.strip()]
            self.framing = Framing.CHUNKED if codings and codings[-1] == b"chunked" else None
            if self.framing is None:
                self.framing = Framing.CLOSE
            else:
                self._chunked = ChunkedDecoder(self._payload)
        elif lengths:
            if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
                raise FramingError(f"invalid Content-Length {sorted(lengths)!r}")
            self.framing = Framing.LENGTH
            self._remaining = int(lengths.pop())
        else:
            self.framing = Framing.CLOSE
        if self.framing is Framing.NONE or (
            self.framing is Framing.LENGTH and self._remaining == 0
        ):
            self.state = State.DONE

    def _feed_body(self, view: memoryview) -> int:
        if self.framing is Framing.LENGTH:
            take = min(self._remaining, len(view))
            self._payload(view[:take])
            self._remaining -= take
            self.body_length += take
            if self._remaining == 0:
                self.state = State.DONE
            return take
        if self.framing is Framing.CHUNKED:
            assert self._chunked is not None
            used = self._chunked.feed(view)
            self.body_length += used
            if self._chunked.error is not None:
                self._fail(self._chunked.error)
            elif self._chunked.done:
                self.state = State.DONE
            return used
        # close-delimited
        self._payload(view)
        self.body_length += len(view)
        return len(view)

    def header(self, name: str) -> str | None:
        """First value of a response header, decoded as Latin-1 (how HTTP bytes map to text)."""
        values = field_values(self.headers, name.encode("ascii"))
        return values[0].decode("latin-1") if values else None

    def decoded_headers(self) -> list[tuple[str, str]]:
        return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in self.headers]


def dechunk(body: bytes) -> tuple[bytes, str | None]:
    """De-chunk a stored body: (payload, error). On error the payload is the decodable prefix."""
    parts: list[bytes] = []
    decoder = ChunkedDecoder(lambda chunk: parts.append(bytes(chunk)))
    decoder.feed(memoryview(body))
    error = decoder.error
    if error is None and not decoder.done:
        error = "chunked body ends before the last chunk"
    return b"".join(parts), error
