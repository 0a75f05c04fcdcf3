"""CDXJ (pywb) and CDX-11 (OpenWayback) indexes, built from what the writer recorded.

The writer appends one CDXJ line per capture to a journal next to each WARC as it writes, using
the offsets and lengths it just produced; building the crawl's index is then a byte-order merge
sort of those lines (external, so memory stays bounded for millions of captures), never a second
pass over the WARC files.

Lines are exactly what cdxj-indexer writes for the same records (SPEC-NOTES B.2): the key from
``surt.surt`` (what pywb binary-searches with; B.3), the 14-digit timestamp of ``WARC-Date``, and
``{"url", "mime", "status", "digest", "length", "offset", "filename"}`` as strings in that order,
``mime`` omitted when the response has no Content-Type (``""`` when it has an empty one),
serialised with ``json.dumps`` defaults.
Sorting is by UTF-8 byte order (``LC_ALL=C``); ``json.dumps`` output is ASCII, so Python string
order is byte order.
"""

from __future__ import annotations

import heapq
import importlib.util
import itertools
import json
import os
import sys
import tempfile
import types
from collections.abc import Iterable, Iterator
from pathlib import Path


def _import_lazily(name: str) -> None:
    """Make ``import name`` cheap until an attribute of the module is used.

    ``surt`` imports ``tldextract`` (and through it ``requests`` and ``urllib3``) at the top of
    ``surt.handyurl`` for two methods SURT keys never call; loading them costs 0.06-0.1 s of CPU
    on every start of the crawler, a twentieth of a small crawl. A placeholder module stands in
    until its first attribute is asked for, which loads the real one. (``importlib.util``'s
    ``LazyLoader`` does not help here: on Python 3.11 the ``import`` statement itself reads
    ``__spec__`` and so triggers the load.)
    """
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return
    placeholder = types.ModuleType(name, f"{name}, loaded on first use (archiver.index.cdxj)")

    def load(attribute: str) -> object:
        if sys.modules.get(name) is placeholder:
            del sys.modules[name]
        return getattr(importlib.import_module(name), attribute)

    placeholder.__getattr__ = load  # type: ignore[method-assign]
    sys.modules[name] = placeholder


_import_lazily("tldextract")

import surt  # noqa: E402 - after tldextract is registered as lazy
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from archiver.errors import LockedError  # noqa: E402
from archiver.models import WrittenRecord  # noqa: E402
from archiver.run.output import Layout, OutputLock  # noqa: E402
from archiver.warc import reader as warcfile  # noqa: E402
from archiver.warc.records import cdx_mime  # noqa: E402

JOURNAL_SUFFIX = ".cdxj"
CDX11_LEGEND = " CDX N b a m s k r M S V g"
SORT_CHUNK_LINES = 500_000


def surt_key(url: str) -> str:
    """The SURT key pywb and cdxj-indexer compute (falls back to the URL, as they do)."""
    try:
        return str(surt.surt(url))
    except Exception:  # surt raises assorted errors on odd URLs; cdxj-indexer falls back too
        return url


def timestamp14(warc_date: str) -> str:
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


def cdxj_line(record: WrittenRecord, url: str | None = None) -> str:
    """One CDXJ line for a written record."""
    target = url or record.target_uri
    fields: dict[str, str] = {"url": target}
    if record.mime is not None:
        fields["mime"] = record.mime
    if record.status is not None:
        fields["status"] = str(record.status)
    if record.payload_digest:
        fields["digest"] = record.payload_digest
    fields["length"] = str(record.length)
    fields["offset"] = str(record.offset)
    fields["filename"] = record.filename
    return f"{surt_key(target)} {timestamp14(record.date)} {json.dumps(fields)}"


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


def build_index(
    journal_dirs: Iterable[tuple[Path, str]],
    output: Path,
    *,
    cdx11: Path | None = None,
) -> int:
    """Merge journals into a sorted CDXJ (and optionally CDX-11); returns the line count.

    ``journal_dirs`` pairs each journal directory with the path prefix (``"warcs/"``) that makes
    its WARC file names relative to the index's WARC root. Files are written atomically
    (temporary name, then rename), so a crash never leaves a half-written index.
    """

    def all_lines() -> Iterator[str]:
        for directory, prefix in journal_dirs:
            for line in _read_lines(journals(directory)):
                yield _relative(line, prefix) if prefix else line

    count = write_lines_atomically(output, sorted_lines(all_lines()))
    if cdx11 is not None:
        write_cdx11(output, cdx11)
    return count


def scan_warc(path: Path, filename: str | None = None) -> list[str]:
    """CDXJ lines for a WARC file that has no journal (read record by record with warcio).

    Used for foreign WARCs and for files whose writer died before it closed them. Stops quietly
    at the first unreadable record: a damaged tail has no captures worth indexing.
    """
    name = filename or path.name.removesuffix(".open")
    lines: list[str] = []
    with open(path, "rb") as fh:
        iterator = ArchiveIterator(fh)
        try:
            for record in iterator:
                if record.rec_type not in ("response", "revisit", "resource"):
                    continue
                http = record.http_headers
                mime: str | None
                if record.rec_type == "revisit":
                    mime = "warc/revisit"
                elif http is not None:
                    mime = cdx_mime(http.get_header("Content-Type"))
                else:
                    mime = cdx_mime(record.rec_headers.get_header("Content-Type"))
                status = http.get_statuscode() if http is not None else None
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                record.raw_stream.read()
                offset = iterator.get_record_offset()
                length = iterator.get_record_length()
                written = WrittenRecord(
                    record_type=record.rec_type,
                    record_id=record.rec_headers.get_header("WARC-Record-ID") or "",
                    target_uri=uri,
                    date=record.rec_headers.get_header("WARC-Date") or "",
                    filename=name,
                    offset=offset,
                    length=length,
                    status=int(status) if status and str(status).isdigit() else None,
                    mime=mime,
                    payload_digest=record.rec_headers.get_header("WARC-Payload-Digest"),
                )
                lines.append(cdxj_line(written))
        except Exception:  # warcio raises assorted errors on a damaged tail; index what was read
            pass
    return lines


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


def layouts(crawl_dir: Path) -> list[Layout]:
    """The layouts writing into ``crawl_dir``: the single run's (``state/journals``), and/or
    one per process sharing it (``state/{hostname}-{pid}/``, each with its lock; issue 7)."""

    found = []
    state = crawl_dir / "state"
    if (state / "journals").is_dir():
        found.append(Layout(crawl_dir))
    if state.is_dir():
        for child in sorted(state.iterdir()):
            if child.is_dir() and (child / "lock").exists():
                found.append(Layout(crawl_dir, process=child.name))
    return found


def journal_dirs(crawl_dir: Path) -> list[Path]:
    """Every journal directory of a crawl directory (one per process when shared)."""
    return [layout.journals for layout in layouts(crawl_dir) if layout.journals.is_dir()]


def close_abandoned(crawl_dir: Path) -> list[Path]:
    """Close ``.open`` WARCs a dead process left in ``crawl_dir``: cut to whole captures,
    rename, and rebuild their journals by reading them. Refuses while a run holds the lock of
    a single-run directory; in a shared one, the files of live processes are left alone.

    A dead process of a Redis crawl had URLs in flight; their leases expired and other
    processes fetched them again, so each of those may be captured twice (both whole)."""

    closed: list[Path] = []
    for layout in layouts(crawl_dir):
        pattern = "*.warc.gz.open" if layout.process is None else f"*-{layout.process}.warc.gz.open"
        opened = sorted(layout.warcs.rglob(pattern)) if layout.warcs.is_dir() else []
        if not opened:
            continue
        lock = OutputLock(layout.lock_file)
        try:
            lock.acquire()
        except LockedError:
            if layout.process is None:
                raise
            continue  # a live process: its files are still being written
        try:
            for path in opened:
                report = warcfile.repair(path)
                final = path.with_name(path.name.removesuffix(".open"))
                journal = layout.journals / (final.name + JOURNAL_SUFFIX)
                if report.kept_size == 0:
                    path.unlink()
                    journal.unlink(missing_ok=True)
                    continue
                path.rename(final)
                layout.journals.mkdir(parents=True, exist_ok=True)
                lines = scan_warc(final)
                write_lines_atomically(journal, lines)
                closed.append(final)
        finally:
            lock.release()
    return closed


def index_paths(
    paths: Iterable[Path], output: Path | None = None, *, cdx11: bool = False
) -> tuple[int, Path]:
    """``archiver index``: one sorted CDXJ over crawl directories and/or WARC files.

    Crawl directories contribute their writers' journals (abandoned ``.open`` files are closed
    first); WARC files without a journal are read record by record. File names in the index are
    base names: the WARC files of all the inputs belong in one archive directory for replay.
    """
    paths = list(paths)
    if not paths:
        raise ValueError("no paths to index")
    found_dirs: list[Path] = []
    loose: list[Path] = []
    for path in paths:
        if path.is_dir() and journal_dirs(path):
            close_abandoned(path)
            here = journal_dirs(path)
            found_dirs += here
            journaled = {p.name.removesuffix(JOURNAL_SUFFIX) for d in here for p in journals(d)}
            warc_dir = path / "warcs"
            for warc in sorted(warc_dir.rglob("*.warc.gz")) if warc_dir.is_dir() else []:
                if warc.name not in journaled:
                    loose.append(warc)
        elif path.is_dir():
            loose.extend(sorted(path.rglob("*.warc.gz")))
        else:
            loose.append(path)
    if output is None:
        base = paths[0] if paths[0].is_dir() else paths[0].parent
        output = base / "index.cdxj"

    def all_lines() -> Iterator[str]:
        for directory in found_dirs:
            yield from _read_lines(journals(directory))
        for warc in loose:
            yield from scan_warc(warc)

    count = write_lines_atomically(output, sorted_lines(all_lines()))
    if cdx11:
        write_cdx11(output, output.with_suffix(".cdx"))
    return count, output


def write_lines_atomically(path: Path, lines: Iterable[str]) -> int:
    """Write ``lines`` to ``path`` through a temporary name and a rename; returns the count.

    Readers (pywb, a resumed run) see either the old file or the whole new one, never a
    half-written index, even when the process dies mid-write.
    """
    count = 0
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
            count += 1
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return count


def write_cdx11(cdxj: Path, target: Path) -> None:
    """The 11-field CDX for a sorted CDXJ file (sorted again: its fields order differently)."""
    with open(cdxj, encoding="utf-8") as src:
        rows = sorted_lines(cdx11_line(row.rstrip("\n")) for row in src)
        write_lines_atomically(target, itertools.chain([CDX11_LEGEND], rows))
