"""A crawl's archive as a replay tool reads it: a request in, the capture it would serve out.

Replay looks a request up in the crawl's sorted ``index.cdxj`` the way pywb does, so that what a
page gets here is what it gets in pywb or ReplayWeb.page, and a miss here is a miss there:

- the key is the SURT of the URL (:mod:`archiver.index.surtkey`); a POST or PUT has its body's
  parameters appended first (``?__wb_method=post&...``, :mod:`archiver.index.postquery`, the
  Request Body Canonicalization pywb and cdxj-indexer share);
- among the captures of that key, the one closest in time to the page's own capture is served
  (pywb's ``closest`` sort);
- with none, pywb's general fuzzy rule (:mod:`archiver.qa.fuzzy`) may still serve another
  capture (another cache-busting query, another POST body): the answer says so, and why;
- a ``revisit`` is answered with its original's payload, found by ``WARC-Refers-To-Target-URI``
  and the payload digest in this crawl's index or in the indexes of the earlier crawls its
  ``summary.json`` lists in ``depends_on`` (WARC 1.1 section 6.7.2); an identical-payload
  revisit keeps its own status and header fields, a server-not-modified one (a 304, section
  6.7.3) takes its original's.

The index is searched where it lies, by binary search over the sorted file (what pywb does over
a CDXJ), so a crawl of millions of captures costs a few reads per request, not memory. Records
are read back through :mod:`archiver.dedup.captured`, the one reader of stored responses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from archiver.browser.exchange import MAX_FULFILL_BODY, BrowserRequest, BrowserResponse
from archiver.dedup.captured import read_payload, read_response, warc_path
from archiver.errors import ArchiverError, WarcFormatError
from archiver.index.postquery import APPENDED_METHODS, method_query
from archiver.index.surtkey import surt_key
from archiver.models import RecordLocation
from archiver.qa.fuzzy import FUZZY_SEARCH_LIMIT, fuzzy_match, search_url
from archiver.timefmt import timestamp14
from archiver.warc.reader import read_prefix_at

REVISIT_MIME = "warc/revisit"


class ArchiveError(ArchiverError):
    """The directory holds no crawl that can be replayed (no index, no WARC files)."""


@dataclass(frozen=True, slots=True)
class IndexLine:
    """One capture as its CDXJ line says."""

    key: str
    timestamp: str
    url: str
    mime: str | None
    status: str | None
    digest: str | None
    method: str | None
    request_body: str | None
    location: RecordLocation
    warcs: Path
    """The directory its ``filename`` is relative to."""

    @property
    def is_revisit(self) -> bool:
        return self.mime == REVISIT_MIME


def parse_line(line: str, warcs: Path) -> IndexLine | None:
    """An index line, or None when it is not one (a blank line, a foreign format)."""
    key, _, rest = line.partition(" ")
    timestamp, _, data = rest.partition(" ")
    try:
        fields: dict[str, Any] = json.loads(data)
        location = RecordLocation(
            str(fields["filename"]), int(fields["offset"]), int(fields["length"])
        )
    except (ValueError, KeyError, TypeError):
        return None
    return IndexLine(
        key=key,
        timestamp=timestamp,
        url=str(fields.get("url", "")),
        mime=_text(fields.get("mime")),
        status=_text(fields.get("status")),
        digest=_text(fields.get("digest")),
        method=_text(fields.get("method")),
        request_body=_text(fields.get("requestBody")),
        location=location,
        warcs=warcs,
    )


def _text(value: object) -> str | None:
    return None if value is None else str(value)


class CaptureIndex(Protocol):
    """Where replay finds captures by key: a finished crawl's sorted ``index.cdxj``
    (:class:`SortedIndex`), or what a running crawl has journaled so far
    (:class:`archiver.qa.journals.JournalIndex`)."""

    def with_prefix(self, prefix: str) -> Iterator[IndexLine]:
        """The lines whose key starts with ``prefix``, in index order."""
        ...

    def captures_of(self, key: str) -> list[IndexLine]:
        """Every capture whose key is ``key``."""
        ...

    def refresh(self) -> int:
        """Take in what was written since (a running crawl's index grows); the lines added."""
        ...

    def close(self) -> None: ...


class SortedIndex:
    """A sorted CDXJ file searched in place (bisection over byte offsets)."""

    def __init__(self, path: Path, warcs: Path) -> None:
        self.path = path
        self.warcs = warcs
        self._file: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed by close()
        self._size = os.fstat(self._file.fileno()).st_size

    def close(self) -> None:
        self._file.close()

    def refresh(self) -> int:
        """A finished index does not grow."""
        return 0

    def _first_line_from(self, position: int) -> bytes:
        """The first whole line starting at or after ``position``."""
        if position <= 0:
            self._file.seek(0)
        else:
            self._file.seek(position - 1)
            self._file.readline()  # the rest of the line ``position`` falls in
        return self._file.readline()

    def with_prefix(self, prefix: str) -> Iterator[IndexLine]:
        """The lines whose key starts with ``prefix``, in index order."""
        wanted = prefix.encode("utf-8")
        low, high = 0, self._size
        while low < high:
            middle = (low + high) // 2
            line = self._first_line_from(middle)
            if line and line < wanted:
                low = middle + 1
            else:
                high = middle
        self._file.seek(max(low - 1, 0))
        if low > 0:
            self._file.readline()
        while True:
            raw = self._file.readline()
            if not raw or not raw.startswith(wanted):  # the end of the file, or past the prefix
                return
            parsed = parse_line(raw.decode("utf-8", "replace").rstrip("\n"), self.warcs)
            if parsed is not None:
                yield parsed

    def captures_of(self, key: str) -> list[IndexLine]:
        """Every capture whose key is ``key``."""
        return [line for line in self.with_prefix(key + " ") if line.key == key]


@dataclass(frozen=True, slots=True)
class Served:
    """The archive's answer to a request."""

    response: BrowserResponse
    capture: IndexLine
    fuzzy: str | None = None
    """Why pywb's fuzzy rule served this capture (None: an exact capture)."""


@dataclass(frozen=True, slots=True)
class Lacking:
    """The archive has no answer."""

    reason: str
    key: str


class Archive:
    """A crawl directory's captures, and those of the crawls its revisits depend on."""

    def __init__(self, own: CaptureIndex, earlier: list[CaptureIndex], max_body: int) -> None:
        self.own = own
        self.earlier = earlier
        self.max_body = max_body

    @classmethod
    def open(cls, crawl_dir: Path, *, max_body: int = MAX_FULFILL_BODY) -> Archive:
        """Raises :class:`ArchiveError` when ``crawl_dir`` has no index to replay from."""
        index = crawl_dir / "index.cdxj"
        if not index.is_file():
            raise ArchiveError(
                f"no index.cdxj in {crawl_dir}: is it a crawl directory? (archiver index "
                f"{crawl_dir} rebuilds it)"
            )
        own = SortedIndex(index, crawl_dir / "warcs")
        return cls(own, earlier_indexes(depended_crawls(crawl_dir)), max_body)

    def close(self) -> None:
        for index in (self.own, *self.earlier):
            index.close()

    def refresh(self) -> int:
        """Take in what the crawl wrote since (see :meth:`CaptureIndex.refresh`)."""
        return self.own.refresh()

    def lookup(self, request: BrowserRequest, at: str) -> Served | Lacking:
        """What replay serves for ``request`` made by a page captured at ``at`` (14 digits)."""
        url = request.url
        key = request_key(request)
        exact = self.own.captures_of(key)
        if exact:
            exact.sort(key=lambda line: (abs(int(line.timestamp) - int(at)), line.timestamp))
            for line in exact:
                response = self._response(line)
                if response is not None:
                    return Served(response, line)
            return Lacking("its capture cannot be read back (or a revisit's original)", key)
        found = fuzzy_match(url, key, self._candidates(url))
        if found is not None:
            response = self._response(found.capture)
            if response is not None:
                return Served(response, found.capture, found.reason)
        return Lacking("not in the archive", key)

    def resource(self, uri: str, at: str) -> bytes | None:
        """The block of the ``resource`` record stored for ``uri`` (a page's text or screenshot
        taken at capture time, ``urn:text:URL``), the one closest to ``at``; None if none."""
        lines = [line for line in self.own.captures_of(surt_key(uri)) if line.url == uri]
        lines.sort(key=lambda line: abs(int(line.timestamp) - int(at)))
        for line in lines:
            try:
                prefix = read_prefix_at(
                    warc_path(line.warcs, line.location.filename),
                    line.location.offset,
                    line.location.length,
                    self.max_body,
                )
            except (OSError, WarcFormatError):
                continue
            if prefix.head.record_type == "resource" and prefix.whole:
                return bytes(prefix.block)
        return None

    def _candidates(self, url: str) -> Iterator[IndexLine]:
        prefix = search_url(url)
        key = surt_key(prefix)
        if prefix.endswith("/") and not key.endswith("/"):
            key += "/"  # pywb's calc_search_range keeps the slash of a prefix
        for count, line in enumerate(self.own.with_prefix(key)):
            if count >= FUZZY_SEARCH_LIMIT:
                return
            yield line

    def _response(self, line: IndexLine) -> BrowserResponse | None:
        stored = read_response(line.warcs, line.location, max_body=self.max_body)
        if stored is None:
            return None
        if stored.record_type == "response":
            if stored.payload is None:
                return None
            return BrowserResponse(stored.status, stored.headers, stored.payload, stored.reason)
        original = self._original(stored.refers_to or line.url, stored.payload_digest, line)
        if original is None:
            return None
        if stored.status == 304:  # server-not-modified: the original's status and fields
            return original
        return BrowserResponse(stored.status, stored.headers, original.body, stored.reason)

    def _original(
        self, target: str, digest: str | None, revisit: IndexLine
    ) -> BrowserResponse | None:
        """The response a revisit refers to: the capture of ``target`` with its payload digest
        closest in time, in this crawl or an earlier one."""
        key = surt_key(target)
        for index in (self.own, *self.earlier):
            candidates = [
                line
                for line in index.captures_of(key)
                if not line.is_revisit and (digest is None or line.digest == digest)
            ]
            candidates.sort(key=lambda line: abs(int(line.timestamp) - int(revisit.timestamp)))
            for line in candidates:
                stored = read_response(line.warcs, line.location, max_body=self.max_body)
                if stored is None or stored.record_type != "response":
                    continue
                payload, _too_large = read_payload(
                    line.warcs, line.location, digest, max_body=self.max_body
                )
                if payload is not None:
                    return BrowserResponse(stored.status, stored.headers, payload, stored.reason)
        return None


def request_key(request: BrowserRequest) -> str:
    """The index key replay looks ``request`` up with (a POST's or PUT's body appended)."""
    method = request.method.upper()
    if method not in APPENDED_METHODS:
        return surt_key(request.url)
    body = request.body or b""
    content_type = next(
        (value for name, value in request.headers if name.lower() == "content-type"), None
    )
    _query, appended = method_query(method, content_type, str(len(body)), body, request.url)
    return surt_key(request.url + appended)


def earlier_indexes(crawls: list[Path]) -> list[CaptureIndex]:
    """The indexes of earlier crawls (those holding the originals of a crawl's revisits)."""
    return [
        SortedIndex(crawl / "index.cdxj", crawl / "warcs")
        for crawl in crawls
        if (crawl / "index.cdxj").is_file()
    ]


def depended_crawls(crawl_dir: Path) -> list[Path]:
    """The crawl directories ``summary.json``'s ``depends_on`` names (earlier crawls holding
    the originals of this crawl's revisits), each once, in order."""
    try:
        summary = json.loads((crawl_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    listed = summary.get("depends_on") if isinstance(summary, dict) else None
    crawls: list[Path] = []
    for entry in listed if isinstance(listed, list) else []:
        crawl = entry.get("crawl") if isinstance(entry, dict) else None
        if isinstance(crawl, str) and Path(crawl) not in crawls:
            crawls.append(Path(crawl))
    return crawls


def page_timestamp(ts: str) -> str:
    """A page's capture time (``pages.jsonl``'s ``ts``, a WARC-Date) as 14 digits."""
    digits = timestamp14(ts)
    return digits.ljust(14, "0") if digits else "0" * 14


__all__ = [
    "Archive",
    "ArchiveError",
    "CaptureIndex",
    "IndexLine",
    "Lacking",
    "Served",
    "SortedIndex",
    "depended_crawls",
    "earlier_indexes",
    "page_timestamp",
    "parse_line",
    "request_key",
]
