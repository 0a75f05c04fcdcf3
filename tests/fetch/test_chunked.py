"""Hostile chunked bodies (RFC 9112 section 7.1), end to end and at the decoder.

A server that breaks the chunked coding must end in a clear outcome: the record holds exactly
the bytes that arrived up to the break (a byte-exact prefix of what the server wrote), marked
``WARC-Truncated: unspecified``, its payload digest taken over the stored body (the coding cannot
be removed), the protocol error logged, and the connection dropped by the crawler at once: every
hostile server here holds its connection open (or never stops sending), so a crawler that waited
for more would hang, and the crawl runs under a timeout far above what it needs. Nothing already
written is harmed: the well-behaved page crawled beside it is intact and ``archiver verify``
passes.

A bare LF where CRLF ends a line is accepted, as the framer accepts it in the header block
(RFC 9112 section 2.2).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from archiver import digest
from archiver.commands import verify
from archiver.fetch.httpframe import (
    MAX_CHUNK_LINE,
    MAX_TRAILER_LINES,
    ChunkedDecoder,
    ResponseFramer,
    State,
    dechunk,
)
from tests.conftest import run_crawl
from tests.support.raw import RawServer
from tests.support.warcs import responses

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
GOOD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nall fine."
#: a hang guard only: each crawl here takes well under a second; one that waited for the
#: (hour-long) timeouts the crawls are given would fail here instead of hanging the suite
HANG_GUARD = 60.0
AN_HOUR = 3600.0


def sha1(data: bytes) -> str:
    return digest.label("sha1", hashlib.sha1(data).digest())


@dataclass
class Hostile:
    """Sends the head and ``prefix`` (at once, or a byte at a time), then either holds the
    connection open or repeats ``endless`` until the crawler hangs up."""

    prefix: bytes
    endless: bytes = b""
    bytewise: bool = False
    sent: bytearray = field(default_factory=bytearray)
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        pieces = [data[i : i + 1] for i in range(len(data))] if self.bytewise else [data]
        for piece in pieces:
            writer.write(piece)
            self.sent += piece
            await writer.drain()

    async def handler(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: bytes
    ) -> bool:
        try:
            await self._send(writer, HEAD + self.prefix)
            while self.endless and not writer.is_closing():
                await self._send(writer, self.endless)
                await asyncio.sleep(0)  # let the crawler's side of the loop run
            await reader.read()  # returns when the crawler closes the connection
        except ConnectionError:
            pass
        self.hung_up.set()
        return False


def fetch_event(out: Path, url: str) -> dict[str, Any]:
    lines = (out / "crawl.log.jsonl").read_text(encoding="utf-8").splitlines()
    events: list[dict[str, Any]] = [json.loads(line) for line in lines]
    (event,) = [e for e in events if e.get("event") == "fetch" and e.get("url") == url]
    return event


async def crawl_hostile(tmp_path: Path, hostile: Hostile) -> tuple[Path, RawServer]:
    out = tmp_path / "out"
    async with RawServer() as raw:
        raw.add("/good", GOOD)
        raw.add_handler("/hostile", hostile.handler)
        async with asyncio.timeout(HANG_GUARD):
            result = await run_crawl(
                out,
                raw.url("/good"),
                raw.url("/hostile"),
                scope="page",
                max_tries=1,
                workers=2,
                read_timeout=AN_HOUR,
                fetch_timeout=AN_HOUR,
            )
            await hostile.hung_up.wait()  # the crawler dropped the connection itself
    assert result.status == "completed", result.reason
    return out, raw


def assert_cut_at_the_break(out: Path, raw: RawServer, hostile: Hostile, error: str) -> None:
    (record,) = responses(out / "warcs", raw.url("/hostile"))
    # a byte-exact prefix of what the server wrote, at least up to the byte that broke it
    assert record.block == bytes(hostile.sent[: len(record.block)])
    assert len(record.block) >= len(HEAD) + len(hostile.prefix)
    assert record.get("WARC-Truncated") == "unspecified"
    assert record.get("WARC-Block-Digest") == sha1(record.block)
    assert record.get("WARC-Payload-Digest") == sha1(record.block[len(HEAD) :])
    event = fetch_event(out, raw.url("/hostile"))
    assert (event["outcome"], event["protocol_error"]) == ("captured", error)
    assert event["truncated"] == "unspecified"
    (good,) = responses(out / "warcs", raw.url("/good"))
    assert good.block == GOOD and good.get("WARC-Truncated") is None
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


NOT_CRLF = "chunk data not followed by CRLF"
TOO_LONG = "chunk-size or trailer line too long"
TOO_LARGE = "chunk size too large"
TRAILERS = f"more than {MAX_TRAILER_LINES} trailer lines"

HOSTILE_CASES = {
    # chunk data running into the next bytes: RFC 9112 section 7.1 wants CRLF after it
    "data-then-garbage": (b"5\r\nhelloXX\r\n0\r\n\r\n", b"", NOT_CRLF),
    "data-then-next-size": (b"5\r\nhello5\r\nworld\r\n0\r\n\r\n", b"", NOT_CRLF),
    "data-then-bare-cr": (b"5\r\nhello\r5\r\nworld\r\n0\r\n\r\n", b"", NOT_CRLF),
    "data-too-long-for-its-size": (b"3\r\nhello\r\n0\r\n\r\n", b"", NOT_CRLF),
    # a size line that never ends: digits (the size overflows) or an extension (too long)
    "endless-size-digits": (b"", b"1" * 512, TOO_LARGE),
    "endless-extension": (b"5;", b"x" * 512, TOO_LONG),
    "endless-whitespace": (b"5", b" " * 512, TOO_LONG),
    "long-extension-then-valid": (
        b"5;" + b"e" * MAX_CHUNK_LINE + b"\r\nhello\r\n0\r\n\r\n",
        b"",
        TOO_LONG,
    ),
    # sizes beyond a signed 64-bit length
    "size-2^63": (b"8000000000000000\r\nabc", b"", TOO_LARGE),
    "size-2^64": (b"10000000000000000\r\nabc", b"", TOO_LARGE),
    "size-2^100": (b"1" + b"0" * 25 + b"\r\nabc", b"", TOO_LARGE),
    # a trailer section that never ends
    "endless-trailers": (b"5\r\nhello\r\n0\r\n", b"X-Trailer: never ends\r\n", TRAILERS),
}


@pytest.mark.parametrize("bytewise", [False, True], ids=["at-once", "byte-by-byte"])
@pytest.mark.parametrize("case", list(HOSTILE_CASES))
async def test_broken_chunking_ends_the_record_at_the_break(
    tmp_path: Path, case: str, bytewise: bool
) -> None:
    prefix, endless, error = HOSTILE_CASES[case]
    hostile = Hostile(prefix, endless, bytewise)
    out, raw = await crawl_hostile(tmp_path, hostile)
    assert_cut_at_the_break(out, raw, hostile, error)


@pytest.mark.parametrize(
    ("body", "payload"),
    [
        (b"5\nhello\n0\n\n", b"hello"),  # LF only
        (b"5\r\nhello\n6\nworld!\r\n0\r\n\r\n", b"helloworld!"),  # mixed
        (b"5;ext=1\nhello\r\n0\nX-Trailer: 1\n\n", b"hello"),  # extension and trailer
    ],
    ids=["lf-only", "mixed", "extension-trailer"],
)
async def test_a_bare_lf_ends_a_chunk_line_as_it_ends_a_header_line(
    tmp_path: Path, body: bytes, payload: bytes
) -> None:
    hostile = Hostile(body)
    out, raw = await crawl_hostile(tmp_path, hostile)
    (record,) = responses(out / "warcs", raw.url("/hostile"))
    assert record.block == HEAD + body
    assert record.get("WARC-Truncated") is None
    assert record.get("WARC-Payload-Digest") == sha1(payload)
    assert fetch_event(out, raw.url("/hostile")).get("protocol_error") is None
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


# ------------------------------------------------------------------------------ the decoder
DONE, PENDING = "done", "pending"
DECODER_CASES = [
    # (body, payload decoded before the verdict, the verdict: DONE, PENDING or the error)
    (b"5\r\nhello\r\n0\r\n\r\n", b"hello", DONE),
    (b"5\r\nhelloX", b"hello", NOT_CRLF),
    (b"5\r\nhello\rX", b"hello", NOT_CRLF),
    (b"5\r\nhello\r\r\n", b"hello", NOT_CRLF),
    (b"5\r\nhello\n0\n\n", b"hello", DONE),
    (b"7fffffffffffffff\r\nab", b"ab", PENDING),  # the largest size there is
    (b"8000000000000000\r\n", b"", TOO_LARGE),
    (b"00000000000000000000005\r\nhello\r\n0\r\n\r\n", b"hello", DONE),  # zeros add nothing
    (b"12345678901234567", b"", TOO_LARGE),  # 17 digits: known before the line ends
    (b"5;" + b"x" * (MAX_CHUNK_LINE - 4) + b"\r\nhello\r\n0\r\n\r\n", b"hello", DONE),
    (b"5;" + b"x" * (MAX_CHUNK_LINE - 3) + b"\r\nhello\r\n0\r\n\r\n", b"", TOO_LONG),
    (b"5;" + b"x" * MAX_CHUNK_LINE, b"", TOO_LONG),  # known before the line ends
    (b"0\r\n" + b"T: v\r\n" * MAX_TRAILER_LINES + b"\r\n", b"", DONE),
    (b"0\r\n" + b"T: v\r\n" * (MAX_TRAILER_LINES + 1), b"", TRAILERS),
]


def decode_in_pieces(body: bytes, size: int) -> tuple[bytes, ChunkedDecoder]:
    parts: list[bytes] = []
    decoder = ChunkedDecoder(lambda chunk: parts.append(bytes(chunk)))
    for i in range(0, len(body), size):
        decoder.feed(memoryview(body[i : i + size]))
        if decoder.error is not None or decoder.done:
            break
    return b"".join(parts), decoder


@pytest.mark.parametrize(("body", "payload", "verdict"), DECODER_CASES)
def test_decoder_verdict_is_the_same_whatever_the_pieces(
    body: bytes, payload: bytes, verdict: str
) -> None:
    """The same bytes give the same payload and verdict fed whole, byte by byte, or in odd
    pieces: capture (network pieces) and verify (4 KiB pieces) must agree."""
    for size in (len(body) or 1, 1, 3, 4096):
        decoded, decoder = decode_in_pieces(body, size)
        assert decoded == payload, size
        if verdict == DONE:
            assert decoder.done and decoder.error is None, (size, decoder.error)
        elif verdict == PENDING:
            assert not decoder.done and decoder.error is None, (size, decoder.error)
        else:
            assert decoder.error is not None and decoder.error.startswith(verdict), size
    assert dechunk(body)[0] == payload


def test_the_framer_stops_consuming_at_the_byte_that_broke_the_coding() -> None:
    """Bytes after the break are not counted as body: capture stores them as received,
    outside the framing, and the payload digest falls back to the stored body."""
    framer = ResponseFramer()
    wire = HEAD + b"5\r\nhelloXYZ"
    used = framer.feed(wire)
    assert framer.state is State.ERROR and framer.error == NOT_CRLF
    assert used == len(HEAD) + len(b"5\r\nhello")
    assert framer.payload_length == 5


def test_a_size_line_trickled_past_the_cap_fails_without_waiting_for_its_end() -> None:
    decoder = ChunkedDecoder()
    decoder.feed(memoryview(b"5"))
    for _ in range(MAX_CHUNK_LINE - 2):  # one byte short of the cap: the LF could still come
        decoder.feed(memoryview(b" "))
        assert decoder.error is None
    assert decoder.feed(memoryview(b" ")) == 0
    assert decoder.error == TOO_LONG
    assert decoder.feed(memoryview(b"\r\n")) == 0  # nothing more is taken
    assert decoder.error == TOO_LONG and not decoder.done
