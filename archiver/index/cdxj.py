"""CDXJ (pywb) and CDX-11 (OpenWayback) indexes, built from what the writer recorded.

The writer appends one CDXJ line per capture to a journal next to each WARC as it writes, using
the offsets and lengths it just produced; building the crawl's index is then a byte-order merge
sort of those lines (external, so memory stays bounded for millions of captures), never a second
pass over the WARC files.

Lines are exactly what cdxj-indexer writes for the same records (the CDXJ pywb reads): the key
``surt.surt`` gives (what pywb binary-searches with; :mod:`archiver.index.surtkey` builds it), the
14-digit timestamp of ``WARC-Date``, and ``{"url", "mime", "status", "digest", "length", "offset",
"filename"}`` as strings in that order, ``mime`` omitted when the response has no Content-Type
(``""`` when it has an empty one), serialised with ``json.dumps`` defaults. Sorting is by UTF-8 byte
order (``LC_ALL=C``); ``json.dumps`` output is ASCII, so Python string order is byte order.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from archiver import atomicfile
from archiver.index.payload import (
    BlockPayload,
    HttpPayload,
    computed_digest,
    has_http_head,
    payload_for,
)
from archiver.index.postquery import PostKey, post_key
from archiver.index.surtkey import surt_key
from archiver.models import WrittenRecord
from archiver.timefmt import timestamp14
from archiver.warc import reader as warc_reader
from archiver.warc.records import IndexFields, cdx_mime
from archiver.warc.writer import IndexJournal

JOURNAL_SUFFIX = ".cdxj"
CDX11_LEGEND = " CDX N b a m s k r M S V g"
SORT_CHUNK_LINES = 500_000


def cdxj_line(record: WrittenRecord, url: str | None = None, post: PostKey | None = None) -> str:
    """One CDXJ line for a written record; a POST or PUT capture's ``post`` key makes its key
    and adds ``requestBody`` and ``method`` (cdxj-indexer ``--post-append``)."""
    target = url or record.target_uri
    fields: dict[str, str | None] = {"url": target}
    if record.mime is not None:
        fields["mime"] = record.mime
    if record.status is not None:
        fields["status"] = str(record.status)
    if record.payload_digest:
        fields["digest"] = record.payload_digest
    fields["length"] = str(record.length)
    fields["offset"] = str(record.offset)
    fields["filename"] = record.filename
    key = target
    if post is not None:
        key = post.url
        fields["requestBody"] = post.request_body
        fields["method"] = post.method
    return f"{surt_key(key)} {timestamp14(record.date)} {json.dumps(fields)}"


def journal_line(record: WrittenRecord, index: IndexFields) -> str:
    """The writer's journal line for a capture's primary record."""
    post = post_key(index.url, index.request) if index.request is not None else None
    return cdxj_line(record, index.url, post)


def writer_journal(directory: Path) -> IndexJournal:
    """What the WARC writer needs to journal the CDXJ line of every capture it writes."""
    return IndexJournal(directory, JOURNAL_SUFFIX, journal_line)


def cdx11_line(cdxj: str) -> str:
    """The classic 11-field CDX line (``N b a m s k r M S V g``) for a CDXJ line."""
    key, ts, data = cdxj.split(" ", 2)
    fields = json.loads(data)
    digest = fields.get("digest", "-").split(":")[-1]
    return " ".join(
        [
            key,
            ts,
            fields.get("url", "-"),
            fields.get("mime") or "-",  # "-" also for an empty one: fields are space-separated
            fields.get("status", "-"),
            digest or "-",
            "-",
            "-",
            fields.get("length", "-"),
            fields.get("offset", "-"),
            fields.get("filename", "-"),
        ]
    )


def journals(index_directory: Path) -> list[Path]:
    if not index_directory.is_dir():
        return []
    return sorted(index_directory.glob("*" + JOURNAL_SUFFIX))


def _read_lines(paths: Iterable[Path], prefix: str = "") -> Iterator[str]:
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for raw in fh:
                line = raw.rstrip("\n")
                if line:
                    yield prefix + line if prefix else line


def _relative(line: str, prefix: str) -> str:
    """Prefix the filename field (the WARC's path relative to the index's WARC root)."""
    key, ts, data = line.split(" ", 2)
    fields = json.loads(data)
    fields["filename"] = prefix + fields["filename"]
    return f"{key} {ts} {json.dumps(fields)}"


def sorted_lines(lines: Iterable[str], *, chunk: int = SORT_CHUNK_LINES) -> Iterator[str]:
    """Byte-order sort with bounded memory: sorted runs on disk, then a k-way merge."""
    runs: list[Path] = []
    buffer: list[str] = []
    tmpdir = tempfile.mkdtemp(prefix="archiver-sort-")
    try:
        for line in lines:
            buffer.append(line)
            if len(buffer) >= chunk:
                runs.append(_write_run(buffer, tmpdir, len(runs)))
                buffer = []
        if not runs:
            buffer.sort()
            yield from buffer
            return
        if buffer:
            runs.append(_write_run(buffer, tmpdir, len(runs)))
            buffer = []
        handles = [open(run, encoding="utf-8") for run in runs]  # noqa: SIM115
        try:
            for line in heapq.merge(*handles):
                yield line.rstrip("\n")
        finally:
            for handle in handles:
                handle.close()
    finally:
        for run in runs:
            run.unlink(missing_ok=True)
        os.rmdir(tmpdir)


def _write_run(buffer: list[str], tmpdir: str, number: int) -> Path:
    buffer.sort()
    path = Path(tmpdir) / f"run-{number:05d}"
    with open(path, "w", encoding="utf-8") as fh:
        for line in buffer:
            fh.write(line + "\n")
    return path


@dataclass(slots=True)
class ScanReport:
    """What reading WARC files record by record left out, and the quirks it read past.

    Each region a resynchronising walk could not read is one
    :class:`~archiver.warc.reader.Damage` (its offset, why, how many bytes were left out):
    ``archiver index`` prints each on stderr and exits non-zero unless told to accept them
    (docs/foreign-files.md).
    """

    left_out: list[tuple[Path, warc_reader.Damage]] = field(default_factory=list)
    #: (file, offset, quirk): readable records outside WARC 1.1 section 4's grammar
    quirks: list[tuple[Path, int, str]] = field(default_factory=list)
    #: records read that cannot have an index line (a response without WARC-Target-URI)
    unindexable: list[tuple[Path, int, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.left_out and not self.unindexable


def build_index(
    journal_dirs: Iterable[tuple[Path, str]],
    output: Path,
    *,
    warcs: Iterable[Path] = (),
    cdx11: Path | None = None,
    report: ScanReport | None = None,
) -> int:
    """Merge journals (and the lines of ``warcs`` that have none, read record by record) into
    a sorted CDXJ, and optionally a CDX-11; returns the line count.

    ``journal_dirs`` pairs each journal directory with the path prefix (``"warcs/"``) that makes
    its WARC file names relative to the index's WARC root; the lines of ``warcs`` name the files
    by their base names, and what reading them left out goes to ``report``. Files are written
    atomically (temporary name, then rename), so a crash never leaves a half-written index.
    """

    def all_lines() -> Iterator[str]:
        for directory, prefix in journal_dirs:
            for line in _read_lines(journals(directory)):
                yield _relative(line, prefix) if prefix else line
        for warc in warcs:
            yield from scan_warc(warc, report=report)

    count = write_lines_atomically(output, sorted_lines(all_lines()))
    if cdx11 is not None:
        write_cdx11(output, cdx11)
    return count


def scan_warc(
    path: Path, filename: str | None = None, *, report: ScanReport | None = None
) -> list[str]:
    """CDXJ lines for a WARC (or ARC) file that has no journal, read record by record.

    Used for other tools' files and for files whose writer died before it closed them. The
    lines are what cdxj-indexer ``--post-append`` writes for the same records (its fields come
    from warcio's parsing, which :func:`_http_fields` follows; a response and its request
    record next to it are paired as it pairs them), except where it is wrong:

    * a record that declares no ``WARC-Payload-Digest`` (ARC records, some tools' resources) is
      given the digest of its payload as WARC 1.1 section 5.9 defines it
      (:mod:`archiver.index.payload`: chunked coding removed), not of the body as stored;
    * a damaged record is left out and the walk goes on after it (:mod:`archiver.warc.reader`,
      ``resync``), each region left out reported in ``report``; cdxj-indexer indexes a member
      cut short, and stops at the first record it cannot parse.
    """
    name = filename or path.name.removesuffix(".open")
    lines: list[str] = []
    pairing = _Pairing(lines)
    http_head: _HttpHead | None = None
    payload: HttpPayload | BlockPayload | None = None

    def on_block(head: warc_reader.RecordHead) -> warc_reader.BlockSink | None:
        nonlocal http_head, payload
        http_head = _HttpHead() if has_http_head(head) else None
        payload = payload_for(head)
        if head.record_type == "request":
            return pairing.request_sink()
        sinks = [sink for sink in (http_head, payload.feed if payload else None) if sink]
        if len(sinks) > 1:
            return lambda piece: [sink(piece) for sink in sinks]
        return sinks[0] if sinks else None

    for item in warc_reader.iter_records(path, on_block=on_block, resync=True):
        if isinstance(item, warc_reader.Damage):
            if report is not None:
                report.left_out.append((path, item))
            pairing.forget()
            continue
        if report is not None:
            report.quirks.extend((path, item.offset, quirk) for quirk in item.quirks)
        kind = item.record_type
        if kind in ("response", "revisit", "request") and item.content_length and not item.target:
            if report is not None:
                report.unindexable.append(
                    (path, item.offset, f"a {kind} record without WARC-Target-URI")
                )
            pairing.forget()
            continue
        if not _indexed(kind, item.get("Content-Type")):
            pairing.seen(item, None)
            continue
        status, content_type = _http_fields(http_head) if http_head else (None, None)
        if kind == "revisit":
            mime: str | None = "warc/revisit"
        elif kind == "response":  # the HTTP Content-Type; none without an HTTP head
            mime = cdx_mime(content_type)
        else:  # resource, metadata: the record's own Content-Type
            mime = cdx_mime(item.get("Content-Type"))
        digest = item.get("WARC-Payload-Digest")
        if digest is None and payload is not None:
            digest = computed_digest(payload)
        written = WrittenRecord(
            record_type=kind,
            record_id=item.record_id or "",
            target_uri=item.target,
            date=item.date or "",
            filename=name,
            offset=item.offset,
            length=item.index_length,
            status=status,
            mime=mime,
            payload_digest=digest,
        )
        lines.append(cdxj_line(written))
        pairing.seen(item, written)
    return lines


#: Bytes of a request record's block read for its body's parameters (POST, PUT).
MAX_REQUEST_BLOCK = 8 << 20


class _Pairing:
    """cdxj-indexer's pairing of a response with the request record next to it (before or
    after it, ``WARC-Concurrent-To`` naming the other, the same target URI): a POST or PUT
    request gives the response's line its key (:mod:`archiver.index.postquery`)."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        #: the record before this one, unless it was paired already: its head, its line's
        #: place and record (a response), its block (a request)
        self._previous: tuple[warc_reader.RecordHead, int, WrittenRecord | None, bytes] | None
        self._previous = None
        self._block = bytearray()

    def request_sink(self) -> warc_reader.BlockSink:
        self._block = bytearray()

        def collect(piece: memoryview) -> None:
            if len(self._block) < MAX_REQUEST_BLOCK:
                self._block += piece[: MAX_REQUEST_BLOCK - len(self._block)]

        return collect

    def forget(self) -> None:
        """Records were left out here: nothing before pairs with what comes next."""
        self._previous = None
        self._block = bytearray()

    def seen(self, head: warc_reader.RecordHead, written: WrittenRecord | None) -> None:
        """The record just read (``written``: its index record, when it has a line)."""
        block = bytes(self._block) if head.record_type == "request" else b""
        self._block = bytearray()
        previous, self._previous = self._previous, (head, len(self._lines) - 1, written, block)
        if previous is None:
            return
        first, line, first_written, first_block = previous
        if head.target != first.target or head.get("WARC-Concurrent-To") != (first.record_id):
            return
        self._previous = None  # a pair: neither record pairs with the next one
        if first.record_type == "response" and head.record_type == "request":
            response, at, request = first_written, line, block
        elif first.record_type == "request" and head.record_type == "response":
            response, at, request = written, len(self._lines) - 1, first_block
        else:
            return
        if response is None:
            return
        post = post_key(response.target_uri, request)
        if post is not None:
            self._lines[at] = cdxj_line(response, post=post)


#: Bytes of a record's block kept for its HTTP head (warcio reads it line by line, unbounded).
MAX_HTTP_HEAD = 1 << 20
_BLANK_LINE = re.compile(rb"(?:\A|\n)[ \t\r]*\n")


class _HttpHead:
    """Collects the start of a block up to the first blank line (the end of an HTTP head)."""

    __slots__ = ("data", "ended")

    def __init__(self) -> None:
        self.data = bytearray()
        self.ended = False

    def __call__(self, piece: memoryview) -> None:
        if self.ended:
            return
        start = max(self.data.rfind(b"\n"), 0)  # a blank line may begin in what came before
        self.data += piece[: MAX_HTTP_HEAD - len(self.data)]
        if len(self.data) >= MAX_HTTP_HEAD or _BLANK_LINE.search(self.data, start):
            self.ended = True


def _indexed(kind: str, content_type: str | None) -> bool:
    """cdxj-indexer's default records: responses, revisits, and resources and metadata
    records unless they are ``application/warc-fields`` (request records never)."""
    if kind in ("response", "revisit"):
        return True
    return kind in ("resource", "metadata") and content_type != "application/warc-fields"


def _http_fields(head: _HttpHead) -> tuple[int | None, str | None]:
    """The status code and the first Content-Type of an HTTP head, read as warcio's
    ``StatusAndHeadersParser`` (without verification) reads them: line by line, each line
    decoded as UTF-8 or else ISO-8859-1 and stripped at its end; a blank line ends the head;
    continuation lines are appended to the field before them; lines without a colon dropped."""
    lines = iter(bytes(head.data).split(b"\n"))

    def next_line() -> str:
        raw = next(lines, b"")
        try:
            return raw.decode("utf-8").rstrip()
        except UnicodeDecodeError:
            return raw.decode("iso-8859-1").rstrip()

    status_line = next_line()
    parts = status_line.split(" ", 1)
    code = parts[1].strip().split(" ", 1)[0] if len(parts) > 1 else ""
    status = int(code) if code.isascii() and code.isdigit() else None
    content_type: str | None = None
    line = next_line() if status_line else ""  # no status line: no head at all
    while line and content_type is None:
        name, colon, value = line.partition(":")
        value = value.lstrip()
        following = next_line()
        while following and following.startswith((" ", "\t")):
            value += following
            following = next_line()
        if colon and name.rstrip(" \t").lower() == "content-type":
            content_type = value
        line = following
    return status, content_type


def truncate_journal(journal: Path, size: int) -> int:
    """Drop journal lines that point at or beyond ``size`` (after a WARC repair); returns kept."""
    if not journal.exists():
        return 0
    kept: list[str] = []
    for line in _read_lines([journal]):
        try:
            fields = json.loads(line.split(" ", 2)[2])
            end = int(fields["offset"]) + int(fields["length"])
        except (IndexError, KeyError, ValueError):
            continue
        if end <= size:
            kept.append(line)
    write_lines_atomically(journal, kept)
    return len(kept)


def write_lines_atomically(path: Path, lines: Iterable[str]) -> int:
    """Write ``lines`` to ``path`` through a temporary name and a rename; returns the count.

    Readers (pywb, a resumed run) see either the old file or the whole new one, never a
    half-written index, even when the process dies mid-write.
    """
    count = 0
    with atomicfile.replacing(path) as fh:
        for line in lines:
            fh.write(line + "\n")
            count += 1
    return count


def write_cdx11(cdxj: Path, target: Path) -> None:
    """The 11-field CDX for a sorted CDXJ file (sorted again: its fields order differently)."""
    with open(cdxj, encoding="utf-8") as src:
        rows = sorted_lines(cdx11_line(row.rstrip("\n")) for row in src)
        write_lines_atomically(target, itertools.chain([CDX11_LEGEND], rows))
