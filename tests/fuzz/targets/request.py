"""The request side of ``archiver verify``: where a stored request's head ends and its payload
(the body, with the chunked coding removed: WARC 1.1 section 5.9, RFC 9112 section 7.1), as
``HttpPayload`` finds them in a request record's block fed in pieces.

Oracles, on every input (a request as a client could send it):

* fed in the input's pieces, the payload digest (or the reason it has none) is the one found
  fed at once;
* h11, an independent HTTP/1.1 parser, as the server: when it reads the whole request and
  nothing follows it, our payload digest is the digest of the body h11 read; where the body is
  chunked, the ``chunked`` target's stated tolerances decide as there.
"""

from __future__ import annotations

import hashlib
import re

import h11

from archiver.index.payload import HttpPayload
from tests.commands.test_verify_chunked import BROKEN, COMPLETE, STRICT
from tests.fuzz.harness import Bytes, Target, agree, pieces, whole
from tests.fuzz.targets.chunked import FUZZ_STRICT, reference


def _ours(wire: bytes, sizes: bytes) -> bytes | str:
    payload = HttpPayload("sha1", request=True)
    for piece in pieces(wire, sizes):
        payload.feed(memoryview(piece))
    return payload.result()


def _h11(wire: bytes) -> tuple[h11.Request | None, bytes | None]:
    """The request head h11 read, and the body when it read the whole message and no byte
    follows it (None otherwise)."""
    conn = h11.Connection(our_role=h11.SERVER)
    conn.receive_data(wire)
    request: h11.Request | None = None
    body = bytearray()
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Request):
                request = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                trailing, _closed = conn.trailing_data
                return request, bytes(body) if not trailing else None
            else:
                return request, None
    except h11.RemoteProtocolError:
        return request, None


def check(data: bytes) -> None:
    source = Bytes(data)
    sizes = source.take(source.byte() % 8)
    wire = source.rest()
    ours = _ours(wire, b"")
    agree(_ours(wire, sizes) == ours, "pieces differ", ours)
    request, body = _h11(wire)
    if request is None:
        return  # h11 refuses the head: verify still hashes what follows the blank line
    agree(isinstance(ours, bytes), "no payload where h11 read the head", ours)
    if body is None:
        return
    te = [v for n, v in request.headers if n == b"transfer-encoding"]
    if te:
        head_end = len(wire) - len(_after_head(wire))
        walk = reference(wire[head_end:])
        if walk.lenient or walk.reason in {*STRICT, *FUZZ_STRICT} or walk.verdict == BROKEN:
            return  # judged by the chunked target
        agree(walk.verdict == COMPLETE, "h11 read a chunked body we did not", walk)
    agree(ours == hashlib.sha1(body).digest(), "payload digest differs from h11's body", body)


def _after_head(wire: bytes) -> bytes:
    """The bytes after the first blank line (RFC 9112 section 2.2 takes a bare LF too)."""
    match = re.search(rb"\r?\n\r?\n", wire)
    return wire[match.end() :] if match else b""


TARGET = Target(
    name="request",
    check=check,
    max_len=8192,
    summary="verify's request payload (head end, de-chunked body) in pieces; oracle: h11 as "
    "the server",
    dictionary=(
        b"GET / HTTP/1.1\r\n",
        b"POST / HTTP/1.1\r\n",
        b"Host: a\r\n",
        b"\r\n\r\n",
        b"Content-Length: ",
        b"Transfer-Encoding: chunked\r\n",
        b"0\r\n\r\n",
    ),
    seed=whole,
)
