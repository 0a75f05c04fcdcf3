"""Earlier crawls as sources: which ones count, and the lookup file each is read through.

**Which sources count.** A crawl directory is used only when its ``state/crawl.json`` says
``completed`` or ``limit``: both exit 0 and their WARC files and index are final, while an
``interrupted`` or ``failed`` run may be resumed, repaired or thrown away, so a revisit must never
point into it (a revisit names an original that must stay there to replay, WARC 1.1 section
6.7.2). A bare CDXJ file is trusted as given; its WARC files are looked for in ``warcs/`` next to
it, else next to it. Whatever the source, an original is used only once its record has been read
back from its WARC file at the index line's offset and found to be a response for that URL with
that payload digest: a revisit never names an original that is not there to replay.

**Fast and memory-bounded.** Each source's CDXJ is streamed once into a SQLite lookup file (digest
-> original, URL -> latest capture), cached in the crawl's ``state/`` (or next to a bare CDXJ) and
keyed by a fingerprint of the CDXJ, so millions of lines cost disk, not heap, and later runs reuse
it. Record ids, exact ``WARC-Date`` values and the ``ETag`` / ``Last-Modified`` validators are not
in CDXJ: they are read from the WARC record once (:func:`read_stored`, through the one WARC
reader), when first needed, and cached in the same file.

**Chains of runs.** A run's unchanged payloads are revisits, not originals. So when run 3
deduplicates against run 2, the originals of run 2's revisits are inherited from the sources run 2
itself used (its ``summary.json`` lists them in ``dedup_sources``): each lookup file holds the
originals its crawl can vouch for, directly or through its own sources, and no run has to search
the whole history.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver import urls
from archiver.digest import label, parse_label
from archiver.errors import OutputError, SettingsError, WarcFormatError
from archiver.httphead import ResponseHead, parse_response_head
from archiver.models import Original
from archiver.warc.reader import RecordHead, RecordPrefix, read_prefix_at, target_uri_of

#: Crawl statuses whose captures may be referred to (see the module docstring).
USABLE_STATUSES = ("completed", "limit")
#: The word that names a job's latest usable run in ``dedup_from`` / ``revalidate_from``.
PREVIOUS = "previous"
LOOKUP_SCHEMA = 2  #: 2: URLs and digests in one normal form
LOOKUP_NAME = "dedup-lookup.sqlite"
#: Bytes hashed at each end of a CDXJ for its fingerprint (size and mtime cover the middle).
_FINGERPRINT_EDGE = 1 << 20
_BATCH = 10_000
_SQLITE_INT = 1 << 63
_BUILD_CACHE_KIB = 64 * 1024
#: A WARC header or HTTP header block larger than this is not one we wrote or can use.
_MAX_HEAD = 256 * 1024
#: What is inflated first to find a record's HTTP header block (enough for nearly all).
_FIRST_READ = 64 * 1024

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
        URL with that payload digest; otherwise a response or revisit for that URL. URLs and
        digests are compared in one normal form on both sides (:func:`normal_url`,
        :func:`canonical_digest`): another tool's record may bracket its target URI (WARC 1.0's
        grammar, as Wget writes it) or write a digest in Base16, where its index does not."""
        if normal_url(self.target_uri) != normal_url(capture.url) or not self.date:
            return False
        if original:
            return self.record_type == "response" and (
                not self.payload_digest
                or not capture.digest
                or canonical_digest(self.payload_digest) == canonical_digest(capture.digest)
            )
        return self.record_type in ("response", "revisit")


def normal_url(uri: str) -> str:
    """A target URI (or an index's ``url``) in the form the crawl writes URLs: the URI a
    ``WARC-Target-URI`` names (:func:`~archiver.warc.reader.target_uri_of`), normalised as
    :func:`archiver.urls.normalize_url` normalises every URL it queues; the URI itself when it
    is not an http(s) URL."""
    named = target_uri_of(uri)
    try:
        return urls.normalize_url(named)
    except urls.InvalidURLError:
        return named


def canonical_digest(value: str) -> str:
    """A labelled digest in the form archiver writes it (sha1 in Base32, others in Base16),
    whatever encoding it was given in; the value itself when it cannot be read."""
    try:
        algorithm, raw = parse_label(value)
    except ValueError:
        return value.strip()
    return label(algorithm, raw)


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

    def usable_original(self, digest: str) -> tuple[Original, Capture] | None:
        """The stored original of a payload, if its record is there and is what the index
        says (see :meth:`Details.usable_for`), and where it is stored."""
        capture = self.original(digest)
        if capture is None:
            return None
        details = self.details(capture, original=True)
        if details is None:
            return None
        return Original(details.record_id, capture.url, details.date), capture

    def original(self, digest: str) -> Capture | None:
        """A stored (non-revisit) 200 response with this payload digest, if the source has one."""
        digest = canonical_digest(digest)
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
        if not (0 <= offset < _SQLITE_INT and 0 <= length < _SQLITE_INT):
            continue  # no file is that long, and SQLite stores 64-bit integers only
        file_id = names.get(filename)
        if file_id is None:  # a handful of files: join paths once per file, not per line
            file_id = names[filename] = _file_id(con, files, str(source.warc_root / filename))
        digest = fields.get("digest") if isinstance(fields.get("digest"), str) else None
        if digest:
            digest = canonical_digest(digest)
        status_text = str(fields.get("status", ""))
        # an HTTP status is three ASCII digits (str.isdigit also takes "²", which int refuses)
        status = int(status_text) if status_text.isascii() and status_text.isdigit() else None
        if status is not None and status > 999:
            status = None
        revisit = fields.get("mime") == "warc/revisit"
        if digest and not revisit and status == 200:
            originals.append((digest, url, ts, file_id, offset, length))
        if digest and revisit:
            revisits.append((digest,))
        latest.append((normal_url(url), ts, status, digest, int(revisit), file_id, offset, length))
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
class StoredRecord:
    """What a lookup needs of a stored record: its WARC head, its HTTP head, maybe its body."""

    head: RecordHead
    http: ResponseHead | None  #: None when the block holds no HTTP response head
    body: bytes | None  #: None when not read (over the limit) or absent

    def header(self, name: str) -> str | None:
        """The first value of an HTTP header of the record."""
        values = self.http.values(name.encode("ascii")) if self.http is not None else []
        return values[0].decode("latin-1") if values else None


def read_stored(capture: Capture, *, body_limit: int = 0) -> StoredRecord | None:
    """The WARC head, the HTTP head and (within ``body_limit``) the HTTP body of a record;
    None when no record can be read where the index line points.

    Reads a first slice that holds the HTTP head of any ordinary record, and the full
    allowance only when it turns out to be longer.
    """
    prefix: RecordPrefix | None = None
    http: ResponseHead | None = None
    for limit in (_FIRST_READ + body_limit, _MAX_HEAD + body_limit):
        try:
            prefix = read_prefix_at(capture.warc, capture.offset, capture.length, limit)
        except (OSError, WarcFormatError):
            return None
        http = parse_response_head(prefix.block, _MAX_HEAD)
        if prefix.whole or http is not None:
            break
    assert prefix is not None
    block = prefix.block
    if http is None:
        return StoredRecord(prefix.head, None, None)
    body_length = prefix.head.content_length - http.end
    body = block[http.end :] if body_length <= len(block) - http.end else None
    return StoredRecord(prefix.head, http, body)


def _read_details(capture: Capture) -> Details | None:
    record = read_stored(capture)
    if record is None:
        return None
    head = record.head
    return Details(
        head.record_type,
        head.target,
        head.get("WARC-Payload-Digest"),
        head.record_id,
        head.date or "",
        record.header("ETag"),
        record.header("Last-Modified"),
    )


__all__ = [
    "LOOKUP_NAME",
    "PREVIOUS",
    "USABLE_STATUSES",
    "Capture",
    "Details",
    "Source",
    "SourceLookup",
    "StoredRecord",
    "canonical_digest",
    "crawl_status",
    "fingerprint",
    "normal_url",
    "open_source",
    "read_stored",
]
