"""Links an HTML page states as data rather than markup: ``og:``/``twitter:`` meta properties,
``application/ld+json`` blocks, and URLs inside ``javascript:`` hrefs. (pure)

Social cards and structured data name a page's main image and video (often a larger rendition
than any ``<img>`` on it), and sites that open images through script links
(``href="javascript:openFacsimile('https://…/page1.jpg')"``) name them nowhere else. Found URLs
are tagged ``meta`` or ``javascript-url``:

* meta: the Open Graph properties ``og:image``, ``og:video`` and ``og:audio`` with their ``:url``
  and ``:secure_url`` forms (https://ogp.me/), and Twitter's ``twitter:image``,
  ``twitter:image:src`` and ``twitter:player:stream``; requisites;
* ld+json (JSON-LD in HTML, https://www.w3.org/TR/json-ld11/#embedding-json-ld-in-html-documents):
  the schema.org properties that name media (``image``, ``thumbnailUrl``, ``contentUrl``,
  ``logo``, ``thumbnail``: requisites; their value may be a URL, an ``ImageObject`` with a
  ``url`` or ``contentUrl``, or a list) and ``url``/``embedUrl`` (pages), at any depth;
* ``javascript:`` hrefs: the URL is percent-decoded (URL Standard: a ``javascript:`` URL's script
  is its percent-decoded path) and its quoted strings that are absolute or root-relative URLs
  (:func:`archiver.extract.scripts.string_urls`) are pages.
"""

from __future__ import annotations

import json
from urllib.parse import unquote

from archiver.extract.found import Collector, Extractor
from archiver.extract.scripts import string_urls

META_MEDIA = frozenset(
    {
        "og:image",
        "og:image:url",
        "og:image:secure_url",
        "og:video",
        "og:video:url",
        "og:video:secure_url",
        "og:audio",
        "og:audio:url",
        "og:audio:secure_url",
        "twitter:image",
        "twitter:image:src",
        "twitter:player:stream",
    }
)
LD_MEDIA_KEYS = frozenset({"image", "thumbnailUrl", "contentUrl", "logo", "thumbnail"})
LD_PAGE_KEYS = frozenset({"url", "embedUrl"})
#: nodes of an ld+json document visited at most (a page's structured data is small)
MAX_LD_NODES = 100_000


def meta_property(attrs: dict[str, str | None], collect: Collector) -> None:
    """A ``<meta property|name content>`` that names media."""
    name = attrs.get("property") or attrs.get("name")
    if not name or len(name) > 32:
        return
    if name.strip().lower() in META_MEDIA:
        content = (attrs.get("content") or "").strip()
        if content:
            collect.requisite(content, Extractor.META)


def javascript_url_refs(href: str, collect: Collector) -> bool:
    """The URL strings of a ``javascript:`` href added as pages; False when ``href`` is not
    a ``javascript:`` URL (leading C0 controls and spaces are stripped, as URL parsing does)."""
    stripped = href.lstrip(
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f"
        "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "
    )
    if stripped[:11].lower() != "javascript:":
        return False
    script = unquote(stripped[11:]) if "%" in stripped else stripped[11:]
    for value in string_urls(script):
        collect.page(value, Extractor.JAVASCRIPT_URL)
    return True


def ld_json(text: str, collect: Collector) -> None:
    """The media and page URLs of one ``application/ld+json`` block."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return
    stack: list[tuple[object, bool | None]] = [(data, None)]
    visited = 0
    while stack and visited < MAX_LD_NODES:
        node, kind = stack.pop()
        visited += 1
        if isinstance(node, str):
            if kind is not None and node.strip():
                if kind:
                    collect.requisite(node.strip(), Extractor.META)
                else:
                    collect.page(node.strip(), Extractor.META)
        elif isinstance(node, list):
            stack.extend((item, kind) for item in reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed(_ld_children(node, kind)))


def _ld_children(node: dict[str, object], kind: bool | None) -> list[tuple[object, bool | None]]:
    """An object's values to visit, each with what a string there is: a requisite (True), a
    page (False) or nothing (None)."""
    children: list[tuple[object, bool | None]] = []
    for key, value in node.items():
        if key in LD_MEDIA_KEYS or (kind and key in ("url", "contentUrl")):
            children.append((value, True))  # media, or a media object's own URL
        elif key in LD_PAGE_KEYS:
            children.append((value, False))
        elif isinstance(value, dict | list):
            children.append((value, None))
    return children


__all__ = ["META_MEDIA", "javascript_url_refs", "ld_json", "meta_property"]
