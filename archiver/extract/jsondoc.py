"""URL strings in JSON documents (RFC 8259). (pure)

A page's script fetches a JSON API and renders what it names; a static crawl follows the same
names. Only strings that are URLs by :func:`archiver.extract.scripts.is_url_string` (absolute
http(s), scheme-relative with a dotted host, root-relative) are read, keys and values alike
(some APIs key their objects by path); a relative string (``"b.html"``) is resolved against the
API's URL by the script that reads it, in ways a crawler cannot know, so it is not guessed at.
Found URLs are pages: scope decides which are crawled.

The document is not parsed into a tree: one regular expression walks its string tokens in order
(in JSON, no quote stands outside a string, so the walk stays in step with the grammar, section 7),
and only a string that can be a URL is decoded. So time is linear and memory is the list of
URLs found, whatever the document holds (a million strings cost one pass), a document cut short
(the kept body's cap) gives the URLs before the cut, and invalid JSON gives what its strings
hold. The caller's ``max_links`` caps the output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.scripts import MAX_STRING, is_url_string

JSON_TYPES = frozenset({"application/json", "text/json", "application/x-json"})

_STRING = re.compile(r'"((?:[^"\\]++|\\.)*+)"', re.DOTALL)
# a decoded string can only start with "/" or "h" if its first character is that or an escape
_STARTS = ("/", "h", "\\")


def is_json_type(media_type: str) -> bool:
    """``application/json``, its aliases, and any ``+json`` structured syntax suffix type
    (RFC 6839 section 3.1: ``application/ld+json``, ``application/activity+json`` …)."""
    return media_type in JSON_TYPES or media_type.endswith("+json")


def json_url_strings(text: str) -> Iterator[str]:
    """The string tokens of a JSON text that are URLs, decoded, in document order."""
    for match in _STRING.finditer(text):
        raw = match.group(1)
        if not raw.startswith(_STARTS) or len(raw) > 6 * MAX_STRING:
            continue
        if "\\" in raw:
            try:
                value = json.loads('"' + raw + '"')
            except ValueError:
                continue
        else:
            value = raw
        if is_url_string(value):
            yield value


def extract_json(body: bytes, url: str, *, max_links: int = MAX_LINKS) -> Links:
    """The URL strings of a JSON document fetched from ``url`` (already content-decoded), as
    pages; JSON is UTF-8 (RFC 8259 section 8.1), a BOM is skipped."""
    text = body.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    collect = Collector(url, url, max_links, Extractor.JSON)
    for value in json_url_strings(text):
        collect.page(value)
        if collect.truncated:
            break
    return collect.links()


__all__ = ["JSON_TYPES", "extract_json", "is_json_type", "json_url_strings"]
