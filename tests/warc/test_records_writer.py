"""records.py and writer.py: what records say, and the file rules (names, rotation, ``.open``,
durability, write errors). Every record type's bytes are pinned in test_golden_records.py.

Like warcio's own writer tests, records are built with an injected id factory and clock.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import os
import tracemalloc
import uuid
import zlib
from base64 import b32encode
from datetime import UTC, datetime, timedelta
from hashlib import sha1
from pathlib import Path

import pytest

from archiver import digest
from archiver.errors import WriteError
from archiver.index.cdxj import writer_journal
from archiver.models import Exchange, Original, TlsInfo
from archiver.spool import Spool
from archiver.warc.naming import safe_name_part
from archiver.warc.records import RecordFactory, fields_block, new_record_id
from archiver.warc.writer import READ_CHUNK, WRITE_BUFFER, Writer, WriterConfig
from tests.support.warcs import read_records, responses

WHEN = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC)


def fixed_factory() -> RecordFactory:
    counter = itertools.count(1)
    return RecordFactory(
        new_id=lambda: f"<urn:uuid:00000000-0000-4000-8000-{next(counter):012d}>",
        clock=lambda: WHEN,
    )


def exchange(
    response: bytes, *, body: bytes, url: str = "http://example.test/a", tls: TlsInfo | None = None
) -> Exchange:
    request = b"GET /a HTTP/1.1\r\nHost: example.test\r\n\r\n"
    return Exchange(
        target_uri=url,
        date=WHEN,
        request=request,
        response=Spool.from_bytes(response),
        response_length=len(response),
        status=200,
        headers=[("Content-Type", "text/plain")],
        block_digest=digest.digest_bytes("sha1", response),
        payload_digest=digest.digest_bytes("sha1", body),
        payload_length=len(body),
        request_block_digest=digest.digest_bytes("sha1", request),
        request_payload_digest=digest.digest_bytes("sha1", b""),
        ip_address="127.0.0.1",
        tls=tls,
    )


RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"


def serialise(path: Path) -> list[bytes]:
    """The decompressed records of a WARC file, one per gzip member."""
    data = path.read_bytes()
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        assert d.eof
        data = d.unused_data
    return out


async def test_a_capture_follows_its_files_warcinfo_and_is_journalled(tmp_path: Path) -> None:
    """Where a capture goes (the records' bytes are test_golden_records.py's)."""
    factory = fixed_factory()
    writer = Writer(
        WriterConfig(tmp_path / "w", writer_journal(tmp_path / "j"), prefix="T", host="h"), factory
    )
    writer.start()
    written = await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    await writer.close()
    (path,) = (tmp_path / "w").glob("*.warc.gz")
    assert path.name == "T-20261122100000123-00000-h.warc.gz"
    members = serialise(path)
    assert [member.split(b"\r\n")[1] for member in members] == [
        b"WARC-Type: warcinfo",
        b"WARC-Type: response",
        b"WARC-Type: request",
    ]
    assert b"WARC-Filename: T-20261122100000123-00000-h.warc.gz\r\n" in members[0]
    # the warcinfo is made when the file opens, after the capture's two ids
    info_id = b"<urn:uuid:00000000-0000-4000-8000-000000000003>"
    assert b"WARC-Record-ID: " + info_id + b"\r\n" in members[0]
    assert all(b"WARC-Warcinfo-ID: " + info_id + b"\r\n" in member for member in members[1:])
    assert members[1].endswith(b"\r\n\r\n" + RESPONSE + b"\r\n\r\n")
    assert b"WARC-Concurrent-To: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n" in members[2]
    assert written.records[0].offset == written.start
    journal = (tmp_path / "j" / (path.name + ".cdxj")).read_text()
    assert journal == (
        'test,example)/a 20261122100000 {"url": "http://example.test/a", "mime": "text/plain", '
        '"status": "200", "digest": "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N", '
        f'"length": "{written.records[0].length}", "offset": "{written.start}", '
        f'"filename": "{path.name}"}}\n'
    )


async def test_revisit_record_fields(tmp_path: Path) -> None:
    factory = fixed_factory()
    original = Original(
        "<urn:uuid:orig>", "http://example.test/first", "2026-01-01T00:00:00.000001Z"
    )
    capture = factory.revisit(exchange(RESPONSE, body=b"hello"), original)
    revisit = capture.records[0]
    assert revisit.record_type == "revisit"
    fields = dict(revisit.headers)
    assert (
        fields["WARC-Profile"] == "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    )
    assert fields["WARC-Refers-To"] == "<urn:uuid:orig>"
    assert fields["WARC-Refers-To-Target-URI"] == "http://example.test/first"
    assert fields["WARC-Refers-To-Date"] == "2026-01-01T00:00:00.000001Z"
    assert fields["WARC-Truncated"] == "length"
    head = RESPONSE[: RESPONSE.index(b"\r\n\r\n") + 4]
    assert revisit.block == head
    # computed apart from archiver.digest: hashlib, then Base32 (WARC 1.1 section 5.9)
    assert fields["WARC-Block-Digest"] == "sha1:" + b32encode(sha1(head).digest()).decode()
    assert capture.index is not None and capture.index.mime == "warc/revisit"


def test_tls_failure_adds_metadata_record() -> None:
    tls = TlsInfo(
        "tls/1.3", "TLS_AES_256_GCM_SHA384", verified=False, verify_error="self-signed certificate"
    )
    capture = fixed_factory().capture(exchange(RESPONSE, body=b"hello", tls=tls))
    kinds = [r.record_type for r in capture.records]
    assert kinds == ["response", "request", "metadata"]
    response, _, metadata = capture.records
    assert [v for k, v in response.headers if k == "WARC-Protocol"] == ["http/1.1", "tls/1.3"]
    assert ("WARC-Cipher-Suite", "TLS_AES_256_GCM_SHA384") in response.headers
    assert (
        metadata.block
        == b"tls-certificate-verified: false\r\ntls-verify-error: self-signed certificate\r\n"
    )
    assert metadata.get("WARC-Payload-Digest") is None  # forbidden on metadata (WARC 1.1 table)


def test_fields_block_cannot_inject_lines() -> None:
    assert fields_block([("a", "x\r\nWARC-Type: evil")]) == b"a: x  WARC-Type: evil\r\n"


async def test_rotation_never_splits_a_capture(tmp_path: Path) -> None:
    factory = RecordFactory()
    writer = Writer(
        WriterConfig(
            tmp_path / "w", writer_journal(tmp_path / "j"), prefix="R", host="h", max_size=50_000
        ),
        factory,
    )
    writer.start()
    body = os.urandom(30_000)  # incompressible, ~30 KB per capture
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 30000\r\n\r\n" + body
    for i in range(6):
        await writer.write(
            factory.capture(exchange(response, body=body, url=f"http://example.test/{i}"))
        )
    await writer.close()
    files = sorted((tmp_path / "w").glob("*.warc.gz"))
    assert len(files) >= 3
    serials = [int(f.name.split("-")[2]) for f in files]
    assert serials == sorted(set(serials))
    for path in files:
        records = read_records(path)
        assert records[0].type == "warcinfo"
        assert [r.type for r in records[1:]] == ["response", "request"] * ((len(records) - 1) // 2)
        assert path.stat().st_size <= 50_000 + 2 * 31_000
    assert not list((tmp_path / "w").glob("*.open"))


async def test_open_suffix_while_writing_and_exclusive_names(tmp_path: Path) -> None:
    factory = fixed_factory()
    directory = tmp_path / "w"
    directory.mkdir()
    taken = directory / "T-20261122100000123-00000-h.warc.gz"
    taken.write_bytes(b"someone else's file")
    writer = Writer(
        WriterConfig(directory, writer_journal(tmp_path / "j"), prefix="T", host="h"), factory
    )
    writer.start()
    await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    open_files = list(directory.glob("*.warc.gz.open"))
    assert len(open_files) == 1
    await writer.close()
    assert taken.read_bytes() == b"someone else's file"
    assert not list(directory.glob("*.open"))
    assert len(list(directory.glob("*.warc.gz"))) == 2


async def test_serials_continue_across_runs_with_a_prefix_that_needs_cleaning(
    tmp_path: Path,
) -> None:
    """Names carry the cleaned prefix ("pre fix" -> "pre-fix"); a second writer on the same
    directory continues the serials after them (it restarted at 00000 before)."""
    for run in range(2):  # each run's files opened in a later second: names never collide

        def clock(seconds: int = run) -> datetime:
            return WHEN + timedelta(seconds=seconds)

        factory = RecordFactory(clock=clock)
        writer = Writer(
            WriterConfig(tmp_path / "w", writer_journal(tmp_path / "j"), prefix="pre fix"), factory
        )
        writer.start()
        await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
        await writer.close()
    serials = sorted(p.name.split("-")[3] for p in (tmp_path / "w").glob("*.warc.gz"))
    assert serials == ["00000", "00001"]


async def test_a_capture_nobody_waits_for_keeps_its_file_open(tmp_path: Path) -> None:
    """A worker cancelled while its capture is being written (an immediate stop, a grace
    period run out) never hands the capture to the frontier, so a resumed crawl fetches the
    URL again: the file holding it must not be offered for sealing, and keeps the ``.open``
    name the resume repair cuts back. (It was sealed, and the page was captured twice.)"""
    factory = RecordFactory()
    directory = tmp_path / "w"
    journal = writer_journal(tmp_path / "j")
    config = WriterConfig(directory, journal, prefix="C", host="h", max_size=1)
    writer = Writer(config, factory, auto_seal=False)  # as the crawler runs it
    writer.start()
    awaited = await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    abandoned = asyncio.create_task(
        writer.write(factory.capture(exchange(RESPONSE, body=b"hello", url="http://x.test/")))
    )
    await asyncio.sleep(0)  # queued, its worker now waiting for the write
    abandoned.cancel()
    await writer.close()  # the queued capture is written all the same
    assert abandoned.cancelled()
    (unclaimed,) = {p.name.removesuffix(".open") for p in directory.glob("*.open")} - {
        awaited.filename
    }
    assert [r.uri for r in responses(directory / (unclaimed + ".open"))] == ["http://x.test/"]
    assert writer.retired() == [awaited.filename]  # offered for sealing: only the other one
    writer.seal(writer.retired())
    assert (directory / awaited.filename).is_file()
    assert (directory / (unclaimed + ".open")).is_file()


async def test_write_error_is_loud_and_leaves_valid_file(tmp_path: Path) -> None:
    budget = {"left": 3000}

    def failing_write(fd: int, data: bytes | bytearray | memoryview) -> int:
        if budget["left"] < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        budget["left"] -= len(data)
        return os.write(fd, data)

    factory = RecordFactory()
    writer = Writer(
        WriterConfig(tmp_path / "w", writer_journal(tmp_path / "j")),
        factory,
        write_fn=failing_write,
    )
    writer.start()
    await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    big = os.urandom(5000)
    with pytest.raises(WriteError, match="No space left"):
        await writer.write(factory.capture(exchange(b"HTTP/1.1 200 OK\r\n\r\n" + big, body=big)))
    with pytest.raises(WriteError):
        await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    await writer.close()
    (path,) = (tmp_path / "w").glob("*.warc.gz")
    assert [r.type for r in read_records(path)] == ["warcinfo", "response", "request"]


async def test_a_large_spooled_body_is_written_in_bounded_pieces(tmp_path: Path) -> None:
    """A 48 MiB body, spooled to a file as a fetch spools it: the writer compresses it from the
    spool a chunk at a time and writes as it goes, so no write call and no Python allocation
    comes near the body's size (it used to build the whole compressed member, then join the
    capture's members: twice the body in memory). The file reads back whole."""
    size = 48 << 20
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size
    spool = Spool(directory=str(tmp_path))
    spool.write(head)
    body_digest = digest.new_hasher("sha1")
    block_digest = digest.new_hasher("sha1")
    block_digest.update(head)
    for _ in range(size >> 20):
        chunk = os.urandom(1 << 20)  # incompressible: the member is as large as the body
        spool.write(chunk)
        body_digest.update(chunk)
        block_digest.update(chunk)
    assert not spool.in_memory
    ex = exchange(RESPONSE, body=b"")
    ex.response = spool
    ex.response_length = len(head) + size
    ex.block_digest = digest.finish("sha1", block_digest)
    ex.payload_digest = digest.finish("sha1", body_digest)
    largest = {"write": 0}

    def measured_write(fd: int, data: bytes | bytearray | memoryview) -> int:
        largest["write"] = max(largest["write"], len(data))
        return os.write(fd, data)

    factory = RecordFactory()
    writer = Writer(
        WriterConfig(tmp_path / "w", writer_journal(tmp_path / "j")),
        factory,
        write_fn=measured_write,
    )
    writer.start()
    tracemalloc.start()
    try:
        written = await writer.write(factory.capture(ex))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    await writer.close()
    assert largest["write"] <= READ_CHUNK + 2 * WRITE_BUFFER
    assert peak < 8 * WRITE_BUFFER, f"{peak / 2**20:.1f} MiB allocated while writing"
    (path,) = (tmp_path / "w").glob("*.warc.gz")
    (response,) = responses(path)
    assert len(response.block) == len(head) + size
    assert response.get("WARC-Block-Digest") == ex.block_digest
    assert digest.digest_bytes("sha1", response.block) == ex.block_digest
    primary = written.primary
    assert primary is not None and primary.offset == response.offset
    with open(path, "rb") as fh:  # the index's offset and length slice one whole member
        fh.seek(primary.offset)
        member = zlib.decompressobj(31)
        member.decompress(fh.read(primary.length))
        assert member.eof and not member.unused_data


async def test_a_failed_batch_is_taken_back_whole(tmp_path: Path) -> None:
    """A write error in a batch: none of its captures is reported written, the file is cut
    back to where the batch began in it (WARC and journal alike: no index line for a capture
    nobody was told of), and a file the failed batch made is removed; a file holding earlier
    captures is closed whole. (A capture reported and committed whose journal line was lost
    would be missing from the index for good.)"""
    budget = {"left": 10**9}

    def failing_write(fd: int, data: bytes | bytearray | memoryview) -> int:
        if budget["left"] < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        budget["left"] -= len(data)
        return os.write(fd, data)

    writes = {"left": 1}

    def warcinfo_only(fd: int, data: bytes | bytearray | memoryview) -> int:
        writes["left"] -= 1  # the warcinfo is one write; the capture after it fails
        if writes["left"] < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data)

    factory = RecordFactory()
    journals = tmp_path / "j"
    writer = Writer(
        WriterConfig(tmp_path / "w", writer_journal(journals)),
        factory,
        write_fn=warcinfo_only,
        auto_seal=False,
    )
    writer.start()
    with pytest.raises(WriteError, match="No space left"):
        await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    await writer.close()
    assert list((tmp_path / "w").iterdir()) == [] and list(journals.iterdir()) == []

    writer = Writer(
        WriterConfig(tmp_path / "w2", writer_journal(journals)),
        factory,
        write_fn=failing_write,
        auto_seal=False,
    )
    writer.start()
    budget["left"] = 10**9
    kept = await writer.write(factory.capture(exchange(RESPONSE, body=b"hello")))
    budget["left"] = 500
    big = os.urandom(5000)
    response = b"HTTP/1.1 200 OK\r\n\r\n" + big
    with pytest.raises(WriteError):
        await writer.write(factory.capture(exchange(response, body=big, url="http://x.test/")))
    await writer.close()
    assert writer.retired() == [kept.filename]  # closed whole: it can be sealed
    (path,) = (tmp_path / "w2").glob("*.open")
    assert path.stat().st_size == kept.end
    assert [r.uri for r in responses(path)] == ["http://example.test/a"]
    (journal,) = journals.glob("*.cdxj")
    assert len(journal.read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("../../etc", "etc"),
        ("a/b\0c", "a-b-c"),
        ("x" * 300, "x" * 64),
        ("é", "host"),
        (".hidden", "hidden"),
    ],
)
def test_safe_name_part(text: str, expected: str) -> None:
    assert safe_name_part(text) == expected


def test_record_ids_are_random_version_4_uuids() -> None:
    ids = {new_record_id() for _ in range(2000)}
    assert len(ids) == 2000
    for record_id in list(ids)[:200]:
        assert record_id.startswith("<urn:uuid:") and record_id.endswith(">")
        parsed = uuid.UUID(record_id[len("<urn:uuid:") : -1])
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert f"<urn:uuid:{parsed}>" == record_id  # the form str(uuid4()) has
