"""The single writer: the only code that touches WARC files.

Workers hand over whole captures (:class:`~archiver.warc.records.PendingCapture`) and await the
:class:`~archiver.models.WrittenCapture` that says where each record landed. One coroutine owns
every file handle; the blocking work (compression, ``write``, ``fsync``) runs on one dedicated
thread, a batch of captures per hop, so the event loop stays responsive and no two writes
interleave.

File rules:

* names ``{prefix}-{timestamp17}-{serial:05}-{host}.warc.gz`` (:mod:`archiver.warc.naming`),
  written as ``….warc.gz.open`` and renamed once sealed; files are created with ``O_EXCL`` and an
  existing name is never overwritten (the serial moves on instead);
* one gzip member per record (WARC 1.1 annex D), so every index offset/length slice decompresses
  alone; ``warcinfo`` first in every file;
* a capture is never split across files: rotation happens *before* a capture once the file has
  reached ``max_size`` (so a file can exceed it by at most one capture);
* memory: a record is compressed from its spool a chunk at a time and written as it goes
  (:data:`READ_CHUNK`, :data:`WRITE_BUFFER`), so writing costs a few megabytes whatever the
  size of a body;
* durability: each capture is written with ``os.write`` straight to the file (survives a
  killed process); the file is fsynced at least every ``fsync_interval`` seconds, at rotation and at
  close, and the directory after the ``.open`` rename (survives power loss);
* a write error (disk full, I/O error) truncates the file back to the last whole capture, closes
  it, and fails every pending capture with :class:`~archiver.errors.WriteError`: loud, and no
  half-written record is left in a closed file.

For every capture's primary record the writer also appends an index line to a per-WARC journal
(``<journal dir>/<warc name>.cdxj``), so the final index is a merge of those lines and never
needs a second pass over the WARCs. What a line says is the index's business: the writer is
given the function (:class:`IndexJournal`, built by :func:`archiver.index.cdxj.writer_journal`),
so the WARC layer does not depend on the index layer above it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import threading
import time
import types
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from warcio.statusandheaders import StatusAndHeaders

from archiver.errors import WriteError
from archiver.models import WrittenCapture, WrittenRecord
from archiver.spool import Spool
from archiver.warc.naming import OPEN_SUFFIX, safe_name_part, serial_of, warc_name
from archiver.warc.records import (
    WARC_VERSION,
    IndexFields,
    PendingCapture,
    PendingRecord,
    RecordFactory,
)

_zlib_impl: types.ModuleType
try:  # a faster deflate with the same output format (standard gzip members)
    from isal import isal_zlib

    _zlib_impl, COMPRESSOR = isal_zlib, "isal"
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
    _zlib_impl, COMPRESSOR = zlib, "zlib"

MAX_BATCH = 64
#: captures waiting for the writer at most (a worker waits to queue one more)
QUEUE_SIZE = 256
#: bytes of a spooled block read and compressed at a time
READ_CHUNK = 1024 * 1024
#: compressed bytes gathered before a ``write``: small captures go out in one call each, a large
#: one in pieces of about this size; with :data:`READ_CHUNK` this bounds the writer's memory
#: whatever the size of a record (about ``READ_CHUNK + 2 * WRITE_BUFFER``)
WRITE_BUFFER = 1024 * 1024


class _Compressor(Protocol):
    def compress(self, data: bytes | bytearray | memoryview, /) -> bytes: ...

    def flush(self, mode: int = ..., /) -> bytes: ...


#: The index line of a capture's primary record, given what the index says of the capture.
IndexLine = Callable[[WrittenRecord, IndexFields], str]


@dataclass(frozen=True, slots=True)
class IndexJournal:
    """Where and how the writer journals one index line per capture, a file per WARC file."""

    directory: Path
    suffix: str  #: ``<directory>/<WARC file name><suffix>``
    line: IndexLine

    def path(self, warc_name: str) -> Path:
        return self.directory / (warc_name + self.suffix)


@dataclass(frozen=True, slots=True)
class WriterConfig:
    directory: Path  #: where WARC files go
    journal: IndexJournal  #: the per-WARC index journals
    prefix: str = "ARCHIVER"
    host: str = field(default_factory=socket.gethostname)
    max_size: int = 1_000_000_000
    fsync_interval: float = 5.0
    compress_level: int = 1  #: isal levels 0-3 (zlib fallback: 1-9)
    warcinfo_fields: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class WriterStats:
    files: int = 0
    records: int = 0
    captures: int = 0
    bytes: int = 0
    current_file: str | None = None


class _OpenFile:
    """The WARC file being written, and its index journal (lines kept until the batch ends,
    then appended in one ``write``, so that a failed batch can be taken back whole)."""

    def __init__(self, path: Path, fd: int, journal_path: Path, journal: int, info: str) -> None:
        self.path = path  # with the .open suffix
        self.fd = fd
        self.journal_path = journal_path
        self.journal = journal  #: the journal's file descriptor, opened for append
        self.journal_size = os.fstat(journal).st_size
        self.lines: list[str] = []  #: journal lines of the batch being written
        self.warcinfo_id = info
        self.size = 0
        self.good_size = 0  #: size after the last whole record group (warcinfo or capture)
        #: sizes (WARC, journal) where the batch being written began in this file
        self.batch_mark = (0, self.journal_size)
        #: the file was made by the batch being written (it holds no capture from before)
        self.new = True
        self.last_fsync = time.monotonic()

    @property
    def final_name(self) -> str:
        return self.path.name.removesuffix(OPEN_SUFFIX)


WriteFn = Callable[[int, bytes | bytearray | memoryview], int]


class _MemberOutput:
    """Compressed bytes on their way to the file: gathered up to :data:`WRITE_BUFFER`, then
    written, so a capture's members are never held whole in memory; ``produced`` counts every
    byte handed in (a member's offset and length are differences of it)."""

    __slots__ = ("_buffer", "_write", "produced")

    def __init__(self, write: Callable[[bytearray], None]) -> None:
        self._write = write
        self._buffer = bytearray()
        self.produced = 0

    def add(self, data: bytes) -> None:
        self.produced += len(data)
        self._buffer += data
        if len(self._buffer) >= WRITE_BUFFER:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self._write(self._buffer)
            self._buffer = bytearray()


#: A capture waiting to be written, and the future its worker awaits.
_Queued = tuple[PendingCapture, "asyncio.Future[WrittenCapture]"]


class Writer:
    """Owns the WARC files. Start it, ``await write(capture)`` from workers, ``await close()``."""

    def __init__(
        self,
        config: WriterConfig,
        factory: RecordFactory,
        *,
        write_fn: WriteFn = os.write,
        auto_seal: bool = True,
        guard: Callable[[], str | None] | None = None,
    ) -> None:
        self.config = config
        self.factory = factory
        self.stats = WriterStats()
        self._write_fn = write_fn  # injectable so tests can simulate a full disk
        #: asked before every batch (on the writer's thread): a reason not to write any more
        #: (the output directory gone, free space under the floor) fails the batch, and every
        #: capture after it, with that reason
        self._guard = guard
        self._queue: asyncio.Queue[_Queued | None] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc-writer")
        self._task: asyncio.Task[None] | None = None
        self._file: _OpenFile | None = None
        self._serial = self._next_serial()
        self._failure: WriteError | None = None
        self.closed_files: list[Path] = []
        #: seal files as soon as they are closed (standalone use); the crawler seals itself
        self._auto_seal = auto_seal
        self._retired: dict[str, Path] = {}
        #: files holding a capture whose writer was no longer waiting for it (its worker was
        #: cancelled: an immediate stop, a grace period run out): no one will commit it, so
        #: the file must keep its ``.open`` name for the resume repair to cut it
        self._unclaimed: set[str] = set()
        self._retired_lock = threading.Lock()

    # -- coroutine side ----------------------------------------------------------------------

    def start(self) -> None:
        self.config.directory.mkdir(parents=True, exist_ok=True)
        self.config.journal.directory.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._run(), name="warc-writer")

    @property
    def failure(self) -> WriteError | None:
        return self._failure

    async def write(self, capture: PendingCapture) -> WrittenCapture:
        """Queue a capture and wait until it is written (flushed to the OS)."""
        if self._failure is not None:
            capture.close()
            raise self._failure
        if self._task is None or self._task.done():
            capture.close()
            raise WriteError("the WARC writer is not running")
        future: asyncio.Future[WrittenCapture] = asyncio.get_running_loop().create_future()
        await self._queue.put((capture, future))
        try:
            return await future
        except asyncio.CancelledError:
            # Cancelled after the capture was written but before this task took the result
            # (the result was set, the cancellation came first in the loop): nobody will
            # count or commit it, so its file must stay .open like any unclaimed one.
            if future.done() and not future.cancelled() and future.exception() is None:
                with self._retired_lock:
                    self._unclaimed.add(future.result().filename)
            raise

    async def close(self, *, drain: bool = True) -> None:
        """Write what is queued (unless ``drain`` is False), close the file, stop the thread."""
        if self._task is not None and not self._task.done():
            if not drain:
                self._discard_queued()
            await self._queue.put(None)
            await asyncio.shield(self._task)
        self._discard_queued()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._close_file)
        finally:
            self._executor.shutdown(wait=True)

    def _discard_queued(self) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if item is not None:
                capture, future = item
                capture.close()
                if not future.done():
                    future.set_exception(WriteError("the writer stopped before this capture"))

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            item = await self._queue.get()
            if item is None:
                return
            batch, stop = self._take_batch(item)
            captures = [capture for capture, _ in batch]
            job = loop.run_in_executor(self._executor, self._write_batch, captures)
            try:
                results, error = await asyncio.shield(job)
            except asyncio.CancelledError:
                await asyncio.wait([job])  # never leave the thread writing unsupervised
                raise
            finally:
                for capture in captures:
                    capture.close()
            self._settle(batch, results, error)
            if stop:
                return

    def _take_batch(self, first: _Queued) -> tuple[list[_Queued], bool]:
        """``first`` and what else is queued, up to :data:`MAX_BATCH`; whether close() asked
        the writer to stop after it."""
        batch = [first]
        while len(batch) < MAX_BATCH:
            try:
                nxt = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if nxt is None:
                return batch, True
            batch.append(nxt)
        return batch, False

    def _settle(
        self, batch: list[_Queued], results: list[WrittenCapture], error: WriteError | None
    ) -> None:
        """Hand each waiting worker its result; after a write error, fail the rest for good.

        A result nobody waits for any more (its worker was cancelled) marks its file as
        unclaimed: that capture will never be committed."""
        for (_, future), result in zip(batch, results, strict=False):
            if future.cancelled():
                with self._retired_lock:
                    self._unclaimed.add(result.filename)
            elif not future.done():
                future.set_result(result)
        if error is not None:
            self._failure = error
            for _, future in batch[len(results) :]:
                if not future.done():
                    future.set_exception(error)
            self._discard_queued()

    # -- thread side ----------------------------------------------------------------------

    def _name_prefix(self) -> str:
        """The prefix as file names carry it (cleaned of anything unsafe in a name)."""
        return safe_name_part(self.config.prefix, default="ARCHIVER")

    def _next_serial(self) -> int:
        """Continue after the highest serial already in the directory (resume-safe names)."""
        highest = -1
        directory = self.config.directory
        prefix = self._name_prefix()  # as the names write it
        if directory.is_dir():
            for path in directory.iterdir():
                serial = serial_of(path.name, prefix)
                if serial is not None:
                    highest = max(highest, serial)
        return highest + 1

    def _open_new_file(self) -> _OpenFile:
        cfg = self.config
        host = safe_name_part(cfg.host)
        prefix = self._name_prefix()
        while True:
            name = warc_name(prefix, self.factory.clock(), self._serial, host)
            self._serial += 1
            final = cfg.directory / name
            open_path = cfg.directory / (name + OPEN_SUFFIX)
            if final.exists():
                continue
            try:
                fd = os.open(open_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            break
        journal_path = cfg.journal.path(name)
        try:
            journal = os.open(journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            os.close(fd)
            open_path.unlink()
            raise OSError(exc.errno, exc.strerror, str(journal_path)) from exc
        info = self.factory.warcinfo(name, cfg.warcinfo_fields)
        handle = _OpenFile(open_path, fd, journal_path, journal, info.record_id)
        try:
            out = self._output(handle)
            self._write_member(out, info, handle)
            out.flush()
        except OSError:
            os.close(fd)
            os.close(journal)
            open_path.unlink()  # holds no capture: nothing to keep
            journal_path.unlink()
            raise
        handle.good_size = handle.size
        handle.batch_mark = (handle.size, handle.journal_size)
        self.stats.files += 1
        self.stats.current_file = name
        return handle

    def _write_member(self, out: _MemberOutput, record: PendingRecord, handle: _OpenFile) -> int:
        """Compress one record into one gzip member (WARC 1.1 annex D), streamed into ``out``;
        its length.

        The block is read from its spool a chunk at a time and each chunk's compressed bytes go
        to ``out`` at once, so a gigabyte body costs a chunk of memory, not the whole record
        (twice: the member, then the capture's members joined)."""
        head = record_head(record, handle.warcinfo_id)
        compressor: _Compressor = _zlib_impl.compressobj(
            self.config.compress_level, zlib.DEFLATED, 31
        )
        start = out.produced
        out.add(compressor.compress(head))
        block = record.block
        if isinstance(block, Spool):
            for chunk in block.chunks(READ_CHUNK):
                out.add(compressor.compress(chunk))
        else:
            out.add(compressor.compress(block))
        out.add(compressor.compress(b"\r\n\r\n"))
        out.add(compressor.flush())
        return out.produced - start

    def _output(self, handle: _OpenFile) -> _MemberOutput:
        return _MemberOutput(lambda data: self._write_all(handle, data))

    def _write_all(self, handle: _OpenFile, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        try:
            while view:
                written = self._write_fn(handle.fd, view)
                if written <= 0:
                    raise OSError(errno.EIO, "write returned no progress")
                view = view[written:]
                handle.size += written
                self.stats.bytes += written
        except OSError as exc:  # name the file in the error (os.write does not)
            raise OSError(exc.errno, exc.strerror or str(exc), str(handle.path)) from exc

    def _write_batch(
        self, captures: list[PendingCapture]
    ) -> tuple[list[WrittenCapture], WriteError | None]:
        """Write captures in order, all or nothing: on an error none of the batch is reported
        written, and what it wrote is taken back (:meth:`_take_back`), so that every file
        holds only captures its workers were told of and its journal only their lines."""
        refused = self._guard() if self._guard is not None else None
        if refused is not None:
            return [], WriteError(refused)
        if self._file is not None:
            self._file.batch_mark = (self._file.size, self._file.journal_size)
            self._file.new = False
        results: list[WrittenCapture] = []
        try:
            for capture in captures:
                results.append(self._write_capture(capture))
            handle = self._file
            if handle is not None:
                self._flush_journal(handle)
                if time.monotonic() - handle.last_fsync >= self.config.fsync_interval:
                    os.fsync(handle.fd)
                    handle.last_fsync = time.monotonic()
        except OSError as exc:
            self._take_back({result.filename for result in results})
            where = exc.filename or "WARC data"
            return [], WriteError(f"cannot write {where}: {exc.strerror or exc}")
        return results, None

    def _flush_journal(self, handle: _OpenFile) -> None:
        """The batch's journal lines, appended in one go."""
        if not handle.lines:
            return
        data = memoryview("".join(handle.lines).encode("utf-8"))
        try:
            while data:
                written = os.write(handle.journal, data)
                data = data[written:]
                handle.journal_size += written
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(handle.journal_path)) from exc
        handle.lines.clear()

    def _take_back(self, written: set[str]) -> None:
        """After a failed batch: cut the file being written back to where the batch began in
        it (WARC and journal) and close it; a file the batch made and cut back to its
        warcinfo holds nothing and is removed. A file the batch rotated out of (its captures
        were written, never reported), or one that cannot be cut (an I/O error), is marked
        unclaimed: it keeps its ``.open`` name, and the resume repair keeps only what the
        frontier committed."""
        handle = self._file
        rotated = written - ({handle.final_name} if handle is not None else set())
        if rotated:
            with self._retired_lock:
                self._unclaimed.update(rotated)
        if handle is None:
            return
        handle.lines.clear()
        size, journal_size = handle.batch_mark
        try:
            os.ftruncate(handle.fd, size)
            os.ftruncate(handle.journal, journal_size)
            handle.size = handle.good_size = size
            handle.journal_size = journal_size
        except OSError:
            with self._retired_lock:
                self._unclaimed.add(handle.final_name)
            self._abandon(handle)
            return
        if handle.new:  # nothing but its warcinfo: no file at all is better
            self._abandon(handle)
            with contextlib.suppress(OSError):
                handle.path.unlink()
                handle.journal_path.unlink()
            return
        try:
            self._close_file()
        except (OSError, WriteError):
            with self._retired_lock:
                self._unclaimed.add(handle.final_name)

    def _abandon(self, handle: _OpenFile) -> None:
        """Close a file's descriptors without a word more written (left to the repair)."""
        self._file = None
        self.stats.current_file = None
        for fd in (handle.fd, handle.journal):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _write_capture(self, capture: PendingCapture) -> WrittenCapture:
        handle = self._file
        if handle is not None and handle.size >= self.config.max_size:
            self._close_file()
            handle = None
        if handle is None:
            handle = self._file = self._open_new_file()
        start = handle.size
        out = self._output(handle)
        written: list[WrittenRecord] = []
        for record in capture.records:
            offset = start + out.produced
            length = self._write_member(out, record, handle)
            written.append(
                WrittenRecord(
                    record_type=record.record_type,
                    record_id=record.record_id,
                    target_uri=record.get("WARC-Target-URI") or capture.url,
                    date=record.get("WARC-Date") or "",
                    filename=handle.final_name,
                    offset=offset,
                    length=length,
                    status=capture.index.status if capture.index else None,
                    mime=capture.index.mime if capture.index else None,
                    payload_digest=record.get("WARC-Payload-Digest"),
                )
            )
        out.flush()
        handle.good_size = handle.size
        self.stats.records += len(written)
        self.stats.captures += 1
        result = WrittenCapture(handle.final_name, start, handle.size, tuple(written))
        primary = result.primary
        if primary is not None and capture.index is not None:
            handle.lines.append(self.config.journal.line(primary, capture.index) + "\n")
        return result

    def _close_file(self) -> None:
        """Close the current file (fsynced). It keeps its ``.open`` name until sealed."""
        handle = self._file
        if handle is None:
            return
        try:
            self._flush_journal(handle)
            os.fsync(handle.fd)
        except OSError:
            self._abandon(handle)  # the caller takes the batch back or leaves it .open
            raise
        self._file = None
        os.close(handle.journal)
        os.close(handle.fd)
        self.stats.current_file = None
        with self._retired_lock:
            self._retired[handle.final_name] = handle.path
        if self._auto_seal:
            self.seal([handle.final_name])

    def retired(self) -> list[str]:
        """Final names of closed files still called ``.open`` (written, not yet sealed), less
        those holding a capture nobody waited for (they stay ``.open`` for the resume repair)."""
        with self._retired_lock:
            return [name for name in self._retired if name not in self._unclaimed]

    def seal(self, names: Iterable[str]) -> list[Path]:
        """Rename closed files from ``.open`` to their final names, then fsync the directory.

        The crawler seals a file only once the frontier has durably committed every capture in
        it: resume repairs only ``.open`` files, so a file sealed earlier could hold captures
        whose URLs a resumed crawl would fetch again.
        """
        sealed: list[Path] = []
        with self._retired_lock:
            for name in names:
                path = self._retired.pop(name, None)
                if path is None:
                    continue
                final = path.with_name(name)
                if final.exists():  # never clobber: keep the .open name and say so
                    raise WriteError(f"{final} appeared while writing {path}; left as .open")
                os.rename(path, final)
                sealed.append(final)
        if sealed:
            fsync_directory(sealed[0].parent)
            self.closed_files.extend(sealed)
        return sealed


def record_head(record: PendingRecord, warcinfo_id: str) -> bytes:
    """The WARC header of ``record`` as it is written (WARC 1.1 section 4): the version line,
    its fields in their order, then ``WARC-Warcinfo-ID`` (every record but the warcinfo itself
    names its file's warcinfo, section 5.14) and ``Content-Length``, each line ending in CRLF,
    and the empty line. The block follows it, then CRLF CRLF."""
    headers = list(record.headers)
    if record.record_type != "warcinfo":
        headers.append(("WARC-Warcinfo-ID", warcinfo_id))
    headers.append(("Content-Length", str(record.length)))
    head: bytes = StatusAndHeaders("", headers, protocol=WARC_VERSION).to_bytes()
    return head


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
