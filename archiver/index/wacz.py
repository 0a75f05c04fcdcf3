"""WACZ 1.1.1 packaging of a crawl directory (https://specs.webrecorder.net/wacz/1.1.1/).

What goes in, and why each choice:

* ``archive/`` -- the crawl's WARC files, ZIP ``STORE``: they are gzip already, and ReplayWeb.page
  reads records out of the ZIP by byte range, which only works on stored members.
* ``indexes/index.cdx.gz`` + ``indexes/index.idx`` -- the crawl's CDXJ, line for line, as a
  ZipNum index: blocks of :data:`BLOCK_LINES` lines, each its own gzip member, and a small
  secondary index naming the first key, offset, length and sha256 of every block. This is what
  py-wacz writes (``cdxj_indexer.CompressedWriter``) and what ReplayWeb.page loads lazily, so a
  million-capture crawl does not have to be read in full before the first page shows. The
  ``.cdx.gz`` is stored (it is compressed already), the ``.idx`` deflated (spec: may be).
* ``pages/pages.jsonl`` -- the header line ``{"format": "json-pages-1.0", ...}`` and one entry per
  HTML page the crawl recorded (``url``, RFC 3339 ``ts``, ``title``, a stable ``id``), keeping
  only pages whose capture is in the index (a page recorded before a crash and cut by repair
  is left out) and the first entry per URL and timestamp.
* ``datapackage.json`` -- Frictionless Data Package, ``profile: data-package``, ``wacz_version:
  1.1.1``, and every file with its ``path``, ``name``, ``hash`` (``sha256:``) and ``bytes``.
  ``mainPageUrl`` / ``mainPageDate`` name the first seed's page when it was captured.
  Dependencies go in a custom top-level key, ``archiverDependsOn`` (the summary's
  ``depends_on``: earlier WARC files this crawl's revisits refer to), and not in a file: the spec
  forbids custom files in ``archive/``, ``indexes/`` and ``pages/``, and py-wacz's validator
  only accepts resources exactly two path segments deep, so a key is the portable place. Data
  Package descriptors may carry custom properties.
* ``datapackage-digest.json`` -- the sha256 of ``datapackage.json`` (recommended by the spec),
  and, when the caller gives a signer, its ``signedData`` (WACZ Signing and Verification): the
  signer is handed the hash and the package's ``created`` (the two must agree, py-wacz checks
  it) and returns the object, or ``None`` when signing failed, in which case the package is
  written unsigned (the signer keeps the reason; this module knows no keys or servers).
* page text -- a page entry of the crawl's page list may carry ``text`` (``--text``); it is
  kept, and the header line then says ``"hasText": true`` as py-wacz writes it (wabac.js then
  also names ``pages.jsonl`` the collection's text index). ReplayWeb.page's page search matches
  the ``text`` field.

Member names are fixed or are the crawl's own WARC file names, never anything from a URL (a
crafted URL must not be able to name a path inside the package). The package is written to a
temporary name and renamed, so a crash never leaves a half-written ``.wacz`` under the final
name. Which crawl goes in is the caller's business (:func:`archiver.run.finish.package_crawl`):
this module takes paths.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from archiver import atomicfile
from archiver.errors import OutputError
from archiver.timefmt import Clock, rfc3339, timestamp14, utcnow
from archiver.version import __version__

WACZ_VERSION = "1.1.1"
PAGES_FORMAT = "json-pages-1.0"
#: Lines per ZipNum block (py-wacz's and ArchiveWeb.page's default).
BLOCK_LINES = 1024
INDEX_DATA = "indexes/index.cdx.gz"
INDEX_IDX = "indexes/index.idx"
PAGES = "pages/pages.jsonl"
DEPENDS_KEY = "archiverDependsOn"
_COPY = 1 << 20
#: Source size from which a streamed member is written as ZIP64 (its final size is unknown).
_ZIP64_HINT = 1 << 30


@dataclass(frozen=True, slots=True)
class Resource:
    """One file in the package, as ``datapackage.json`` lists it."""

    path: str
    hash: str
    bytes: int

    def to_json(self) -> dict[str, Any]:
        # Frictionless resource names: lowercase [a-z0-9._/-], unique in the package
        return {
            "name": os.path.basename(self.path).lower(),
            "path": self.path,
            "hash": self.hash,
            "bytes": self.bytes,
        }


class _HashingWriter:
    """Writes to a ZIP member and hashes what it wrote."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.out.write(data)
        self.sha256.update(data)
        self.size += len(data)

    def resource(self, path: str) -> Resource:
        return Resource(path, "sha256:" + self.sha256.hexdigest(), self.size)


@dataclass(frozen=True, slots=True)
class WaczContents:
    """What goes into a package, by path, and what ``datapackage.json`` says about it."""

    warcs: Sequence[Path]
    index: Path  #: the sorted CDXJ of ``warcs``
    pages: Path | None  #: JSON lines ``{"url", "ts", "title"}`` of the HTML pages, if any
    title: str
    description: str | None = None
    software: str | None = None
    seeds: Sequence[str] = ()
    #: the earlier WARC files revisits in ``warcs`` refer to (``archiverDependsOn``)
    depends_on: Sequence[Mapping[str, Any]] = ()


#: Signs a package: (``sha256:…`` of datapackage.json, its ``created``) -> ``signedData``, or
#: ``None`` when it could not (the package is then written unsigned).
Sign = Callable[[str, str], Mapping[str, Any] | None]


def write_wacz(
    contents: WaczContents, output: Path, *, clock: Clock = utcnow, sign: Sign | None = None
) -> Path:
    """Package ``contents`` as the WACZ ``output``; returns its path.

    Raises :class:`OutputError` when there is no WARC file or two WARC files share a name (the
    package's ``archive/`` is flat).
    """
    if not contents.warcs:
        raise OutputError("no WARC files to package")
    names: dict[str, Path] = {}
    for path in contents.warcs:
        if path.name in names:
            raise OutputError(f"two WARC files are named {path.name}: {names[path.name]}, {path}")
        names[path.name] = path
    now = clock()
    stamp = now.astimezone(UTC).timetuple()[:6]
    tmp = atomicfile.tmp_path(output)

    def member(name: str, compress: int) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.compress_type = compress
        info.external_attr = 0o644 << 16
        return info

    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as zf:
            resources = _write_archive(zf, contents.warcs, member)
            resources += _write_indexes(zf, contents.index, member)
            pages = _PageList(contents.pages, contents.index)
            pages.scan()
            resources.append(_write_pages(zf, pages, contents, member))
            package = _datapackage(resources, contents, pages.main_page_date, now=now)
            package_bytes = json.dumps(package, indent=2).encode("utf-8")
            zf.writestr(member("datapackage.json", zipfile.ZIP_DEFLATED), package_bytes)
            digest: dict[str, Any] = {
                "path": "datapackage.json",
                "hash": "sha256:" + hashlib.sha256(package_bytes).hexdigest(),
            }
            signed = sign(digest["hash"], package["created"]) if sign is not None else None
            if signed is not None:
                digest["signedData"] = dict(signed)
            zf.writestr(
                member("datapackage-digest.json", zipfile.ZIP_DEFLATED),
                json.dumps(digest, indent=2).encode("utf-8"),
            )
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return output


#: Makes the ZIP entry of a member: its name and its compression.
Member = Callable[[str, int], zipfile.ZipInfo]


def _write_archive(zf: zipfile.ZipFile, warcs: Sequence[Path], member: Member) -> list[Resource]:
    """``archive/``: the WARC files, stored (they are gzip already; read by byte range)."""
    resources = []
    for path in warcs:
        info = member(f"archive/{path.name}", zipfile.ZIP_STORED)
        info.file_size = path.stat().st_size  # decides ZIP64 up front
        with open(path, "rb") as src, zf.open(info, "w") as dst:
            out = _HashingWriter(dst)
            while chunk := src.read(_COPY):
                out.write(chunk)
        resources.append(out.resource(info.filename))
    return resources


def _write_indexes(zf: zipfile.ZipFile, index: Path, member: Member) -> list[Resource]:
    """``indexes/``: the CDXJ as a ZipNum index (members whose size is not known up front are
    ZIP64 when their source is large)."""
    big_index = index.stat().st_size >= _ZIP64_HINT
    with zf.open(member(INDEX_DATA, zipfile.ZIP_STORED), "w", force_zip64=big_index) as dst:
        out = _HashingWriter(dst)
        idx_lines = _write_zipnum(index, out)
    data = out.resource(INDEX_DATA)
    with zf.open(member(INDEX_IDX, zipfile.ZIP_DEFLATED), "w", force_zip64=big_index) as dst:
        out = _HashingWriter(dst)
        for line in idx_lines:
            out.write(line.encode("utf-8"))
    return [data, out.resource(INDEX_IDX)]


def _write_pages(
    zf: zipfile.ZipFile, pages: _PageList, contents: WaczContents, member: Member
) -> Resource:
    """``pages/pages.jsonl``: the header line, then one entry per page."""
    source = contents.pages
    big_pages = source is not None and source.is_file() and source.stat().st_size >= _ZIP64_HINT
    with zf.open(member(PAGES, zipfile.ZIP_DEFLATED), "w", force_zip64=big_pages) as dst:
        out = _HashingWriter(dst)
        header: dict[str, Any] = {"format": PAGES_FORMAT, "id": "pages", "title": "All Pages"}
        if pages.has_text:
            header["hasText"] = True  # as py-wacz marks a page list with text
        out.write((json.dumps(header) + "\n").encode("utf-8"))
        for page in pages.pages(contents.seeds[0] if contents.seeds else None):
            out.write((json.dumps(page, ensure_ascii=False) + "\n").encode("utf-8"))
    return out.resource(PAGES)


def _write_zipnum(cdxj: Path, out: _HashingWriter) -> list[str]:
    """The CDXJ as gzip blocks of :data:`BLOCK_LINES` lines; returns the ``.idx`` lines.

    The ``.idx`` format is cdxj-indexer's ``CompressedWriter`` (py-wacz): a ``!meta 0`` line,
    then per block ``<first key> <first timestamp> {"offset", "length", "digest"}``.
    """
    meta = json.dumps({"format": "cdxj-gzip-1.0", "filename": os.path.basename(INDEX_DATA)})
    idx = [f"!meta 0 {meta}\n"]
    offset = 0
    block: list[str] = []

    def flush() -> None:
        nonlocal offset
        comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        data = comp.compress("".join(block).encode("utf-8")) + comp.flush()
        prefix = " ".join(block[0].split(" ", 2)[:2])
        entry = {
            "offset": offset,
            "length": len(data),
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        }
        idx.append(f"{prefix} {json.dumps(entry)}\n")
        out.write(data)
        offset += len(data)
        block.clear()

    with open(cdxj, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            block.append(line if line.endswith("\n") else line + "\n")
            if len(block) >= BLOCK_LINES:
                flush()
    if block:
        flush()
    return idx


@dataclass(slots=True)
class _PageList:
    """The crawl's page list, read in passes so that memory holds one key per page, never
    the entries (with ``--text`` each may carry up to the text cap)."""

    source: Path | None
    index: Path
    has_text: bool = False
    main_page_date: str | None = None  #: ``ts`` of the first seed's page, once written
    _found: set[tuple[str, str]] | None = None

    def scan(self) -> None:
        """Which pages have their capture in the index, and whether any has text."""
        wanted: set[tuple[str, str]] = set()
        for entry in self._entries():
            wanted.add((entry["url"], timestamp14(entry["ts"])))
            self.has_text = self.has_text or isinstance(entry.get("text"), str)
        found: set[tuple[str, str]] = set()
        if wanted:
            with open(self.index, encoding="utf-8") as fh:
                for line in fh:
                    parts = line.split(" ", 2)
                    if len(parts) != 3:
                        continue
                    try:
                        url = json.loads(parts[2]).get("url")
                    except ValueError:
                        continue
                    key = (url, parts[1][:14])
                    if key in wanted:
                        found.add(key)
        self._found = found

    def _entries(self) -> Iterator[dict[str, Any]]:
        if self.source is None:
            return
        try:
            with open(self.source, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    if (
                        isinstance(entry, dict)
                        and isinstance(entry.get("url"), str)
                        and isinstance(entry.get("ts"), str)
                    ):
                        yield entry
        except FileNotFoundError:
            return

    def pages(self, main_url: str | None) -> Iterator[dict[str, Any]]:
        """Entries whose capture is in the index, the first per URL and timestamp."""
        if self._found is None:
            self.scan()
        found = self._found or set()
        seen: set[tuple[str, str]] = set()
        for entry in self._entries():
            key = (entry["url"], timestamp14(entry["ts"]))
            if key not in found or key in seen:
                continue
            seen.add(key)
            page: dict[str, Any] = {
                "id": uuid.uuid5(uuid.NAMESPACE_URL, f"{entry['ts']} {entry['url']}").hex,
                "url": entry["url"],
                "ts": entry["ts"],
            }
            if isinstance(entry.get("title"), str) and entry["title"]:
                page["title"] = entry["title"]
            if isinstance(entry.get("text"), str):
                page["text"] = entry["text"]
            if self.main_page_date is None and page["url"] == main_url:
                self.main_page_date = page["ts"]
            yield page


def _datapackage(
    resources: list[Resource],
    contents: WaczContents,
    main_page_date: str | None,
    *,
    now: datetime,
) -> dict[str, Any]:
    package: dict[str, Any] = {
        "profile": "data-package",
        "wacz_version": WACZ_VERSION,
        "title": contents.title,
    }
    if contents.description:
        package["description"] = contents.description
    package["created"] = rfc3339(now)
    package["modified"] = rfc3339(now)
    package["software"] = contents.software or f"archiver/{__version__}"
    if contents.seeds:
        package["mainPageUrl"] = contents.seeds[0]
        if main_page_date is not None:
            package["mainPageDate"] = main_page_date
    package["resources"] = [r.to_json() for r in resources]
    if contents.depends_on:
        package[DEPENDS_KEY] = [dict(d) for d in contents.depends_on]
    return package


__all__ = [
    "BLOCK_LINES",
    "DEPENDS_KEY",
    "WACZ_VERSION",
    "Resource",
    "Sign",
    "WaczContents",
    "write_wacz",
]
