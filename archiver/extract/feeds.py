"""Links in syndication feeds: RSS 2.0, RSS 1.0 (RDF), Atom (RFC 4287), and OPML outlines.
(pure)

A feed lists a site's articles, often more of them (and older ones) than its pages link to;
podcasts and video feeds list their media only there. Items' and entries' links are pages
(scope decides on them); enclosures, thumbnails, feed images and icons are requisites of the
feed (what a feed reader fetches to show it). Which elements, by format:

* RSS 2.0 (https://www.rssboard.org/rss-specification): ``<link>`` of the channel and of each
  item, an item's ``<comments>``, its ``<guid>`` unless ``isPermaLink="false"`` (a permalink
  by default), ``<source url>``; requisites ``<enclosure url>`` and ``<image><url>``;
* RSS 1.0 (https://web.resource.org/rss/1.0/spec): ``<link>`` of the channel and items, the
  image's ``<url>``;
* Atom (RFC 4287 section 4.2.7): ``<link href>`` whose ``rel`` is absent (``alternate``) or any
  relation but ``self``, ``edit``, ``edit-media`` and ``hub`` (which name the feed itself or
  its publishing endpoints), ``<content src>``; requisites ``rel="enclosure"``, ``<icon>`` and
  ``<logo>``; ``xml:base`` is honoured (section 2, XML Base), as Atom documents rely on it;
* Media RSS (https://www.rssboard.org/media-rss) ``<media:content url>`` and
  ``<media:thumbnail url>`` (requisites), ``<media:player url>`` (a page); iTunes
  ``<itunes:image href>`` (a requisite);
* OPML 2.0 (http://opml.org/spec2.opml): every ``<outline>``'s ``xmlUrl`` (a feed),
  ``htmlUrl`` and ``url``, as pages.

The document is read by :func:`archiver.extract.xmlstream.read_xml` (streaming, no DTD), so a
feed of a hundred thousand items costs its links, and ``max_links`` stops the read. A document
that is not well-formed gives the links read before the error, and the error.
"""

from __future__ import annotations

from dataclasses import dataclass

from archiver import urls
from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.xmlstream import SEPARATOR as SEP
from archiver.extract.xmlstream import XML_BASE, Enough, XmlError, local_name, read_xml

FEED_TYPES = frozenset(
    {
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
        "application/rss",
        "text/x-opml",
        "text/x-opml+xml",
        "application/x-opml",
        "application/opml+xml",
    }
)
#: generic XML types a feed is also served as: sniffed (:func:`looks_like_feed`)
XML_TYPES = frozenset({"text/xml", "application/xml"})

ATOM = "http://www.w3.org/2005/Atom"
RSS1 = "http://purl.org/rss/1.0/"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
MEDIA = "http://search.yahoo.com/mrss/"
ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"

#: root elements of the formats read (as xmlstream names them)
ROOTS = frozenset({"rss", f"{RDF}{SEP}RDF", f"{ATOM}{SEP}feed", f"{ATOM}{SEP}entry", "opml"})
#: Atom relations that are not links to read: the feed itself, its editing endpoints
_ATOM_SKIPPED_RELS = frozenset({"self", "edit", "edit-media", "hub"})
_PAGE, _REQUISITE = False, True
# elements whose text is a link: (element, parent) -> kind
_TEXT_LINKS = {
    ("link", "channel"): _PAGE,
    ("link", "item"): _PAGE,
    ("comments", "item"): _PAGE,
    ("url", "image"): _REQUISITE,
    (f"{RSS1}{SEP}link", f"{RSS1}{SEP}channel"): _PAGE,
    (f"{RSS1}{SEP}link", f"{RSS1}{SEP}item"): _PAGE,
    (f"{RSS1}{SEP}url", f"{RSS1}{SEP}image"): _REQUISITE,
    (f"{ATOM}{SEP}icon", f"{ATOM}{SEP}feed"): _REQUISITE,
    (f"{ATOM}{SEP}logo", f"{ATOM}{SEP}feed"): _REQUISITE,
}
# elements with one link attribute: element -> (attribute, kind)
_ATTRIBUTE_LINKS = {
    "enclosure": ("url", _REQUISITE),
    "source": ("url", _PAGE),
    f"{MEDIA}{SEP}content": ("url", _REQUISITE),
    f"{MEDIA}{SEP}thumbnail": ("url", _REQUISITE),
    f"{MEDIA}{SEP}player": ("url", _PAGE),
    f"{ITUNES}{SEP}image": ("href", _REQUISITE),
}
_SNIFF = (b"<rss", b"<feed", b"<rdf:RDF", b"<RDF", b"<opml")
#: the longest text of a link element read (a URL is far shorter)
MAX_TEXT = 16_384


@dataclass(frozen=True, slots=True)
class FeedLinks:
    links: Links
    #: the format read (the root element's local name: rss, RDF, feed, entry, opml), or None
    kind: str | None
    #: why the document could not be read to its end (not a feed, not well-formed), or None
    error: str | None


def looks_like_feed(body: bytes) -> bool:
    """Whether a document served as generic XML starts like a feed (its root element within
    the first 2 KB: after the declaration, comments and processing instructions)."""
    head = body[:2048]
    return any(marker in head for marker in _SNIFF)


class _FeedReader:
    __slots__ = (
        "bases",
        "collect",
        "kind",
        "stack",
        "text_depth",
        "text_kind",
        "text_parts",
        "text_size",
    )

    def __init__(self, collect: Collector, url: str) -> None:
        self.collect = collect
        self.stack: list[str] = []
        self.bases: list[str] = [url]
        self.kind: str | None = None
        self.text_kind: bool | None = None
        self.text_depth = 0  #: the depth of the element whose text is a link
        self.text_parts: list[str] = []
        self.text_size = 0

    def _add(self, ref: str, requisite: bool) -> None:
        ref = ref.strip()
        if not ref:
            return
        base = self.bases[-1]
        target = urls.resolve(base, ref) if len(ref) <= MAX_TEXT else None
        if target is None:
            return
        if requisite:
            self.collect.add_requisite(target)
        else:
            self.collect.add_page(target)
        if self.collect.truncated:
            raise Enough

    def start(self, name: str, attrs: dict[str, str]) -> None:
        if self.kind is None:
            if name not in ROOTS:
                raise XmlError(f"not a feed: the root element is <{local_name(name)}>")
            self.kind = local_name(name)
        parent = self.stack[-1] if self.stack else ""
        self.stack.append(name)
        base = attrs.get(XML_BASE)
        resolved = urls.resolve(self.bases[-1], base.strip()) if base else None
        self.bases.append(resolved or self.bases[-1])
        if self.text_kind is not None:
            return  # inside a link element: its children's text is part of its text
        kind = _TEXT_LINKS.get((name, parent))
        if name == "guid" and parent == "item":
            permalink = attrs.get("isPermaLink", "true").strip().lower() != "false"
            kind = _PAGE if permalink else None
        if kind is not None:
            self.text_kind = kind
            self.text_depth = len(self.stack)
            self.text_parts = []
            self.text_size = 0
            return
        self._attributes(name, attrs)

    def _attributes(self, name: str, attrs: dict[str, str]) -> None:
        simple = _ATTRIBUTE_LINKS.get(name)
        if simple is not None:
            attribute, kind = simple
            self._add(attrs.get(attribute, ""), kind)
        elif name == f"{ATOM}{SEP}link":
            href = attrs.get("href")
            if href:
                rel = attrs.get("rel", "alternate").strip().lower()
                if rel == "enclosure":
                    self._add(href, _REQUISITE)
                elif rel not in _ATOM_SKIPPED_RELS:
                    self._add(href, _PAGE)
        elif name == f"{ATOM}{SEP}content":
            src = attrs.get("src")
            if src:
                self._add(src, _PAGE)
        elif name == "outline":
            for attribute in ("xmlUrl", "htmlUrl", "url"):
                value = attrs.get(attribute)
                if value:
                    self._add(value, _PAGE)

    def end(self, _name: str) -> None:
        depth = len(self.stack)
        self.stack.pop()
        kind = self.text_kind
        if kind is not None and depth == self.text_depth:
            self.text_kind = None
            if self.text_size <= MAX_TEXT:
                self._add("".join(self.text_parts), kind)
        self.bases.pop()

    def text(self, data: str) -> None:
        if self.text_kind is not None:
            self.text_size += len(data)
            if self.text_size <= MAX_TEXT:
                self.text_parts.append(data)


def extract_feed(body: bytes, url: str, *, max_links: int = MAX_LINKS) -> FeedLinks:
    """The links of a feed or an OPML document fetched from ``url`` (already decoded)."""
    collect = Collector(url, url, max_links, Extractor.FEED)
    reader = _FeedReader(collect, url)
    error = None
    try:
        read_xml(body, reader)
    except XmlError as exc:
        error = str(exc)
    return FeedLinks(collect.links(), reader.kind, error)


__all__ = ["FEED_TYPES", "XML_TYPES", "FeedLinks", "extract_feed", "looks_like_feed"]
