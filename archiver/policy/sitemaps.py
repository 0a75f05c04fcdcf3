"""Sitemaps (https://www.sitemaps.org/protocol.html): which to fetch, and what they list. (pure)

Sitemap documents are crawled like any URL, through the frontier, so they are archived and
politeness, robots.txt, scope and the SSRF guard apply to them. An item is a sitemap when its
discovery path ends in ``M`` (Heritrix's ``Hop.MANIFEST``; redirects after it keep it one):

* :meth:`SitemapPolicy.start_items`: ``/sitemap.xml`` of every seed's origin, queued with the
  seeds;
* :meth:`SitemapPolicy.from_robots`: the ``Sitemap:`` lines of a robots.txt (RFC 9309 section
  2.2.4), reported by :meth:`archiver.policy.robots.Robots.take_reports`;
* :meth:`SitemapPolicy.children`: for a fetched sitemap, its ``<url><loc>`` entries as links
  (hop ``L``), or, for a sitemap index, its ``<sitemap><loc>`` entries as further sitemaps.

* :attr:`SitemapPolicy.named`: sitemaps the operator names (``--sitemap``, one that robots.txt
  does not list), queued with the seeds whether or not ``--sitemaps`` is on.

With ``newer_than`` (``--sitemap-from``), a ``<url>`` whose ``<lastmod>`` (a W3C Datetime) is
before that moment is left out, as Browsertrix's ``--sitemapFromDate`` (``>=`` is kept), and so
is a sitemap index's ``<sitemap>`` entry: a sitemap file not changed since then lists nothing
changed since then. An entry without a ``<lastmod>``, or with one that cannot be read, is kept:
the protocol makes the field optional, and missing a changed page is the worse error.

Whether a listed URL is crawled is the scope's decision, as for any link. Parsing is bounded
against hostile input: gzip (a ``.xml.gz`` file or ``Content-Encoding: gzip``) is inflated to at
most ``max_bytes`` (50 MiB uncompressed by default: the protocol's own limit), at most
``max_urls`` entries are read (50,000 per file, the protocol's limit), and the XML is read by
:func:`archiver.extract.xmlstream.read_xml`, the streaming expat reader the feeds and DASH
manifests are read with, which refuses any document type declaration (no entity expansion, no
external entities: a sitemap never needs a DTD). Plain-text sitemaps (one absolute URL per
line, also in the protocol) are read too.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime

from archiver import urls
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.xmlstream import DoctypeError, Enough, XmlError, local_name, read_xml
from archiver.models import MAX_REDIRECTS, CrawlItem, Exchange, Hop
from archiver.timefmt import parse_w3c_datetime

#: The discovery-path letter of a sitemap document (Heritrix's ``Hop.MANIFEST``). Proposed as
#: ``Hop.MANIFEST`` in :mod:`archiver.models`; a plain string until then.
MANIFEST = "M"
#: sitemaps.org: "no more than 50,000 URLs and must be no larger than 50MB (52,428,800 bytes)"
#: (uncompressed); the same limits apply to a sitemap index.
MAX_URLS = 50_000
MAX_BYTES = 52_428_800
#: Sitemap indexes nested in sitemap indexes are not in the protocol; we follow a few levels.
MAX_NESTING = 3
#: sitemaps.org: a URL "must be less than 2,048 characters"; longer ``<loc>`` text is skipped.
MAX_LOC_CHARS = 4096

_GZIP_MAGIC = b"\x1f\x8b"


class SitemapError(ValueError):
    """The document is not a sitemap we can read (not XML, not a sitemap, a DTD, bad gzip)."""


def is_sitemap(item: CrawlItem) -> bool:
    """True when ``item`` is a sitemap document (possibly reached through redirects)."""
    return item.hops.rstrip(Hop.REDIRECT).endswith(MANIFEST)


def sitemap_item(
    url: str,
    *,
    via: str | None = None,
    parent: CrawlItem | None = None,
    redirects: int = MAX_REDIRECTS,
) -> CrawlItem:
    """The frontier item for a sitemap document, found at ``via`` (robots.txt, a seed) or
    listed by ``parent`` (a sitemap index).

    A sitemap sits at its parent's depth (it is not a page), so the pages it lists are one
    link hop below whatever led to it: the seeds for robots.txt and ``/sitemap.xml``.
    """
    if parent is None:
        return CrawlItem(url=url, redirects_left=redirects, hops=MANIFEST, via=via)
    return CrawlItem(
        url=url,
        redirects_left=redirects,
        depth=parent.depth,
        hops=parent.hops + MANIFEST,
        via=parent.url,
    )


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What one sitemap document lists."""

    kind: str  #: ``urlset``, ``sitemapindex`` or ``text``
    urls: tuple[str, ...]  #: normalised absolute http(s) URLs, in document order, unique
    truncated: bool = False  #: ``max_urls`` or ``max_bytes`` was reached
    skipped: int = 0  #: entries that were not usable http(s) URLs
    older: int = 0  #: entries left out because their ``<lastmod>`` is before ``newer_than``


@dataclass(frozen=True, slots=True)
class SitemapResult:
    """What the crawler queues after fetching a sitemap item, and what it logs."""

    items: tuple[CrawlItem, ...] = ()
    sitemap: Sitemap | None = None
    error: str | None = None


def parse_sitemap(
    body: bytes,
    url: str,
    *,
    content_encoding: str | None = None,
    max_urls: int = MAX_URLS,
    max_bytes: int = MAX_BYTES,
    newer_than: datetime | None = None,
) -> Sitemap:
    """Parse a sitemap (``urlset``), a sitemap index (``sitemapindex``) or a text sitemap.

    ``body`` is the entity body as sent (content coding kept); ``url`` is where it was fetched
    (``<loc>`` values are absolute in the protocol, relative ones are resolved against it).
    ``newer_than`` leaves out XML entries whose ``<lastmod>`` is before it (see the module).
    Raises :class:`SitemapError` when the document cannot be read as a sitemap.
    """
    data, cut = _inflate(body, content_encoding, max_bytes)
    start = data.lstrip()[:5]
    if start.startswith((b"<", b"\xef\xbb\xbf<")):
        return _parse_xml(data, url, max_urls=max_urls, cut=cut, newer_than=newer_than)
    return _parse_text(data, max_urls=max_urls, cut=cut)


def _inflate(body: bytes, content_encoding: str | None, max_bytes: int) -> tuple[bytes, bool]:
    """Undo the content coding and a gzipped file (``.xml.gz``), at most ``max_bytes`` out."""
    try:
        data = decode_content(body, content_encoding, limit=max_bytes + 1)
        if data[:2] == _GZIP_MAGIC:  # a .xml.gz file, possibly also sent gzip-encoded
            data = decode_content(data, "gzip", limit=max_bytes + 1)
    except ContentDecodingError as exc:
        raise SitemapError(str(exc)) from exc
    if len(data) > max_bytes:
        return data[:max_bytes], True
    return data, False


def _parse_text(data: bytes, *, max_urls: int, cut: bool) -> Sitemap:
    """sitemaps.org "Text file": one absolute URL per line, UTF-8."""
    found: dict[str, None] = {}
    skipped = 0
    lines = data.decode("utf-8", errors="replace").removeprefix("\ufeff").splitlines()
    if cut and lines:
        lines.pop()  # the last line may be cut in the middle
    truncated = cut
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if len(found) >= max_urls:
            truncated = True
            break
        if not text.lower().startswith(("http://", "https://")) or len(text) > MAX_LOC_CHARS:
            skipped += 1
            continue
        resolved = urls.resolve(text, text)
        if resolved is None:
            skipped += 1
        else:
            found[resolved] = None
    if not found and skipped:
        raise SitemapError("not a sitemap: no line is an http(s) URL")
    return Sitemap("text", tuple(found), truncated, skipped)


@dataclass(slots=True)
class _XmlState:
    url: str
    max_urls: int
    newer_than: datetime | None = None
    stack: list[str] = field(default_factory=list)
    root: str | None = None
    #: text of the <loc> or <lastmod> being read (None outside them), and its length
    text_parts: list[str] | None = None
    text_chars: int = 0
    #: the entry being read: its <loc> (None: none yet, "": unusable) and <lastmod>
    loc: str | None = None
    lastmod: str | None = None
    found: dict[str, None] = field(default_factory=dict)
    skipped: int = 0
    older: int = 0

    def start(self, name: str, _attrs: dict[str, str]) -> None:
        local = local_name(name)
        if self.root is None:
            if local not in ("urlset", "sitemapindex"):
                raise XmlError(f"not a sitemap: the root element is <{local}>")
            self.root = local
        parent = self.stack[-1] if self.stack else None
        entry = "url" if self.root == "urlset" else "sitemap"
        # Only <loc> and <lastmod> directly in <url>/<sitemap>: <image:loc> and friends are not
        # entries.
        if local in ("loc", "lastmod") and parent == entry and len(self.stack) == 2:
            self.text_parts = []
            self.text_chars = 0
        elif local == entry and len(self.stack) == 1:
            self.loc = self.lastmod = None
        self.stack.append(local)

    def end(self, _name: str) -> None:
        local = self.stack.pop()
        if self.text_parts is not None and local in ("loc", "lastmod"):
            text = "".join(self.text_parts).strip() if self.text_chars <= MAX_LOC_CHARS else ""
            self.text_parts = None
            if local == "loc":
                self.loc = text
            else:
                self.lastmod = text
        elif len(self.stack) == 1 and self.loc is not None:  # the end of an entry
            loc, self.loc = self.loc, None
            self._entry(loc, self.lastmod)

    def _entry(self, loc: str, lastmod: str | None) -> None:
        resolved = urls.resolve(self.url, loc) if loc else None
        if resolved is None:
            self.skipped += 1
            return
        if self.newer_than is not None and lastmod:
            changed = parse_w3c_datetime(lastmod)
            if changed is not None and changed < self.newer_than:
                self.older += 1
                return
        if resolved not in self.found:
            self.found[resolved] = None
            if len(self.found) >= self.max_urls:
                raise Enough

    def flush(self) -> None:
        """The document ended early (damaged, or cut at ``max_bytes``): an entry whose
        ``<loc>`` was read whole still counts."""
        loc, self.loc = self.loc, None
        if loc:
            with contextlib.suppress(Enough):
                self._entry(loc, self.lastmod)

    def text(self, data: str) -> None:
        if self.text_parts is not None:
            self.text_chars += len(data)
            if self.text_chars <= MAX_LOC_CHARS:
                self.text_parts.append(data)


def _parse_xml(
    data: bytes, url: str, *, max_urls: int, cut: bool, newer_than: datetime | None = None
) -> Sitemap:
    """Read an XML sitemap; one cut at ``max_bytes`` (``cut``) is read as far as it goes."""
    state = _XmlState(url=url, max_urls=max_urls, newer_than=newer_than)
    truncated = cut
    try:
        if not read_xml(data, state, final=not cut):
            truncated = True  # max_urls reached
        elif cut:
            state.flush()
    except DoctypeError:
        raise SitemapError(
            "document type declarations are refused in sitemaps (XML bomb defence)"
        ) from None
    except XmlError as exc:
        state.flush()
        if state.root is None or not state.found:
            raise SitemapError(str(exc)) from None
        truncated = True  # keep what was read before the damage, as browsers keep a page
    if state.root is None:
        raise SitemapError("not a sitemap: no root element")
    return Sitemap(state.root, tuple(state.found), truncated, state.skipped, state.older)


@dataclass(frozen=True, slots=True)
class SitemapPolicy:
    """Which sitemaps the crawl fetches, and what a fetched one adds to the frontier."""

    enabled: bool = True  #: ``--sitemaps on``
    max_urls: int = MAX_URLS
    max_bytes: int = MAX_BYTES
    max_nesting: int = MAX_NESTING
    max_redirects: int = MAX_REDIRECTS
    #: sitemaps the operator named (``--sitemap``): fetched even with ``enabled`` off
    named: tuple[str, ...] = ()
    #: leave out entries whose ``<lastmod>`` is before this (``--sitemap-from``)
    newer_than: datetime | None = None

    def start_items(self, seeds: tuple[str, ...] | list[str]) -> list[CrawlItem]:
        """The named sitemaps, then ``/sitemap.xml`` of each seed's origin (the protocol's
        conventional location)."""
        items: dict[str, CrawlItem] = {
            url: sitemap_item(url, redirects=self.max_redirects) for url in self.named
        }
        if not self.enabled:
            return list(items.values())
        for seed in seeds:
            url = urls.origin(seed) + "/sitemap.xml"
            if url not in items:
                items[url] = sitemap_item(url, via=seed, redirects=self.max_redirects)
        return list(items.values())

    def from_robots(self, robots_url: str, sitemap_urls: tuple[str, ...]) -> list[CrawlItem]:
        """Items for the ``Sitemap:`` URLs a robots.txt lists (already normalised)."""
        if not self.enabled:
            return []
        return [
            sitemap_item(url, via=robots_url, redirects=self.max_redirects) for url in sitemap_urls
        ]

    def children(self, item: CrawlItem, exchange: Exchange) -> SitemapResult:
        """What a fetched sitemap item adds: its pages (hop ``L``) or, for an index, sitemaps.

        Only a complete 2xx response is read; redirects are the crawler's (they keep the
        item a sitemap). A soft-404 HTML page at ``/sitemap.xml`` gives an error and no items.
        """
        if not (200 <= exchange.status < 300):
            return SitemapResult()
        try:
            sitemap = parse_sitemap(
                exchange.body or b"",
                item.url,
                content_encoding=exchange.header("Content-Encoding"),
                max_urls=self.max_urls,
                max_bytes=self.max_bytes,
                newer_than=self.newer_than,
            )
        except SitemapError as exc:
            return SitemapResult(error=str(exc))
        if sitemap.kind == "sitemapindex":
            if item.hops.count(MANIFEST) >= self.max_nesting:
                return SitemapResult(sitemap=sitemap, error="sitemap indexes nested too deep")
            items = tuple(
                sitemap_item(url, parent=item, redirects=self.max_redirects) for url in sitemap.urls
            )
        else:
            items = tuple(item.child(url, Hop.LINK) for url in sitemap.urls)
        return SitemapResult(items=items, sitemap=sitemap)
