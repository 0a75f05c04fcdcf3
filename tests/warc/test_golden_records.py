"""Every record type archiver writes, byte for byte (the style of warcio's test_writer.py).

One literal per record type: a response and its request, a revisit in each WARC 1.1 profile
(identical-payload-digest for a payload seen before, server-not-modified for a 304 to a
conditional request), the metadata record beside a capture (a certificate that failed
verification, an interim response), a metadata record that describes a page (the info JSON
yt-dlp resolved, naming the page's record), a resource (a page's screenshot) and the warcinfo
that opens every file. Record ids and dates are fixed, so the bytes are too.

Each is written both ways a record exists: alone and uncompressed (its header from
:func:`~archiver.warc.writer.record_head`, its block, CRLF CRLF), and by the writer into a
``.warc.gz`` file, one gzip member per record after the file's warcinfo (WARC 1.1 annex D). Each
is then read back by archiver's reader and written again: the same literal, and for the gzip file
the same file, byte for byte.
"""

from __future__ import annotations

import itertools
import zlib
from base64 import b32encode
from collections.abc import Callable
from datetime import UTC, datetime
from hashlib import sha1
from pathlib import Path

import pytest

from archiver import digest
from archiver.dedup.revalidation import Revalidation, not_modified_revisit
from archiver.dedup.sources import Capture, Source
from archiver.index.cdxj import writer_journal
from archiver.models import Exchange, Original, TlsInfo
from archiver.spool import Spool
from archiver.warc.reader import RecordHead, RecordInfo, iter_records
from archiver.warc.records import PendingCapture, PendingRecord, RecordFactory
from archiver.warc.writer import Writer, WriterConfig, record_head

WHEN = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC)
FILE = "T-20261122100000123-00000-h.warc.gz"
WARCINFO_ID = "<urn:uuid:00000000-0000-4000-8000-000000000000>"
WARCINFO_FIELDS = (
    ("software", "archiver/0.1.0"),
    ("format", "WARC File Format 1.1"),
    ("isPartOf", "golden"),
)
URL = "http://example.test/a"
REQUEST = b"GET /a HTTP/1.1\r\nHost: example.test\r\nUser-Agent: archiver-test\r\n\r\n"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
NOT_MODIFIED = b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n'
ORIGINAL = Original(
    "<urn:uuid:00000000-0000-4000-8000-000000000099>",
    "http://example.test/first",
    "2026-01-01T00:00:00.000001Z",
)
SCREENSHOT = b"\x89PNG\r\n\x1a\n\x00fake"
INFO_JSON = b'{"id": "a"}'


def factory(first_id: int = 1) -> RecordFactory:
    """Record ids counted from ``first_id``, every record dated :data:`WHEN`."""
    counter = itertools.count(first_id)
    return RecordFactory(
        new_id=lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>",
        clock=lambda: WHEN,
    )


def exchange(
    response: bytes = RESPONSE,
    *,
    body: bytes = b"hello",
    tls: TlsInfo | None = None,
    interim: tuple[bytes, ...] = (),
) -> Exchange:
    return Exchange(
        target_uri=URL,
        date=WHEN,
        request=REQUEST,
        response=Spool.from_bytes(response),
        response_length=len(response),
        status=int(response.split(b" ", 2)[1]),
        headers=[("Content-Type", "text/plain")],
        block_digest=digest.digest_bytes("sha1", response),
        payload_digest=digest.digest_bytes("sha1", body),
        payload_length=len(body),
        request_block_digest=digest.digest_bytes("sha1", REQUEST),
        request_payload_digest=digest.digest_bytes("sha1", b""),
        ip_address="127.0.0.1",
        tls=tls,
        interim=interim,
    )


def not_modified() -> PendingRecord:
    """The revisit of a 304 answer to a request made conditional by an earlier crawl."""
    revalidation = Revalidation(
        URL,
        {"If-None-Match": '"v1"'},
        ORIGINAL,
        digest.digest_bytes("sha1", b"hello"),
        Capture(URL, "20260101000000", Path("/earlier/x.warc.gz"), 0, 1, 0),
        Source(Path("/earlier/index.cdxj"), Path("/earlier")),
    )
    return not_modified_revisit(factory(), exchange(NOT_MODIFIED, body=b""), revalidation).records[
        0
    ]


#: How each record type is made, as the crawl makes it.
BUILD: dict[str, Callable[[], PendingRecord]] = {
    "response": lambda: factory().capture(exchange()).records[0],
    "request": lambda: factory().capture(exchange()).records[1],
    "revisit-identical-payload-digest": lambda: factory().revisit(exchange(), ORIGINAL).records[0],
    "revisit-server-not-modified": not_modified,
    "metadata": lambda: (
        factory()
        .capture(
            exchange(
                tls=TlsInfo("tls/1.3", "TLS_AES_256_GCM_SHA384", False, "self-signed certificate"),
                interim=(b"HTTP/1.1 100 Continue\r\n\r\n",),
            )
        )
        .records[2]
    ),
    "metadata-described": lambda: (
        factory()
        .described("urn:yt-dlp:" + URL, "application/json", INFO_JSON, refers_to=ORIGINAL.record_id)
        .records[0]
    ),
    "resource": lambda: (
        factory().resource("urn:screenshot:" + URL, "image/png", SCREENSHOT).records[0]
    ),
    "warcinfo": lambda: factory(0).warcinfo(FILE, WARCINFO_FIELDS),
}

GOLDEN: dict[str, bytes] = {
    "response": (
        b"WARC/1.1\r\n"
        b"WARC-Type: response\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: http://example.test/a\r\n"
        b"WARC-IP-Address: 127.0.0.1\r\n"
        b"WARC-Protocol: http/1.1\r\n"
        b"WARC-Block-Digest: sha1:LRYKYE6JURFXLGHETF373AYPQNPBXBUU\r\n"
        b"WARC-Payload-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r\n"
        b"Content-Type: application/http;msgtype=response\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 69\r\n"
        b"\r\n"
        b"HTTP/1.1 200 OK\r\n"
        b"Content-Type: text/plain\r\n"
        b"Content-Length: 5\r\n"
        b"\r\n"
        b"hello"
        b"\r\n\r\n"
    ),
    "request": (
        b"WARC/1.1\r\n"
        b"WARC-Type: request\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: http://example.test/a\r\n"
        b"WARC-IP-Address: 127.0.0.1\r\n"
        b"WARC-Protocol: http/1.1\r\n"
        b"WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Block-Digest: sha1:MU2TUO6TB5ZOYMOKG3UXUU6F5N4UUR6S\r\n"
        b"WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\n"
        b"Content-Type: application/http;msgtype=request\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 66\r\n"
        b"\r\n"
        b"GET /a HTTP/1.1\r\n"
        b"Host: example.test\r\n"
        b"User-Agent: archiver-test\r\n"
        b"\r\n"
        b"\r\n\r\n"
    ),
    "revisit-identical-payload-digest": (
        b"WARC/1.1\r\n"
        b"WARC-Type: revisit\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: http://example.test/a\r\n"
        b"WARC-IP-Address: 127.0.0.1\r\n"
        b"WARC-Protocol: http/1.1\r\n"
        b"WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n"
        b"WARC-Refers-To: <urn:uuid:00000000-0000-4000-8000-000000000099>\r\n"
        b"WARC-Refers-To-Target-URI: http://example.test/first\r\n"
        b"WARC-Refers-To-Date: 2026-01-01T00:00:00.000001Z\r\n"
        b"WARC-Truncated: length\r\n"
        b"WARC-Block-Digest: sha1:DT2LHVQSCIH7RVGUT3QYASAEELI6CKRT\r\n"
        b"WARC-Payload-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r\n"
        b"Content-Type: application/http;msgtype=response\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 64\r\n"
        b"\r\n"
        b"HTTP/1.1 200 OK\r\n"
        b"Content-Type: text/plain\r\n"
        b"Content-Length: 5\r\n"
        b"\r\n"
        b"\r\n\r\n"
    ),
    "revisit-server-not-modified": (
        b"WARC/1.1\r\n"
        b"WARC-Type: revisit\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: http://example.test/a\r\n"
        b"WARC-IP-Address: 127.0.0.1\r\n"
        b"WARC-Protocol: http/1.1\r\n"
        b"WARC-Profile: http://netpreserve.org/warc/1.1/revisit/server-not-modified\r\n"
        b"WARC-Refers-To: <urn:uuid:00000000-0000-4000-8000-000000000099>\r\n"
        b"WARC-Refers-To-Target-URI: http://example.test/first\r\n"
        b"WARC-Refers-To-Date: 2026-01-01T00:00:00.000001Z\r\n"
        b"WARC-Block-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\r\n"
        b"WARC-Payload-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r\n"
        b"Content-Type: application/http;msgtype=response\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 0\r\n"
        b"\r\n"
        b"\r\n\r\n"
    ),
    "metadata": (
        b"WARC/1.1\r\n"
        b"WARC-Type: metadata\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000003>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: http://example.test/a\r\n"
        b"WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Block-Digest: sha1:BVNVB2KIXFVPZA5LRFFNBTKLSFC3UUT5\r\n"
        b"Content-Type: application/warc-fields\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 190\r\n"
        b"\r\n"
        b"tls-certificate-verified: false\r\n"
        b"tls-verify-error: self-signed certificate\r\n"
        b"http-interim-response: HTTP/1.1 100 Continue\r\n"
        b"http-interim-response-base64: SFRUUC8xLjEgMTAwIENvbnRpbnVlDQoNCg==\r\n"
        b"\r\n\r\n"
    ),
    "metadata-described": (
        b"WARC/1.1\r\n"
        b"WARC-Type: metadata\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: urn:yt-dlp:http://example.test/a\r\n"
        b"WARC-Refers-To: <urn:uuid:00000000-0000-4000-8000-000000000099>\r\n"
        b"WARC-Block-Digest: sha1:MDJRGJQRUXWP4HYLKZKTR3HID7J3K6OI\r\n"
        b"WARC-Payload-Digest: sha1:MDJRGJQRUXWP4HYLKZKTR3HID7J3K6OI\r\n"
        b"Content-Type: application/json\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 11\r\n"
        b"\r\n"
        b'{"id": "a"}'
        b"\r\n\r\n"
    ),
    "resource": (
        b"WARC/1.1\r\n"
        b"WARC-Type: resource\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Target-URI: urn:screenshot:http://example.test/a\r\n"
        b"WARC-Block-Digest: sha1:7OUW6NKA5URVDFXVBROTBWZURVHQRI3S\r\n"
        b"WARC-Payload-Digest: sha1:7OUW6NKA5URVDFXVBROTBWZURVHQRI3S\r\n"
        b"Content-Type: image/png\r\n"
        b"WARC-Warcinfo-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"Content-Length: 13\r\n"
        b"\r\n"
        b"\x89PNG\r\n\x1a\n\x00fake"
        b"\r\n\r\n"
    ),
    "warcinfo": (
        b"WARC/1.1\r\n"
        b"WARC-Type: warcinfo\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000000>\r\n"
        b"WARC-Date: 2026-11-22T10:00:00.123456Z\r\n"
        b"WARC-Filename: T-20261122100000123-00000-h.warc.gz\r\n"
        b"WARC-Block-Digest: sha1:VGOZ6PBB5KZQUIVK7Y6DJODFP6G23UEL\r\n"
        b"Content-Type: application/warc-fields\r\n"
        b"Content-Length: 74\r\n"
        b"\r\n"
        b"software: archiver/0.1.0\r\n"
        b"format: WARC File Format 1.1\r\n"
        b"isPartOf: golden\r\n"
        b"\r\n\r\n"
    ),
}

KINDS = list(GOLDEN)
#: Fields the writer adds to every record it is given (the reader gives them back).
WRITER_FIELDS = ("warc-warcinfo-id", "content-length")


def uncompressed(record: PendingRecord) -> bytes:
    """The record on its own: header, block, CRLF CRLF (WARC 1.1 section 4)."""
    block = record.block.getvalue() if isinstance(record.block, Spool) else record.block
    return record_head(record, WARCINFO_ID) + block + b"\r\n\r\n"


async def write_gzip(directory: Path, records: list[PendingRecord]) -> Path:
    """``records`` written by the writer as one capture into a new ``.warc.gz`` file, after
    the warcinfo the writer opens every file with."""
    config = WriterConfig(
        directory,
        writer_journal(directory / "journals"),
        prefix="T",
        host="h",
        warcinfo_fields=WARCINFO_FIELDS,
    )
    writer = Writer(config, factory(0))
    writer.start()
    await writer.write(PendingCapture(URL, records, index=None))
    await writer.close()
    (path,) = directory.glob("*.warc.gz")
    assert path.name == FILE
    return path


def members(path: Path) -> list[bytes]:
    """The file's gzip members decompressed, each proven whole on its own."""
    data = path.read_bytes()
    out = []
    while data:
        member = zlib.decompressobj(31)
        out.append(member.decompress(data))
        assert member.eof
        data = member.unused_data
    return out


def read_back(path: Path) -> list[PendingRecord]:
    """Every record of a WARC file as archiver's reader parses it, ready to be written again:
    its fields in order but those the writer adds, its block."""
    blocks: dict[int, bytearray] = {}

    def sink(head: RecordHead) -> Callable[[memoryview], None]:
        block = blocks.setdefault(head.offset, bytearray())
        return block.extend

    records = []
    for item in iter_records(path, on_block=sink):
        assert isinstance(item, RecordInfo), item
        fields = [(k, v) for k, v in item.headers if k.lower() not in WRITER_FIELDS]
        block = bytes(blocks[item.offset])
        records.append(PendingRecord(item.record_type, fields, block, len(block)))
    return records


@pytest.mark.parametrize("kind", KINDS)
def test_uncompressed(kind: str, tmp_path: Path) -> None:
    written = uncompressed(BUILD[kind]())
    assert written == GOLDEN[kind]
    path = tmp_path / "one.warc"
    path.write_bytes(written)
    (again,) = read_back(path)
    assert uncompressed(again) == GOLDEN[kind]


@pytest.mark.parametrize("kind", KINDS)
async def test_gzip(kind: str, tmp_path: Path) -> None:
    records = [] if kind == "warcinfo" else [BUILD[kind]()]  # the writer makes the warcinfo
    path = await write_gzip(tmp_path / "first", records)
    found = members(path)
    assert found == [GOLDEN["warcinfo"], *([GOLDEN[kind]] if records else [])]
    parsed = read_back(path)
    assert [uncompressed(record) for record in parsed] == found
    rewritten = await write_gzip(tmp_path / "second", parsed[1:])
    assert rewritten.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("kind", KINDS)
def test_each_literal_carries_the_digests_of_its_own_bytes(kind: str) -> None:
    """The literals are checked apart from archiver.digest: hashlib's SHA-1 in Base32 over the
    block (WARC 1.1 section 5.9), and a resource's payload is its whole block (section 6.6)."""
    head, _, rest = GOLDEN[kind].partition(b"\r\n\r\n")
    fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    block = rest[: int(fields[b"Content-Length"])]
    assert rest[len(block) :] == b"\r\n\r\n"
    expected = b"sha1:" + b32encode(sha1(block).digest())
    assert fields[b"WARC-Block-Digest"] == expected
    if kind == "resource":
        assert fields[b"WARC-Payload-Digest"] == expected


def test_the_golden_table_names_every_record_type_archiver_writes() -> None:
    types = {GOLDEN[kind].split(b"\r\n")[1] for kind in KINDS}
    assert types == {
        b"WARC-Type: " + name
        for name in (b"warcinfo", b"response", b"request", b"revisit", b"metadata", b"resource")
    }
    profiles = {
        line for kind in KINDS for line in GOLDEN[kind].split(b"\r\n") if b"Profile" in line
    }
    assert profiles == {
        b"WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
        b"WARC-Profile: http://netpreserve.org/warc/1.1/revisit/server-not-modified",
    }
