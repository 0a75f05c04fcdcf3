"""Reading WARC files member by member, trusting nothing; cutting a damaged tail to whole captures.

warcio and cdxj-indexer both exit 0 on a ``.warc.gz`` whose last gzip member was cut short by a
crash, and cdxj-indexer even indexes the damaged record (warcio reads a member to its cut end
without checking its CRC). So this module walks the file itself, one gzip member at a time
(WARC 1.1 annex D: one member per record):

* every member must reach the end of its deflate stream with a valid CRC-32 and ISIZE (zlib
  checks both in gzip mode; ``eof`` tells whether the member ended);
* it must hold exactly one record: ``WARC/1.0|1.1`` CRLF, named fields, CRLF, ``Content-Length``
  bytes of block, CRLF CRLF (WARC 1.1 section 4), and nothing after it;
* the bytes after the last member must be nothing at all.

The walk stops at the first damaged member: after a cut or corrupt member the next member's start
cannot be trusted, and repair only ever keeps a prefix anyway. Everything streams: block bytes go
to a caller's sink in bounded pieces, so a multi-gigabyte record costs a few hundred KiB of memory.
Uncompressed ``.warc`` files (records back to back) are read by the same record parser.

:func:`repair` is the startup step for ``.open`` files left by a crash (gowarc's ``warc mend``,
Heritrix's "validate before renaming"): it truncates the file to the longest prefix of whole
captures and reports what it removed. Renaming is the caller's decision.
"""

from __future__ import annotations

import enum
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from archiver.errors import WarcFormatError

#: Bytes read from disk at a time.
READ_SIZE = 1 << 20
#: Compressed bytes handed to zlib per call. zlib copies the input it did not use into
#: ``unused_data`` when a member ends, so small pieces keep that copy cheap for small records.
FEED_SIZE = 64 << 10
#: Decompressed bytes produced per zlib call: bounds memory whatever the compression ratio.
OUT_SIZE = 256 << 10
#: A WARC header block larger than this is not a WARC header (ours are well under 4 KiB).
MAX_HEADER = 1 << 20
#: Header bytes searched for the end of the header block per step (bounds copying).
_HEAD_STEP = 8 << 10

VERSIONS = ("WARC/1.0", "WARC/1.1")
_GZIP_MAGIC = b"\x1f\x8b"
_CRLF2 = b"\r\n\r\n"
_VERSION_PREFIX = b"WARC/"
#: ``name: value``; a name is visible ASCII except ``:`` (RFC 5322 ftext, WARC 1.1 section 4)
_FIELD_LINE = re.compile(r"([\x21-\x39\x3b-\x7e]+):(.*)\Z", re.DOTALL)

#: Receives a record's block in order, piece by piece. A piece is only valid during the call.
BlockSink = Callable[[memoryview], object]


@dataclass(frozen=True, slots=True)
class RecordHead:
    """A record's WARC header as found on disk, before its extent is known.

    ``offset`` is where its gzip member (or, in an uncompressed file, the record) starts.
    Field names are matched case-insensitively (WARC 1.1 section 4); order and repeats are kept.
    """

    offset: int
    version: str
    headers: tuple[tuple[str, str], ...]
    #: lowercased name -> values, built once (verify looks fields up a dozen times per record);
    #: passed on from a head to its RecordInfo
    _by_name: dict[str, list[str]] = field(
        default_factory=dict, kw_only=True, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self._by_name:
            for name, value in self.headers:
                self._by_name.setdefault(name.lower(), []).append(value)

    def get(self, name: str) -> str | None:
        """First value of a field, or None."""
        values = self._by_name.get(name.lower())
        return values[0] if values else None

    def get_all(self, name: str) -> list[str]:
        """Every value of a (repeatable) field, in order."""
        return list(self._by_name.get(name.lower(), ()))

    def repeated(self) -> list[str]:
        """Lowercased names of the fields that appear more than once."""
        if len(self._by_name) == len(self.headers):
            return []
        return [name for name, values in self._by_name.items() if len(values) > 1]

    @property
    def record_type(self) -> str:
        return self.get("WARC-Type") or ""

    @property
    def record_id(self) -> str | None:
        return self.get("WARC-Record-ID")

    @property
    def target_uri(self) -> str | None:
        return self.get("WARC-Target-URI")

    @property
    def date(self) -> str | None:
        return self.get("WARC-Date")

    @property
    def content_length(self) -> int:
        """The block length; the parser only builds heads whose Content-Length is 1*DIGIT."""
        return int(self.get("Content-Length") or 0)


@dataclass(frozen=True, slots=True)
class RecordInfo(RecordHead):
    """A whole, valid record: its head plus the length of its gzip member (or of the record)."""

    length: int

    @property
    def end(self) -> int:
        return self.offset + self.length


class DamageKind(enum.StrEnum):
    CUT = "cut"  #: the file ends inside a gzip member or a record
    CORRUPT = "corrupt"  #: invalid gzip data: bad header, deflate data, CRC or length check
    GARBAGE = "garbage"  #: bytes that are neither a gzip member nor a WARC record
    RECORD = "record"  #: a member (or record) that is not one well-formed WARC record
    MULTI = "multi"  #: a gzip member holding more than one record (whole-file gzip)


@dataclass(frozen=True, slots=True)
class Damage:
    """Where the walk stopped and why. ``head`` is the damaged record's header when readable."""

    offset: int
    kind: DamageKind
    reason: str
    head: RecordHead | None = None

    def __str__(self) -> str:
        return f"offset {self.offset}: {self.reason}"


class _RecordError(Exception):
    def __init__(self, kind: DamageKind, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


# ----------------------------------------------------------------------------- record parsing
class _RecordParser:
    """Parses one record from a byte stream fed in pieces; raises :class:`_RecordError`."""

    __slots__ = ("_buf", "_on_block", "_remaining", "_sink", "_state", "head", "offset")

    def __init__(self, offset: int, on_block: Callable[[RecordHead], BlockSink | None] | None):
        self.offset = offset
        self._on_block = on_block
        self._state = 0  # 0 header, 1 block, 2 terminator, 3 done
        self._buf = bytearray()
        self._remaining = 0
        self._sink: BlockSink | None = None
        self.head: RecordHead | None = None

    @property
    def done(self) -> bool:
        return self._state == 3

    @property
    def block_done(self) -> bool:
        """The head and every byte of the block were read (the terminator may still follow)."""
        return self._state >= 2

    def feed(self, data: bytes | memoryview) -> int:
        """Consume bytes of this record; returns how many were used (fewer once it ended)."""
        view = memoryview(data)
        pos = 0
        end = len(view)
        while pos < end:
            state = self._state
            if state == 1:
                take = min(self._remaining, end - pos)
                if self._sink is not None:
                    self._sink(view[pos : pos + take])
                self._remaining -= take
                pos += take
                if self._remaining == 0:
                    self._state = 2
            elif state == 0:
                pos += self._feed_header(view[pos:])
            elif state == 2:
                need = 4 - len(self._buf)
                self._buf += view[pos : pos + need]
                pos += min(need, end - pos)
                if not _CRLF2.startswith(self._buf):
                    raise _RecordError(
                        DamageKind.RECORD,
                        "the block is not followed by CRLF CRLF (wrong Content-Length?)",
                    )
                if len(self._buf) == 4:
                    self._buf.clear()
                    self._state = 3
            else:
                break
        return pos

    def feed_member(self, data: bytes) -> None:
        """Feed decompressed bytes of a gzip member, which must hold nothing after the record."""
        used = self.feed(data)
        if used < len(data):
            rest = bytes(data[used : used + 5])
            if _VERSION_PREFIX.startswith(rest) or rest.startswith(_VERSION_PREFIX):
                raise _RecordError(
                    DamageKind.MULTI,
                    "the gzip member holds more than one record (whole-file gzip?); "
                    "WARC annex D requires one member per record",
                )
            raise _RecordError(DamageKind.RECORD, "bytes after the record inside its gzip member")

    def _feed_header(self, view: memoryview) -> int:
        buf = self._buf
        used = 0
        while used < len(view):
            before = len(buf)
            step = view[used : used + _HEAD_STEP]
            buf += step
            if not buf.startswith(_VERSION_PREFIX) and not _VERSION_PREFIX.startswith(buf):
                raise _RecordError(DamageKind.RECORD, f"no WARC version line: {bytes(buf[:20])!r}")
            cut = buf.find(_CRLF2, max(0, before - 3))
            if cut >= 0:
                used += cut + 4 - before
                self._start_block(bytes(buf[:cut]))
                buf.clear()
                return used
            used += len(step)
            if len(buf) > MAX_HEADER:
                raise _RecordError(DamageKind.RECORD, f"WARC header larger than {MAX_HEADER} bytes")
        return used

    def _start_block(self, raw: bytes) -> None:
        lines = raw.decode("utf-8", "replace").split("\r\n")
        version = lines[0]
        if version not in VERSIONS:
            raise _RecordError(
                DamageKind.RECORD, f"version line {version[:40]!r} is not WARC/1.0|1.1"
            )
        fields: list[tuple[str, str]] = []
        for line in lines[1:]:
            if line[:1] in (" ", "\t") and fields:  # folded line (annotated spec #74: tolerated)
                name, value = fields[-1]
                fields[-1] = (name, f"{value} {line.strip()}")
                continue
            match = _FIELD_LINE.match(line)
            if match is None:
                raise _RecordError(DamageKind.RECORD, f"malformed WARC header line {line[:60]!r}")
            fields.append((match.group(1), match.group(2).strip()))
        head = RecordHead(self.offset, version, tuple(fields))
        length = head.get("Content-Length")
        if length is None or not (length.isascii() and length.isdigit()):
            raise _RecordError(DamageKind.RECORD, f"missing or invalid Content-Length {length!r}")
        self.head = head
        self._remaining = int(length)
        self._state = 1 if self._remaining else 2
        self._sink = self._on_block(head) if self._on_block is not None else None

    def incomplete(self) -> str:
        """Why the record is not whole, once its bytes ran out."""
        if self._state == 0:
            return "the data ends inside the record's WARC header"
        if self._state == 1:
            total = self.head.content_length if self.head is not None else 0
            return (
                f"the block holds {total - self._remaining} of its {total} bytes (Content-Length)"
            )
        return "the record ends without its CRLF CRLF terminator"

    def info(self, length: int) -> RecordInfo:
        assert self.head is not None
        head = self.head
        return RecordInfo(
            offset=head.offset,
            version=head.version,
            headers=head.headers,
            length=length,
            _by_name=head._by_name,
        )


# ----------------------------------------------------------------------------- walking a file
class _Region:
    """Sequential reads of the bytes ``[start, end)`` of an open file."""

    __slots__ = ("_buf", "_fh", "_i", "end", "pos")

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        fh.seek(start)
        self._fh = fh
        self._buf = b""
        self._i = 0
        self.pos = start
        self.end = end

    def view(self, size: int, need: int = 1) -> memoryview:
        """Up to ``size`` bytes at the current position, at least ``need`` unless at the end."""
        if len(self._buf) - self._i < need:
            left = self.end - self.pos - (len(self._buf) - self._i)
            if left > 0:
                more = self._fh.read(min(READ_SIZE, left))
                self._buf = self._buf[self._i :] + more if self._i < len(self._buf) else more
                self._i = 0
        return memoryview(self._buf)[self._i : self._i + size]

    def advance(self, count: int) -> None:
        self._i += count
        self.pos += count

    def rewind(self, count: int) -> None:
        """Give back the last ``count`` bytes of the last view (no :meth:`view` in between)."""
        self._i -= count
        self.pos -= count


def _walk(
    fh: BinaryIO,
    start: int,
    end: int,
    on_block: Callable[[RecordHead], BlockSink | None] | None,
) -> Iterator[RecordInfo | Damage]:
    src = _Region(fh, start, end)
    if bytes(src.view(2, need=2)) == _GZIP_MAGIC:
        yield from _walk_gzip(src, on_block)
    else:
        yield from _walk_plain(src, on_block)


def _walk_gzip(
    src: _Region, on_block: Callable[[RecordHead], BlockSink | None] | None
) -> Iterator[RecordInfo | Damage]:
    while True:
        start = src.pos
        magic = bytes(src.view(2, need=2))
        if not magic:
            return
        if magic != _GZIP_MAGIC:
            yield Damage(
                start,
                DamageKind.GARBAGE,
                f"{src.end - start} bytes after the last gzip member are not gzip data",
            )
            return
        inflater = zlib.decompressobj(wbits=31)
        parser = _RecordParser(start, on_block)
        try:
            while not inflater.eof:
                piece = src.view(FEED_SIZE)
                if not piece:
                    yield Damage(
                        start,
                        DamageKind.CUT,
                        f"the file ends inside the gzip member that starts here "
                        f"({src.pos - start} bytes of it present)",
                        parser.head,
                    )
                    return
                src.advance(len(piece))
                parser.feed_member(inflater.decompress(piece, OUT_SIZE))
                while inflater.unconsumed_tail and not inflater.eof:
                    parser.feed_member(inflater.decompress(inflater.unconsumed_tail, OUT_SIZE))
                if inflater.eof:  # the member ended inside this piece: the rest is the next one's
                    src.rewind(len(inflater.unused_data))
        except zlib.error as exc:
            yield Damage(start, DamageKind.CORRUPT, f"invalid gzip member: {exc}", parser.head)
            return
        except _RecordError as exc:
            # The record is parsed before zlib checks the CRC at the member's end: if the
            # member is corrupt, that is the cause to report, not the garbled header it produced.
            corrupt = _corrupt_rest(src, inflater) if exc.kind is DamageKind.RECORD else None
            if corrupt is not None:
                yield Damage(start, DamageKind.CORRUPT, corrupt, parser.head)
            else:
                yield Damage(start, exc.kind, exc.reason, parser.head)
            return
        if not parser.done:
            yield Damage(start, DamageKind.RECORD, parser.incomplete(), parser.head)
            return
        yield parser.info(src.pos - start)


def _corrupt_rest(src: _Region, inflater: zlib._Decompress) -> str | None:
    """Inflate the rest of a member (output discarded, at most 64 MiB of input read) and say
    why it is invalid gzip, or None if it is not (or the check gave up)."""
    budget = 64 << 20
    try:
        while inflater.unconsumed_tail and not inflater.eof:
            inflater.decompress(inflater.unconsumed_tail, OUT_SIZE)
        while not inflater.eof and budget > 0:
            piece = src.view(FEED_SIZE)
            if not piece:
                return None
            src.advance(len(piece))
            budget -= len(piece)
            inflater.decompress(piece, OUT_SIZE)
            while inflater.unconsumed_tail and not inflater.eof:
                inflater.decompress(inflater.unconsumed_tail, OUT_SIZE)
    except zlib.error as exc:
        return f"invalid gzip member: {exc}"
    return None


def _walk_plain(
    src: _Region, on_block: Callable[[RecordHead], BlockSink | None] | None
) -> Iterator[RecordInfo | Damage]:
    while True:
        start = src.pos
        if not src.view(1):
            return
        parser = _RecordParser(start, on_block)
        try:
            while not parser.done:
                piece = src.view(READ_SIZE)
                if not piece:
                    yield Damage(start, DamageKind.CUT, parser.incomplete(), parser.head)
                    return
                src.advance(parser.feed(piece))
        except _RecordError as exc:
            kind = DamageKind.GARBAGE if parser.head is None else exc.kind
            yield Damage(start, kind, exc.reason, parser.head)
            return
        yield parser.info(src.pos - start)


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with a gzip member (else its records are uncompressed)."""
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def iter_records(
    path: str | os.PathLike[str],
    *,
    on_block: Callable[[RecordHead], BlockSink | None] | None = None,
) -> Iterator[RecordInfo | Damage]:
    """Yield every whole record of a WARC file, then a :class:`Damage` if the walk hit one.

    ``on_block(head)`` is called when a record's header has been read; the sink it returns gets
    the block in pieces. The record is yielded only once its member proved whole, so a sink fed
    for a record that ends in damage must be discarded. The file's size is taken when the walk
    starts: bytes appended meanwhile (a live ``.open`` file) are not read.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        yield from _walk(fh, 0, size, on_block)


def read_record_at(
    path: str | os.PathLike[str],
    offset: int,
    length: int,
    *,
    on_block: Callable[[RecordHead], BlockSink | None] | None = None,
) -> RecordInfo:
    """The one record stored in ``[offset, offset + length)``, as an index line points at it.

    The slice must be exactly one whole gzip member (or one record, uncompressed) holding
    exactly one record: what a CDX(J) consumer assumes when it decompresses it on its own.
    Raises :class:`WarcFormatError` otherwise.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if offset < 0 or length <= 0 or offset + length > size:
            raise WarcFormatError(
                f"{path}: slice {offset}+{length} is outside the file ({size} bytes)"
            )
        items = _walk(fh, offset, offset + length, on_block)
        first = next(items, None)
        if first is None:
            raise WarcFormatError(f"{path}: no record at offset {offset}")
        if isinstance(first, Damage):
            raise WarcFormatError(f"{path}: {first}")
        second = next(items, None)
        if second is not None:
            extra = "another record" if isinstance(second, RecordInfo) else second.reason
            raise WarcFormatError(f"{path}: slice {offset}+{length} holds more: {extra}")
        return first


@dataclass(frozen=True, slots=True)
class RecordPrefix:
    """A record's head and the first bytes of its block, read without proving the record whole."""

    head: RecordHead
    block: bytes  #: at most the ``limit`` asked for; the whole block when :attr:`whole`

    @property
    def whole(self) -> bool:
        return len(self.block) >= self.head.content_length


def read_prefix_at(
    path: str | os.PathLike[str], offset: int, length: int, limit: int
) -> RecordPrefix:
    """The head and the first ``limit`` bytes of the block of the record stored in
    ``[offset, offset + length)``, as an index line points at it.

    Unlike :func:`read_record_at` this inflates only as far as it needs: looking up a large
    record's headers costs a header's worth of work, not its whole body. So it does not prove
    the record whole (its CRC is not reached): it is for reading what a record says, and
    :func:`read_record_at` for judging it. Raises :class:`WarcFormatError` when no record head
    can be read there; a block cut short gives what is present.
    """
    block = bytearray()

    def sink(piece: memoryview) -> None:
        room = limit - len(block)
        if room > 0:
            block.extend(piece[:room])

    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if offset < 0 or length <= 0 or offset + length > size:
            raise WarcFormatError(
                f"{path}: slice {offset}+{length} is outside the file ({size} bytes)"
            )
        src = _Region(fh, offset, offset + length)
        parser = _RecordParser(offset, lambda head: sink)
        try:
            _feed_prefix(src, parser, lambda: len(block) >= limit)
        except zlib.error as exc:
            raise WarcFormatError(f"{path}: invalid gzip member at {offset}: {exc}") from None
        except _RecordError as exc:
            raise WarcFormatError(f"{path}: offset {offset}: {exc.reason}") from None
    if parser.head is None:
        raise WarcFormatError(f"{path}: no whole WARC header at offset {offset}")
    return RecordPrefix(parser.head, bytes(block))


def _feed_prefix(src: _Region, parser: _RecordParser, enough: Callable[[], bool]) -> None:
    """Feed the parser the record's bytes (inflated when gzip) until its block ended, or
    ``enough()`` once its head was read, or the bytes ran out."""
    inflater = zlib.decompressobj(wbits=31) if bytes(src.view(2, need=2)) == _GZIP_MAGIC else None

    def satisfied() -> bool:
        return parser.block_done or (parser.head is not None and enough())

    while not satisfied():
        piece = src.view(FEED_SIZE)
        if not piece:
            return
        src.advance(len(piece))
        if inflater is None:
            parser.feed(piece)
            continue
        parser.feed(inflater.decompress(piece, FEED_SIZE))
        while inflater.unconsumed_tail and not inflater.eof and not satisfied():
            parser.feed(inflater.decompress(inflater.unconsumed_tail, FEED_SIZE))
        if inflater.eof:
            return


# ----------------------------------------------------------------------------- captures
_HEAD_TYPES = ("response", "revisit", "resource")


@dataclass(slots=True)
class Capture:
    """Adjacent records of one capture event, as the writer emits them in one batch.

    A warcinfo alone, or a response/revisit/resource record followed by the records whose
    ``WARC-Concurrent-To`` names it (its request, then metadata). Any other record stands
    alone. ``start``/``end`` are file offsets of its first byte and one past its last.
    """

    start: int
    end: int
    records: list[RecordInfo] = field(default_factory=list)

    @property
    def head(self) -> RecordInfo:
        return self.records[0]

    @property
    def whole(self) -> bool:
        """False for a response/revisit without its request, and for a request alone."""
        kind = self.head.record_type
        if kind in ("response", "revisit"):
            return any(r.record_type == "request" for r in self.records[1:])
        return kind != "request"


def iter_captures(path: str | os.PathLike[str]) -> Iterator[Capture | Damage]:
    """Group :func:`iter_records` into captures; a :class:`Damage` comes last if found."""
    pending: Capture | None = None
    for item in iter_records(path):
        if isinstance(item, Damage):
            if pending is not None:
                yield pending
            yield item
            return
        if (
            pending is not None
            and item.record_type not in ("warcinfo", *_HEAD_TYPES)
            and pending.head.record_type in _HEAD_TYPES
            and pending.head.record_id in item.get_all("WARC-Concurrent-To")
        ):
            pending.records.append(item)
            pending.end = item.end
            continue
        if pending is not None:
            yield pending
        pending = Capture(item.offset, item.end, [item])
    if pending is not None:
        yield pending


# ----------------------------------------------------------------------------- repair
@dataclass(slots=True)
class RepairReport:
    """What :func:`repair` found and removed. ``kept_size == 0`` means no whole capture at all
    (e.g. the file was cut inside its warcinfo): the caller decides whether to delete it."""

    path: Path
    original_size: int
    kept_size: int
    captures_kept: int
    dropped: list[Capture]
    damage: str | None
    truncated: bool = False  #: the file was actually truncated (False for a dry run)

    @property
    def removed_bytes(self) -> int:
        return self.original_size - self.kept_size

    def summary(self) -> str:
        text = (
            f"{self.path.name}: kept {self.captures_kept} captures ({self.kept_size} bytes), "
            f"removed {self.removed_bytes} bytes ({len(self.dropped)} captures)"
        )
        return f"{text}; damage at {self.damage}" if self.damage else text


def repair(
    path: str | os.PathLike[str],
    *,
    keep: Callable[[Capture], bool] | None = None,
    allow_closed: bool = False,
    dry_run: bool = False,
) -> RepairReport:
    """Truncate a WARC file to the end of its longest prefix of whole captures.

    The prefix ends at the first damaged member, at the first capture that is not whole, or at
    the first capture for which ``keep(capture)`` is False (the resume logic drops captures
    that were written but never committed in the crawl state; ``keep`` is not asked about
    warcinfo records). A damaged record linked by ``WARC-Concurrent-To`` to the last capture
    (a metadata record cut short) makes that capture incomplete too. Everything after the
    prefix is reported in ``dropped``. The file is truncated and fsynced unless ``dry_run``.

    Only ``*.open`` files are touched unless ``allow_closed``: a closed file was finished by a
    writer and should be judged by ``verify``, not silently shortened.
    """
    target = Path(path)
    if not target.name.endswith(".open") and not allow_closed:
        raise ValueError(f"{target}: not an .open file (pass allow_closed=True to repair it)")
    original = target.stat().st_size
    kept_end = 0
    kept = 0
    last: Capture | None = None
    stopped = False
    dropped: list[Capture] = []
    damage: Damage | None = None
    for item in iter_captures(target):
        if isinstance(item, Damage):
            damage = item
            if (
                not stopped
                and last is not None
                and item.head is not None
                and last.head.record_id in item.head.get_all("WARC-Concurrent-To")
            ):
                kept_end = last.start
                kept -= 1
                dropped.insert(0, last)
            break
        if stopped:
            dropped.append(item)
        elif not item.whole or (
            keep is not None and item.head.record_type != "warcinfo" and not keep(item)
        ):
            stopped = True
            dropped.append(item)
        else:
            kept_end = item.end
            kept += 1
            last = item
    report = RepairReport(
        path=target,
        original_size=original,
        kept_size=kept_end,
        captures_kept=kept,
        dropped=dropped,
        damage=str(damage) if damage is not None else None,
    )
    if kept_end < original and not dry_run:
        fd = os.open(target, os.O_RDWR)
        try:
            os.ftruncate(fd, kept_end)
            os.fsync(fd)
        finally:
            os.close(fd)
        report.truncated = True
    return report
