"""URL strings of JSON documents (:func:`~archiver.extract.jsondoc.json_url_strings`,
``extract_json``): one regular expression over the string tokens, only URL-like ones decoded.

Oracles, on every input:

* nothing leaves the extractor; ``extract_json``'s pages are normalised URLs, each once, at most
  ``max_links``;
* on valid JSON, the standard library's ``json`` parser (which builds the whole document, with
  ``object_pairs_hook`` keeping every key in order, duplicates too) gives the same strings, keys
  and values, in document order, filtered by the same predicate (``is_url_string``).
"""

from __future__ import annotations

import json
from typing import Any

from archiver import urls
from archiver.extract.jsondoc import extract_json, json_url_strings
from archiver.extract.scripts import is_url_string
from tests.fuzz.harness import Target, agree

URL = "http://example.com/api/items.json"


def parser_strings(text: str) -> list[str] | None:
    """Every string of a JSON text in document order (keys before their values)."""
    try:
        document = json.loads(text, object_pairs_hook=lambda pairs: ("pairs", pairs))
    except (ValueError, RecursionError):
        return None
    out: list[str] = []
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, tuple) and node[:1] == ("pairs",):
            for key, value in reversed(node[1]):
                stack.append(value)
                stack.append(key)
    return out


def check(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    ours = list(json_url_strings(text))
    expected = parser_strings(text)
    if expected is not None:
        theirs = [value for value in expected if is_url_string(value)]
        agree(ours == theirs, "URL strings differ from json's", ours, theirs)
    links = extract_json(data, URL, max_links=8)
    agree(len(links.pages) <= 8 and not links.requisites, "lists", links)
    agree(len(set(links.pages)) == len(links.pages), "duplicates", links)
    for url in links.pages:
        agree(urls.normalize_url(url) == url, "not normal", url)


TARGET = Target(
    name="json",
    check=check,
    max_len=4096,
    summary="json_url_strings/extract_json; oracle: the json module's strings (keys and "
    "values, in order) through the same URL predicate",
    seed=bytes,
    dictionary=(
        b'"/',
        b'"https://',
        b'"http:\\/\\/',
        b"\\/",
        b"\\u002F",
        b'\\"',
        b"\\\\",
        b'{"url": ',
        b"[",
        b"]",
        b"}",
        b":",
        b",",
    ),
)
