"""SURT keys as pywb and cdxj-indexer compute them, for the URLs a crawl writes, fast.

The key of a capture in a CDXJ index is ``surt.surt(url)`` with the package's defaults: the
Internet Archive's canonicalisation (GoogleURLCanonicalizer then IAURLCanonicalizer: host
lower-cased and stripped of a leading ``www``/``wwwN.``, default port dropped, path and query
lower-cased, session ids removed, query arguments sorted, fragment dropped, dot segments and
empty path segments removed, a trailing slash dropped) written with the host's labels reversed
and comma-separated, closed by ``)``: ``http://www.Example.com:80/A//b/?z=1&a`` is
``com,example)/a/b?a&z=1``. pywb binary-searches the index with the same function, so the key
must be byte-identical to it.

The package does this through a general URL parser, several regular expressions, repeated
percent-decoding and, for a host that looks like an IPv4 address, a resolver call
(``gethostbyname_ex``), at some 15-30 µs per URL: one per capture, on the writer's thread. The
URLs archiver writes are already normalised (WHATWG URL: scheme and host lower case, no
default port, no fragment, percent-encoding normalised), so :func:`surt_key` builds the key
directly for the shape they almost always have — ASCII, ``http``/``https``, a DNS name or a
dotted-quad IPv4 address, no ``%`` escapes, no user info, no session-id-like parameters — with
each canonicalisation step above, and hands anything else to the package itself (imported on
that first use), so the result is the package's in every case. The tests hold the two to one
answer on every link of the benchmark sites and on generated URLs.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: Characters a key may hold as they are: printable ASCII but space, ``#`` and ``%`` (surt's
#: ``escapeOnce`` quotes the rest and decodes ``%`` escapes first, which the fast path leaves
#: to the package; a ``#`` starts the fragment it drops).
_PLAIN = re.compile(r'[!"$&-~]*')
_WWW = re.compile(r"^www\d*\.")
_DOTTED_QUAD = re.compile(
    r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
)
#: what a DNS host name may hold here (no IPv6 literal, no user info, no escapes)
_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
#: looks like an IP address in some notation the package resolves (decimal, octal)
_NUMERIC_HOST = re.compile(r"[0-9.]+")
#: fragments of the session ids surt strips (path: ASP.NET cookieless; query: JSESSIONID,
#: PHPSESSID, sid, ASPSESSIONID, ColdFusion): a URL holding one goes to the package
_SESSION_MARKERS = ("jsessionid=", "phpsessid=", "sid=", "aspsessionid", "cfid=")
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def surt_key(url: str) -> str:
    """``surt.surt(url)``; the URL itself when the package fails on it (as cdxj-indexer falls
    back)."""
    key = _fast_key(url)
    if key is not None:
        return key
    try:
        return _package_surt()(url)
    except Exception:  # surt raises assorted errors on odd URLs; cdxj-indexer falls back too
        return url


def _fast_key(url: str) -> str | None:
    """The key for the common shape (see the module docstring), or None for the package."""
    scheme, sep, rest = url.partition("://")
    if sep != "://" or scheme not in _DEFAULT_PORTS or not url.isascii():
        return None
    if not _PLAIN.fullmatch(rest) or rest.startswith(("http://", "https://")):
        return None
    cut = len(rest)
    for mark in "/?":
        at = rest.find(mark)
        if 0 <= at < cut:
            cut = at
    netloc, tail = rest[:cut], rest[cut:]
    host, colon, port = netloc.partition(":")
    if not host or "@" in netloc or not _HOST.fullmatch(host):
        return None
    if _NUMERIC_HOST.fullmatch(host) and not _DOTTED_QUAD.fullmatch(host):
        return None  # 127.1, 0x7f.1, 017.0.0.1: the package asks the resolver
    if colon:
        # "", "0", "080", "99999": the package drops, pads or rejects them in its own ways
        if not port.isdigit() or port.startswith("0") or int(port) > 65535:
            return None
        port_part = "" if colon + port == _DEFAULT_PORTS[scheme] else f":{port}"
    else:
        port_part = ""
    path, question, query = tail.partition("?")
    lowered = (path + question + query).lower()
    if ".aspx" in lowered or any(marker in lowered for marker in _SESSION_MARKERS):
        return None
    if ".." in host:
        return None
    host = _WWW.sub("", host, count=1)
    key = ",".join(reversed(host.split("."))) + port_part + ")" + _path(path.lower())
    if query:
        key += "?" + _sorted_query(query.lower())
    return key


def _path(path: str) -> str:
    """surt's normalizePath (dot segments, empty segments) and the trailing slash dropped."""
    if "//" in path or "/." in path:
        segments: list[str] = []
        for part in path.split("/")[1:]:
            if part == ".":
                continue
            if part == "..":
                if segments:
                    segments.pop()
                else:
                    segments.append(part)
            else:
                segments.append(part)
        path = (
            "/" + "".join(p + "/" for p in segments[:-1] if p) + (segments[-1] if segments else "")
        )
    elif not path:
        path = "/"
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def _sorted_query(query: str) -> str:
    """The arguments sorted as byte strings, ``name`` and ``name=`` kept apart (surt's
    alphaReorderQuery)."""
    if len(query) <= 1:
        return query
    pairs = sorted(tuple(arg.split("=", 1)) for arg in query.split("&"))
    return "&".join("=".join(pair) for pair in pairs)


def _package_surt() -> Callable[[str], str]:
    """``surt.surt``, imported on first use: only URLs outside the fast path need it, and the
    package imports ``tldextract`` (and through it ``requests``), a tenth of a second of CPU
    that a crawl of ordinary URLs never spends (measured in BENCHMARKS.md)."""
    import surt  # noqa: PLC0415 - only for URLs outside the fast path

    return surt.surt  # type: ignore[no-any-return]


__all__ = ["surt_key"]
