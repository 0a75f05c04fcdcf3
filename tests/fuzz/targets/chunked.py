"""The chunked transfer coding (RFC 9112 section 7.1): :func:`~archiver.fetch.httpframe.dechunk`,
which ``verify`` uses, and :class:`~archiver.fetch.httpframe.ChunkedDecoder` fed in pieces, which
capture uses.

Oracles, on every input:

* the decoder fed in the input's pieces reads what ``dechunk`` reads (verdict and payload):
  capture and verify must agree on a stored body;
* :func:`reference`, a whole-buffer transcription of the section 7.1 grammar with the stated
  tolerances and caps, reads what ``dechunk`` reads;
* h11, an independent HTTP/1.1 parser, reads the *strict form* of the input (the reference's
  reading written back with CRLF line ends, minimal sizes and only well-formed trailer fields)
  as we read the input itself; where we refuse bytes h11 reads, the reference names the cap
  (:data:`STRICT`) that refused them. On inputs both read as given, payloads are equal.

The tolerance list is the one ``tests/commands/test_verify_chunked.py`` states (LENIENT, STRICT),
plus :data:`FUZZ_STRICT`, found by fuzzing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from archiver.fetch.httpframe import (
    MAX_CHUNK_LINE,
    MAX_CHUNK_SIZE,
    MAX_SIZE_DIGITS,
    MAX_TRAILER_LINES,
    ChunkedDecoder,
    dechunk,
)
from tests.commands.test_verify_chunked import (
    BROKEN,
    COMPLETE,
    INCOMPLETE,
    LENIENT,
    STRICT,
    Reading,
    h11_reading,
    our_reading,
)
from tests.fuzz.harness import Bytes, Target, agree, pieces, whole

#: Refusals of ours that h11 does not share, beyond test_verify_chunked's STRICT list.
FUZZ_STRICT = {
    "huge-size": "a chunk size over 2^63-1 (MAX_CHUNK_SIZE): no body is that long, and it is "
    "refused as soon as its digits arrive; h11 takes up to 20 hex digits and would wait for "
    "the data",
    "long-trailer-line": f"a trailer line over {MAX_CHUNK_LINE} bytes: the size lines' cap, as "
    "trailers are not payload; h11's cap is 16 KiB",
}

_SIZE_PART = re.compile(rb"([ \t]*)([0-9A-Fa-f]+)([ \t]*)\Z")
# RFC 9110 section 5.5: field-name ":" OWS field-value OWS, field-value = field-vchar runs
# separated by SP / HTAB, field-vchar = VCHAR / obs-text
_VCHARS = rb"[\x21-\x7e\x80-\xff]+"
_FIELD = re.compile(
    rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[ \t]*(?:"
    + _VCHARS
    + rb"(?:[ \t]+"
    + _VCHARS
    + rb")*)?[ \t]*\Z"
)

#: Fields RFC 9110 section 6.5.1 bars from trailers (they frame the message); h11 validates
#: their values there as in a head, we skip every trailer line unread ("odd-trailer-line").
_FRAMING_FIELDS = (b"content-length", b"transfer-encoding")


@dataclass
class Walk:
    """What :func:`reference` read: a verdict, the payload, why it broke, and the input
    written in the strict form h11 must read as we read the input."""

    verdict: str = INCOMPLETE
    payload: bytearray = field(default_factory=bytearray)
    reason: str = ""
    strict: bytearray = field(default_factory=bytearray)
    lenient: set[str] = field(default_factory=set)


def _line(body: bytes, pos: int) -> tuple[bytes | None, int]:
    """The line at ``pos`` without its LF (None if it is longer than the cap or has no LF),
    and where the next one starts."""
    end = body.find(b"\n", pos, pos + MAX_CHUNK_LINE)
    if end < 0:
        return None, pos
    return body[pos:end], end + 1


def _unfinished(body: bytes, pos: int, walk: Walk, sizing: bool) -> Walk:
    """The input ends inside a line, or the line is over the cap."""
    rest = body[pos:]
    walk.strict += rest
    digits = re.match(rb"[ \t]*0*([0-9A-Fa-f]*)", rest)
    if sizing and digits is not None and len(digits.group(1)) > MAX_SIZE_DIGITS:
        walk.verdict, walk.reason = BROKEN, "huge-size"
    elif len(rest) >= MAX_CHUNK_LINE:
        walk.verdict, walk.reason = BROKEN, "long-size-line" if sizing else "long-trailer-line"
    return walk


def reference(body: bytes) -> Walk:
    """RFC 9112 section 7.1.3's decoding algorithm over the whole input, with our tolerances
    (a bare LF ends a line; SP/HT around the size; any number of leading zeros; trailer lines
    skipped unread) and caps (line length, size, trailer count)."""
    walk = Walk()
    pos = 0
    while True:  # chunks
        line, nxt = _line(body, pos)
        if line is None:
            return _unfinished(body, pos, walk, sizing=True)
        text = line[:-1] if line.endswith(b"\r") else line
        size_part, semi, ext = text.partition(b";")
        match = _SIZE_PART.match(size_part)
        if match is None or b"\r" in ext:
            walk.verdict = BROKEN
            walk.reason = "cr-in-extension" if match is not None else "invalid size line"
            walk.strict += text + b"\r\n" + body[nxt:]  # h11 takes only CRLF here
            return walk
        if match.group(1) or (semi and match.group(3)):
            walk.lenient.add("whitespace-around-size")
        if len(match.group(2)) > 20:
            walk.lenient.add("zero-padded-size")
        size = int(match.group(2), 16)
        if size > MAX_CHUNK_SIZE:
            walk.verdict, walk.reason = BROKEN, "huge-size"
            walk.strict += body[pos:]
            return walk
        walk.strict += b"%x" % size + semi + ext + b"\r\n"
        pos = nxt
        if size == 0:
            break
        data = body[pos : pos + size]
        walk.payload += data
        walk.strict += data
        pos += len(data)
        if len(data) < size:
            return walk
        ending = body[pos : pos + 2]
        if ending[:1] == b"\n" or ending == b"\r\n":
            walk.strict += b"\r\n"
            pos += 1 if ending[:1] == b"\n" else 2
        elif ending in (b"", b"\r"):
            walk.strict += ending
            return walk
        else:
            walk.verdict, walk.reason = BROKEN, "chunk data not followed by CRLF"
            walk.strict += body[pos:]
            return walk
    trailers = 0
    while True:  # the trailer section
        line, nxt = _line(body, pos)
        if line is None:
            return _unfinished(body, pos, walk, sizing=False)
        if line in (b"", b"\r"):
            walk.verdict = COMPLETE
            walk.strict += b"\r\n"
            return walk
        trailers += 1
        if trailers > MAX_TRAILER_LINES:
            walk.verdict, walk.reason = BROKEN, "many-trailers"
            walk.strict += body[pos:]
            return walk
        text = line[:-1] if line.endswith(b"\r") else line
        name = text.split(b":", 1)[0].lower()
        if _FIELD.match(text) and name not in _FRAMING_FIELDS:
            walk.strict += text + b"\r\n"
        else:
            walk.lenient.add("odd-trailer-line")
        pos = nxt


def _in_pieces(body: bytes, sizes: bytes) -> Reading:
    parts: list[bytes] = []
    decoder = ChunkedDecoder(lambda chunk: parts.append(bytes(chunk)))
    for piece in pieces(body, sizes):
        decoder.feed(memoryview(piece))
        if decoder.done or decoder.error is not None:
            break
    verdict = COMPLETE if decoder.done else BROKEN if decoder.error else INCOMPLETE
    return Reading(verdict, b"".join(parts))


def check(data: bytes) -> None:
    source = Bytes(data)
    sizes = source.take(source.byte() % 8)
    body = source.rest()
    ours = our_reading(body)
    agree(_in_pieces(body, sizes) == ours, "pieces differ from dechunk", ours)
    agree(dechunk(body)[0] == ours.payload, "dechunk")
    walk = reference(body)
    agree(
        (walk.verdict, bytes(walk.payload)) == (ours.verdict, ours.payload),
        "reference differs",
        walk,
        ours,
    )
    theirs = h11_reading(body)
    if ours.verdict == theirs.verdict == COMPLETE:
        agree(ours.payload == theirs.payload, "payloads differ where both read", ours, theirs)
    if walk.verdict == BROKEN and walk.reason in {*STRICT, *FUZZ_STRICT}:
        return  # our cap: h11 may read what we refuse
    judged = h11_reading(bytes(walk.strict))
    agree(judged.verdict == ours.verdict, "verdicts differ", ours, judged, walk)
    if ours.verdict != BROKEN:  # where a broken coding is noticed may differ
        agree(judged.payload == ours.payload, "payloads differ", ours, judged, walk)


assert set(LENIENT) >= {"whitespace-around-size", "zero-padded-size", "odd-trailer-line"}

#: libFuzzer dictionary entries for HTTP/1.x responses (this target's and the response framer's).
HTTP_RESPONSE_WORDS = (
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"200 OK",
    b"\r\n",
    b"\r\n\r\n",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: ",
    b"Connection: close",
    b"0\r\n\r\n",
    b";ext=1",
    b"100 Continue",
    b"204",
    b"304",
)

TARGET = Target(
    name="chunked",
    check=check,
    max_len=8192,
    dictionary=HTTP_RESPONSE_WORDS,
    seed=whole,
    summary="dechunk and ChunkedDecoder in pieces; oracles: an RFC 9112 7.1 reference "
    "reading, h11 on the strict form (tolerances stated)",
)
