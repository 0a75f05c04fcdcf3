"""Sitemap parsing (:func:`~archiver.policy.sitemaps.parse_sitemap`): XML sitemaps and sitemap
indexes, text sitemaps, gzip (as a ``.xml.gz`` file or a ``Content-Encoding``), within limits.

Oracles, on every input (the first byte chooses gzip and the limits):

* only :class:`~archiver.policy.sitemaps.SitemapError` leaves the parser; at most ``max_urls``
  entries come out, each a normalised http(s) URL, each once;
* on a well-formed XML document without a document type declaration, the standard library's
  ElementTree (a tree built by another code path over expat) finds the same entries in the
  same order: the ``<loc>`` text of each ``<url>`` (``<sitemap>`` in an index) child of the
  root, resolved against the sitemap's URL, duplicates dropped, unless the limit cut the list
  (then ours is its prefix).
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET

from archiver import urls
from archiver.policy.sitemaps import MAX_LOC_CHARS, SitemapError, parse_sitemap
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/sitemap.xml"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def tree_entries(document: bytes) -> tuple[str, list[str]] | None:
    """The root's local name and the entries, read with ElementTree; None if it cannot."""
    if b"<!" in document:
        return None  # a DTD (refused by us, expanded by ElementTree), CDATA or a comment
    root: ET.Element | None
    try:
        root = ET.fromstring(document)
    except (ET.ParseError, LookupError):  # LookupError: an encoding Python does not know
        return None
    except ValueError:  # a multi-byte encoding expat lacks: Python's codec decodes it
        root = _decoded_tree(document)
        if root is None:
            return None
    kind = _local(root.tag)
    entry = "url" if kind == "urlset" else "sitemap"
    found: dict[str, None] = {}
    for child in root:
        if _local(child.tag) != entry:
            continue
        for loc in child:
            if _local(loc.tag) != "loc":
                continue
            text = "".join(loc.itertext())
            text = text.strip() if len(text) <= MAX_LOC_CHARS else ""
            resolved = urls.resolve(URL, text) if text else None
            if resolved is not None:
                found.setdefault(resolved, None)
    return kind, list(found)


def _decoded_tree(document: bytes) -> ET.Element | None:
    """The document decoded by the codec its declaration names, read by ElementTree as text
    (which ignores the declared encoding)."""
    declared = re.match(rb"""<\?xml[^>]*?encoding\s*=\s*["']([^"']+)["']""", document)
    if declared is None:
        return None
    try:
        return ET.fromstring(document.decode(declared.group(1).decode("latin-1"), "replace"))
    except (ET.ParseError, LookupError, ValueError, UnicodeError, TypeError):
        return None  # TypeError: a codec that is not text (rot13's str in, base64's bytes out)


def check(data: bytes) -> None:
    source = Bytes(data)
    mode = source.byte()
    document = source.rest()
    body = gzip.compress(document, mtime=0) if mode & 1 else document
    encoding = "gzip" if mode & 2 and mode & 1 else None
    max_urls = 3 if mode & 4 else 50_000
    try:
        result = parse_sitemap(body, URL, content_encoding=encoding, max_urls=max_urls)
    except SitemapError:
        result = None
    if result is not None:
        agree(len(result.urls) <= max_urls, "over max_urls", result)
        agree(len(set(result.urls)) == len(result.urls), "duplicates", result)
        for url in result.urls:
            agree(urls.normalize_url(url) == url, "not normal", url)
    if mode & 1 and not encoding and document[:2] == b"\x1f\x8b":
        return  # a gzip inside a gzip: inflated once only
    expected = tree_entries(document)
    if expected is None or expected[0] not in ("urlset", "sitemapindex"):
        return
    agree(result is not None, "ElementTree reads a sitemap we refuse", expected)
    assert result is not None
    agree(result.kind == expected[0], "kind", result, expected)
    if result.truncated:
        agree(list(result.urls) == expected[1][: len(result.urls)], "not a prefix", result)
    else:
        agree(list(result.urls) == expected[1], "entries differ", result, expected)


TARGET = Target(
    name="sitemap",
    check=check,
    max_len=4096,
    summary="parse_sitemap (XML, index, text, gzip, limits); oracle: ElementTree's reading of "
    "well-formed XML; the error tree",
    seed=lambda document: b"\x00" + document,
    dictionary=(
        b'<?xml version="1.0" encoding="UTF-8"?>',
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
        b"</urlset>",
        b"<sitemapindex>",
        b"</sitemapindex>",
        b"<url>",
        b"</url>",
        b"<sitemap>",
        b"<loc>",
        b"</loc>",
        b"http://example.com/",
        b"<!DOCTYPE",
        b"&amp;",
        b"<![CDATA[",
    ),
)
