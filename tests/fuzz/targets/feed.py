"""Feed and OPML links (:func:`~archiver.extract.feeds.extract_feed`): a streaming expat reader
that follows RSS 2.0, RSS 1.0, Atom (with ``xml:base``), Media RSS, iTunes and OPML rules.

Oracles, on every input (the first byte chooses a small link cap):

* nothing leaves the extractor (errors are its ``error``); the lists hold normalised URLs, each
  once, no URL in both, never the feed itself, at most ``max_links``;
* on a well-formed document without a document type declaration, the standard library's
  ElementTree (a whole tree, built by another code path over expat) read by the same rules,
  written here again over the tree (text by ``itertext``, ``xml:base`` by walking up), finds
  the same pages and requisites in the same order, unless the cap was reached (then ours is a
  prefix of it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from archiver import urls
from archiver.extract.feeds import ATOM, ITUNES, MEDIA, RDF, RSS1, extract_feed
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/feeds/news.xml"
_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_TEXT = {
    ("link", "channel"): False,
    ("link", "item"): False,
    ("comments", "item"): False,
    ("url", "image"): True,
    (f"{{{RSS1}}}link", f"{{{RSS1}}}channel"): False,
    (f"{{{RSS1}}}link", f"{{{RSS1}}}item"): False,
    (f"{{{RSS1}}}url", f"{{{RSS1}}}image"): True,
    (f"{{{ATOM}}}icon", f"{{{ATOM}}}feed"): True,
    (f"{{{ATOM}}}logo", f"{{{ATOM}}}feed"): True,
}
_ATTRIBUTE = {
    "enclosure": ("url", True),
    "source": ("url", False),
    f"{{{MEDIA}}}content": ("url", True),
    f"{{{MEDIA}}}thumbnail": ("url", True),
    f"{{{MEDIA}}}player": ("url", False),
    f"{{{ITUNES}}}image": ("href", True),
}
_ROOTS = {"rss", f"{{{RDF}}}RDF", f"{{{ATOM}}}feed", f"{{{ATOM}}}entry", "opml"}


def tree_links(document: bytes) -> tuple[list[str], list[str]] | None:
    """(pages, requisites) read from ElementTree's tree; None when it cannot read it."""
    if b"<!" in document:
        return None  # a DTD (refused by us), a comment or CDATA
    try:
        root = ET.fromstring(document)
    except (ET.ParseError, LookupError, ValueError):
        return None
    if root.tag not in _ROOTS:
        return None
    found: list[tuple[str, bool]] = []

    def add(base: str, ref: str | None, requisite: bool) -> None:
        ref = (ref or "").strip()
        if ref and len(ref) <= 16_384:
            resolved = urls.resolve(base, ref)
            if resolved is not None:
                found.append((resolved, requisite))

    def walk(element: ET.Element, parent: str, base: str) -> None:
        declared = element.get(_BASE)
        if declared:
            base = urls.resolve(base, declared.strip()) or base
        tag = element.tag
        kind = _TEXT.get((tag, parent))
        if tag == "guid" and parent == "item":
            kind = False if element.get("isPermaLink", "true").strip().lower() != "false" else None
        if kind is not None:
            text = "".join(element.itertext())
            if len(text) <= 16_384:
                add(base, text, kind)
            return
        if tag in _ATTRIBUTE:
            attribute, requisite = _ATTRIBUTE[tag]
            add(base, element.get(attribute), requisite)
        elif tag == f"{{{ATOM}}}link" and element.get("href"):
            rel = element.get("rel", "alternate").strip().lower()
            if rel == "enclosure":
                add(base, element.get("href"), True)
            elif rel not in ("self", "edit", "edit-media", "hub"):
                add(base, element.get("href"), False)
        elif tag == f"{{{ATOM}}}content" and element.get("src"):
            add(base, element.get("src"), False)
        elif tag == "outline":
            for attribute in ("xmlUrl", "htmlUrl", "url"):
                if element.get(attribute):
                    add(base, element.get(attribute), False)
        for child in element:
            walk(child, tag, base)

    walk(root, "", URL)
    own = urls.resolve(URL, "")
    pages: dict[str, None] = {}
    requisites: dict[str, None] = {}
    for url, requisite in found:
        if url == own or url in requisites:
            continue
        if requisite:
            pages.pop(url, None)
            requisites[url] = None
        elif url not in pages:
            pages[url] = None
    return list(pages), list(requisites)


def check(data: bytes) -> None:
    source = Bytes(data)
    max_links = 3 if source.byte() & 1 else 10_000
    document = source.rest()
    feed = extract_feed(document, URL, max_links=max_links)
    links = feed.links
    found = [*links.pages, *links.requisites]
    agree(len(set(found)) == len(found), "a URL listed twice", links)
    agree(len(found) <= max_links, "over max_links", links)
    agree(urls.resolve(URL, "") not in found, "the feed itself", links)
    for url in found:
        agree(urls.normalize_url(url) == url, "not normal", url)
    expected = tree_links(document)
    if expected is None:
        return
    agree(feed.error is None or links.truncated, "ElementTree reads what we refuse", feed.error)
    pages, requisites = expected
    if links.truncated:
        # the cap stops the read: what came out is what ElementTree read first, as far as it
        # went (a page of ours may have become a requisite later in the document)
        agree(set(found) <= set(pages) | set(requisites), "capped lists differ", links, expected)
    else:
        agree(list(links.pages) == pages, "pages differ", links.pages, pages)
        agree(list(links.requisites) == requisites, "requisites differ", links, requisites)


TARGET = Target(
    name="feed",
    check=check,
    max_len=4096,
    summary="extract_feed (RSS, RDF, Atom xml:base, Media RSS, OPML); oracle: the same rules "
    "over ElementTree's tree of well-formed XML; lists normal, unique, capped",
    seed=lambda document: b"\x00" + document,
    dictionary=(
        b'<rss version="2.0">',
        b"<channel>",
        b"<item>",
        b"<link>",
        b"</link>",
        b'<guid isPermaLink="false">',
        b'<enclosure url="',
        b'<feed xmlns="http://www.w3.org/2005/Atom">',
        b"<entry>",
        b'<link rel="enclosure" href="',
        b'xml:base="',
        b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        b'xmlns="http://purl.org/rss/1.0/">',
        b'<media:content xmlns:media="http://search.yahoo.com/mrss/" url="',
        b'<opml><body><outline xmlUrl="',
        b"http://example.com/",
        b"&amp;",
    ),
)
