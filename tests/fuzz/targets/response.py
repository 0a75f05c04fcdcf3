"""The HTTP/1.x response framer (:class:`~archiver.fetch.httpframe.ResponseFramer`): where a
response ends on the wire (RFC 9112 section 6.3) and its payload without the chunked coding.

Oracles, on every input (a response as a server could send it, fed in the input's pieces):

* fed in pieces, the framer reaches what it reaches fed at once (state, status, framing,
  consumed bytes, payload): capture sees network pieces, verify 4 KiB pieces;
* h11, an independent HTTP/1.1 parser, as the client of a GET (or HEAD): when both read the
  head, the final status is the same, and a body both read to its end is the same payload
  (before and after the connection closes); where only one reads the head, or they disagree on
  the body, the difference must be one of :data:`TOLERATED` (the chunked coding's own stated
  tolerances are judged by the ``chunked`` target's reference reading).
"""

from __future__ import annotations

import h11

from archiver.fetch.httpframe import Framing, ResponseFramer, State
from tests.commands.test_verify_chunked import BROKEN, COMPLETE, INCOMPLETE, STRICT
from tests.fuzz.harness import Bytes, Target, agree, pieces, whole
from tests.fuzz.targets.chunked import FUZZ_STRICT, HTTP_RESPONSE_WORDS, reference

#: Where the framer and h11 differ by design; each key names the difference, each value why.
TOLERATED = {
    "lenient-head": "we read a head h11 refuses (a header line that is no field, a space "
    "before a colon, obs-fold, a bare LF, an odd reason phrase, several Transfer-Encoding "
    "values): a crawler records what servers send and frames it by RFC 9112 section 6.3 as far "
    "as the head can be read; h11 is a strict library for applications",
    "content-length-list": "Content-Length given as a list ('5, 5'): RFC 9110 section 8.6 lets "
    "a recipient reject it; we do (the record keeps the bytes, marked truncated), h11 reads it",
    "transfer-coding": "a Transfer-Encoding other than chunked alone: h11 refuses it, we read "
    "to the close when chunked is not the final coding (RFC 9112 section 6.3 rule 4)",
    "header-limits": "the header limits of capture (256 header lines here)",
}


class _H11:
    """h11's reading, as a client that sent one request."""

    def __init__(self, method: bytes) -> None:
        self.conn = h11.Connection(our_role=h11.CLIENT)
        self.conn.send(h11.Request(method=method, target="/", headers=[("Host", "a")]))
        self.conn.send(h11.EndOfMessage())
        self.status: int | None = None
        self.payload = bytearray()
        self.verdict = INCOMPLETE
        self.error = ""

    def receive(self, data: bytes) -> None:
        self.conn.receive_data(data)
        try:
            while True:
                event = self.conn.next_event()
                if isinstance(event, h11.Response):
                    self.status = event.status_code
                elif isinstance(event, h11.Data):
                    self.payload += event.data
                elif isinstance(event, h11.EndOfMessage):
                    self.verdict = COMPLETE
                    return
                elif (
                    event is h11.NEED_DATA
                    or event is h11.PAUSED
                    or isinstance(event, h11.ConnectionClosed)
                ):
                    return
        except h11.RemoteProtocolError as exc:
            self.verdict = BROKEN
            self.error = str(exc)


def _framer(method: str, wire: bytes, sizes: bytes) -> tuple[ResponseFramer, bytes]:
    parts: list[bytes] = []
    framer = ResponseFramer(method=method, on_body=lambda d: parts.append(bytes(d)))
    for piece in pieces(wire, sizes):
        framer.feed(piece)
        if framer.state not in (State.HEADERS, State.BODY):
            break
    return framer, b"".join(parts)


def _facts(framer: ResponseFramer, payload: bytes) -> tuple[object, ...]:
    return (
        framer.state,
        framer.status,
        framer.framing,
        framer.consumed,
        framer.header_length,
        framer.interim_ends,
        framer.headers,
        payload,
    )


def _verdict(framer: ResponseFramer) -> str:
    return COMPLETE if framer.done else BROKEN if framer.failed else INCOMPLETE


def _tolerated_framing(framer: ResponseFramer) -> bool:
    """A head whose framing h11 refuses or reads otherwise: "transfer-coding"."""
    te = [v for n, v in framer.headers if n.lower() == b"transfer-encoding"]
    return len(te) > 1 or any(v.strip().lower() != b"chunked" for v in te)


def check(data: bytes) -> None:
    source = Bytes(data)
    head = source.byte()
    method = "HEAD" if head & 0x80 else "GET"
    sizes = source.take(head % 8)
    wire = source.rest()
    whole, whole_payload = _framer(method, wire, b"")
    framer, payload = _framer(method, wire, sizes)
    if framer.failed and framer.headers_complete:
        # the chunked coding broke: the verdict and payload are the same, but where the break
        # is noticed may differ by the rest of a line (a size too large is refused at its 17th
        # digit when the line is still open, at its end when it came whole); capture keeps
        # the bytes after it unframed either way
        agree(_facts(framer, payload)[:3] == _facts(whole, whole_payload)[:3], "pieces differ")
        agree(payload == whole_payload, "payload differs in pieces")
    else:
        agree(_facts(framer, payload) == _facts(whole, whole_payload), "pieces differ")
    agree(framer.consumed <= len(wire) and framer.header_length <= framer.consumed, "bounds")
    theirs = _H11(method.encode())
    theirs.receive(wire)
    ours_head = framer.headers_complete
    if not ours_head:
        if framer.failed and theirs.status is not None:
            # h11 read a head we refuse: only for a Content-Length list or our limits
            agree(framer.headers_too_large or b"," in wire, "head refused", framer.error)
        return
    if theirs.status is None:
        return  # lenient-head (or h11 waits on a head we finished with a bare LF)
    agree(theirs.status == framer.status, "status", framer.status, theirs.status)
    if framer.framing is Framing.CHUNKED:
        walk = reference(wire[framer.header_length :])
        if walk.lenient or walk.reason in {*STRICT, *FUZZ_STRICT} or b"\n" in wire:
            return  # the chunked target judges these against h11's reading of the strict form
    if _tolerated_framing(framer):
        return
    ours = _verdict(framer)
    if ours != BROKEN and theirs.verdict != BROKEN:
        agree(ours == theirs.verdict, "verdicts", ours, theirs.verdict, theirs.error)
        agree(payload == bytes(theirs.payload), "payloads", ours, theirs.verdict)
    else:
        agree(ours == theirs.verdict, "verdicts", ours, theirs.verdict, theirs.error)
    if ours == INCOMPLETE:  # the connection closes
        framer.feed_eof()
        theirs.receive(b"")
        if theirs.verdict == INCOMPLETE and framer.framing is Framing.CLOSE:
            agree(framer.done, "close-delimited body not ended by the close")
        elif framer.framing is not Framing.CLOSE:
            agree(framer.failed, "cut body not refused")


TARGET = Target(
    name="response",
    check=check,
    max_len=8192,
    dictionary=HTTP_RESPONSE_WORDS,
    seed=whole,
    summary="ResponseFramer (whole and in pieces); oracle: h11 as the client (status, body "
    "end, payload), tolerances stated",
)
