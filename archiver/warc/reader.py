"""Reading WARC (and ARC) files member by member, trusting nothing; cutting a damaged tail.

warcio and cdxj-indexer both exit 0 on a ``.warc.gz`` whose last gzip member was cut short by a
crash, and cdxj-indexer even indexes the damaged record (warcio reads a member to its cut end
without checking its CRC). So this module walks the file itself, one gzip member at a time
(WARC 1.1 annex D: one member per record):

* every member must reach the end of its deflate stream with a valid CRC-32 and ISIZE (zlib
  checks both in gzip mode; ``eof`` tells whether the member ended);
* it must hold exactly one record: a version line, named fields, an empty line,
  ``Content-Length`` bytes of block, then the empty lines that end a record (WARC 1.1 section 4:
  CRLF CRLF), and nothing after them;
* the bytes after the last member must be nothing at all.

Uncompressed ``.warc`` files (records back to back) are read by the same record parser, and ARC
files (``.arc``, ``.arc.gz``: :mod:`archiver.warc.arc`) too, each ARC record given the head
warcio's ARC-to-WARC reading gives it.

**Files other tools wrote.** The record grammar is read as warcio and FastWARC read it, and what
they read that WARC 1.1 section 4 does not allow is kept as a *quirk* of the record (a warning,
not damage): header lines ended by a bare LF or by CR CR LF, a block followed by other empty
lines than CRLF CRLF (one CRLF, three, a request whose Content-Length is one short) or by none (a
``warcinfo`` whose Content-Length counts them, as webarchive-commons writes it), draft versions
``WARC/0.17`` and ``WARC/0.18``. With ``resync``, a walk goes on after a record it rejects: at the
next gzip member when the damaged member is itself whole, at the next member that holds a record
when it is not, and, in an uncompressed file, at the next line that starts a record. Every
region left out is one :class:`Damage`, with where the walk went on (:attr:`Damage.resumed`), so
a caller can say exactly what it did not read.

**Its own files.** Without ``resync`` the walk stops at the first damage: after a cut or corrupt
member nothing that follows can be trusted, and :func:`repair`, the startup step for ``.open``
files left by a crash (gowarc's ``warc mend``, Heritrix's "validate before renaming"), keeps
only the longest prefix of whole captures and reports what it removed. Renaming is the
caller's decision.

Everything streams: block bytes go to a caller's sink in bounded pieces, so a multi-gigabyte
record costs a few hundred KiB of memory.
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
from archiver.warc import arc

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
#: Bytes of a region searched at a time for where a resynchronising walk may go on.
_SCAN_STEP = 1 << 20

#: The versions of the standard (ISO 28500:2009 and :2017).
VERSIONS = ("WARC/1.0", "WARC/1.1")
#: What is read: the standard's versions and the drafts warcio reads (Heritrix 1 wrote 0.17).
READABLE_VERSIONS = (*VERSIONS, "WARC/0.17", "WARC/0.18")
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_START = b"\x1f\x8b\x08"  # the magic and deflate, the only method gzip defines
_CRLF2 = b"\r\n\r\n"
_VERSION_PREFIX = b"WARC/"
#: the empty line that ends a WARC header block, whatever ends its lines (CRLF, LF, CR CR LF)
_HEAD_END = re.compile(rb"\n\r*\n")
#: a line that starts a WARC record: where an uncompressed walk may go on after damage
_VERSION_LINE = re.compile(rb"WARC/\d+\.\d+[ \t]*\r*\n")
#: ``name: value``; a name is visible ASCII except ``:`` (RFC 5322 ftext, WARC 1.1 section 4)
_FIELD_LINE = re.compile(r"([\x21-\x39\x3b-\x7e]+):(.*)\Z", re.DOTALL)

#: Receives a record's block in order, piece by piece. A piece is only valid during the call.
BlockSink = Callable[[memoryview], object]


@dataclass(frozen=True, slots=True)
class RecordHead:
    """A record's WARC header as found on disk, before its extent is known.

    ``offset`` is where its gzip member (or, in an uncompressed file, the record) starts.
    Field names are matched case-insensitively (WARC 1.1 section 4); order and repeats are kept.
    An ARC record's ``version`` is ``ARC/1`` or ``ARC/2`` and its fields are the ones warcio
    gives it (:mod:`archiver.warc.arc`).
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
    def is_arc(self) -> bool:
        return self.version.startswith("ARC/")

    @property
    def record_type(self) -> str:
        return self.get("WARC-Type") or ""

    @property
    def record_id(self) -> str | None:
        return self.get("WARC-Record-ID")

    @property
    def target_uri(self) -> str | None:
        """``WARC-Target-URI`` as written (see :attr:`target` for the URI it names)."""
        return self.get("WARC-Target-URI")

    @property
    def target(self) -> str:
        """The URI ``WARC-Target-URI`` names, as warcio (and so cdxj-indexer and pywb) reads it:
        the angle brackets WARC 1.0's grammar put around it (which Wget writes) removed, spaces
        percent-encoded; ``""`` when there is none. Indexes, verify and ``--dedup-from`` all
        compare this form."""
        return target_uri_of(self.target_uri)

    @property
    def date(self) -> str | None:
        return self.get("WARC-Date")

    @property
    def content_length(self) -> int:
        """The block length; the parser only builds heads whose Content-Length is 1*DIGIT."""
        return int(self.get("Content-Length") or 0)


def target_uri_of(value: str | None) -> str:
    """The URI a ``WARC-Target-URI`` value names (see :attr:`RecordHead.target`)."""
    if value is None:
        return ""
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    return value.replace(" ", "%20")


@dataclass(frozen=True, slots=True)
class RecordInfo(RecordHead):
    """A whole, readable record: its head plus the length of its gzip member (or record)."""

    length: int
    #: in an uncompressed file, the bytes of the empty lines after the block, counted in
    #: ``length``: CDX(J) lengths leave them out (warcio's reading); 0 in a gzip file, whose
    #: index lengths are whole members
    trailer: int = 0
    #: what WARC 1.1 section 4 does not allow but warcio and FastWARC read: warnings
    quirks: tuple[str, ...] = ()

    @property
    def end(self) -> int:
        return self.offset + self.length

    @property
    def index_length(self) -> int:
        """The length an index line gives this record (cdxj-indexer's)."""
        return self.length - self.trailer


class DamageKind(enum.StrEnum):
    CUT = "cut"  #: the file ends inside a gzip member or a record
    CORRUPT = "corrupt"  #: invalid gzip data: bad header, deflate data, CRC or length check
    GARBAGE = "garbage"  #: bytes that are neither a gzip member nor a WARC record
    RECORD = "record"  #: a member (or record) that is not one well-formed WARC record
    MULTI = "multi"  #: a gzip member holding more than one record (whole-file gzip)


@dataclass(frozen=True, slots=True)
class Damage:
    """Where the walk found damage and why. ``head`` is the damaged record's header when
    readable. ``resumed`` is where a resynchronising walk went on (the file's size when it
    found nothing more to read); None when the walk stopped there."""

    offset: int
    kind: DamageKind
    reason: str
    head: RecordHead | None = None
    resumed: int | None = None
    #: a resynchronising walk found nothing more to read: ``resumed`` is the file's end
    last: bool = False

    def __str__(self) -> str:
        return f"offset {self.offset}: {self.reason}"

    @property
    def skipped(self) -> str:
        """What a resynchronising walk left out, in words (empty when it stopped)."""
        if self.resumed is None:
            return ""
        size = self.resumed - self.offset
        if self.last:
            return f"{size} bytes left out, to the end of the file"
        return f"{size} bytes left out, read on at offset {self.resumed}"


class _RecordError(Exception):
    def __init__(self, kind: DamageKind, reason: str, *, header_read: bool = False) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        #: a record header was read, though no head could be made of it (bytes of a record,
        #: not garbage)
        self.header_read = header_read


# ----------------------------------------------------------------------------- record parsing
_HEAD, _BLOCK, _TRAILER, _DONE = range(4)


class _RecordParser:
    """Parses one record from a byte stream fed in pieces; raises :class:`_RecordError`.

    After the block it takes the empty lines that end the record (CR and LF bytes) and stops at
    the first other byte without taking it: :attr:`closed`. Whether that byte may follow (the
    next record, or nothing in a gzip member) is the walker's to judge; :meth:`finish` ends the
    record where the bytes ran out.
    """

    __slots__ = (
        "_buf",
        "_on_block",
        "_quirks",
        "_remaining",
        "_sink",
        "_state",
        "closed",
        "head",
        "offset",
        "trailer",
    )

    def __init__(self, offset: int, on_block: Callable[[RecordHead], BlockSink | None] | None):
        self.offset = offset
        self._on_block = on_block
        self._state = _HEAD
        self._buf = bytearray()
        self._remaining = 0
        self._sink: BlockSink | None = None
        self._quirks: list[str] = []
        self.head: RecordHead | None = None
        self.trailer = 0  #: empty-line bytes after the block
        self.closed = False  #: a byte that is no line end came after the block

    @property
    def done(self) -> bool:
        return self._state == _DONE

    @property
    def block_done(self) -> bool:
        """The head and every byte of the block were read (the terminator may still follow)."""
        return self._state >= _TRAILER

    def feed(self, data: bytes | memoryview) -> int:
        """Consume bytes of this record; returns how many were used (fewer once it closed)."""
        view = memoryview(data)
        pos = 0
        end = len(view)
        while pos < end:
            state = self._state
            if state == _BLOCK:
                take = min(self._remaining, end - pos)
                if self._sink is not None:
                    self._sink(view[pos : pos + take])
                self._remaining -= take
                pos += take
                if self._remaining == 0:
                    self._state = _TRAILER
            elif state == _HEAD:
                pos += self._feed_header(view[pos:])
            elif state == _TRAILER:
                start = pos
                while pos < end and view[pos] in (13, 10):
                    pos += 1
                if pos - start and len(self._buf) < 16:
                    self._buf += view[start : min(pos, start + 16)]
                self.trailer += pos - start
                if pos < end:
                    self.closed = True
                    break
            else:
                break
        return pos

    def feed_member(self, data: bytes) -> None:
        """Feed decompressed bytes of a gzip member, which must hold nothing after the record."""
        used = self.feed(data)
        if used < len(data):
            rest = bytes(data[used : used + 5])
            if self.trailer and (
                _VERSION_PREFIX.startswith(rest) or rest.startswith(_VERSION_PREFIX)
            ):
                raise _RecordError(
                    DamageKind.MULTI,
                    "the gzip member holds more than one record (whole-file gzip?); "
                    "WARC annex D requires one member per record",
                )
            raise _RecordError(DamageKind.RECORD, self.not_followed())

    def not_followed(self) -> str:
        """Why the byte that closed the record may not follow it."""
        if self.trailer:
            return "bytes after the record's empty lines that start no record"
        return "the block is not followed by CRLF CRLF (wrong Content-Length?)"

    def finish(self) -> None:
        """The bytes of this record ended: at the end of its member or file, or where the next
        record starts. Raises :class:`_RecordError` if it is not whole."""
        if self._state < _TRAILER:
            raise _RecordError(DamageKind.CUT, self.incomplete())
        if self.head is not None and not self.head.is_arc:
            trailer = bytes(self._buf)
            if not self.trailer:
                self._quirks.append(
                    "no empty lines after the block (its Content-Length counts them?)"
                )
            elif trailer != _CRLF2 or self.trailer != 4:
                shown = trailer if self.trailer <= 16 else trailer + b"..."
                self._quirks.append(f"the block is followed by {shown!r}, not CRLF CRLF")
        self._buf.clear()
        self._state = _DONE

    def _feed_header(self, view: memoryview) -> int:
        buf = self._buf
        used = 0
        while used < len(view):
            before = len(buf)
            step = view[used : used + _HEAD_STEP]
            buf += step
            if buf.startswith(_VERSION_PREFIX) or _VERSION_PREFIX.startswith(buf):
                from_ = buf.rfind(b"\n", max(0, before - _HEAD_STEP), before)
                match = _HEAD_END.search(buf, from_ if from_ >= 0 else max(0, before - 1))
                if match is not None:
                    used += match.end() - before
                    self._start_block(bytes(buf[: match.start() + 1]))
                    buf.clear()
                    return used
                limit = MAX_HEADER
            else:
                cut = buf.find(b"\n", before)
                if cut >= 0:
                    used += cut + 1 - before
                    self._start_arc(bytes(buf[:cut]))
                    buf.clear()
                    return used
                limit = arc.MAX_LINE
            used += len(step)
            if len(buf) > limit:
                what = "WARC header" if limit == MAX_HEADER else "first line"
                raise _RecordError(DamageKind.RECORD, f"{what} larger than {limit} bytes")
        return used

    def _start_arc(self, line: bytes) -> None:
        try:
            header = arc.parse_header_line(line)
        except arc.ArcLengthError as exc:
            raise _RecordError(DamageKind.RECORD, str(exc), header_read=True) from None
        except arc.ArcLineError as exc:
            if line.startswith(_VERSION_PREFIX) or not line.strip():
                raise _RecordError(
                    DamageKind.RECORD, f"no WARC version line: {line[:20]!r}"
                ) from None
            raise _RecordError(
                DamageKind.RECORD, f"no WARC version line or ARC header line: {exc}"
            ) from None
        self._begin(RecordHead(self.offset, f"ARC/{header.version}", header.warc_headers()))

    def _start_block(self, raw: bytes) -> None:
        if b"\r\r\n" in raw:
            self._quirks.append("header lines end in CR CR LF, not CRLF")
        elif raw.count(b"\n") != raw.count(b"\r\n"):
            self._quirks.append("header lines end in LF, not CRLF")
        lines = [line.rstrip("\r") for line in raw.decode("utf-8", "replace").split("\n")[:-1]]
        version = lines[0].rstrip(" \t")
        if version not in READABLE_VERSIONS:
            raise _RecordError(
                DamageKind.RECORD, f"version line {version[:40]!r} is not WARC/1.0|1.1"
            )
        if version not in VERSIONS:
            self._quirks.append(f"{version}, a draft of the standard")
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
        self._begin(RecordHead(self.offset, version, tuple(fields)))

    def _begin(self, head: RecordHead) -> None:
        length = head.get("Content-Length")
        if length is None or not (length.isascii() and length.isdigit()):
            raise _RecordError(DamageKind.RECORD, f"missing or invalid Content-Length {length!r}")
        self.head = head
        self._remaining = int(length)
        self._state = _BLOCK if self._remaining else _TRAILER
        self._sink = self._on_block(head) if self._on_block is not None else None

    def incomplete(self) -> str:
        """Why the record is not whole, once its bytes ran out."""
        if self._state == _HEAD:
            return "the data ends inside the record's header"
        total = self.head.content_length if self.head is not None else 0
        return f"the block holds {total - self._remaining} of its {total} bytes (Content-Length)"

    def info(self, length: int, *, plain: bool) -> RecordInfo:
        assert self.head is not None
        head = self.head
        return RecordInfo(
            offset=head.offset,
            version=head.version,
            headers=head.headers,
            length=length,
            trailer=self.trailer if plain else 0,
            quirks=tuple(self._quirks),
            _by_name=head._by_name,
        )


# ----------------------------------------------------------------------------- walking a file
class _Region:
    """Sequential reads of the bytes ``[start, end)`` of an open file."""

    __slots__ = ("_buf", "_fh", "_i", "end", "pos")

    def __init__(self, fh: BinaryIO, start: int, end: int) -> None:
        self._fh = fh
        self.end = end
        self._buf = b""
        self._i = 0
        self.pos = start
        self.seek(start)

    def seek(self, pos: int) -> None:
        self._fh.seek(pos)
        self._buf = b""
        self._i = 0
        self.pos = pos

    def view(self, size: int, need: int = 1) -> memoryview:
        """Up to ``size`` bytes at the current position, at least ``need`` unless at the end."""
        while len(self._buf) - self._i < need:
            left = self.end - self.pos - (len(self._buf) - self._i)
            if left <= 0:
                break
            more = self._fh.read(min(max(READ_SIZE, need), left))
            if not more:
                break
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


Sinks = Callable[[RecordHead], BlockSink | None] | None


def _walk(
    fh: BinaryIO, start: int, end: int, on_block: Sinks, *, resync: bool = False
) -> Iterator[RecordInfo | Damage]:
    src = _Region(fh, start, end)
    if bytes(src.view(2, need=2)) == _GZIP_MAGIC:
        yield from _walk_gzip(src, on_block, resync)
    else:
        yield from _walk_plain(src, on_block, resync)


def _walk_gzip(src: _Region, on_block: Sinks, resync: bool) -> Iterator[RecordInfo | Damage]:
    while True:
        start = src.pos
        magic = bytes(src.view(2, need=2))
        if not magic:
            return
        if magic != _GZIP_MAGIC:
            found = _next_member(src, start + 1) if resync else None
            size = (found if found is not None else src.end) - start
            damage = Damage(
                start, DamageKind.GARBAGE, f"{size} bytes that are not gzip data", None, found
            )
            yield _resumed(damage, src, found, resync)
            if found is None:
                return
            src.seek(found)
            continue
        outcome = _member(src, start, on_block)
        if isinstance(outcome, RecordInfo):
            yield outcome
            continue
        damage, whole = outcome
        if not resync:
            yield damage
            return
        # a member that is itself whole ends where the next one starts; otherwise the next
        # member that holds a record is looked for after this one's first byte
        found = src.pos if whole else _next_member(src, start + 1)
        yield _resumed(damage, src, found, resync)
        if found is None or found >= src.end:
            return
        src.seek(found)


def _resumed(damage: Damage, src: _Region, found: int | None, resync: bool) -> Damage:
    if not resync:
        return damage
    last = found is None or found >= src.end
    resumed = src.end if found is None else found
    return Damage(damage.offset, damage.kind, damage.reason, damage.head, resumed, last)


def _member(src: _Region, start: int, on_block: Sinks) -> RecordInfo | tuple[Damage, bool]:
    """Read the gzip member at ``start``: its record, or (damage, whether the member itself is
    whole, so the walk may go on at its end, where ``src`` is left)."""
    inflater = zlib.decompressobj(wbits=31)
    parser = _RecordParser(start, on_block)
    ended = False  # the member's end was reached and ``src`` left there
    try:
        while not inflater.eof:
            piece = src.view(FEED_SIZE)
            if not piece:
                reason = (
                    f"the file ends inside the gzip member that starts here "
                    f"({src.pos - start} bytes of it present)"
                )
                return Damage(start, DamageKind.CUT, reason, parser.head), False
            src.advance(len(piece))
            parser.feed_member(inflater.decompress(piece, OUT_SIZE))
            while inflater.unconsumed_tail and not inflater.eof:
                parser.feed_member(inflater.decompress(inflater.unconsumed_tail, OUT_SIZE))
            if inflater.eof:  # the member ended inside this piece: the rest is the next one's
                src.rewind(len(inflater.unused_data))
                ended = True
        parser.finish()
    except zlib.error as exc:
        return Damage(start, DamageKind.CORRUPT, f"invalid gzip member: {exc}", parser.head), False
    except _RecordError as exc:
        # The record is parsed before zlib checks the CRC at the member's end: if the
        # member is corrupt, that is the cause to report, not the garbled header it produced.
        kind = DamageKind.RECORD if exc.kind is DamageKind.CUT else exc.kind
        corrupt, whole = (None, True) if ended else _rest_of_member(src, inflater)
        if corrupt is not None:
            return Damage(start, DamageKind.CORRUPT, corrupt, parser.head), False
        return Damage(start, kind, exc.reason, parser.head), whole
    return parser.info(src.pos - start, plain=False)


def _rest_of_member(src: _Region, inflater: zlib._Decompress) -> tuple[str | None, bool]:
    """Inflate the rest of a member, output discarded: (why it is invalid gzip or None, whether
    it reached its end, ``src`` left there: the bytes zlib read past it given back)."""
    try:
        while not inflater.eof:
            if inflater.unconsumed_tail:
                inflater.decompress(inflater.unconsumed_tail, OUT_SIZE)
                continue
            piece = src.view(FEED_SIZE)
            if not piece:
                return None, False
            src.advance(len(piece))
            inflater.decompress(piece, OUT_SIZE)
    except zlib.error as exc:
        return f"invalid gzip member: {exc}", False
    src.rewind(len(inflater.unused_data))
    return None, True


def _next_member(src: _Region, at: int) -> int | None:
    """The first offset from ``at`` where a gzip member starts whose data begins a record (a
    WARC version line or an ARC header line); None when there is none."""
    pos = at
    while pos < src.end:
        src.seek(pos)
        window = bytes(src.view(_SCAN_STEP, need=min(_SCAN_STEP, src.end - pos)))
        if len(window) < 3:
            return None
        i = window.find(_GZIP_START)
        while i >= 0:
            if _starts_record(src, pos + i):
                return pos + i
            i = window.find(_GZIP_START, i + 1)
        pos += max(len(window) - 2, 1)
    return None


def _starts_record(src: _Region, at: int) -> bool:
    """Whether a gzip member at ``at`` inflates to the start of a record."""
    src.seek(at)
    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(bytes(src.view(FEED_SIZE)), 4096)
    except zlib.error:
        return False
    return _record_start(out)


def _record_start(data: bytes) -> bool:
    """Whether ``data`` begins with a WARC version line or an ARC header line."""
    if data.startswith(_VERSION_PREFIX):
        return _VERSION_LINE.match(data) is not None or len(data) < 16
    line, newline, _ = data.partition(b"\n")
    return bool(newline) and arc.looks_like_header_line(line)


def _walk_plain(src: _Region, on_block: Sinks, resync: bool) -> Iterator[RecordInfo | Damage]:
    while True:
        start = src.pos
        if not src.view(1):
            return
        parser = _RecordParser(start, on_block)
        damage: Damage | None = None
        try:
            while not parser.closed:
                piece = src.view(READ_SIZE)
                if not piece:
                    break
                src.advance(parser.feed(piece))
            if parser.closed:
                ahead = bytes(src.view(64, need=64))
                if not parser.trailer and not _record_start(ahead):
                    raise _RecordError(DamageKind.RECORD, parser.not_followed())
            parser.finish()
        except _RecordError as exc:
            kind = exc.kind
            if parser.head is None and not exc.header_read:
                kind = DamageKind.GARBAGE
            damage = Damage(start, kind, exc.reason, parser.head)
        if damage is None:
            yield parser.info(src.pos - start, plain=True)
            continue
        if not resync:
            yield damage
            return
        found = _next_line_record(src, start + 1)
        yield _resumed(damage, src, found, resync)
        if found is None:
            return
        src.seek(found)


def _next_line_record(src: _Region, at: int) -> int | None:
    """The first offset after ``at`` where a line starts a record (a WARC version line, or an
    ARC header line); None when there is none."""
    pos = at
    while pos < src.end:
        src.seek(pos)
        want = _SCAN_STEP + arc.MAX_LINE
        window = bytes(src.view(want, need=min(want, src.end - pos)))
        final = pos + len(window) >= src.end
        limit = len(window) if final else _SCAN_STEP
        i = window.find(b"\n")
        while 0 <= i < limit:
            if _record_start(window[i + 1 : i + 1 + arc.MAX_LINE]):
                return pos + i + 1
            i = window.find(b"\n", i + 1)
        if final:
            return None
        pos += _SCAN_STEP
    return None


def is_gzip(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts with a gzip member (else its records are uncompressed)."""
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def iter_records(
    path: str | os.PathLike[str],
    *,
    on_block: Callable[[RecordHead], BlockSink | None] | None = None,
    resync: bool = False,
) -> Iterator[RecordInfo | Damage]:
    """Yield every whole record of a WARC (or ARC) file, and a :class:`Damage` where the walk
    found damage: the last item without ``resync``, one per region left out with it.

    ``on_block(head)`` is called when a record's header has been read; the sink it returns gets
    the block in pieces. The record is yielded only once its member proved whole, so a sink fed
    for a record that ends in damage must be discarded. The file's size is taken when the walk
    starts: bytes appended meanwhile (a live ``.open`` file) are not read.
    """
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        yield from _walk(fh, 0, size, on_block, resync=resync)


def read_record_at(
    path: str | os.PathLike[str],
    offset: int,
    length: int,
    *,
    on_block: Callable[[RecordHead], BlockSink | None] | None = None,
) -> RecordInfo:
    """The one record stored in ``[offset, offset + length)``, as an index line points at it.

    The slice must be exactly one whole gzip member (or one record, uncompressed, with or
    without the empty lines after it) holding exactly one record: what a CDX(J) consumer
    assumes when it decompresses it on its own. Raises :class:`WarcFormatError` otherwise.
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
        raise WarcFormatError(f"{path}: no whole record header at offset {offset}")
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
