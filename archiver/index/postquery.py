"""The index key of a POST or PUT capture: its request body's parameters appended to the URL.

A replay tool looks a capture up by URL, but a page that sends ``POST /api/search`` twice with
two queries made two different captures of one URL. pywb, ReplayWeb.page and cdxj-indexer
(``--post-append``, what ``wb-manager add`` runs) agree on a canonical form, specified as
*Request Body Canonicalization* (specs.webrecorder.net/request-body-canonicalization): the key is
the SURT of ``URL?__wb_method=POST&<body parameters>`` (``&`` when the URL has a query), and the
index line carries ``requestBody`` (the parameters) and ``method``. pywb computes the same form
from the request a replayed page makes, so the page finds the answer it was given when crawled.

The body becomes parameters by its ``Content-Type``:

- ``application/x-www-form-urlencoded``: the body, URL-decoded (UTF-8; else as binary);
- ``multipart/*``: the parts as ``name=value`` pairs, URL-encoded; a file part's raw bytes;
- ``application/json`` (and ``text/plain`` that parses as JSON): every scalar as
  ``key=value``, keyed by its innermost object key, repeats numbered ``key.2_``, ``key.3_``;
- anything else: ``__wb_post_data=`` and the body in base64.

The parameters are cut at :data:`MAX_QUERY_LENGTH` characters. This follows cdxj-indexer 1.5's
``postquery`` line for line (the tests compare the two on a generated corpus), with two
differences: an ``application/x-amf`` body (Flash remoting) is treated as binary, where
cdxj-indexer decodes it with PyAMF; and a multipart body its parser rejects is treated as
binary, where cdxj-indexer stops with an error.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass
from urllib.parse import unquote_plus, urlencode

MAX_QUERY_LENGTH = 4096
#: What is read of a body whose request has no Content-Length (cdxj-indexer's default).
DEFAULT_LENGTH = 8192
APPENDED_METHODS = ("POST", "PUT")


@dataclass(frozen=True, slots=True)
class PostKey:
    """How a POST or PUT capture is indexed."""

    url: str
    """What the key is the SURT of: the URL with ``__wb_method`` and the parameters."""
    method: str
    request_body: str | None
    """The parameters (``requestBody`` in the index line); None when the body was unreadable."""


def post_key(url: str, request: bytes) -> PostKey | None:
    """The index key of the capture of ``url`` whose request was ``request`` (as sent), or None
    when the request is not a POST or PUT (the key is the URL's, as for every capture)."""
    head_end = request.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = request[:head_end].split(b"\r\n")
    method = lines[0].split(b" ", 1)[0].decode("latin-1")
    if method.upper() not in APPENDED_METHODS:
        return None
    content_type = _first_field(lines[1:], b"content-type")
    length = _first_field(lines[1:], b"content-length")
    body = request[head_end + 4 :]
    query, appended = method_query(method, content_type, length, body, url)
    return PostKey(url + appended, method.upper(), query)


def _first_field(lines: list[bytes], name: bytes) -> str | None:
    """The first value of a header field, as warcio's parser gives it (stripped)."""
    for line in lines:
        field, colon, value = line.partition(b":")
        if colon and field.strip().lower() == name:
            return _text(value.strip())
    return None


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("iso-8859-1")


def method_query(
    method: str, content_type: str | None, length: str | None, body: bytes, url: str
) -> tuple[str | None, str]:
    """The parameters of the body and what is appended to the URL (``?__wb_method=...``)."""
    query: str | None = ""
    if method in APPENDED_METHODS:
        query = query_from_body(content_type, length, body)
    appended = ("&" if "?" in url else "?") + "__wb_method=" + method
    if query:
        appended += "&" + query
    return query, appended


def query_from_body(content_type: str | None, length: str | None, body: bytes) -> str | None:
    """The body's parameters by its Content-Type (the module docstring); None when the
    Content-Length is not a number."""
    if length is None:
        size = DEFAULT_LENGTH
    else:
        try:
            size = int(length)
        except ValueError:
            return None
    data = body[: max(size, 0)]
    mime = content_type or ""
    if mime.startswith("application/x-www-form-urlencoded"):
        try:
            query = unquote_plus(data.decode("utf-8"))
        except UnicodeDecodeError:
            query = _binary(data)
    elif mime.startswith("multipart/"):
        query = _multipart(mime, data)
    elif mime.startswith("application/json"):
        try:
            query = json_query(data)
        except (ValueError, RecursionError):  # not JSON (or nested too deep): no parameters
            query = ""
    elif mime.startswith("text/plain"):
        try:
            query = json_query(data)
        except (ValueError, RecursionError):  # not JSON: the body as binary
            query = _binary(data)
    else:
        query = _binary(data)
    return query[:MAX_QUERY_LENGTH] if query else query


def _binary(data: bytes) -> str:
    return "__wb_post_data=" + base64.b64encode(data).decode("ascii")


def _multipart(mime: str, data: bytes) -> str:
    """The parts of a ``multipart/*`` body. A body the parser rejects (cut short, no closing
    boundary) is kept as binary: cdxj-indexer 1.5 stops with the parser's error there."""
    # imported here: a crawl that never indexes a multipart POST does not load the parser
    from multipart import MultipartError, MultipartParser  # noqa: PLC0415

    try:
        boundary = mime.split("boundary=")[1]
        parser = MultipartParser(io.BytesIO(data), boundary, charset="utf8")
    except (ValueError, IndexError):  # no boundary: the body as binary
        return _binary(data)
    values: list[tuple[str, str | bytes]] = []
    try:
        for part in parser:
            # a file upload's bytes are percent-encoded as they are, a field's text as UTF-8
            values.append((part.name, part.raw if part.filename else part.value))
    except (MultipartError, ValueError):
        return _binary(data)
    return urlencode(values, True)


def json_query(data: bytes) -> str:
    """Every scalar of a JSON body as ``key=value`` (see the module docstring); one JSON value
    per line is accepted too. Raises ValueError when the body is not JSON."""
    found: dict[str, str] = {}
    repeats: dict[str, int] = {}

    def key(name: str) -> str:
        if name not in found:
            return name
        repeats[name] = repeats.get(name, 1) + 1
        return f"{name}.{repeats[name]}_"

    def walk(value: object, name: str = "") -> None:
        if isinstance(value, dict):
            for child_name, child in value.items():
                walk(child, child_name)
        elif isinstance(value, list):
            for child in value:
                walk(child, name)
        elif name:
            found[key(name)] = str(value)

    try:
        walk(json.loads(data))
    except json.JSONDecodeError:
        if b"\n" not in data:
            raise
        for line in data.split(b"\n"):
            walk(json.loads(line))
    return urlencode(found)


__all__ = [
    "APPENDED_METHODS",
    "MAX_QUERY_LENGTH",
    "PostKey",
    "json_query",
    "method_query",
    "post_key",
    "query_from_body",
]
