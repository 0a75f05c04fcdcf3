"""Earlier crawls as sources: cross-crawl deduplication and conditional recrawls (issue 6).

``--dedup-from PREVIOUS`` turns a payload already stored by an earlier crawl into an
identical-payload-digest ``revisit`` (WARC 1.1 section 6.7.2); ``--revalidate-from PREVIOUS``
makes requests conditional (``If-None-Match`` / ``If-Modified-Since``, RFC 9110 sections 13.1.2
and 13.1.3) and turns a ``304`` into a server-not-modified ``revisit`` (section 6.7.3). Both read
earlier crawls through their CDXJ index, without a server.

**Which sources count.** A crawl directory is used only when its ``state/crawl.json`` says
``completed`` or ``limit``: both exit 0 and their WARC files and index are final, while an
``interrupted`` or ``failed`` run may be resumed, repaired or thrown away, so a revisit must never
point into it (SPEC-NOTES A.5, Browsertrix's dedupe lesson). A bare CDXJ file is trusted as given;
its WARC files are looked for in ``warcs/`` next to it, else next to it. Whatever the source, an
original is used only once its record has been read back from its WARC file at the index line's
offset and found to be a response for that URL with that payload digest: a revisit never names
an original that is not there to replay.

**Fast and memory-bounded.** Each source's CDXJ is streamed once into a SQLite lookup file (digest
-> original, URL -> latest capture), cached in the crawl's ``state/`` (or next to a bare CDXJ) and
keyed by a fingerprint of the CDXJ, so millions of lines cost disk, not heap, and later runs reuse
it. Record ids, exact ``WARC-Date`` values and the ``ETag`` / ``Last-Modified`` validators are not
in CDXJ: they are read from the WARC record once, when first needed, and cached in the same file.

**Chains of runs.** A run's unchanged payloads are revisits, not originals. So when run 3
deduplicates against run 2, the originals of run 2's revisits are inherited from the sources run 2
itself used (its ``summary.json`` lists them in ``dedup_sources``): each lookup file holds the
originals its crawl can vouch for, directly or through its own sources, and no run has to search
the whole history.

**Dependencies.** Every earlier WARC file a revisit of this run refers to is recorded
(:meth:`PreviousCrawls.depends_on`): the run's summary and its WACZ list them, because a revisit
cannot be replayed without its original.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver import digest as digests
from archiver.dedup.digests import DigestIndex
from archiver.errors import ArchiverError, OutputError, SettingsError
from archiver.fetch.httpframe import dechunk, header_values, split_header_block
from archiver.models import Exchange
from archiver.warc.records import (
    PROFILE_NOT_MODIFIED,
    Original,
    PendingCapture,
    PendingRecord,
    RecordFactory,
)

#: Crawl statuses whose captures may be referred to (see the module docstring).
USABLE_STATUSES = ("completed", "limit")
#: The word that names a job's latest usable run in ``dedup_from`` / ``revalidate_from``.
PREVIOUS = "previous"
LOOKUP_SCHEMA = 1
LOOKUP_NAME = "dedup-lookup.sqlite"
#: Bytes hashed at each end of a CDXJ for its fingerprint (size and mtime cover the middle).
_FINGERPRINT_EDGE = 1 << 20
_BATCH = 10_000
_BUILD_CACHE_KIB = 64 * 1024
#: A WARC header or HTTP header block larger than this is not one we wrote or can use.
_MAX_HEAD = 256 * 1024
#: What is inflated first to find a record's two header blocks (enough for nearly all).
_FIRST_READ = 64 * 1024
#: The part of an original's body read back for link extraction after a 304.
MAX_BODY = 8 * 1024 * 1024
_LINK_TYPES = ("text/html", "application/xhtml+xml", "text/css")
_HEAD_END = re.compile(rb"\r?\n\r?\n")

#: Opens the lookup of a parent source (the recursion of inheritance), None when unusable.
ParentOpener = Callable[[Path], "SourceLookup | None"]

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
CREATE TABLE originals (
    digest TEXT PRIMARY KEY, url TEXT NOT NULL, ts TEXT NOT NULL,
    file INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE urls (
    url TEXT PRIMARY KEY, ts TEXT NOT NULL, status INTEGER, digest TEXT,
    revisit INTEGER NOT NULL, file INTEGER NOT NULL, offset INTEGER NOT NULL,
    length INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE details (
    file INTEGER NOT NULL, offset INTEGER NOT NULL, ok INTEGER NOT NULL,
    type TEXT, target TEXT, payload_digest TEXT,
    record_id TEXT, date TEXT, etag TEXT, last_modified TEXT,
    PRIMARY KEY (file, offset)
) WITHOUT ROWID;
"""


# ------------------------------------------------------------------------------ sources


@dataclass(frozen=True, slots=True)
class Source:
    """An earlier crawl's index and where its WARC files are (all paths absolute)."""

    cdxj: Path
    warc_root: Path  #: CDXJ ``filename`` fields are relative to this directory
    crawl: Path | None = None  #: the crawl directory; None for a bare CDXJ file
    #: the sources that crawl deduplicated against (its summary's ``dedup_sources``)
    parents: tuple[Path, ...] = ()

    @property
    def label(self) -> str:
        return str(self.crawl or self.cdxj)

    @property
    def lookup_path(self) -> Path:
        """Where the lookup file is cached: the crawl's ``state/``, or next to a bare CDXJ."""
        if self.crawl is not None:
            return self.crawl / "state" / LOOKUP_NAME
        return self.cdxj.with_name(self.cdxj.name + ".lookup.sqlite")


def crawl_status(crawl_dir: Path) -> str | None:
    """The ``status`` of an archiver crawl directory (None when it holds no crawl)."""
    try:
        data = json.loads((crawl_dir / "state" / "crawl.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    status = data.get("status") if isinstance(data, dict) else None
    return str(status) if status is not None else None


def open_source(path: Path, *, option: str = "--dedup-from") -> Source:
    """Check one ``--dedup-from`` / ``--revalidate-from`` value and describe it.

    Raises :class:`SettingsError` for a missing path, a directory that holds no archiver crawl,
    and a crawl that did not complete (see the module docstring).
    """
    if str(path) == PREVIOUS and not path.exists():
        raise SettingsError(option, f"{PREVIOUS!r} names a job's previous run: use it with --job")
    try:
        resolved = path.expanduser().resolve(strict=True)
    except OSError:
        raise SettingsError(option, f"no such crawl directory or CDXJ file: {path}") from None
    if resolved.is_file():
        root = resolved.parent / "warcs"
        return Source(cdxj=resolved, warc_root=root if root.is_dir() else resolved.parent)
    status = crawl_status(resolved)
    if status is None:
        raise SettingsError(option, f"{path} holds no archiver crawl (no state/crawl.json)")
    if status not in USABLE_STATUSES:
        raise SettingsError(
            option,
            f"{path} is a crawl with status {status!r}: only completed crawls (or ones stopped at "
            "a --max-* limit) can be referred to; resume it first",
        )
    cdxj = resolved / "index.cdxj"
    if not cdxj.is_file():
        raise SettingsError(option, f"{path} has no index.cdxj")
    return Source(
        cdxj=cdxj, warc_root=resolved / "warcs", crawl=resolved, parents=_parents(resolved)
    )


def _parents(crawl_dir: Path) -> tuple[Path, ...]:
    try:
        summary = json.loads((crawl_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    listed = summary.get("dedup_sources") if isinstance(summary, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(Path(p) for p in listed if isinstance(p, str))


# ------------------------------------------------------------------------------ lookup file


@dataclass(frozen=True, slots=True)
class Capture:
    """One earlier capture as a source's index describes it."""

    url: str
    ts: str  #: 14-digit CDX timestamp
    warc: Path
    offset: int
    length: int
    file_id: int
    digest: str | None = None
    status: int | None = None
    revisit: bool = False


@dataclass(frozen=True, slots=True)
class Details:
    """What only the WARC record says: its id and exact date, and the HTTP validators."""

    record_type: str
    target_uri: str
    payload_digest: str | None
    record_id: str | None
    date: str
    etag: str | None = None
    last_modified: str | None = None

    def usable_for(self, capture: Capture, *, original: bool) -> bool:
        """Is this record what the index line says? An ``original`` must be a response for that
        URL with that payload digest; otherwise a response or revisit for that URL."""
        if self.target_uri != capture.url or not self.date:
            return False
        if original:
            return self.record_type == "response" and (
                not self.payload_digest
                or not capture.digest
                or self.payload_digest == capture.digest
            )
        return self.record_type in ("response", "revisit")


def fingerprint(cdxj: Path, warc_root: Path, parents: Sequence[Path]) -> str:
    """Identifies a CDXJ's content cheaply: size, mtime and a hash of both ends, plus where its
    WARC files are (a moved crawl gets a new lookup file) and the sources it inherits from."""
    st = cdxj.stat()
    hasher = hashlib.sha256()
    with open(cdxj, "rb") as fh:
        hasher.update(fh.read(_FINGERPRINT_EDGE))
        if st.st_size > 2 * _FINGERPRINT_EDGE:
            fh.seek(st.st_size - _FINGERPRINT_EDGE)
            hasher.update(fh.read(_FINGERPRINT_EDGE))
    parts = [
        f"schema={LOOKUP_SCHEMA}",
        f"cdxj={cdxj}",
        f"warcs={warc_root}",
        f"size={st.st_size}",
        f"mtime={st.st_mtime_ns}",
        f"sha256={hasher.hexdigest()}",
        *(f"parent={p}" for p in parents),
    ]
    return ";".join(parts)


class SourceLookup:
    """The SQLite lookup file of one source. Use :meth:`open`, which builds it when stale."""

    def __init__(self, source: Source, path: Path) -> None:
        self.source = source
        self.path = path
        # used from the event loop after being opened in a worker thread: one thread at a time
        self._con = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
        self._con.execute("PRAGMA busy_timeout = 30000")
        # the details cache is rebuilt by re-reading a record: losing a write to a crash costs
        # nothing, an fsync per URL would cost a lot
        self._con.execute("PRAGMA synchronous = OFF")
        self._paths: dict[int, Path] = {}
        self._exists: dict[int, bool] = {}

    # -- opening and building -------------------------------------------------------------

    @classmethod
    def open(
        cls,
        source: Source,
        *,
        fallback_dir: Path | None = None,
        parent_lookup: ParentOpener | None = None,
    ) -> SourceLookup:
        """The source's lookup file, rebuilt when missing or stale (call from a worker thread:
        building streams the whole CDXJ). When the cache location is not writable the file goes
        to ``fallback_dir`` instead."""
        want = fingerprint(source.cdxj, source.warc_root, source.parents)
        candidates = [source.lookup_path]
        if fallback_dir is not None:
            name = hashlib.sha1(str(source.cdxj).encode()).hexdigest()[:16] + ".sqlite"
            candidates.append(fallback_dir / name)
        for path in candidates:
            if _stored_fingerprint(path) == want:
                return cls(source, path)
        error: OSError | None = None
        for path in candidates:
            try:
                _build(source, path, want, parent_lookup)
            except OSError as exc:
                error = exc
                continue
            return cls(source, path)
        raise OutputError(f"cannot write a lookup file for {source.label}: {error}")

    def close(self) -> None:
        self._con.close()

    # -- queries ---------------------------------------------------------------------------

    def original(self, digest: str) -> Capture | None:
        """A stored (non-revisit) 200 response with this payload digest, if the source has one."""
        row = self._con.execute(
            "SELECT url, ts, file, offset, length FROM originals WHERE digest = ?", (digest,)
        ).fetchone()
        if row is None:
            return None
        url, ts, file_id, offset, length = row
        return Capture(url, ts, self._path(file_id), offset, length, file_id, digest, 200)

    def latest(self, url: str) -> Capture | None:
        """The newest capture of ``url`` in this source (any status, revisits included)."""
        row = self._con.execute(
            "SELECT ts, status, digest, revisit, file, offset, length FROM urls WHERE url = ?",
            (url,),
        ).fetchone()
        if row is None:
            return None
        ts, status, digest, revisit, file_id, offset, length = row
        return Capture(
            url, ts, self._path(file_id), offset, length, file_id, digest, status, bool(revisit)
        )

    def details(self, capture: Capture, *, original: bool) -> Details | None:
        """Record id, WARC-Date and validators of a capture, read from its WARC once and cached.

        None when the record cannot be read or is not what the index says (see
        :meth:`Details.usable_for`), so it is never referred to.
        """
        if not self._present(capture):
            return None
        row = self._con.execute(
            "SELECT ok, type, target, payload_digest, record_id, date, etag, last_modified "
            "FROM details WHERE file = ? AND offset = ?",
            (capture.file_id, capture.offset),
        ).fetchone()
        found: Details | None
        if row is None:
            found = _read_details(capture)
            values: tuple[object, ...] = (0, None, None, None, None, None, None, None)
            if found is not None:
                values = (1, *dataclasses.astuple(found))
            with contextlib.suppress(sqlite3.Error), self._con:
                self._con.execute(
                    "INSERT OR REPLACE INTO details VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (capture.file_id, capture.offset, *values),
                )
        elif row[0]:
            found = Details(*row[1:])
        else:
            found = None
        if found is None or not found.usable_for(capture, original=original):
            return None
        return found

    def _path(self, file_id: int) -> Path:
        path = self._paths.get(file_id)
        if path is None:
            row = self._con.execute("SELECT path FROM files WHERE id = ?", (file_id,)).fetchone()
            path = self._paths[file_id] = Path(row[0]) if row else Path("/nonexistent")
        return path

    def _present(self, capture: Capture) -> bool:
        """Whether the WARC file is still there (checked once per file per run)."""
        present = self._exists.get(capture.file_id)
        if present is None:
            present = self._exists[capture.file_id] = capture.warc.is_file()
        return present


def _stored_fingerprint(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def _build(source: Source, path: Path, fprint: str, parent_lookup: ParentOpener | None) -> None:
    """Stream the CDXJ into a new lookup file, then move it into place atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    tmp.unlink(missing_ok=True)
    try:
        con = sqlite3.connect(tmp)
    except sqlite3.Error as exc:
        raise OSError(str(exc)) from exc
    try:
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        # digests arrive in random order: a bigger (still bounded) page cache keeps the B-tree
        # inserts off the disk for indexes of millions of lines
        con.execute(f"PRAGMA cache_size = -{_BUILD_CACHE_KIB}")
        con.executescript(_SCHEMA)
        con.execute("CREATE TEMP TABLE revisit_digests (digest TEXT PRIMARY KEY) WITHOUT ROWID")
        files: dict[str, int] = {}
        _load_cdxj(con, source, files)
        if source.parents and parent_lookup is not None:
            _inherit(con, source, files, parent_lookup)
        con.execute(
            "INSERT INTO meta VALUES ('fingerprint', ?), ('source', ?)", (fprint, source.label)
        )
        con.commit()
    except sqlite3.Error as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise OSError(f"building {path}: {exc}") from exc
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, path)


def _file_id(con: sqlite3.Connection, files: dict[str, int], path: str) -> int:
    file_id = files.get(path)
    if file_id is None:
        cursor = con.execute("INSERT INTO files (path) VALUES (?)", (path,))
        file_id = files[path] = int(cursor.lastrowid or 0)
    return file_id


def _load_cdxj(con: sqlite3.Connection, source: Source, files: dict[str, int]) -> None:
    originals: list[tuple[Any, ...]] = []
    latest: list[tuple[Any, ...]] = []
    revisits: list[tuple[str]] = []
    names: dict[str, int] = {}

    def flush() -> None:
        con.executemany("INSERT OR IGNORE INTO originals VALUES (?, ?, ?, ?, ?, ?)", originals)
        con.executemany(
            "INSERT INTO urls VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (url) DO UPDATE SET "
            "ts = excluded.ts, status = excluded.status, digest = excluded.digest, "
            "revisit = excluded.revisit, file = excluded.file, offset = excluded.offset, "
            "length = excluded.length WHERE excluded.ts >= urls.ts",
            latest,
        )
        con.executemany("INSERT OR IGNORE INTO revisit_digests VALUES (?)", revisits)
        originals.clear()
        latest.clear()
        revisits.clear()

    for fields, ts in _cdxj_entries(source.cdxj):
        url = fields.get("url")
        filename = fields.get("filename")
        try:
            offset, length = int(fields["offset"]), int(fields["length"])
        except (KeyError, TypeError, ValueError):
            continue
        if not isinstance(url, str) or not isinstance(filename, str):
            continue
        file_id = names.get(filename)
        if file_id is None:  # a handful of files: join paths once per file, not per line
            file_id = names[filename] = _file_id(con, files, str(source.warc_root / filename))
        digest = fields.get("digest") if isinstance(fields.get("digest"), str) else None
        status_text = str(fields.get("status", ""))
        status = int(status_text) if status_text.isdigit() else None
        revisit = fields.get("mime") == "warc/revisit"
        if digest and not revisit and status == 200:
            originals.append((digest, url, ts, file_id, offset, length))
        if digest and revisit:
            revisits.append((digest,))
        latest.append((url, ts, status, digest, int(revisit), file_id, offset, length))
        if len(latest) >= _BATCH:
            flush()
    flush()


def _cdxj_entries(cdxj: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """``(json fields, timestamp)`` of every well-formed CDXJ line, streamed."""
    with open(cdxj, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) != 3 or not parts[1].isdigit() or not parts[2].startswith("{"):
                continue  # a header line (``!meta``), or not CDXJ
            try:
                fields = json.loads(parts[2])
            except ValueError:
                continue
            if isinstance(fields, dict):
                yield fields, parts[1][:14]


def _inherit(
    con: sqlite3.Connection, source: Source, files: dict[str, int], parent_lookup: ParentOpener
) -> None:
    """Originals of this source's revisits, found in the sources it deduplicated against."""
    parents = [p for p in (parent_lookup(path) for path in source.parents) if p is not None]
    if not parents:
        return
    missing = con.execute(
        "SELECT digest FROM revisit_digests WHERE digest NOT IN (SELECT digest FROM originals)"
    )
    rows: list[tuple[Any, ...]] = []
    for (digest,) in missing.fetchall():
        for parent in parents:
            found = parent.original(digest)
            if found is not None:
                file_id = _file_id(con, files, str(found.warc))
                rows.append((digest, found.url, found.ts, file_id, found.offset, found.length))
                break
    con.executemany("INSERT OR IGNORE INTO originals VALUES (?, ?, ?, ?, ?, ?)", rows)


# ------------------------------------------------------------------------------ WARC reads


@dataclass(slots=True)
class _Record:
    warc: dict[str, str]  #: WARC header fields, names lowercased (first value)
    http_start: bytes
    http: list[tuple[bytes, bytes]]
    body: bytes | None  #: None when not read (over the limit) or absent


def _read_prefix(path: Path, offset: int, length: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of the record stored in ``[offset, offset + length)``, decompressed
    when it is a gzip member (one member per record, WARC 1.1 annex D). Reads only as far as
    needed: a large original costs a header's worth of inflating, not its whole body."""
    out = bytearray()
    with open(path, "rb") as fh:
        fh.seek(offset)
        remaining = length
        data = fh.read(min(remaining, 64 * 1024))
        remaining -= len(data)
        if data[:2] != b"\x1f\x8b":  # an uncompressed .warc
            out += data
            while len(out) < limit and remaining > 0:
                piece = fh.read(min(remaining, 64 * 1024))
                if not piece:
                    break
                out += piece
                remaining -= len(piece)
            return bytes(out[:limit])
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while len(out) <= limit:
            out += inflater.decompress(data, limit + 1 - len(out))  # max_length >= 1
            if len(out) > limit or inflater.eof:
                break
            if inflater.unconsumed_tail:
                data = inflater.unconsumed_tail
                continue
            if remaining <= 0:
                break
            data = fh.read(min(remaining, 64 * 1024))
            if not data:
                break
            remaining -= len(data)
    return bytes(out[:limit])


def _read_record(capture: Capture, *, body_limit: int = 0) -> _Record | None:
    """The WARC header, HTTP header and (within ``body_limit``) the HTTP body of a record.

    Reads a first slice that holds both header blocks of any ordinary record, and the full
    allowance only when they turn out to be longer.
    """
    data = b""
    for limit in (_FIRST_READ + body_limit, 2 * _MAX_HEAD + body_limit):
        try:
            data = _read_prefix(capture.warc, capture.offset, capture.length, limit)
        except (OSError, zlib.error):
            return None
        if len(data) < limit or _both_heads(data):
            break
    end = data.find(b"\r\n\r\n")
    if not data.startswith(b"WARC/") or end < 0:
        return None
    warc: dict[str, str] = {}
    for line in data[:end].split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            key = name.strip().lower().decode("latin-1")
            warc.setdefault(key, value.strip().decode("utf-8", "replace"))
    try:
        block_length = int(warc.get("content-length", "0"))
    except ValueError:
        return None
    block = data[end + 4 : end + 4 + block_length]
    match = _HEAD_END.search(block, 0, _MAX_HEAD)
    if match is None:
        return _Record(warc, b"", [], None)
    start, http = split_header_block(block[: match.start()])
    body_length = block_length - match.end()
    body = block[match.end() :] if body_length <= len(block) - match.end() else None
    return _Record(warc, start, http, body)


def _both_heads(data: bytes) -> bool:
    """Whether ``data`` reaches past the WARC header block and an HTTP header block."""
    end = data.find(b"\r\n\r\n")
    return end >= 0 and _HEAD_END.search(data, end + 4) is not None


def _header(record: _Record, name: str) -> str | None:
    values = header_values(record.http, name.encode("ascii"))
    return values[0].decode("latin-1") if values else None


def _read_details(capture: Capture) -> Details | None:
    record = _read_record(capture)
    if record is None:
        return None
    return Details(
        record.warc.get("warc-type", ""),
        record.warc.get("warc-target-uri", ""),
        record.warc.get("warc-payload-digest"),
        record.warc.get("warc-record-id"),
        record.warc.get("warc-date", ""),
        _header(record, "ETag"),
        _header(record, "Last-Modified"),
    )


def _status_code(start: bytes) -> int | None:
    match = re.match(rb"HTTP/\d\.\d\s+(\d{3})", start)
    return int(match.group(1)) if match else None


# ------------------------------------------------------------------------------ the sources


@dataclass(frozen=True, slots=True)
class Revalidation:
    """What a conditional request needs, and what its ``304`` revisit refers to."""

    url: str
    headers: dict[str, str]  #: If-None-Match / If-Modified-Since, values as the server sent them
    original: Original  #: the earlier capture that holds the content
    payload_digest: str  #: the original's payload digest (a 304 has no payload of its own)
    content: Capture  #: where the original is stored
    source: Source  #: the source it was found through


@dataclass(slots=True)
class _Dependency:
    warc: Path
    via: Source
    revisits: int = 0


@dataclass(slots=True)
class PreviousCrawls:
    """The opened ``--dedup-from`` and ``--revalidate-from`` sources of one run.

    A :class:`~archiver.dedup.digests.DigestIndex` for the crawler's payload lookups (earlier
    crawls are read-only: :meth:`add` does nothing, since a run's own captures only count once
    it completes);
    :meth:`revalidation` for conditional requests; :meth:`not_modified` and
    :meth:`original_exchange` for a ``304``; :meth:`depends_on` for the summary and the WACZ.
    """

    dedup: list[SourceLookup] = field(default_factory=list)
    revalidate: list[SourceLookup] = field(default_factory=list)
    #: sources whose own sources could not be used (worth a log line each)
    warnings: list[str] = field(default_factory=list)
    deps: dict[Path, _Dependency] = field(default_factory=dict)
    #: every lookup file opened (sources, and the sources they inherit from), each once
    opened: list[SourceLookup] = field(default_factory=list)
    cache_dir: Path | None = None  #: where lookup files go when a source's place is read-only

    @classmethod
    def open_sync(
        cls,
        dedup_from: Iterable[Path],
        revalidate_from: Iterable[Path] = (),
        *,
        cache_dir: Path | None = None,
    ) -> PreviousCrawls:
        """Check every source (raising :class:`SettingsError`) and open its lookup file."""
        dedup_sources = [open_source(p, option="--dedup-from") for p in dedup_from]
        revalidate_sources = [open_source(p, option="--revalidate-from") for p in revalidate_from]
        self = cls(cache_dir=cache_dir)
        try:
            self.dedup = [self._open_lookup(s, frozenset()) for s in dedup_sources]
            self.revalidate = [self._open_lookup(s, frozenset()) for s in revalidate_sources]
        except BaseException:
            self.close_sync()
            raise
        return self

    def _open_lookup(self, source: Source, trail: frozenset[Path]) -> SourceLookup:
        for lookup in self.opened:
            if lookup.source.cdxj == source.cdxj:
                return lookup
        trail = trail | {source.cdxj}

        def parent(path: Path) -> SourceLookup | None:
            return self._open_parent(source, path, trail)

        lookup = SourceLookup.open(source, fallback_dir=self.cache_dir, parent_lookup=parent)
        self.opened.append(lookup)
        return lookup

    def _open_parent(
        self, child: Source, path: Path, trail: frozenset[Path]
    ) -> SourceLookup | None:
        """A source's own source, to inherit originals from. When it is gone or unusable the
        child's revisits simply find no original (their payloads are stored again): a warning,
        not an error."""
        try:
            source = open_source(path)
            if source.cdxj in trail:
                return None  # a cycle: nothing new to inherit
            return self._open_lookup(source, trail)
        except ArchiverError as exc:
            self.warnings.append(
                f"{child.label}: its dedup source is not usable, so the originals of its "
                f"revisits are not inherited: {exc}"
            )
            return None

    def close_sync(self) -> None:
        for lookup in self.opened:
            with contextlib.suppress(sqlite3.Error):
                lookup.close()
        self.opened.clear()

    def source_paths(self) -> list[str]:
        """Every source of this run, as the summary's ``dedup_sources`` (inherited by later runs
        that deduplicate against this one)."""
        seen: dict[str, None] = {}
        for lookup in (*self.dedup, *self.revalidate):
            seen.setdefault(lookup.source.label, None)
        return list(seen)

    # -- DigestIndex -----------------------------------------------------------------------

    async def lookup(self, digest: str) -> Original | None:
        for lookup in self.dedup:
            found = self._original(lookup, digest)
            if found is not None:
                original, capture = found
                self._depend(lookup.source, capture)
                return original
        return None

    async def add(self, digest: str, original: Original) -> None:
        """Earlier crawls are read-only."""

    async def close(self) -> None:
        self.close_sync()

    @staticmethod
    def _original(lookup: SourceLookup, digest: str) -> tuple[Original, Capture] | None:
        capture = lookup.original(digest)
        if capture is None:
            return None
        details = lookup.details(capture, original=True)
        if details is None:
            return None
        return Original(details.record_id, capture.url, details.date), capture

    def _depend(self, via: Source, capture: Capture) -> None:
        dep = self.deps.get(capture.warc)
        if dep is None:
            dep = self.deps[capture.warc] = _Dependency(capture.warc, via)
        dep.revisits += 1

    # -- revalidation ----------------------------------------------------------------------

    async def revalidation(self, url: str) -> Revalidation | None:
        """Conditional request headers for ``url`` from its newest earlier capture, or None.

        Only a capture that replays as a 200 with its content available qualifies, and only when
        the server gave a validator: ``ETag`` (sent back as ``If-None-Match``, RFC 9110 section
        13.1.2) and/or ``Last-Modified`` (``If-Modified-Since``, section 13.1.3), byte for byte.
        """
        best: tuple[SourceLookup, Capture] | None = None
        for lookup in self.revalidate:
            capture = lookup.latest(url)
            if capture is not None and (best is None or capture.ts > best[1].ts):
                best = (lookup, capture)
        if best is None:
            return None
        lookup, latest = best
        found: tuple[Original, Capture] | None = None
        if latest.revisit and latest.status in (None, 200) and latest.digest:
            found = self._original(lookup, latest.digest)  # stored earlier, maybe at another URL
        elif not latest.revisit and latest.status == 200 and latest.digest:
            details = lookup.details(latest, original=True)
            if details is not None:
                found = Original(details.record_id, url, details.date), latest
        if found is None:
            return None
        original, content = found
        validators = lookup.details(latest, original=False)
        if validators is None or not (validators.etag or validators.last_modified):
            # a server-not-modified revisit keeps no headers: the original's still hold
            validators = lookup.details(content, original=True)
        if validators is None or not (validators.etag or validators.last_modified):
            return None
        headers: dict[str, str] = {}
        if validators.etag:
            headers["If-None-Match"] = validators.etag
        if validators.last_modified:
            headers["If-Modified-Since"] = validators.last_modified
        assert content.digest is not None
        return Revalidation(url, headers, original, content.digest, content, lookup.source)

    def not_modified(
        self, factory: RecordFactory, ex: Exchange, revalidation: Revalidation
    ) -> PendingCapture:
        """The server-not-modified revisit for a ``304`` answer to a conditional request.

        WARC 1.1 section 6.7.3 allows the block to be empty or the 304 response. It is empty:
        pywb replays a revisit with the HTTP headers of its own block when it has some, and any
        3xx status there as an empty body (``resolvingloader.py``, pywb#751), so a stored 304
        would replay as a 304. With no block pywb takes headers and body from the original,
        which it finds by ``WARC-Refers-To-Target-URI`` + ``WARC-Refers-To-Date`` + the CDX
        ``digest`` (SPEC-NOTES A.5): so ``WARC-Payload-Digest`` and the index line carry the
        *original's* payload digest (the 304 itself has no payload). The conditional request is
        kept, as sent, in the request record.
        """
        capture = factory.revisit(ex, revalidation.original, profile=PROFILE_NOT_MODIFIED)
        head = capture.records[0]
        empty_digest = digests.digest_bytes(factory.algorithm, b"")
        headers: list[tuple[str, str]] = []
        replaced = {
            "WARC-Block-Digest": empty_digest,
            "WARC-Payload-Digest": revalidation.payload_digest,
        }
        for name, value in head.headers:
            if name != "WARC-Truncated":  # nothing is kept, so nothing is truncated
                headers.append((name, replaced.get(name, value)))
        capture.records[0] = PendingRecord(head.record_type, headers, b"", 0)
        assert capture.index is not None
        # what cdxj-indexer writes for a revisit without HTTP headers: no status
        capture.index = dataclasses.replace(
            capture.index, status=None, digest=revalidation.payload_digest
        )
        capture.payload_digest = revalidation.payload_digest
        self._depend(revalidation.source, revalidation.content)
        return capture

    async def original_exchange(self, ex: Exchange, revalidation: Revalidation) -> Exchange:
        """``ex`` (a 304) as the original it stands for: its status, headers and, for HTML and
        CSS within :data:`MAX_BODY`, its body, so links are still discovered and the page is
        still listed. ``ex`` itself when the original cannot be read."""
        record = await asyncio.to_thread(_read_record, revalidation.content, body_limit=MAX_BODY)
        if record is None or not record.http_start:
            return ex
        status = _status_code(record.http_start)
        if status is None:
            return ex
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in record.http]
        content_type = (_header(record, "Content-Type") or "").split(";", 1)[0].strip().lower()
        body: bytes | None = None
        if record.body is not None and content_type in _LINK_TYPES:
            body = record.body
            if "chunked" in (_header(record, "Transfer-Encoding") or "").lower():
                body, error = dechunk(body)
                if error is not None:
                    body = None
        return dataclasses.replace(ex, status=status, headers=headers, body=body)

    # -- dependencies ----------------------------------------------------------------------

    def depends_on(self) -> list[dict[str, Any]]:
        """The earlier WARC files this run's revisits refer to: replay needs them too.

        Each entry names the WARC file (absolute path), the crawl directory it belongs to and
        that crawl's WACZ when there is one (what a ReplayWeb.page user must load alongside),
        the source it was found through (``via``: the crawl or CDXJ given on the command line,
        which differs when the original was inherited) and how many revisits point into it.
        """
        out = []
        for dep in sorted(self.deps.values(), key=lambda d: str(d.warc)):
            crawl = _crawl_of(dep.warc)
            wacz = crawl / f"{crawl.name}.wacz" if crawl is not None else None
            out.append(
                {
                    "warc": str(dep.warc),
                    "filename": dep.warc.name,
                    "crawl": str(crawl) if crawl is not None else None,
                    "wacz": str(wacz) if wacz is not None and wacz.is_file() else None,
                    "via": dep.via.label,
                    "revisits": dep.revisits,
                }
            )
        return out


def _crawl_of(warc: Path) -> Path | None:
    """The archiver crawl directory holding ``warc`` (``CRAWL/warcs/…``), if it is one."""
    for parent in warc.parents:
        if parent.name == "warcs" and (parent.parent / "state" / "crawl.json").is_file():
            return parent.parent
    return None


async def open_previous(
    dedup_from: Iterable[Path],
    revalidate_from: Iterable[Path] = (),
    *,
    cache_dir: Path | None = None,
) -> PreviousCrawls:
    """:meth:`PreviousCrawls.open_sync` in a worker thread (building a lookup file streams a
    whole CDXJ, which must not stall the event loop)."""
    return await asyncio.to_thread(
        PreviousCrawls.open_sync,
        list(dedup_from),
        list(revalidate_from),
        cache_dir=cache_dir,
    )


class LayeredDigestIndex:
    """This crawl's own digest index first, then earlier crawls: a payload stored earlier in
    this run is referred to locally; new originals are added to this run's index only."""

    def __init__(self, own: DigestIndex, *earlier: DigestIndex) -> None:
        self.own = own
        self.earlier = earlier

    async def lookup(self, digest: str) -> Original | None:
        found = await self.own.lookup(digest)
        if found is not None:
            return found
        for index in self.earlier:
            found = await index.lookup(digest)
            if found is not None:
                return found
        return None

    async def add(self, digest: str, original: Original) -> None:
        await self.own.add(digest, original)

    async def close(self) -> None:
        await self.own.close()
        for index in self.earlier:
            await index.close()


__all__ = [
    "LOOKUP_NAME",
    "MAX_BODY",
    "PREVIOUS",
    "USABLE_STATUSES",
    "Capture",
    "Details",
    "LayeredDigestIndex",
    "PreviousCrawls",
    "Revalidation",
    "Source",
    "SourceLookup",
    "crawl_status",
    "fingerprint",
    "open_previous",
    "open_source",
]
