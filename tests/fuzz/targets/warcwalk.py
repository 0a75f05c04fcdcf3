"""The resynchronising walk of the WARC reader (:func:`archiver.warc.reader.iter_records` with
``resync``): how ``archiver index``, ``verify`` and ``--dedup-from`` read other tools' WARC and
ARC files, going on after a record they reject.

The first byte chooses the input: a file as it is, or records (split where ``WARC/1.`` starts
one) written uncompressed or one gzip member each, then changed as other tools and disks change
them: header lines ended by LF or by CR CR LF, a record's empty lines cut to one CRLF or none,
bytes put between two records, one bit flipped, the end cut. Oracles, on every input:

* the walk ends, and accounts for every byte: each record and each region left out starts where
  the one before ended (a region ends where reading went on), the last ends at the file's end;
* until its first damage it reads what the stopping walk (``resync`` off, which ``repair`` uses)
  reads; every block handed to a sink has the record's Content-Length;
* in a gzip file every record's extent is exactly one gzip member (zlib checks it alone);
* every record can be read again where an index line would point at it
  (:func:`~archiver.warc.reader.read_record_at` with its index length), to the same head;
* where the walk leaves nothing out, warcio and FastWARC read the same records (offsets, and
  warcio's lengths, which are index lengths), but for :data:`DIFFERENCES`.
"""

from __future__ import annotations

import io
import tempfile
import zlib
from pathlib import Path

from archiver.errors import WarcFormatError
from archiver.warc.reader import (
    Damage,
    DamageKind,
    RecordHead,
    RecordInfo,
    _walk,
    read_record_at,
)
from tests.fuzz.harness import Bytes, Target, agree
from tests.fuzz.targets.warc import (
    _SCRATCH,
    _all,
    _ascii,
    _blank_to_warcio,
    _one_member,
    _theirs,
    zlib_gzip,
)
from tests.fuzz.targets.warc import (
    seed_files as warc_seed_files,
)

#: Where warcio or FastWARC read otherwise by design (the ``warc`` target's differences hold
#: too: field contents are verify's to judge, warcio's blank header lines).
DIFFERENCES = {
    "fastwarc-lines": "FastWARC keeps a header line's bare LF inside the line (it splits at "
    "CRLF only) and refuses CR CR LF line ends, which warcio and archiver read: FastWARC's "
    "record types are not compared on a file with such lines, only where its records start.",
    "unread-by-them": "where warcio or FastWARC raise on a file, there is nothing to compare.",
    "arc-filedesc": "warcio reads an ARC file's first record (filedesc://) by lines, its version "
    "and field-name lines whatever Archive-length says; archiver reads Archive-length bytes. "
    "Where the two differ so does warcio's length of that record (a warcinfo record, which has "
    "no index line); where the next record starts is still compared, unless Archive-length "
    "and the lines disagree (a damaged filedesc): then the records are compared from where "
    "both readers meet again.",
}


def _records(data: bytes) -> list[bytes]:
    starts = [0] + [i + 4 for i in _all(data, b"\r\n\r\nWARC/1.")]
    return [data[a:b] for a, b in zip(starts, [*starts[1:], len(data)], strict=True)]


def _quirk(record: bytes, how: int) -> bytes:
    """One record changed as another tool writes it (``how`` % 5: none, LF header lines,
    CR CR LF everywhere, one CRLF after the block, no empty line after the block)."""
    head, sep, rest = record.partition(b"\r\n\r\n")
    if not sep:
        return record
    kind = how % 5
    if kind == 1:
        return head.replace(b"\r\n", b"\n") + b"\n\n" + rest
    if kind == 2:
        return head.replace(b"\r\n", b"\r\r\n") + b"\r\r\n\r\r\n" + rest
    if kind == 3 and record.endswith(b"\r\n\r\n"):
        return record[:-2]
    if kind == 4 and record.endswith(b"\r\n\r\n"):
        return record[:-4]
    return record


def build(data: bytes) -> bytes:
    """The file the input stands for (see the module's docstring)."""
    source = Bytes(data)
    mode = source.byte()
    if not mode & 1:
        return source.rest()
    knobs = source.take(4)
    records = [
        _quirk(r, knobs[i % len(knobs)] if knobs else 0)
        for i, r in enumerate(_records(source.rest()))
    ]
    pieces = [zlib_gzip(r) for r in records] if mode & 2 else records
    if mode & 4 and len(pieces) > 1 and len(knobs) == 4:
        at = 1 + knobs[0] % (len(pieces) - 1)
        pieces.insert(at, b"\x00junk " * (1 + knobs[1] % 8))
    file = b"".join(pieces)
    if mode & 8 and len(knobs) == 4 and file:
        where = int.from_bytes(knobs[1:3], "big") % len(file)
        file = file[:where] + bytes([file[where] ^ (1 << (knobs[3] % 8))]) + file[where + 1 :]
    if mode & 16 and len(knobs) == 4 and file:
        file = file[: int.from_bytes(knobs[2:4], "big") % len(file)]
    return file


def _walk_all(file: bytes, *, resync: bool) -> list[RecordInfo | Damage]:
    sizes: dict[int, int] = {}

    def on_block(head: RecordHead) -> object:
        sizes[head.offset] = 0

        def sink(piece: memoryview) -> None:
            sizes[head.offset] += len(piece)

        return sink

    items = list(_walk(io.BytesIO(file), 0, len(file), on_block, resync=resync))  # type: ignore[arg-type]
    for item in items:
        if isinstance(item, RecordInfo):
            agree(sizes.get(item.offset) == item.content_length, "block size", item)
    return items


def check(data: bytes) -> None:
    file = build(data)
    items = _walk_all(file, resync=True)
    end = 0
    for item in items:
        agree(item.offset == end, "not contiguous", item, end)
        if isinstance(item, RecordInfo):
            end = item.end
            if file[:2] == b"\x1f\x8b":
                agree(_one_member(file[item.offset : item.end]), "not one gzip member", item)
        else:
            agree(item.resumed is not None and item.resumed > item.offset, "no progress", item)
            assert item.resumed is not None
            end = item.resumed
    agree(end == len(file), "bytes not accounted for", end, len(file))
    if file[:2] == b"\x1f\x8b":
        for item in items:
            if isinstance(item, Damage):
                _nothing_readable_left_out(file, item)
    strict = _walk_all(file, resync=False)
    first = next((i for i, item in enumerate(items) if isinstance(item, Damage)), len(items))
    agree(
        [(r.offset, r.length) for r in strict if isinstance(r, RecordInfo)]
        == [(r.offset, r.length) for r in items[:first] if isinstance(r, RecordInfo)],
        "the stopping walk reads other records before the damage",
    )
    records = [item for item in items if isinstance(item, RecordInfo)]
    if records:
        _read_back(file, records)
    if first == len(items) and records:
        _compare(file, records)


def _nothing_readable_left_out(file: bytes, damage: Damage) -> None:
    """A damaged member that is whole by zlib alone is left out to its end, no further; after
    one that is not, no member inside the region left out is whole and one record warcio
    reads: reading goes on at the first such member."""
    assert damage.resumed is not None
    inflater = zlib.decompressobj(31)
    try:
        inflater.decompress(file[damage.offset :])
    except zlib.error:
        pass
    else:
        if inflater.eof and damage.kind in (DamageKind.RECORD, DamageKind.MULTI):
            end = len(file) - len(inflater.unused_data)
            agree(damage.resumed == end, "reading did not go on at the member's end", damage, end)
            return
    at = file.find(b"\x1f\x8b\x08", damage.offset + 1)
    while 0 <= at < damage.resumed:
        inflater = zlib.decompressobj(31)
        try:
            data = inflater.decompress(file[at:])
        except zlib.error:
            data = b""
        # a version line warcio reads by its prefix ("WARC/1.1tent") is no record start
        if inflater.eof and data.startswith((b"WARC/1.0\r\n", b"WARC/1.1\r\n")):
            member = file[at : len(file) - len(inflater.unused_data)]
            warcio, _ = _theirs(member)
            agree(not warcio or len(warcio) != 1, "a readable member left out", damage, at)
        at = file.find(b"\x1f\x8b\x08", at + 1)


def _read_back(file: bytes, records: list[RecordInfo]) -> None:
    """Every record read where its index line points (its index length)."""
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as scratch:
        path = Path(scratch) / "x.warc"
        path.write_bytes(file)
        for record in records:
            try:
                again = read_record_at(path, record.offset, record.index_length)
            except WarcFormatError as exc:
                agree(False, "an index line's slice does not read", record, str(exc))
                return
            agree(again.headers == record.headers, "another head at the slice", record)


def _head(file: bytes, record: RecordInfo) -> bytes:
    stored = file[record.offset : record.end]
    if stored[:2] == b"\x1f\x8b":
        stored = zlib.decompressobj(31).decompress(stored)
    return stored.split(b"\n\r\n", 1)[0].split(b"\n\n", 1)[0]


def _compare(file: bytes, records: list[RecordInfo]) -> None:
    warcio, fast = _theirs(file)
    heads = [_head(file, r) for r in records]
    odd_lines = any(b"\r\r\n" in h or h.count(b"\n") != h.count(b"\r\n") for h in heads)
    ours = [(r.offset, r.index_length, _ascii(r.record_type)) for r in records]
    filedesc = {r.offset for r in records if r.is_arc and r.record_type == "warcinfo"}

    def extents(items: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
        return [(o, -1 if o in filedesc else n) for o, n, _ in items]  # arc-filedesc

    if warcio is not None and not any(_blank_to_warcio(h) for h in heads):
        warcio, ours = _past_a_damaged_filedesc(warcio, ours, filedesc)
        agree(
            extents(warcio) == extents(ours),
            "warcio reads other record boundaries",
            ours,
            warcio,
        )
    if fast is not None:
        agree(
            [o for o, _ in fast] == [r.offset for r in records],
            "FastWARC finds other records",
            ours,
            fast,
        )
        if not odd_lines:  # fastwarc-lines
            agree(
                [t for _, t in fast] == [_ascii(r.record_type) for r in records]
                or any(t == "(odd)" for _, t in fast),
                "FastWARC reads other record types",
                ours,
                fast,
            )


def _past_a_damaged_filedesc(
    warcio: list[tuple[int, int, str]], ours: list[tuple[int, int, str]], filedesc: set[int]
) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
    """The records of both readers from where they meet again after an ARC filedesc whose
    Archive-length disagrees with its lines (arc-filedesc): warcio goes on after the lines,
    archiver after Archive-length bytes; both lists as they are otherwise."""
    if len(warcio) < 2 or len(ours) < 2 or ours[0][0] not in filedesc:
        return warcio, ours
    if warcio[1][0] == ours[1][0]:
        return warcio, ours
    common = {r[0] for r in warcio[1:]} & {r[0] for r in ours[1:]}
    if not common:
        return [], []
    meet = min(common)
    return [r for r in warcio if r[0] >= meet], [r for r in ours if r[0] >= meet]


def _arc_record(line: bytes, block: bytes) -> bytes:
    return line + b" %d\n" % len(block) + block + b"\n"


#: A small ARC file (version 1), as Heritrix 1 and the Internet Archive wrote them.
ARC_RECORDS = (
    _arc_record(
        b"filedesc://seed.arc 0.0.0.0 20080101000000 text/plain",
        b"1 0 Seed\nURL IP-address Archive-date Content-type Archive-length\n",
    ),
    _arc_record(
        b"http://a.test/ 127.0.0.1 20080101000001 text/html",
        b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nhi",
    ),
)


def seed_files() -> list[bytes]:
    """The warc target's files and an ARC file, read the ways this target reads them."""
    seeds = [b"\x00" + b"".join(ARC_RECORDS), b"\x00" + b"".join(map(zlib_gzip, ARC_RECORDS))]
    for seed in warc_seed_files():
        body = seed[1:] if seed[:1] in (b"\x00",) else seed[4:]
        seeds.append(b"\x00" + body)  # as it is
        seeds.append(b"\x01\x00\x01\x02\x03" + body)  # uncompressed, lines changed
        seeds.append(b"\x03\x03\x04\x00\x00" + body)  # gzip per record, ends changed
        seeds.append(b"\x07\x00\x02\x00\x00" + body)  # bytes between two members
        seeds.append(b"\x0b\x00\x00\x40\x05" + body)  # a bit flipped
    return seeds


TARGET = Target(
    name="warcwalk",
    check=check,
    max_len=8192,
    summary="the WARC reader's resynchronising walk (index, verify, --dedup-from on other "
    "tools' files); oracles: every byte accounted for, the stopping walk's prefix, zlib "
    "member by member, index slices read back, warcio and FastWARC record boundaries",
    dictionary=(
        b"WARC/1.0\r\n",
        b"WARC/1.1\r\n",
        b"WARC/0.17\r\n",
        b"Content-Length: ",
        b"WARC-Type: response\r\n",
        b"\r\n\r\n",
        b"\r\r\n",
        b"\n\n",
        b"\x1f\x8b\x08",
        b"filedesc://x.arc 0.0.0.0 20240101000000 text/plain ",
        b"http://a/ 1.2.3.4 20240101000000 text/html ",
    ),
)

__all__ = ["DIFFERENCES", "TARGET", "seed_files"]
