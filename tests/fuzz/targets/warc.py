"""The WARC reader (:mod:`archiver.warc.reader`): resume's repair of ``.open`` files, ``verify``,
``--dedup-from`` and ``archiver index`` read every file through it.

The first byte chooses the input: a file as it is, or WARC records (split where ``WARC/1.`` starts
a record) compressed one gzip member each, as the writer writes them, then maybe cut short or
with one bit flipped, as a crash or a disk leaves them. Oracles, on every input:

* the walk ends; it yields whole records back to back from offset 0, then at most one
  :class:`~archiver.warc.reader.Damage`, where the last record ended; nothing past the file;
* in a gzip file every record's extent is exactly one gzip member, checked by zlib on its own
  (one stream, its end reached, no byte after it): the reader never reads past a member;
* every block handed to a sink has the record's Content-Length;
* a file read without damage is read by warcio and by FastWARC with the same record
  boundaries (offsets and lengths) and record types;
* :func:`~archiver.warc.reader.repair` keeps a prefix that reads again without damage, made of
  the records the walk read.
"""

from __future__ import annotations

import io
import os
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator

from archiver.warc.reader import Damage, RecordHead, RecordInfo, _walk, iter_records, repair
from tests.fuzz.harness import Bytes, Target, agree
from tests.warc.test_reader import WarcBuilder, standard

_SCRATCH = Path(os.environ.get("XDG_RUNTIME_DIR") or "/dev/shm")


def build(data: bytes) -> bytes:
    """The file the input stands for (see the module's docstring)."""
    source = Bytes(data)
    mode = source.byte()
    if not mode & 1:
        return source.rest()
    knobs = source.take(3)
    records = source.rest()
    starts = [0] + [i + 4 for i in _all(records, b"\r\n\r\nWARC/1.")]
    file = b"".join(
        zlib_gzip(records[a:b]) for a, b in zip(starts, [*starts[1:], len(records)], strict=True)
    )
    if mode & 2 and len(knobs) == 3 and file:
        where = int.from_bytes(knobs[:2], "big") % len(file)
        file = file[:where] + bytes([file[where] ^ (1 << (knobs[2] % 8))]) + file[where + 1 :]
    if mode & 4 and len(knobs) == 3 and file:
        file = file[: int.from_bytes(knobs[1:], "big") % len(file)]
    return file


def _all(data: bytes, needle: bytes) -> list[int]:
    found, at = [], data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def zlib_gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def _one_member(piece: bytes) -> bool:
    inflater = zlib.decompressobj(wbits=31)
    try:
        inflater.decompress(piece)
    except zlib.error:
        return False
    return inflater.eof and not inflater.unused_data


def _walk_all(file: bytes) -> tuple[list[RecordInfo], Damage | None]:
    sizes: dict[int, int] = {}

    def on_block(head: RecordHead) -> object:
        sizes[head.offset] = 0

        def sink(piece: memoryview) -> None:
            sizes[head.offset] += len(piece)

        return sink

    records: list[RecordInfo] = []
    damage: Damage | None = None
    for item in _walk(io.BytesIO(file), 0, len(file), on_block):  # type: ignore[arg-type]
        agree(damage is None, "something after the damage", item)
        if isinstance(item, Damage):
            damage = item
        else:
            records.append(item)
            agree(sizes.get(item.offset) == item.content_length, "block size", item)
        agree(len(records) <= len(file) // 10 + 1, "more records than bytes allow")
    return records, damage


#: Where the other readers differ from ours by design.
DIFFERENCES = {
    "field-rules": "our reader checks the framing (version line, 'name: value' lines, "
    "Content-Length, the CRLF CRLF after the block, one gzip member per record); what the "
    "fields say is verify's to judge (it reports each rule it breaks). warcio and FastWARC "
    "refuse some field contents with an exception: then that reader is not compared (it "
    "read nothing to compare); where it reads the file, its boundaries must be ours.",
    "blank-to-warcio": "warcio reads header lines up to each LF and ends the header block at "
    "the first one that is blank once stripped of whitespace (Python's str.strip): a line of "
    "only spaces or tabs, which WARC 1.1 section 4 reads as folding (LWS = [CRLF] 1*( SP | HT "
    ")), or what a bare LF leaves before a CRLF; archiver ends it only at CRLF CRLF. warcio "
    "then reads the block from another byte, so it is not compared on such a file; FastWARC "
    "still is.",
}


_TYPES = frozenset(
    (
        "warcinfo",
        "response",
        "resource",
        "request",
        "metadata",
        "revisit",
        "conversion",
        "continuation",
        "",
    )
)


def _ascii(kind: str) -> str:
    """A record type compared as it is when it is one of WARC 1.1's (or none); another value is
    verify's to report (field-rules), and readers split odd header lines differently."""
    return kind if kind in _TYPES else "(odd)"


def _type(record: RecordInfo, file: bytes) -> str:
    """Our record's type as compared: odd when its header block holds a bare LF (field-rules:
    WARC 1.1 section 4 ends every header line with CRLF; warcio reads a bare LF as a line end,
    so it sees other fields there, where FastWARC and archiver keep it inside the line)."""
    if _bare_lf(_head(file, record)):
        return "(odd)"
    return _ascii(record.record_type)


def _head(file: bytes, record: RecordInfo) -> bytes:
    """The record's header block as stored (its gzip member inflated)."""
    stored = file[record.offset : record.end]
    if stored[:2] == b"\x1f\x8b":
        stored = zlib.decompressobj(31).decompress(stored)
    return stored.split(b"\r\n\r\n", 1)[0]


def _blank_to_warcio(head: bytes) -> bool:
    """A header line warcio takes for the blank line (see DIFFERENCES["blank-to-warcio"]); its
    header decoding tries UTF-8 then Latin-1, so both are asked."""
    for line in head.split(b"\n")[1:]:
        for text in (line.decode("latin-1"), line.decode("utf-8", "replace")):
            if not text.strip():
                return True
    return False


def _bare_lf(head: bytes) -> bool:
    return head.count(b"\n") != head.count(b"\r\n")


def _same(theirs: Sequence[tuple[object, ...]], ours: Sequence[tuple[object, ...]]) -> bool:
    """The same records, a type with an odd character matching any type."""
    return len(theirs) == len(ours) and all(
        a[:-1] == b[:-1] and (a[-1] == b[-1] or "(odd)" in (a[-1], b[-1]))
        for a, b in zip(theirs, ours, strict=True)
    )


def _theirs(
    file: bytes,
) -> tuple[list[tuple[int, int, str]] | None, list[tuple[int, str]] | None]:
    warcio: list[tuple[int, int, str]] | None = None
    try:
        found: list[tuple[int, int, str]] = []
        iterator = ArchiveIterator(io.BytesIO(file), no_record_parse=True)  # boundaries only
        for record in iterator:
            record.content_stream().read()
            kind = record.rec_type or ""
            found.append((iterator.get_record_offset(), iterator.get_record_length(), _ascii(kind)))
        warcio = found
    except Exception:  # field-rules: warcio refuses the file (it raises assorted errors)
        warcio = None
    try:
        fast: list[tuple[int, str]] | None = [
            (record.stream_pos, _ascii(record.headers.get("WARC-Type") or ""))
            for record in FastIterator(io.BytesIO(file), parse_http=False)
        ]
    except Exception:  # field-rules: FastWARC refuses the file
        fast = None
    return warcio, fast


def check(data: bytes) -> None:
    file = build(data)
    records, damage = _walk_all(file)
    end = 0
    for record in records:
        agree(record.offset == end, "not back to back", record, end)
        end = record.end
        if file[:2] == b"\x1f\x8b":
            agree(_one_member(file[record.offset : record.end]), "not one gzip member", record)
    agree(end <= len(file), "past the file")
    if damage is not None:
        agree(damage.offset == end, "damage not where the last record ended", damage, end)
    elif records:
        agree(end == len(file), "bytes left unread")
        warcio, fast = _theirs(file)
        # warcio counts an uncompressed record without the empty lines after it (what an
        # index line gives: index_length); types compared where they are ASCII (we read
        # header bytes as UTF-8, warcio as Latin-1: WARC 1.1 section 4 allows UTF-8 in values)
        ours = [(r.offset, r.index_length, _type(r, file)) for r in records]
        if warcio is not None and not any(_blank_to_warcio(_head(file, r)) for r in records):
            agree(_same(warcio, ours), "warcio reads other record boundaries", ours, warcio)
        ours_fast = [(r.offset, _type(r, file)) for r in records]
        if fast is not None:
            agree(_same(fast, ours_fast), "FastWARC reads other records", ours_fast, fast)
    if data[:1] and data[0] & 8:
        _check_repair(file, records)


def _check_repair(file: bytes, records: list[RecordInfo]) -> None:
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as scratch:
        path = Path(scratch) / "x.warc.gz.open"
        path.write_bytes(file)
        report = repair(path)
        kept = list(iter_records(path))
        agree(not any(isinstance(k, Damage) for k in kept), "repair left damage", report)
        agree(path.stat().st_size == report.kept_size, "kept size", report)
        agree(
            [(k.offset, k.length) for k in kept if isinstance(k, RecordInfo)]
            == [(r.offset, r.length) for r in records[: len(kept)]],
            "repair kept other records",
        )


def seed_files() -> list[bytes]:
    """WARC files as the suite writes them (tests/warc/test_reader.py's builder), small."""
    warc = standard()
    plain = warc.data(compress=False)
    small = WarcBuilder()
    small.capture("http://example.com/a")
    revisit = WarcBuilder()
    revisit.add("revisit", b"HTTP/1.1 200 OK\r\n\r\n", uri="http://example.com/r")
    return [
        b"\x01\x00\x00\x00" + plain,  # compressed by the target, member by member
        b"\x09\x00\x00\x00" + small.data(compress=False),  # and repaired
        b"\x03\x00\x10\x03" + small.data(compress=False),  # one bit flipped
        b"\x05\x00\x00\x80" + small.data(compress=False),  # cut short
        b"\x00" + plain,  # an uncompressed file
        b"\x00" + revisit.data(),
    ]


TARGET = Target(
    name="warc",
    check=check,
    max_len=8192,
    summary="the WARC reader and repair; oracles: zlib member by member, warcio and FastWARC "
    "record boundaries, repair's prefix reads clean",
    dictionary=(
        b"WARC/1.1\r\n",
        b"WARC/1.0\r\n",
        b"Content-Length: ",
        b"WARC-Type: response\r\n",
        b"WARC-Type: request\r\n",
        b"WARC-Concurrent-To: ",
        b"WARC-Record-ID: <urn:uuid:1>\r\n",
        b"\r\n\r\n",
        b"\x1f\x8b",
    ),
)
