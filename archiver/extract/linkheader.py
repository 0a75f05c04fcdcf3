"""Links in HTTP ``Link`` header fields (RFC 8288, Web Linking). (pure)

A server can name what a page needs in its response head instead of its body: a stylesheet or a
module to preload, an icon, the next page of a series. Browsers act on ``preload``,
``modulepreload``, ``stylesheet`` and ``icon`` links from headers (``prefetch`` later), so for
replay they are requisites of the response that carries them, like the same ``<link>`` in HTML;
``next``, ``prev``, ``alternate`` and every other relation are links to pages, which scope
decides on; ``preconnect`` and ``dns-prefetch`` name origins, not resources, and are skipped.

The grammar (RFC 8288 section 3): ``Link = #link-value``, ``link-value = "<" URI-Reference ">"
*( OWS ";" OWS link-param )``, ``link-param = token BWS [ "=" BWS ( token / quoted-string ) ]``.
Several field lines combine into one list (RFC 9110 section 5.3). The target is resolved
against the request URL (section 3.1: the ``anchor`` parameter changes the link's context, not
its target's base). A malformed value is read as far as it can be; it never raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.links import REQUISITE_RELS

#: relations that name an origin to connect to, not a resource (HTML Standard, link types)
ORIGIN_RELS = frozenset({"preconnect", "dns-prefetch"})
#: the longest header text read: servers cap a field line at 8-64 KiB anyway
MAX_FIELD = 256 * 1024


def parse_link_header(value: str) -> Iterator[tuple[str, dict[str, str]]]:
    """``(target, parameters)`` for each link-value of a ``Link`` field value, in order;
    parameter names lowercased; the first occurrence of a parameter wins (section 3.3 for
    ``rel``, and the rule for the others in practice)."""
    text = value[:MAX_FIELD]
    end = len(text)
    pos = 0
    while pos < end:
        start = text.find("<", pos)
        if start < 0:
            return
        close = text.find(">", start + 1)
        if close < 0:
            return
        target = text[start + 1 : close].strip(" \t")
        params: dict[str, str] = {}
        pos = close + 1
        while True:
            pos = _skip(text, pos, " \t")
            if pos >= end or text[pos] != ";":
                break
            pos = _skip(text, pos + 1, " \t")
            name_start = pos
            while pos < end and text[pos] not in "=;, \t<":
                pos += 1
            name = text[name_start:pos].lower()
            pos = _skip(text, pos, " \t")
            param_value = ""
            if pos < end and text[pos] == "=":
                pos = _skip(text, pos + 1, " \t")
                if pos < end and text[pos] == '"':
                    param_value, pos = _quoted(text, pos)
                else:
                    value_start = pos
                    while pos < end and text[pos] not in ";, \t<":
                        pos += 1
                    param_value = text[value_start:pos]
            if name and name not in params:
                params[name] = param_value
        yield target, params
        # on to the next link-value: after a comma (a comma inside <> or quotes was consumed)
        comma = text.find(",", pos)
        if comma < 0:
            return
        pos = comma + 1


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _quoted(text: str, pos: int) -> tuple[str, int]:
    """A quoted-string (RFC 9110 section 5.6.4) starting at ``pos``: its value and the position
    after it; a string left open runs to the end."""
    out = []
    pos += 1
    end = len(text)
    while pos < end:
        char = text[pos]
        if char == "\\" and pos + 1 < end:
            out.append(text[pos + 1])
            pos += 2
            continue
        if char == '"':
            return "".join(out), pos + 1
        out.append(char)
        pos += 1
    return "".join(out), pos


def collect_link_headers(values: Iterable[str], collect: Collector) -> None:
    """Add the links of ``Link`` field values to ``collect``, tagged ``link-header``."""
    for value in values:
        for target, params in parse_link_header(value):
            rels = frozenset(params.get("rel", "").lower().split())
            if rels & REQUISITE_RELS:
                collect.requisite(target, Extractor.LINK_HEADER)
            elif not rels & ORIGIN_RELS:
                collect.page(target, Extractor.LINK_HEADER)
            if collect.truncated:
                return


def link_header_links(values: Iterable[str], url: str, *, max_links: int = MAX_LINKS) -> Links:
    """The links of a response's ``Link`` field values, resolved against its URL."""
    collect = Collector(url, url, max_links, Extractor.LINK_HEADER)
    collect_link_headers(values, collect)
    return collect.links()


__all__ = ["ORIGIN_RELS", "collect_link_headers", "link_header_links", "parse_link_header"]
