"""A page's text, for full-text search over an archive (``--text``: the ``text`` field of the
WACZ's ``pages.jsonl``, which ReplayWeb.page indexes, and optionally a ``urn:text:`` record).

What a reader would see of the HTML: the text of ``<body>`` without the elements whose content
is not rendered as text (``script``, ``style``, ``noscript``, ``template``; HTML Standard
section 4.12 "scripting" and 4.2.6 "style"), a line break around each block-level element
(as ``innerText`` separates blocks), runs of whitespace inside a line folded to one space
(CSS white-space: normal); text nodes are joined as they are, so ``<b>wor</b>ld`` stays one
word. The document's encoding is read as the link extractor reads it
(:func:`archiver.extract.links._html_input`: BOM, ``<meta charset>``, else UTF-8 or
windows-1252). A browser page's text comes from the browser instead (its DOM after behaviours,
``innerText``); this is the static pages' equivalent.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from archiver.extract.decoding import decode_content
from archiver.extract.links import MAX_DECODED, _html_input

#: elements whose content is not text a reader sees
_HIDDEN = ["script", "style", "noscript", "template", "head"]
#: block-level elements (HTML Standard section 15.3 "Non-replaced elements": display block)
_BLOCKS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "caption",
        "legend",
        "option",
    ]
)
_BLOCK_SELECTOR = ",".join(sorted(_BLOCKS))
_SPACES = re.compile(r"[ \t\r\f\v\u00a0\u2000-\u200b\u3000]+")
_BREAKS = re.compile(r"\s*\n\s*")


def html_text(html: bytes, *, limit: int) -> str:
    """The visible text of an HTML document (already content-decoded), at most ``limit``
    characters."""
    tree = LexborHTMLParser(_html_input(html), encoding=True)
    tree.strip_tags(_HIDDEN)
    body = tree.body
    if body is None:
        return ""
    for block in body.css(_BLOCK_SELECTOR):
        block.insert_before("\n")
        block.insert_after("\n")
    text = body.text(separator="")[: 4 * limit + 4096]  # enough once whitespace is folded
    text = _BREAKS.sub("\n", _SPACES.sub(" ", text)).strip()
    return text[:limit].rstrip()


def page_text(body: bytes, content_encoding: str | None, *, limit: int) -> str:
    """The text of a response body as received (its Content-Encoding undone first)."""
    return html_text(decode_content(body, content_encoding, limit=MAX_DECODED), limit=limit)


__all__ = ["html_text", "page_text"]
