"""``archiver verify`` de-chunks with the capture's own decoder, so it is judged here by another:
h11, an independent HTTP/1.1 parser, reads the same generated corpus.

Many bodies, each chunked many ways (random chunk sizes, hex case, leading zeros, chunk
extensions, whitespace before the CRLF, trailers, a bare LF where h11 also takes one), then
broken many ways (cut short, sizes off by some bytes, the CRLF after data replaced, sizes that
are no hex number). On every input both read completely, the payloads are equal; on every other
input both reach the same verdict: *incomplete* (the bytes end before the last chunk: the payload
is the prefix decoded so far, which must be equal too) or *broken* (the coding cannot be read:
the payload digest is over the stored body). Then every input goes into a WARC with the
payload digest computed from h11's reading, and ``verify`` must pass it: its own framing path
(4 KiB pieces through :class:`~archiver.fetch.httpframe.ResponseFramer`) is what is judged.

Where archiver differs from h11 on purpose, the input is a *tolerance*: a transform of a strict
message that h11 reads. On the transformed bytes our payload must equal h11's payload of the
strict message (lenient cases), or we must call the bytes broken while h11 reads them (strict
cases). Each is stated in :data:`LENIENT` and :data:`STRICT`, with why.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import h11
import pytest

from archiver.commands.verify import render, verify
from archiver.fetch.httpframe import (
    MAX_CHUNK_LINE,
    MAX_TRAILER_LINES,
    ChunkedDecoder,
    ResponseFramer,
    dechunk,
)
from tests.warc.test_reader import WarcBuilder

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
LF_HEAD = HEAD.replace(b"\r\n", b"\n")
CRLF = b"\r\n"
COMPLETE, INCOMPLETE, BROKEN = "complete", "incomplete", "broken"

#: Inputs we read and h11 refuses; our payload is h11's payload of the strict form.
LENIENT = {
    "lf-ends-chunk-lines": "a bare LF ends a chunk-size line or chunk data: RFC 9112 section 2.2 "
    "lets a recipient take LF as a line end, the framer does so in the header block, and "
    "browsers do so in chunked bodies (Chromium strips an optional CR before each LF); h11 "
    "takes LF only in header and trailer lines",
    "whitespace-around-size": "spaces or tabs before the size, or between it and ';': the "
    "chunk-ext grammar has BWS before ';' (RFC 9112 section 7.1.1), and servers pad sizes; "
    "h11 allows whitespace only before the CRLF",
    "zero-padded-size": "more than 20 hex digits, all but a few leading zeros: we bound the "
    "value (2^63-1), h11 bounds the digit count (20)",
    "odd-trailer-line": "a trailer line that is no header field: trailers are not payload and "
    "are skipped unread (as Chromium does); h11 validates them as header fields",
}
#: Inputs h11 reads and we call broken (the record is kept, its payload digest over the body).
STRICT = {
    "cr-in-extension": "a bare CR inside a chunk extension: no chunk-ext token or quoted-string "
    "holds a CR (RFC 9112 section 7.1.1), and a CR not before LF is nowhere a line end; "
    "h11's extension pattern takes anything but LF",
    "long-size-line": f"a chunk-size line over {MAX_CHUNK_LINE} bytes (a long extension): our cap; "
    "h11's cap is 16 KiB for anything it has not finished reading",
    "many-trailers": f"more than {MAX_TRAILER_LINES} trailer lines: our cap; h11 has none but "
    "the 16 KiB one",
}


# ------------------------------------------------------------------------------ the readers
@dataclass(frozen=True)
class Reading:
    verdict: str
    payload: bytes  #: the whole payload, or what was decoded before the verdict


def h11_reading(body: bytes, head: bytes = HEAD) -> Reading:
    """How h11, as an HTTP client, reads the response ``head + body`` (not told of an EOF, so
    running out of bytes is *incomplete* and a refusal is *broken*)."""
    conn = h11.Connection(our_role=h11.CLIENT)
    conn.send(h11.Request(method="GET", target="/", headers=[("Host", "example.com")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(head + body)
    parts: list[bytes] = []
    try:
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                parts.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return Reading(COMPLETE, b"".join(parts))
            elif event is h11.NEED_DATA:
                return Reading(INCOMPLETE, b"".join(parts))
            else:
                assert isinstance(event, h11.Response), event
    except h11.RemoteProtocolError:
        return Reading(BROKEN, b"".join(parts))


def our_reading(body: bytes) -> Reading:
    """:func:`~archiver.fetch.httpframe.dechunk`, the stored-body reader."""
    payload, error = dechunk(body)
    if error is None:
        return Reading(COMPLETE, payload)
    return Reading(INCOMPLETE if error.endswith("before the last chunk") else BROKEN, payload)


def strictified(body: bytes) -> bytes:
    """``body`` with a CR put before each LF our decoder took as a line end on its own: the
    strict form h11 reads. The decoder is asked through its public counters only: an LF is a
    line end when it did not add to ``payload_length`` (it was no chunk data), and it stood
    alone unless the byte before it was a CR that was no chunk data either."""
    decoder = ChunkedDecoder()
    out = bytearray()
    start = 0
    while decoder.error is None and not decoder.done:
        lf = body.find(b"\n", start)
        if lf < 0:
            break
        if lf - 1 > start:
            decoder.feed(memoryview(body[start : lf - 1]))
        cr_ends_line = False
        if lf > start:
            before = decoder.payload_length
            decoder.feed(memoryview(body[lf - 1 : lf]))
            cr_ends_line = body[lf - 1] == 13 and decoder.payload_length == before
        out += body[start:lf]
        start = lf
        if decoder.error is not None or decoder.done:
            break
        before = decoder.payload_length
        decoder.feed(memoryview(b"\n"))
        if decoder.payload_length == before and decoder.error is None and not cr_ends_line:
            out += b"\r"
        out += b"\n"
        start = lf + 1
    return bytes(out + body[start:])


def framer_reading(body: bytes, rng: random.Random, head: bytes = HEAD) -> Reading:
    """The capture's path: :class:`ResponseFramer` fed the response in random small pieces."""
    parts: list[bytes] = []
    framer = ResponseFramer(on_body=lambda data: parts.append(bytes(data)))
    wire = head + body
    pos = 0
    while pos < len(wire) and not (framer.done or framer.failed):
        step = rng.choice((1, 2, 3, 7, 64, 4096))
        framer.feed(wire[pos : pos + step])
        pos += step
    verdict = COMPLETE if framer.done else BROKEN if framer.failed else INCOMPLETE
    return Reading(verdict, b"".join(parts))


# ------------------------------------------------------------------------------ the corpus
Ends = Callable[[int, str], bytes]


@dataclass
class Message:
    """A chunked body as its lines: (kind, text) with kind size | data | trailer | end, each
    followed by a line end chosen when it is rendered."""

    payload: bytes
    lines: list[tuple[str, bytes]]

    def render(self, ends: Ends | None = None) -> bytes:
        return b"".join(
            text + (ends(i, kind) if ends else CRLF) for i, (kind, text) in enumerate(self.lines)
        )

    def indexes(self, *kinds: str) -> list[int]:
        return [i for i, (kind, _) in enumerate(self.lines) if kind in kinds]

    def replaced(self, index: int, text: bytes) -> Message:
        lines = list(self.lines)
        lines[index] = (lines[index][0], text)
        return Message(self.payload, lines)


def random_body(rng: random.Random) -> bytes:
    size = rng.choice((0, 1, 2, rng.randint(3, 40), rng.randint(41, 3000), rng.randint(1, 20_000)))
    alphabet = rng.choice((b"abc", b"\r\n0;: \t", bytes(range(256))))
    return bytes(rng.choice(alphabet) for _ in range(size))


def random_size(rng: random.Random, size: int) -> bytes:
    text = f"{size:x}"
    text = rng.choice((text, text.upper(), "".join(rng.choice((c, c.upper())) for c in text)))
    return ("0" * rng.choice((0, 0, 1, 3)) + text).encode()


def random_extension(rng: random.Random) -> bytes:
    pick = rng.random()
    if pick < 0.6:
        return b""
    parts = [
        rng.choice((b";name", b";n=v", b';q="quoted ; \\" value"', b";a=1;b=2", b";\x00\x7f\xff"))
        for _ in range(rng.randint(1, 3))
    ]
    return b"".join(parts) + rng.choice((b"", b"", b" ", b"\t "))


def random_message(rng: random.Random) -> Message:
    payload = random_body(rng)
    lines: list[tuple[str, bytes]] = []
    pos = 0
    while pos < len(payload):
        size = min(rng.choice((1, 2, 5, 16, 100, 1000, 8192)), len(payload) - pos)
        lines.append(("size", random_size(rng, size) + random_extension(rng)))
        lines.append(("data", payload[pos : pos + size]))
        pos += size
    lines.append(("size", random_size(rng, 0) + random_extension(rng)))
    for i in range(rng.choice((0, 0, 1, 3))):
        lines.append(("trailer", rng.choice((b"X-Trailer-%d: v" % i, b"Expires: 0", b"x:"))))
    lines.append(("end", b""))
    return Message(payload, lines)


@dataclass(frozen=True)
class Case:
    name: str
    body: bytes
    strict: bytes | None = None  #: the strict form of a tolerance case (what h11 reads)
    head: bytes = HEAD


def both_read(rng: random.Random, message: Message) -> list[Case]:
    """The message and variants that h11 reads too: CRLF, and a bare LF in trailer lines and
    the header block, where h11 also takes it."""
    canonical = message.render()
    trailer_ends = set(message.indexes("trailer", "end"))

    def lf_in_trailers(i: int, _kind: str) -> bytes:
        return b"\n" if i in trailer_ends and rng.random() < 0.5 else CRLF

    return [
        Case("canonical", canonical),
        Case("lf-in-trailers", message.render(lf_in_trailers)),
        Case("lf-head", canonical, head=LF_HEAD),
    ]


def tolerances(rng: random.Random, message: Message) -> list[Case]:
    strict = message.render()
    lines = message.indexes("size", "data")
    chosen = set(rng.sample(lines, k=rng.randint(1, len(lines))))
    sizes = message.indexes("size")
    resized = rng.choice(sizes)
    size_text = message.lines[resized][1]
    digits = size_text.split(b";", 1)[0].rstrip(b" \t")
    extension = size_text[len(digits) :]
    trailers = message.indexes("trailer", "end")
    first_trailer = trailers[0]
    cases = [
        Case(
            "lf-ends-chunk-lines",
            message.render(lambda i, _k: b"\n" if i in chosen else CRLF),
            strict,
        ),
        Case(
            "whitespace-around-size",
            message.replaced(
                resized, rng.choice((b" ", b"\t", b" \t")) + digits + b" ;x" + extension
            ).render(),
            message.replaced(resized, digits + b";x" + extension).render(),
        ),
        Case(
            "zero-padded-size",
            message.replaced(resized, b"0" * 21 + digits + extension).render(),
            strict,
        ),
    ]
    odd = Message(message.payload, [*message.lines])
    odd.lines.insert(first_trailer, ("trailer", rng.choice((b"no colon", b":x", b"a b: c"))))
    cases.append(Case("odd-trailer-line", odd.render(), strict))
    cases.append(
        Case("cr-in-extension", message.replaced(resized, digits + b";a\rb").render(), None)
    )
    cases.append(
        Case(
            "long-size-line",
            message.replaced(resized, digits + b";" + b"e" * MAX_CHUNK_LINE).render(),
            None,
        )
    )
    many = Message(message.payload, [*message.lines])
    for _ in range(MAX_TRAILER_LINES + 1):
        many.lines.insert(first_trailer, ("trailer", b"X-Many: 1"))
    cases.append(Case("many-trailers", many.render(), None))
    return cases


def one_end(index: int, end: bytes) -> Ends:
    """Line ends: ``end`` after line ``index``, CRLF after the others."""
    return lambda i, _kind: end if i == index else CRLF


def malformed(rng: random.Random, message: Message) -> list[Case]:
    """Broken or cut versions of the message: both readers must reach the same verdict."""
    canonical = message.render()
    cases = [Case(f"cut-{n}", canonical[: rng.randrange(len(canonical))]) for n in range(3)]
    sizes = message.indexes("size")
    data = message.indexes("data")
    if data:
        i = rng.choice(data)
        size_line = i - 1
        size = len(message.lines[i][1])
        for delta in (-1, 1, rng.randint(2, 50)):
            if size + delta > 0:
                wrong = f"{size + delta:x}".encode()
                cases.append(Case(f"size{delta:+d}", message.replaced(size_line, wrong).render()))
        for after in (b"XX", b"\r", b" \r\n", b"\r\r\n", b""):
            cases.append(Case(f"after-data-{after!r}", message.render(one_end(i, after))))
    for bad in (b"g", b"-1", b"0x5", b"+5", b"", b"5 5", b"\x00"):
        cases.append(Case(f"size-{bad!r}", message.replaced(rng.choice(sizes), bad).render()))
    return cases


def corpus(seed: int, messages: int) -> list[tuple[Message, Case]]:
    rng = random.Random(seed)
    cases: list[tuple[Message, Case]] = []
    for _ in range(messages):
        message = random_message(rng)
        for group in (both_read, tolerances, malformed):
            cases.extend((message, case) for case in group(rng, message))
    return cases


SEEDS = [1, 2, 3, 4]
MESSAGES_PER_SEED = 40


# ------------------------------------------------------------------------------ the tests
def h11_judgement(case: Case) -> Reading:
    """What h11 says ``case`` holds: its reading of the strict form of a tolerance case, else
    of the bytes with a CR before each bare LF that ended a line (the LF tolerance)."""
    strict = case.strict if case.strict is not None else strictified(case.body)
    return h11_reading(strict, case.head)


def expected_payload(case: Case) -> bytes:
    """The payload verify must hash for ``case``: h11's reading, or the stored body when the
    coding is broken (for a STRICT case: broken by our reading)."""
    if case.name in STRICT:
        return case.body
    reading = h11_judgement(case)
    return case.body if reading.verdict == BROKEN else reading.payload


@pytest.mark.parametrize("seed", SEEDS)
def test_our_reading_equals_h11s_on_every_generated_input(seed: int) -> None:
    rng = random.Random(seed * 7919)
    seen: dict[str, int] = {}
    for message, case in corpus(seed, MESSAGES_PER_SEED):
        ours = our_reading(case.body)
        framed = framer_reading(case.body, rng, case.head)
        assert framed == ours, (case.name, case.body[:200])  # streaming equals stored reading
        theirs = h11_reading(case.body, case.head)
        seen[case.name] = seen.get(case.name, 0) + 1
        context = (case.name, case.body[:200], ours, theirs)
        if case.name in STRICT:
            assert theirs == Reading(COMPLETE, message.payload), context
            assert ours.verdict == BROKEN, context
            continue
        if case.name in LENIENT:
            assert theirs.verdict == BROKEN, context  # h11 refuses the lenient form...
        judged = h11_judgement(case)
        if case.strict is not None:
            assert judged.verdict == COMPLETE, context  # ...and reads the strict one...
        assert ours.verdict == judged.verdict, (*context, judged)  # ...as we read the lenient
        if ours.verdict != BROKEN:  # where a broken coding is noticed may differ
            assert ours.payload == judged.payload, (*context, judged)
        if case.name in ("canonical", "lf-in-trailers", "lf-head"):
            assert ours == theirs == Reading(COMPLETE, message.payload), context
    assert set(LENIENT) | set(STRICT) <= set(seen)
    assert seen["canonical"] == MESSAGES_PER_SEED


def test_the_corpus_reaches_every_verdict_and_tolerance() -> None:
    """The corpus is not all easy: h11 finds complete, incomplete and broken inputs in it, and
    bare LFs that only the LF tolerance reads (inputs changed by :func:`strictified`)."""
    cases = [case for _, case in corpus(SEEDS[0], 10)]
    assert {h11_reading(case.body, case.head).verdict for case in cases} == {
        COMPLETE,
        INCOMPLETE,
        BROKEN,
    }
    rescued = [
        c.name
        for c in cases
        if h11_reading(c.body, c.head).verdict == BROKEN
        and h11_reading(strictified(c.body), c.head).verdict != BROKEN
    ]
    # a size one too big takes the CR of the CRLF as data, and the LF ends the chunk
    assert "size+1" in rescued and "lf-ends-chunk-lines" in rescued


def test_strictified_puts_a_cr_only_before_line_ending_lfs() -> None:
    assert strictified(b"5\nhe\nlo\n0\nT: v\n\n") == b"5\r\nhe\nlo\r\n0\r\nT: v\r\n\r\n"
    assert strictified(b"6\r\nhello\r\n0\r\n\r\n") == b"6\r\nhello\r\r\n0\r\n\r\n"
    canonical = b"5;a=1\r\nhello\r\n0\r\nX: y\r\n\r\n"
    assert strictified(canonical) == canonical
    assert strictified(b"5\nhelloX\n") == b"5\r\nhelloX\n"  # nothing after the break


@pytest.mark.parametrize("seed", SEEDS)
def test_verify_passes_records_whose_payload_digest_h11_computed(tmp_path: Path, seed: int) -> None:
    """Black box: one WARC of every generated input, each response's WARC-Payload-Digest
    computed by hashlib over h11's reading; ``verify`` must find nothing to say."""
    warc = WarcBuilder()
    cases = corpus(seed, MESSAGES_PER_SEED)
    for n, (_, case) in enumerate(cases):
        incomplete = case.name not in STRICT and h11_judgement(case).verdict == INCOMPLETE
        warc.capture(
            f"http://example.com/{n}/{quote(case.name)}",
            case.head + case.body,
            expected_payload(case),
            response_fields=[("WARC-Truncated", "length")] if incomplete else [],
        )
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert report.findings == [], render(report)
    assert report.payloads_checked == 2 * len(cases)  # every response and request
