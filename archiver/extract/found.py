"""What an extractor found: the :class:`Links` of one document, each URL tagged with the name of
the extractor that found it, and the :class:`Collector` every extractor fills them with.

A document's links split in two, as Heritrix's hop types do: *pages* (hop ``L``) are navigation
a reader may follow; *requisites* (hop ``E``) are what a browser or a player fetches to render
the document (images, stylesheets, scripts, fonts, media segments). The crawl log and the summary
say which extractor found each URL (the noise measure that made Heritrix users turn speculative
JavaScript extraction off), so every link carries a name from :class:`Extractor`. A document's
links nearly all come from one extractor: :attr:`Links.extractor` names it, and only the links
another extractor found inside the same document (an inline script, a ``Link:`` header, an
``og:image``) are listed in :attr:`Links.found_by`, so the HTML fast path stores no tag at all.

Everything here is pure. Resolution and normalisation go through :func:`archiver.urls.resolve`,
which drops the fragment, refuses ``javascript:``, ``mailto:``, ``data:``… and percent-encodes
what needs it, so a link can never put a raw CR/LF into a header.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from archiver import urls

MAX_LINKS = 10_000
#: What ``--max-links-per-page 0`` (no limit) means to an extractor: more links than any page
#: holds (a number, not None: the PDF reader hands it to its child process)
NO_LINK_LIMIT = 10**9


def link_limit(setting: int | None) -> int:
    """The links an extractor keeps from one document: ``setting``, or no limit for None."""
    return NO_LINK_LIMIT if setting is None else setting


# A reference longer than this is skipped without being resolved: common servers refuse request
# lines over 8 KiB (Apache's LimitRequestLine, nginx's large_client_header_buffers), so twice
# that is fetchable nowhere, and percent-encoding a megabyte-long attribute would stall the event
# loop for nothing.
MAX_REF_LENGTH = 16_384


class Extractor(enum.StrEnum):
    """The extractors, by the name the crawl log and the summary give them."""

    HTML = "html"  #: elements and attributes of an HTML page (links.extract_html)
    CSS = "css"  #: url(), @import, image-set() of a stylesheet or a style attribute
    LINK_HEADER = "link-header"  #: an HTTP ``Link:`` header (RFC 8288)
    FEED = "feed"  #: RSS, Atom, RDF and OPML documents
    PDF = "pdf"  #: URI link annotations and URLs in the text of a PDF
    JS_MODULE = "js-module"  #: the module graph: imports, import.meta.url, bundler chunk tables
    JS_STRING = "js-string"  #: absolute and root-relative URL strings in a script
    JS_RELATIVE = "js-relative"  #: relative path strings in a script (speculative, off by default)
    JSON = "json"  #: absolute and root-relative URL strings in a JSON document
    JAVASCRIPT_URL = "javascript-url"  #: a URL string inside an ``href="javascript:…"``
    META = "meta"  #: ``og:``/``twitter:`` meta properties and ``application/ld+json`` data
    HLS = "hls"  #: an HLS playlist (RFC 8216)
    DASH = "dash"  #: a DASH manifest (ISO/IEC 23009-1)
    YT_DLP = "yt-dlp"  #: media URLs yt-dlp resolved for a page (``--media yt-dlp``)


@dataclass(frozen=True, slots=True)
class Links:
    """What one document links to, each list normalised, deduplicated, in document order."""

    pages: tuple[str, ...]
    """Navigational links, crawled as pages (hop ``L``)."""
    requisites: tuple[str, ...]
    """Page requisites and embeds (hop ``E``). A URL that is both is only here."""
    base: str
    """The URL relative references were resolved against (after ``<base href>``)."""
    title: str | None = None
    """The HTML document's title, whitespace collapsed; None if absent or empty."""
    truncated: bool = False
    """True when ``max_links`` was reached and further links were dropped."""
    extractor: str = Extractor.HTML
    """The extractor that found the links not listed in :attr:`found_by`."""
    found_by: Mapping[str, str] | None = None
    """The links another extractor found (an inline script, a header): URL -> its name."""

    def extractor_of(self, url: str) -> str:
        """The name of the extractor that found ``url``."""
        tags = self.found_by
        if tags:
            return tags.get(url, self.extractor)
        return self.extractor


def no_links(url: str, extractor: str) -> Links:
    return Links((), (), url, extractor=extractor)


def merge(first: Links, second: Links, *, max_links: int = MAX_LINKS) -> Links:
    """``first``'s links, then ``second``'s that are new (a URL that is a requisite in either is
    a requisite), each keeping the extractor that found it first; ``first``'s base and title."""
    if not second.pages and not second.requisites:
        return first
    collect = Collector(first.base, "", max_links, first.extractor)
    collect.add_all(first)
    collect.add_all(second)
    return collect.links(first.title)


# --------------------------------------------------------------------------------------------
# Collecting resolved links

# Resolving costs ~20 us per reference (urljoin and normalisation in pure Python), more than
# parsing the page. Navigation, footers and asset links repeat on every page of a site, and for
# a reference that is path-absolute ("/a"), scheme-relative ("//h/a") or absolute with a host
# ("https://h/a") the URL Standard makes the result depend on the base's scheme and authority
# alone; so those are memoised per origin across pages. Pure memoisation, bounded in entries
# and in the length of what is kept.
_MEMO_REF_LENGTH = 512


@functools.lru_cache(maxsize=8192)
def _resolve_from_origin(origin: str, ref: str) -> str | None:
    return urls.resolve(origin + "/", ref)


def _origin_only(ref: str) -> bool:
    """Whether resolving ``ref`` against an http(s) base needs only the base's origin."""
    if ref.startswith("/"):
        return True
    if ref.startswith("https://"):
        first = ref[8:9]
    elif ref.startswith("http://"):
        first = ref[7:8]
    else:
        return False
    # A host must follow: "http:///x" or "http://" alone would be resolved against the base.
    return first.isascii() and first.isalnum()


def origin_of(base: str) -> str | None:
    """``scheme://authority`` of an http(s) base, or None when it is not that simple."""
    scheme, sep, rest = base.partition("://")
    if not sep or scheme.lower() not in urls.SCHEMES:
        return None
    end = len(rest)
    for char in "/?#\\":
        index = rest.find(char)
        if 0 <= index < end:
            end = index
    return base[: len(scheme) + 3 + end] if end else None


class Collector:
    """Resolves references against one base and keeps the two ordered, deduplicated lists,
    with the extractor of each link that ``extractor`` (the document's own) did not find."""

    __slots__ = (
        "_base",
        "_cache",
        "_max_links",
        "_origin",
        "_own",
        "extractor",
        "pages",
        "requisites",
        "tags",
        "truncated",
    )

    def __init__(
        self, base: str, document_url: str, max_links: int, extractor: str = Extractor.HTML
    ) -> None:
        self._base = base
        self._origin = origin_of(base)
        self._own = urls.resolve(document_url, "")
        self._max_links = max_links
        self._cache: dict[str, str | None] = {}
        self.extractor = extractor
        self.pages: dict[str, None] = {}  # dicts as insertion-ordered sets
        self.requisites: dict[str, None] = {}
        self.tags: dict[str, str] = {}
        self.truncated = False

    @property
    def base(self) -> str:
        return self._base

    def resolve(self, ref: str) -> str | None:
        url = self._cache.get(ref, "")  # "" is never a result, so it marks a miss
        if url == "" and "#" in ref:
            # the fragment is dropped anyway: "a.html#x" and "a.html#y" resolve once (long
            # documentation pages link to dozens of anchors of the same few pages); not when
            # the cut leaves a space or control at the end, which resolving would strip as the
            # end of the reference ("a #x" is "a%20")
            stem = ref.partition("#")[0]
            if stem[-1:] > " " or not stem:
                ref = stem
                url = self._cache.get(ref, "")
        if url == "":
            if len(ref) > MAX_REF_LENGTH:
                url = None
            elif self._origin is not None and len(ref) <= _MEMO_REF_LENGTH and _origin_only(ref):
                url = _resolve_from_origin(self._origin, ref)
            else:
                url = urls.resolve(self._base, ref)
            self._cache[ref] = url
        return url

    def resolve_against(self, base: str, ref: str) -> str | None:
        """``ref`` resolved against another base than the document's (not cached)."""
        return urls.resolve(base, ref) if len(ref) <= MAX_REF_LENGTH else None

    def add_requisite_ref(self, base: str, ref: str, tag: str | None = None) -> None:
        """A requisite reference relative to another base than the document's."""
        url = self.resolve_against(base, ref)
        if url is not None:
            self.add_requisite(url, tag)

    def page(self, ref: str, tag: str | None = None) -> None:
        """A navigational reference, relative to the base; ``tag`` names the extractor that
        found it when it is not the document's own."""
        url = self.resolve(ref)
        if url is not None:
            self.add_page(url, tag)

    def requisite(self, ref: str, tag: str | None = None) -> None:
        """A reference to something the document needs, relative to the base."""
        url = self.resolve(ref)
        if url is not None:
            self.add_requisite(url, tag)

    def add_page(self, url: str, tag: str | None = None) -> None:
        """An already resolved and normalised page URL."""
        if url == self._own or url in self.pages or url in self.requisites:
            return
        if len(self.pages) + len(self.requisites) >= self._max_links:
            self.truncated = True
            return
        self.pages[url] = None
        if tag is not None and tag != self.extractor:
            self.tags[url] = tag

    def add_requisite(self, url: str, tag: str | None = None) -> None:
        """An already resolved and normalised requisite URL."""
        if url == self._own or url in self.requisites:
            return
        if url in self.pages:
            del self.pages[url]  # a requisite too: fetched as one, listed once
        elif len(self.pages) + len(self.requisites) >= self._max_links:
            self.truncated = True
            return
        self.requisites[url] = None
        if tag is not None and tag != self.extractor:
            self.tags[url] = tag
        elif url in self.tags and tag is not None:
            del self.tags[url]  # the document's own extractor found it as a requisite

    def add_all(self, links: Links) -> None:
        """Another extractor's links, each keeping its extractor."""
        for url in links.requisites:
            self.add_requisite(url, links.extractor_of(url))
        for url in links.pages:
            self.add_page(url, links.extractor_of(url))
        self.truncated = self.truncated or links.truncated

    def links(self, title: str | None = None) -> Links:
        return Links(
            tuple(self.pages),
            tuple(self.requisites),
            self._base,
            title,
            self.truncated,
            self.extractor,
            self.tags or None,
        )


def collect_all(
    refs: Iterable[tuple[str, bool]],
    base: str,
    document_url: str,
    extractor: str,
    max_links: int,
) -> Links:
    """The links of ``(reference, is_requisite)`` pairs, all found by ``extractor``."""
    collect = Collector(base, document_url, max_links, extractor)
    for ref, requisite in refs:
        if requisite:
            collect.requisite(ref)
        else:
            collect.page(ref)
        if collect.truncated:
            break
    return collect.links()


__all__ = [
    "MAX_LINKS",
    "MAX_REF_LENGTH",
    "Collector",
    "Extractor",
    "Links",
    "collect_all",
    "merge",
    "no_links",
    "origin_of",
]
