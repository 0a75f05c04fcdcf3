"""Link extraction from HTML (:func:`~archiver.extract.links.extract`): Lexbor (selectolax)
parses, our walk visits the elements and reads their link attributes.

Oracles, on every input (the first byte chooses gzip content coding and a small link cap):

* only :class:`~archiver.extract.decoding.ContentDecodingError` leaves the extractor;
* the lists hold normalised http(s) URLs (a fixed point of normalisation), each once, no URL in
  both, never the document itself, at most ``max_links`` in all;
* our walk misses nothing: for every element-attribute pair of the extractor's table
  (``a[href]``, ``img[src]``, ``iframe[src]``...), selectolax's own CSS selector engine,
  querying the same parsed tree, finds the elements, and each attribute's URL (resolved
  against the document's base) is in the lists, unless the cap was reached.
"""

from __future__ import annotations

import gzip

from selectolax.lexbor import LexborHTMLParser

from archiver import urls
from archiver.extract.links import _ATTRIBUTES, _REQUISITE, _html_input, extract
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/dir/page.html"


def check(data: bytes) -> None:
    source = Bytes(data)
    mode = source.byte()
    document = source.rest()
    body = gzip.compress(document, mtime=0) if mode & 1 else document
    max_links = 4 if mode & 2 else 10_000
    links = extract(body, URL, "text/html", "gzip" if mode & 1 else None, max_links=max_links)
    found = [*links.pages, *links.requisites]
    agree(len(set(found)) == len(found), "a URL listed twice", links)
    agree(len(found) <= max_links, "over max_links", links)
    agree(urls.resolve(URL, "") not in found, "the document itself", links)
    for url in found:
        agree(urls.normalize_url(url) == url, "not normal", url)
    if links.truncated:
        return
    tree = LexborHTMLParser(_html_input(document), encoding=True)
    for tag, pairs in _ATTRIBUTES.items():
        for attribute, kind in pairs:
            if kind != _REQUISITE and attribute != "href":
                continue  # srcset values are judged by the srcset target
            selector = f"{tag}[{attribute.replace(':', chr(92) + ':')}]"
            for node in tree.css(selector):
                value = node.attributes.get(attribute)
                if not value:
                    continue
                resolved = urls.resolve(links.base, value)
                if resolved is not None and resolved != urls.resolve(URL, ""):
                    agree(resolved in found, "the walk missed a link", selector, value, resolved)


TARGET = Target(
    name="html",
    check=check,
    max_len=8192,
    summary="extract() on HTML (selectolax + our walk); oracles: selectolax's CSS selector "
    "engine over the same tree finds no link we miss; lists normal, unique, capped",
    seed=lambda document: b"\x00" + document,
    dictionary=(
        b"<a href=",
        b"<img src=",
        b" srcset=",
        b"<base href=",
        b"<link rel=stylesheet href=",
        b"<meta http-equiv=refresh content=",
        b"<style>",
        b" style=",
        b"<svg>",
        b"<use xlink:href=",
        b"<iframe src=",
        b"<template>",
        b"<title>",
        b"<meta charset=",
    ),
)
