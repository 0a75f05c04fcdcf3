"""Tests for archiver.warc.reader: the member walk, captures and tail repair.

WARC files are built by hand here (one gzip member per record, digests computed from the bytes
written) so damaged and odd files can be made exactly. ``test_verify`` reuses the builders.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from archiver.errors import WarcFormatError
from archiver.warc.reader import (
    OUT_SIZE,
    Capture,
    Damage,
    DamageKind,
    RecordHead,
    RecordInfo,
    iter_captures,
    iter_records,
    read_record_at,
    repair,
)

DATE = "2024-05-01T12:00:00.123456Z"
NAME = "TEST-20240501120000000-00000-host.warc.gz"


# ----------------------------------------------------------------------------- builders
def sha1_label(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def warc_record(
    rtype: str,
    block: bytes = b"",
    *,
    uri: str | None = None,
    date: str = DATE,
    fields: Sequence[tuple[str, str]] = (),
    payload: bytes | None = None,
    record_id: str | None = None,
    content_type: str | None = None,
    version: str = "WARC/1.1",
    block_digest: bool = True,
) -> tuple[str, bytes]:
    """(record id, record bytes) with digests computed from ``block`` and ``payload``."""
    rid = record_id or f"<urn:uuid:{uuid.uuid4()}>"
    headers = [("WARC-Type", rtype), ("WARC-Record-ID", rid), ("WARC-Date", date)]
    if uri is not None:
        headers.append(("WARC-Target-URI", uri))
    headers.extend(fields)
    if content_type is not None:
        headers.append(("Content-Type", content_type))
    if block_digest:
        headers.append(("WARC-Block-Digest", sha1_label(block)))
    if payload is not None:
        headers.append(("WARC-Payload-Digest", sha1_label(payload)))
    headers.append(("Content-Length", str(len(block))))
    head = version + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return rid, head.encode("utf-8") + block + b"\r\n\r\n"


def http_response(
    body: bytes,
    *,
    chunks: Sequence[bytes] | None = None,
    headers: Sequence[str] = ("Content-Type: text/html",),
    status: str = "200 OK",
) -> tuple[bytes, bytes]:
    """(response block, spec payload): chunked when ``chunks`` is given (payload = their join)."""
    head = [f"HTTP/1.1 {status}", *headers]
    if chunks is not None:
        head.append("Transfer-Encoding: chunked")
        wire = b"".join(b"%x\r\n" % len(c) + c + b"\r\n" for c in chunks) + b"0\r\n\r\n"
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + wire, b"".join(chunks)
    head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body, body


def http_request(uri: str) -> bytes:
    path = "/" + uri.split("/", 3)[3] if uri.count("/") >= 3 else "/"
    return f"GET {path} HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n".encode()


HTTP_RESPONSE = "application/http;msgtype=response"
HTTP_REQUEST = "application/http;msgtype=request"


class WarcBuilder:
    """Records of one WARC file, written one gzip member per record (or uncompressed)."""

    def __init__(self, name: str = NAME, *, warcinfo: bool = True) -> None:
        self.name = name
        self.records: list[bytes] = []
        self.types: list[str] = []
        self.ids: list[str] = []
        if warcinfo:
            self.add(
                "warcinfo",
                b"software: archiver/0 (the suite's builder)\r\nformat: WARC File Format 1.1\r\n",
                fields=[("WARC-Filename", name)],
                content_type="application/warc-fields",
            )

    def add(self, rtype: str, block: bytes = b"", **kwargs: object) -> str:
        rid, data = warc_record(rtype, block, **kwargs)  # type: ignore[arg-type]
        self.records.append(data)
        self.types.append(rtype)
        self.ids.append(rid)
        return rid

    def add_raw(self, rtype: str, data: bytes) -> None:
        self.records.append(data)
        self.types.append(rtype)
        self.ids.append("")

    def capture(
        self,
        uri: str,
        block: bytes | None = None,
        payload: bytes | None = None,
        *,
        date: str = DATE,
        request: bool = True,
        metadata: bool = False,
        response_fields: Sequence[tuple[str, str]] = (),
    ) -> str:
        """Append response, request (and metadata) records; returns the response id."""
        if block is None:
            block, payload = http_response(f"<html>{uri}</html>".encode())
        rid = self.add(
            "response",
            block,
            uri=uri,
            date=date,
            payload=payload,
            content_type=HTTP_RESPONSE,
            fields=[("WARC-IP-Address", "127.0.0.1"), *response_fields],
        )
        if request:
            req = http_request(uri)
            self.add(
                "request",
                req,
                uri=uri,
                date=date,
                payload=b"",
                content_type=HTTP_REQUEST,
                fields=[("WARC-Concurrent-To", rid)],
            )
        if metadata:
            self.add(
                "metadata",
                b"via: http://example.com/\r\nhopsFromSeed: L\r\n",
                uri=uri,
                date=date,
                content_type="application/warc-fields",
                fields=[("WARC-Concurrent-To", rid)],
            )
        return rid

    def members(self, *, compress: bool = True) -> list[bytes]:
        return [gz(r) for r in self.records] if compress else list(self.records)

    def data(self, *, compress: bool = True) -> bytes:
        return b"".join(self.members(compress=compress))

    def extents(self, *, compress: bool = True) -> list[tuple[int, int]]:
        """(offset, length) of every record's member."""
        out = []
        offset = 0
        for member in self.members(compress=compress):
            out.append((offset, len(member)))
            offset += len(member)
        return out

    def write(self, directory: Path, *, suffix: str = "", compress: bool = True) -> Path:
        name = self.name if compress else self.name.removesuffix(".gz")
        path = directory / (name + suffix)
        path.write_bytes(self.data(compress=compress))
        return path


def standard(name: str = NAME) -> WarcBuilder:
    """warcinfo + two captures (the second with metadata)."""
    warc = WarcBuilder(name)
    warc.capture("http://example.com/")
    warc.capture("http://example.com/a", metadata=True)
    return warc


def records_of(path: Path) -> list[RecordInfo | Damage]:
    return list(iter_records(path))


# ----------------------------------------------------------------------------- walking
def test_walk_good_file_yields_every_member_with_its_extent(tmp_path: Path) -> None:
    warc = standard()
    path = warc.write(tmp_path)
    items = records_of(path)
    assert all(isinstance(i, RecordInfo) for i in items)
    recs = [i for i in items if isinstance(i, RecordInfo)]
    assert [r.record_type for r in recs] == warc.types
    assert [(r.offset, r.length) for r in recs] == warc.extents()
    assert [r.record_id for r in recs] == warc.ids
    assert recs[-1].end == path.stat().st_size
    assert recs[1].target_uri == "http://example.com/"
    assert recs[1].date == DATE
    assert recs[1].version == "WARC/1.1"


def test_fields_are_case_insensitive_ordered_and_repeatable(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.add(
        "response",
        b"x",
        uri="http://example.com/",
        fields=[("WARC-Protocol", "http/1.1"), ("warc-protocol", "tls/1.3")],
    )
    rec = records_of(warc.write(tmp_path))[1]
    assert isinstance(rec, RecordInfo)
    assert rec.get("warc-target-uri") == "http://example.com/"
    assert rec.get_all("WARC-PROTOCOL") == ["http/1.1", "tls/1.3"]
    assert rec.get("X-Missing") is None
    assert rec.content_length == 1
    assert [k for k, _ in rec.headers][:3] == ["WARC-Type", "WARC-Record-ID", "WARC-Date"]


def test_block_streams_to_the_sink_in_bounded_pieces(tmp_path: Path) -> None:
    body = os.urandom(1 << 16) * 40  # 2.5 MiB, compressible enough to exceed OUT_SIZE per feed
    warc = WarcBuilder()
    warc.add("resource", body, uri="http://example.com/big", content_type="application/x-test")
    path = warc.write(tmp_path)
    got: dict[str, bytearray] = {}
    sizes: list[int] = []

    def on_block(head: RecordHead) -> object:
        buf = got.setdefault(head.record_type, bytearray())

        def sink(piece: memoryview) -> None:
            sizes.append(len(piece))
            buf.extend(piece)

        return sink

    items = list(iter_records(path, on_block=on_block))  # type: ignore[arg-type]
    assert all(isinstance(i, RecordInfo) for i in items)
    assert bytes(got["resource"]) == body
    assert max(sizes) <= OUT_SIZE


def test_uncompressed_warc_is_read_record_by_record(tmp_path: Path) -> None:
    warc = standard()
    path = warc.write(tmp_path, compress=False)
    recs = records_of(path)
    assert [(r.offset, r.length) for r in recs if isinstance(r, RecordInfo)] == warc.extents(
        compress=False
    )
    cut = path.read_bytes()[:-10]
    path.write_bytes(cut)
    items = records_of(path)
    assert isinstance(items[-1], Damage)
    assert items[-1].kind is DamageKind.CUT
    assert items[-1].offset == warc.extents(compress=False)[-1][0]


def test_last_member_cut_in_half_is_damage(tmp_path: Path) -> None:
    warc = standard()
    data = warc.data()
    last_offset, last_len = warc.extents()[-1]
    path = tmp_path / NAME
    path.write_bytes(data[: last_offset + last_len // 2])
    items = records_of(path)
    assert len(items) == len(warc.records)
    damage = items[-1]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.CUT
    assert damage.offset == last_offset


def test_cut_after_the_header_keeps_the_damaged_head(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.add("resource", os.urandom(200_000), uri="http://example.com/r")
    data = warc.data()
    offset, length = warc.extents()[-1]
    path = tmp_path / NAME
    path.write_bytes(data[: offset + length - 1000])
    damage = records_of(path)[-1]
    assert isinstance(damage, Damage)
    assert damage.head is not None
    assert damage.head.record_type == "resource"


def test_garbage_after_the_last_member_is_damage(tmp_path: Path) -> None:
    warc = standard()
    path = tmp_path / NAME
    path.write_bytes(warc.data() + b"\x00" * 100)
    damage = records_of(path)[-1]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.GARBAGE
    assert damage.offset == len(warc.data())


def test_crc_error_is_corrupt(tmp_path: Path) -> None:
    warc = standard()
    members = warc.members()
    bad = bytearray(members[2])
    bad[-6] ^= 0x01  # inside the CRC-32 field of the gzip trailer
    path = tmp_path / NAME
    path.write_bytes(b"".join([*members[:2], bytes(bad), *members[3:]]))
    items = records_of(path)
    assert len(items) == 3
    damage = items[-1]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.CORRUPT
    assert "check" in damage.reason


def test_whole_file_gzip_is_detected(tmp_path: Path) -> None:
    warc = standard()
    path = tmp_path / NAME
    path.write_bytes(gz(b"".join(warc.records)))
    items = records_of(path)
    assert len(items) == 1
    damage = items[0]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.MULTI
    assert damage.offset == 0


def test_wrong_content_length_is_a_malformed_record(tmp_path: Path) -> None:
    """A Content-Length one too long takes a byte of the CRLF CRLF into the block: what is
    left is still only line ends, which warcio and FastWARC read as the record's end (a quirk,
    kept as a warning); one too short leaves a byte of the block where line ends must be."""
    _, record = warc_record("resource", b"hello world", uri="http://example.com/")
    longer = record.replace(b"Content-Length: 11", b"Content-Length: 12")
    path = tmp_path / NAME
    path.write_bytes(WarcBuilder().data() + gz(longer))
    last = records_of(path)[-1]
    assert isinstance(last, RecordInfo)
    assert last.quirks == ("the block is followed by b'\\n\\r\\n', not CRLF CRLF",)
    shorter = record.replace(b"Content-Length: 11", b"Content-Length: 10")
    path.write_bytes(WarcBuilder().data() + gz(shorter))
    damage = records_of(path)[-1]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.RECORD
    assert "not followed by CRLF CRLF" in damage.reason
    missing = record.replace(b"Content-Length: 11\r\n", b"")
    path.write_bytes(gz(missing))
    damage = records_of(path)[0]
    assert isinstance(damage, Damage)
    assert "Content-Length" in damage.reason


def test_member_without_warc_record_is_malformed(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(WarcBuilder().data() + gz(b"HTTP/1.1 200 OK\r\n\r\n"))
    damage = records_of(path)[-1]
    assert isinstance(damage, Damage)
    assert damage.kind is DamageKind.RECORD
    assert "version line" in damage.reason


def test_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(b"")
    assert records_of(path) == []


# ----------------------------------------------------------------------------- read_record_at
def test_read_record_at_reads_one_member(tmp_path: Path) -> None:
    warc = standard()
    path = warc.write(tmp_path)
    offset, length = warc.extents()[1]
    pieces: list[bytes] = []
    rec = read_record_at(
        path, offset, length, on_block=lambda head: lambda piece: pieces.append(bytes(piece))
    )
    assert rec.record_type == "response"
    assert (rec.offset, rec.length) == (offset, length)
    assert b"".join(pieces).startswith(b"HTTP/1.1 200 OK\r\n")


@pytest.mark.parametrize(
    ("delta_offset", "delta_length"),
    [(0, -1), (0, 1), (1, 0), (0, 10_000_000)],
)
def test_read_record_at_rejects_slices_that_are_not_one_member(
    tmp_path: Path, delta_offset: int, delta_length: int
) -> None:
    warc = standard()
    path = warc.write(tmp_path)
    offset, length = warc.extents()[1]
    with pytest.raises(WarcFormatError):
        read_record_at(path, offset + delta_offset, length + delta_length)


def test_read_record_at_rejects_two_members(tmp_path: Path) -> None:
    warc = standard()
    path = warc.write(tmp_path)
    (offset, length), (_, length2) = warc.extents()[1:3]
    with pytest.raises(WarcFormatError, match="another record"):
        read_record_at(path, offset, length + length2)


# ----------------------------------------------------------------------------- captures
def test_captures_group_concurrent_records(tmp_path: Path) -> None:
    warc = standard()
    path = warc.write(tmp_path)
    caps = list(iter_captures(path))
    assert all(isinstance(c, Capture) for c in caps)
    groups = [[r.record_type for r in c.records] for c in caps if isinstance(c, Capture)]
    assert groups == [["warcinfo"], ["response", "request"], ["response", "request", "metadata"]]
    extents = warc.extents()
    last = caps[-1]
    assert isinstance(last, Capture)
    assert (last.start, last.end) == (extents[3][0], path.stat().st_size)
    assert all(c.whole for c in caps if isinstance(c, Capture))


def test_capture_without_request_and_lone_request_are_not_whole(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.capture("http://example.com/", request=False)
    warc.add("request", http_request("http://example.com/x"), uri="http://example.com/x")
    caps = [c for c in iter_captures(warc.write(tmp_path)) if isinstance(c, Capture)]
    assert [c.whole for c in caps] == [True, False, False]


# ----------------------------------------------------------------------------- repair
def test_repair_truncates_a_cut_tail_to_the_last_whole_capture(tmp_path: Path) -> None:
    warc = standard()
    warc.capture("http://example.com/b")
    extents = warc.extents()
    data = warc.data()
    # cut inside the request of the last capture: its response member is whole but alone
    req_offset, req_len = extents[-1]
    path = tmp_path / (NAME + ".open")
    path.write_bytes(data[: req_offset + req_len // 2])
    report = repair(path)
    resp_offset = extents[-2][0]
    assert report.kept_size == resp_offset == path.stat().st_size
    assert report.original_size == req_offset + req_len // 2
    assert report.removed_bytes == report.original_size - resp_offset
    assert report.captures_kept == 3
    assert [c.head.target_uri for c in report.dropped] == ["http://example.com/b"]
    assert report.damage is not None and f"offset {req_offset}" in report.damage
    assert report.truncated
    assert "removed" in report.summary()
    assert not any(isinstance(i, Damage) for i in records_of(path))


def test_repair_removes_garbage(tmp_path: Path) -> None:
    warc = standard()
    path = tmp_path / (NAME + ".open")
    path.write_bytes(warc.data() + b"garbage after the end")
    report = repair(path)
    assert report.kept_size == len(warc.data()) == path.stat().st_size
    assert report.captures_kept == 3
    assert report.dropped == []


def test_repair_keep_callback_drops_uncommitted_trailing_captures(tmp_path: Path) -> None:
    warc = standard()
    warc.capture("http://example.com/b")
    warc.capture("http://example.com/c")
    path = warc.write(tmp_path, suffix=".open")
    committed = {"http://example.com/", "http://example.com/a"}
    asked: list[str] = []

    def keep(capture: Capture) -> bool:
        asked.append(capture.head.record_type)
        return capture.head.target_uri in committed

    report = repair(path, keep=keep)
    assert "warcinfo" not in asked
    assert report.captures_kept == 3
    assert [c.head.target_uri for c in report.dropped] == [
        "http://example.com/b",
        "http://example.com/c",
    ]
    assert path.stat().st_size == warc.extents()[6][0]
    assert report.damage is None


def test_repair_drops_the_capture_whose_metadata_was_cut(tmp_path: Path) -> None:
    warc = standard()  # the last capture ends with its metadata record
    meta_offset, meta_len = warc.extents()[-1]
    path = tmp_path / (NAME + ".open")
    path.write_bytes(warc.data()[: meta_offset + meta_len - 3])
    report = repair(path)
    assert report.captures_kept == 2
    assert path.stat().st_size == warc.extents()[3][0]
    assert [c.head.target_uri for c in report.dropped] == ["http://example.com/a"]


def test_repair_of_a_file_cut_inside_its_warcinfo_leaves_zero_bytes(tmp_path: Path) -> None:
    warc = standard()
    path = tmp_path / (NAME + ".open")
    path.write_bytes(warc.data()[: warc.extents()[0][1] - 5])
    report = repair(path)
    assert report.kept_size == 0 == path.stat().st_size
    assert report.captures_kept == 0
    assert report.damage is not None


def test_repair_leaves_a_good_file_alone(tmp_path: Path) -> None:
    path = standard().write(tmp_path, suffix=".open")
    before = path.read_bytes()
    report = repair(path)
    assert report.removed_bytes == 0
    assert not report.truncated
    assert path.read_bytes() == before


def test_repair_refuses_closed_files_and_dry_run_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / NAME
    data = standard().data() + b"junk"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"\.open"):
        repair(path)
    report = repair(path, allow_closed=True, dry_run=True)
    assert report.removed_bytes == 4
    assert not report.truncated
    assert path.read_bytes() == data
    assert repair(path, allow_closed=True).truncated
    assert path.stat().st_size == len(data) - 4


def test_large_member_streams_through_zlib_limits(tmp_path: Path) -> None:
    """A block that inflates far beyond OUT_SIZE from a small member (bomb-like ratio)."""
    block = b"\0" * (8 * OUT_SIZE)
    _, record = warc_record("resource", block, uri="http://example.com/zeros")
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = member.compress(record) + member.flush()
    path = tmp_path / NAME
    path.write_bytes(WarcBuilder().data() + data)
    recs = records_of(path)
    assert [r.record_type for r in recs if isinstance(r, RecordInfo)] == ["warcinfo", "resource"]


# ----------------------------------------------------------------------------- other tools' files
def test_resync_goes_on_at_the_next_member_after_a_bad_record(tmp_path: Path) -> None:
    """A member that is whole but holds no well-formed record is left out, one Damage saying
    where reading went on; the records after it are read (without resync, reading stops)."""
    warc = standard()
    members = warc.members()
    bad = gz(b"HTTP/1.1 200 OK\r\n\r\n")
    path = tmp_path / NAME
    path.write_bytes(b"".join([*members[:2], bad, *members[2:]]))
    items = list(iter_records(path, resync=True))
    (damage,) = [i for i in items if isinstance(i, Damage)]
    start = len(members[0]) + len(members[1])
    assert (damage.offset, damage.resumed, damage.last) == (start, start + len(bad), False)
    assert damage.skipped == f"{len(bad)} bytes left out, read on at offset {start + len(bad)}"
    assert sum(isinstance(i, RecordInfo) for i in items) == len(members)
    assert isinstance(list(iter_records(path))[-1], Damage)  # the stopping walk stops there


def test_resync_finds_the_next_member_after_corrupt_data(tmp_path: Path) -> None:
    warc = standard()
    members = warc.members()
    corrupt = bytearray(members[1])
    corrupt[len(corrupt) // 2] ^= 0xFF
    path = tmp_path / NAME
    path.write_bytes(b"".join([members[0], bytes(corrupt), *members[2:]]))
    items = list(iter_records(path, resync=True))
    (damage,) = [i for i in items if isinstance(i, Damage)]
    assert damage.kind is DamageKind.CORRUPT
    assert damage.resumed == len(members[0]) + len(members[1])
    records = [i for i in items if isinstance(i, RecordInfo)]
    assert [r.offset for r in records][1:] == [e[0] for e in warc.extents()[2:]]


def test_resync_in_an_uncompressed_file_goes_on_at_the_next_version_line(tmp_path: Path) -> None:
    warc = standard()
    records = list(warc.records)
    records[1] = records[1].replace(b"Content-Length: ", b"Content-Length: 9", 1)
    path = tmp_path / "plain.warc"
    path.write_bytes(b"".join(records))
    items = list(iter_records(path, resync=True))
    (damage,) = [i for i in items if isinstance(i, Damage)]
    assert damage.offset == len(records[0])
    assert damage.resumed == len(records[0]) + len(records[1])
    assert sum(isinstance(i, RecordInfo) for i in items) == len(records) - 1


@pytest.mark.parametrize(
    ("change", "quirk"),
    [
        (lambda r: r.replace(b"\r\n", b"\n", r.count(b"\r\n") - 2), "header lines end in LF"),
        (lambda r: r[:-2], "followed by b'\\r\\n', not CRLF CRLF"),
        (lambda r: r[:-4], "no empty lines after the block"),
        (lambda r: r + b"\r\n", "followed by b'\\r\\n\\r\\n\\r\\n'"),
        (lambda r: r.replace(b"WARC/1.1", b"WARC/0.17", 1), "WARC/0.17, a draft"),
    ],
    ids=["lf-lines", "one-crlf", "none", "three-crlf", "draft"],
)
@pytest.mark.parametrize("compress", [True, False], ids=["gzip", "plain"])
def test_quirks_warcio_reads_are_read_and_said(
    tmp_path: Path, change: object, quirk: str, compress: bool
) -> None:
    _, record = warc_record("resource", b"hello", uri="http://example.com/")
    odd = change(record)  # type: ignore[operator]
    path = tmp_path / ("q.warc.gz" if compress else "q.warc")
    path.write_bytes(b"".join(gz(r) if compress else r for r in (odd, record)))
    first, second = list(iter_records(path, resync=True))
    assert isinstance(first, RecordInfo) and isinstance(second, RecordInfo)
    assert any(quirk in q for q in first.quirks), first.quirks
    assert second.quirks == ()
    assert first.index_length == (first.length if compress else len(odd.rstrip(b"\r\n")) + 0)


def test_arc_files_are_read_as_warcio_reads_them(tmp_path: Path) -> None:
    body = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhi"
    version = b"1 0 Test\nURL IP-address Archive-date Content-type Archive-length\n"
    arc = (
        b"filedesc://t.arc 0.0.0.0 20080101000000 text/plain %d\n" % len(version)
        + version
        + b"\n"
        + b"http://a.test/x 127.0.0.1 20080102030405 text/html %d\n" % len(body)
        + body
        + b"\n"
    )
    for name, data in (
        ("t.arc", arc),
        ("t.arc.gz", gz(arc[: arc.index(b"http")]) + gz(arc[arc.index(b"http") :])),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        info, response = list(iter_records(path, resync=True))
        assert isinstance(info, RecordInfo) and isinstance(response, RecordInfo)
        assert (info.version, info.record_type, info.get("WARC-Filename")) == (
            "ARC/1",
            "warcinfo",
            "t.arc",
        )
        assert (response.record_type, response.target, response.date) == (
            "response",
            "http://a.test/x",
            "2008-01-02T03:04:05Z",
        )
        assert response.record_id is None and response.content_length == len(body)
