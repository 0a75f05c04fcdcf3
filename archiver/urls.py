"""Pure URL functions: resolve links the WHATWG way and normalise them to the RFC 3986 form we send.

The URL a crawler *requests* is the URL it must *record* (``WARC-Target-URI``, WARC 1.1 section
5.14), so every URL is normalised exactly once, here, before it is queued: after that the frontier,
the fetcher (which hands it to aiohttp with ``encoded=True`` so yarl does not re-normalise it) and
the WARC headers all see the same ASCII string.

What normalisation does, following the WHATWG URL Standard (https://url.spec.whatwg.org/) where it
defines the behaviour browsers have, and RFC 3986 for the characters allowed on the wire:

* leading/trailing C0 controls and spaces are stripped, tabs and newlines removed anywhere
  (URL Standard, "basic URL parser", steps 1-3): a link can never inject a CR/LF into a header;
* ``\\`` is ``/`` in the authority and path of http(s) URLs (data in the query); scheme and
  host are lowercased; the default port is dropped;
* host: the URL Standard's host parser, "domain to ASCII" (UTS #46 non-transitional, CheckHyphens
  and VerifyDnsLength false: ``faß.de`` -> ``xn--fa-hia.de``, ``☃.net`` -> ``xn--n3h.net``, as
  browsers do; :func:`normalize_host`); IPv4 in any numeric form (``2130706433``, ``0x7f.1``,
  ``017700000001``) becomes dotted decimal (URL Standard, "IPv4 parser"), so the SSRF guard
  sees the address that would be connected to;
* path: dot segments removed, empty path becomes ``/``;
* path and query: every byte outside RFC 3986's unreserved/reserved sets is percent-encoded as
  UTF-8; existing valid ``%XX`` escapes are kept as they are (never decoded: the server sees what
  the page linked to), a ``%`` that starts no valid escape becomes ``%25``;
* userinfo and the fragment are dropped (a crawler never sends credentials found in a link);
  the userinfo before anything else is read, whatever it holds.

Where this differs from the URL Standard, and why, is in docs/urls.md (checked against the
web-platform-tests URL data by tests/test_urls_wpt.py).

Only ``http`` and ``https`` URLs survive; everything else resolves to ``None``.
"""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote, urlsplit, urlunsplit

from uts46 import Uts46Error
from uts46.whatwg import domain_to_ascii

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

_STRIP = "".join(chr(c) for c in range(0x21))  # C0 controls and space
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20]")
# Bytes allowed unescaped in a path or query on the wire (RFC 3986 unreserved, sub-delims,
# ':', '@', '/', '?'), plus '%' which is checked separately.
_SAFE = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?%"
)
_ALL_SAFE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*\Z")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_ASCII = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]+\Z")
#: URL Standard "forbidden domain code point": a forbidden host code point, a C0 control, "%"
#: or DEL (the host parser refuses a domain holding one)
_FORBIDDEN_DOMAIN = re.compile(r"[\x00-\x20#/:<>?@\[\\\]^|%\x7f]")
_HEX = "0123456789ABCDEF"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: an http(s) scheme and the slashes after it (any number, including none)
_SPECIAL_START = re.compile(r"([hH][tT][tT][pP][sS]?):(/*)")
_RADIX_DIGITS = {8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_HEX_NUMBER = re.compile(r"0[xX][0-9A-Fa-f]*")


class InvalidURLError(ValueError):
    """The string cannot be made into an http(s) URL we can request."""


def _quote(text: str) -> str:
    """Percent-encode everything outside the safe set, keeping valid ``%XX`` escapes.

    The URL Standard encodes a scalar value string as UTF-8: a lone surrogate (a string
    decoded with ``surrogateescape``, say) becomes U+FFFD first."""
    if _ALL_SAFE.match(text):
        return text
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    out = []
    for byte in text.encode("utf-8"):
        if byte in _SAFE:
            out.append(chr(byte))
        else:
            out.append("%" + _HEX[byte >> 4] + _HEX[byte & 15])
    quoted = "".join(out)
    if "%" in quoted:
        quoted = _BAD_ESCAPE.sub("%25", quoted)
    return quoted


def _parse_ipv4_number(part: str) -> int | None:
    if part == "":
        return None
    base = 10
    if part[:2] in ("0x", "0X"):
        part, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    if part == "":
        return 0
    if part.strip(_RADIX_DIGITS[base]):
        return None  # int() would also take a sign, '_' and spaces: the URL Standard does not
    return int(part, base)


def _ipv4_from_host(host: str) -> str | None:
    """Dotted-decimal form of a host in any WHATWG IPv4 notation, or None if it is a name."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    # "ends in a number": digits, or 0x and hex digits; "0x7fle" is a domain
    if not last or not (last.isdigit() or _HEX_NUMBER.fullmatch(last)):
        return None
    if len(parts) > 4:
        raise InvalidURLError(f"invalid IPv4 address {host!r}")
    numbers = [_parse_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        if last[:2].lower() == "0x" or last.isdigit():
            raise InvalidURLError(f"invalid IPv4 address {host!r}")
        return None
    nums = [n for n in numbers if n is not None]
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        raise InvalidURLError(f"invalid IPv4 address {host!r}")
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value += n * 256 ** (3 - i)
    return str(ipaddress.IPv4Address(value))


@lru_cache(maxsize=4096)
def normalize_host(host: str) -> str:
    """The URL Standard's host parser for an http(s) URL, then RFC 3986's reg-name check.

    An IPv6 literal is canonicalised (RFC 5952, as the URL Standard serialises it). Any other
    host is percent-decoded and passed through "domain to ASCII" (URL Standard section 3.5:
    UTS #46 non-transitional processing with CheckHyphens, UseSTD3ASCIIRules and
    VerifyDnsLength false, CheckBidi and CheckJoiners true), as browsers do: ``faß.de`` ->
    ``xn--fa-hia.de``, ``☃.net`` -> ``xn--n3h.net``, ``xn--`` A-labels of emoji and symbol
    names kept. A result that ends in a number is an IPv4 address in any notation the URL
    Standard reads (``2130706433``, ``0x7f.1``), made dotted decimal, so the SSRF guard sees
    the address that would be connected to. Beyond the URL Standard, a name must be an RFC
    3986 reg-name without empty labels: what a DNS name and a ``Host`` header can hold.
    Raises :class:`InvalidURLError`.
    """
    if not host:
        raise InvalidURLError("empty host")
    if host.startswith("["):
        if not host.endswith("]"):
            raise InvalidURLError(f"invalid IPv6 host {host!r}")
        try:
            if "%" in host:  # the URL Standard has no zone ids; ipaddress would take one
                raise ValueError("zone id")
            addr = ipaddress.IPv6Address(host[1:-1])
        except ValueError as exc:
            raise InvalidURLError(f"invalid IPv6 host {host!r}") from exc
        return f"[{addr.compressed}]"
    if "%" in host:
        # host parser step 4: percent-decode, UTF-8 decode (an invalid byte becomes U+FFFD,
        # which domain to ASCII refuses)
        host = unquote(host)
    ascii_host = _domain_to_ascii(host)
    ipv4 = _ipv4_from_host(ascii_host)
    if ipv4 is not None:
        return ipv4
    if not _HOST_ASCII.match(ascii_host) or ".." in ascii_host.strip("."):
        raise InvalidURLError(f"invalid host {host!r}")
    return ascii_host


def _domain_to_ascii(domain: str) -> str:
    """URL Standard "domain to ASCII" with beStrict false (see :func:`normalize_host`)."""
    if domain.isascii() and not any(label[:4].lower() == "xn--" for label in domain.split(".")):
        # the standard's own shortcut: for such input, UTS #46 processing is ASCII lowercasing
        lowered = domain.lower()
        if _FORBIDDEN_DOMAIN.search(lowered):
            raise InvalidURLError(f"invalid host {domain!r}: a forbidden domain code point")
        return lowered
    try:
        return domain_to_ascii(domain, be_strict=False)
    except Uts46Error as exc:
        raise InvalidURLError(f"invalid host {domain!r}: {exc}") from None


_DOT = frozenset({"."})
_DOT_DOT = frozenset({".."})
# The URL Standard also treats percent-encoded dots as dot segments (compared lowercased).
_DOT_ESCAPED = frozenset({".", "%2e"})
_DOT_DOT_ESCAPED = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 (also what the URL Standard's path parser does, ``%2e`` included)."""
    if "%" in path and "%2e" in path.lower():
        return _drop_dot_segments(path, _DOT_ESCAPED, _DOT_DOT_ESCAPED, fold=True)
    if "/." not in path and not path.startswith("."):
        return path  # the common case: nothing to remove, no work done
    return _drop_dot_segments(path, _DOT, _DOT_DOT, fold=False)


def _drop_dot_segments(
    path: str, dot: frozenset[str], dot_dot: frozenset[str], *, fold: bool
) -> str:
    segments = path.split("/")
    last = len(segments) - 1
    out: list[str] = []
    for i, seg in enumerate(segments):
        key = seg.lower() if fold else seg
        if key in dot:
            if i == last:
                out.append("")
        elif key in dot_dot:
            if len(out) > 1:
                out.pop()
            if i == last:
                out.append("")
        else:
            out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def _clean(text: str) -> str:
    text = text.strip(_STRIP)
    if "\t" in text or "\n" in text or "\r" in text:
        text = _TAB_NEWLINE.sub("", text)
    return text


def _backslashes(text: str) -> str:
    """``text`` with ``\\`` made ``/`` before its query and fragment: the URL Standard reads a
    backslash as a slash in the authority and path of an http(s) URL (the "special" schemes),
    and as data in the query and fragment."""
    end = len(text)
    for separator in "?#":
        found = text.find(separator)
        if 0 <= found < end:
            end = found
    return text[:end].replace("\\", "/") + text[end:]


_HTTP_SCHEME = re.compile(r"\s*https?:", re.IGNORECASE)


def seed_url(text: str) -> str:
    """A seed as a user types it, normalized: ``example.org`` is ``http://example.org/``, as
    wget and curl read a URL without a scheme. A text that starts with ``http:`` or ``https:``
    keeps its scheme, slashes or not (``http:example.org``: the URL Standard's parser reads a
    special scheme's authority without them); ``example.org:8080/x`` is a host and port."""
    return normalize_url(text if _HTTP_SCHEME.match(text) or "://" in text else "http://" + text)


def normalize_url(url: str) -> str:
    """The canonical absolute http(s) URL for ``url``. Raises :class:`InvalidURLError`."""
    url = _clean(url)
    if "\\" in url:
        url = _backslashes(url)
    special = _SPECIAL_START.match(url)
    if special is not None and len(special.group(2)) != 2:
        # http:example.com, http:/example.com, http:///example.com: the URL Standard skips
        # every slash before the host of an http(s) URL without a base ("special authority
        # ignore slashes state")
        url = special.group(1) + "://" + url[special.end() :]
    if "@" in url:
        url = _drop_userinfo(url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise InvalidURLError(str(exc)) from exc
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise InvalidURLError(f"scheme {scheme or '(none)'!r} is not http or https")
    host, port = _split_host_port(parts.netloc)
    host = normalize_host(host)
    authority = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _remove_dot_segments(_quote(parts.path)) if parts.path else "/"
    if not path.startswith("/"):
        path = "/" + path
    result = f"{scheme}://{authority}{path}"
    if parts.query or "?" in url.split("#", 1)[0]:
        result += "?" + _quote(parts.query)
    return result


def _drop_userinfo(url: str) -> str:
    """``url`` without the userinfo of its authority (everything up to the authority's last
    ``@``, URL Standard "authority state"). Done before the URL is split: urllib takes a ``[``
    or ``]`` in a userinfo for an IPv6 host and refuses the whole URL."""
    match = _URI_REF.match(url)
    assert match is not None  # the pattern matches every string
    authority = match.group(2)
    if authority is None or "@" not in authority:
        return url
    return url[: match.start(2)] + authority.rsplit("@", 1)[1] + url[match.end(2) :]


def _split_host_port(netloc: str) -> tuple[str, int | None]:
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise InvalidURLError(f"invalid IPv6 authority {netloc!r}")
        host, rest = netloc[: end + 1], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidURLError(f"invalid authority {netloc!r}")
        port_text = rest[1:]
    else:
        host, _, port_text = netloc.partition(":")
    if not port_text:
        return host, None
    if not port_text.isdigit() or int(port_text) > 65535:
        raise InvalidURLError(f"invalid port {port_text!r}")
    return host, int(port_text)


# A reference made only of characters that need no escaping and no special handling.
_SIMPLE_REF = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?#]*\Z")
# An absolute URL already in normal form: lowercase simple host, no userinfo, no default port.
_NORMAL_ABSOLUTE = re.compile(
    r"(https?)://([a-z0-9\-]+(?:\.[a-z0-9\-]+)*)(:[1-9][0-9]{0,4})?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)"
    r"(\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*)?\Z"
)


def _fast_normal(url: str) -> str | None:
    """``url`` itself when it is already normal (the common case), else None."""
    match = _NORMAL_ABSOLUTE.match(url)
    if match is None:
        return None
    scheme, host, port, path = match.group(1), match.group(2), match.group(3), match.group(4)
    if port is not None and (int(port[1:]) in (DEFAULT_PORTS[scheme], 0) or int(port[1:]) > 65535):
        return None  # the default port is dropped, a port over 65535 refused, by the full path
    if "xn--" in host or host[-1:].isdigit() or "/." in path or "%" in path:
        return None  # IDNA, possible IPv4 forms and dot segments take the full path
    if host.rsplit(".", 1)[-1].startswith("0x"):
        return None  # a hex IPv4 number ("0x7f", "0x")
    return url


def resolve(base: str, ref: str) -> str | None:
    """Resolve a link found on ``base`` (a normalised URL) and normalise it; None if it is not
    a fetchable URL.

    ``javascript:``, ``mailto:``, ``data:``, ``tel:`` and every other non-http(s) scheme give
    None, as do links that cannot be parsed. The fragment is dropped. Plain ASCII references
    (nearly all links) take a fast path that gives the same result as the general one.
    """
    if _SIMPLE_REF.match(ref) and ref[:2] != "//":
        fast = _resolve_simple(base, ref)
        if fast is not None:
            return fast
    return _resolve_general(base, ref)


@lru_cache(maxsize=1024)
def _base_parts(base: str) -> tuple[str, str, str]:
    """``(scheme://authority, path, directory)`` of a normalised base URL."""
    scheme_end = base.index("://") + 3
    path_start = base.find("/", scheme_end)
    if path_start < 0:
        return base, "/", "/"
    path = base[path_start:].split("?", 1)[0]
    return base[:path_start], path, path[: path.rfind("/") + 1]


def _resolve_simple(base: str, ref: str) -> str | None:
    """Relative references without escapes, spaces or non-ASCII: string operations only."""
    if "#" in ref:
        ref = ref.split("#", 1)[0]
    if ref.startswith(("http://", "https://")):
        return _fast_normal(ref)
    if ":" in ref.split("/", 1)[0].split("?", 1)[0]:
        return None  # a scheme (mailto:, javascript:) or an odd first segment: general path
    if ref == "":
        return base
    origin_part, base_path, base_dir = _base_parts(base)
    if ref[0] == "?":
        return origin_part + base_path + ref
    if ref[0] == "/":
        path = ref
    elif ref[0] == ".":
        path = _climb(base_dir, ref) or base_dir + ref
    else:
        path = base_dir + ref
    if "?" in path:
        path_only, _, query = path.partition("?")
        return origin_part + _remove_dot_segments(path_only) + "?" + query
    return origin_part + _remove_dot_segments(path)


def _climb(directory: str, ref: str) -> str | None:
    """``directory + ref`` with the leading ``./`` and ``../`` of ``ref`` applied to the
    directory (a normalised one: it has no dot segments), or None when ``ref`` has dot
    segments further on and the general removal must run. Relative links on real sites are
    mostly ``../x/y.html``: this spares them the split-and-rejoin of every segment."""
    while True:
        if ref.startswith("../"):
            cut = directory.rfind("/", 0, len(directory) - 1)
            directory = directory[: cut + 1] if cut >= 0 else "/"
            ref = ref[3:]
        elif ref.startswith("./"):
            ref = ref[2:]
        else:
            break
    path = ref.split("?", 1)[0]
    if path.startswith(".") or "/." in path:
        return None
    return directory + ref


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*\Z")
# RFC 3986 appendix B: the five components of any URI reference.
_URI_REF = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S)


def _join(base: str, ref: str) -> str:
    """RFC 3986 section 5.2.2 reference resolution, with the URL Standard's rules for special
    schemes: ``http:foo`` on an http page is relative, ``///x`` means host ``x``. (urllib's
    ``urljoin`` follows RFC 1808 and drops ``;params`` and empty queries.)"""
    b = _URI_REF.match(base)
    r = _URI_REF.match(ref)
    assert b is not None and r is not None  # the pattern matches every string
    b_scheme, b_auth, b_path, b_query = b.group(1), b.group(2), b.group(3), b.group(4)
    r_scheme, r_auth, r_path, r_query = r.group(1), r.group(2), r.group(3), r.group(4)
    if r_scheme is not None and not _SCHEME.match(r_scheme):
        # Not a scheme (URL Standard, scheme state): the whole thing is a relative path.
        r = _URI_REF.match("./" + ref)
        assert r is not None
        r_scheme, r_auth, r_path, r_query = None, None, r.group(3), r.group(4)
    if r_scheme is not None and r_scheme.lower() in SCHEMES and r_auth is None:
        if r_scheme.lower() == (b_scheme or "").lower():
            r_scheme = None  # "http:foo" on an http page: a relative reference
        else:
            rest = ref.split(":", 1)[1].lstrip("/")
            return f"{r_scheme}://{rest}"
    if r_auth == "" or (r_auth is None and r_path.startswith("//")):
        # the URL Standard skips every slash before the host of an http(s) URL ("special
        # authority ignore slashes state"): "///x" and "http:///x" are host x
        stripped = r_path.lstrip("/")
        r_auth, _, tail = stripped.partition("/")
        r_path = "/" + tail if tail or r_path.endswith("/") else ""
    if r_scheme is not None:
        scheme, auth, path, query = r_scheme, r_auth, _remove_dot_segments(r_path), r_query
    elif r_auth is not None:
        scheme, auth, path, query = b_scheme, r_auth, _remove_dot_segments(r_path), r_query
    elif r_path == "":
        scheme, auth, path = b_scheme, b_auth, b_path
        query = r_query if r_query is not None else b_query
    else:
        if r_path.startswith("/"):
            path = _remove_dot_segments(r_path)
        else:
            merged = (b_path or "/")[: (b_path or "/").rfind("/") + 1] + r_path
            path = _remove_dot_segments(merged)
        scheme, auth, query = b_scheme, b_auth, r_query
    result = f"{scheme}://{auth or ''}{path or '/'}"
    if query is not None:
        result += "?" + query
    return result


def _resolve_general(base: str, ref: str) -> str | None:
    ref = _clean(ref)
    if "\\" in ref:
        ref = _backslashes(ref)
    head = ref[:12].lower()
    if ":" in head and not head.startswith(("http:", "https:")):
        scheme = head.split(":", 1)[0]
        if re.fullmatch(r"[a-z][a-z0-9+.\-]*", scheme):
            return None
    try:
        joined = _join(base, ref.split("#", 1)[0])
        if _CONTROL_OR_SPACE.search(joined):
            # The reference was stripped as a whole (_clean); what is left inside it is data,
            # even where cutting the fragment made it the end ("a #top" is "a%20"), so
            # normalize_url's own stripping must not see it.
            joined = _CONTROL_OR_SPACE.sub(lambda m: f"%{ord(m.group()):02X}", joined)
        return normalize_url(joined)
    except (InvalidURLError, ValueError):
        return None


def host_port(url: str) -> str:
    """The authority a politeness slot is keyed by: ``host`` or ``host:port`` (normalised URLs)."""
    rest = url.split("://", 1)[1]
    end = len(rest)
    for sep in "/?#":
        i = rest.find(sep)
        if 0 <= i < end:
            end = i
    return rest[:end]


def hostname(url: str) -> str:
    """The host of a normalised URL, without port or IPv6 brackets."""
    authority = host_port(url)
    if authority.startswith("["):
        return authority[1 : authority.index("]")]
    return authority.rsplit(":", 1)[0] if ":" in authority else authority


def scheme_host_port(url: str) -> tuple[str, str, int]:
    """Scheme, host (no brackets) and port of a normalised URL."""
    scheme = url.split("://", 1)[0]
    authority = host_port(url)
    if authority.startswith("["):
        end = authority.index("]")
        host, rest = authority[1:end], authority[end + 1 :]
        port = int(rest[1:]) if rest.startswith(":") else DEFAULT_PORTS[scheme]
        return scheme, host, port
    host, _, port_text = authority.partition(":")
    return scheme, host, int(port_text) if port_text else DEFAULT_PORTS[scheme]


def origin(url: str) -> str:
    """``scheme://authority`` of a normalised URL."""
    return url.split("://", 1)[0] + "://" + host_port(url)


def request_target(url: str) -> str:
    """Path and query of a normalised URL: the request-target of an origin-form request."""
    rest = url.split("://", 1)[1]
    i = rest.find("/")
    return rest[i:] if i >= 0 else "/"


def redact_url(url: str) -> str:
    """``url`` without the password of its userinfo (``redis://:***@host``, as for messages).

    A user name stays (it says which account was used); a password never does.
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


# -- hash routes ---------------------------------------------------------------------------------
#
# A single-page application that routes by the fragment (``/app/#/guide``, ``/app/#!/post/3``)
# shows one page per route from one document. The fragment is never sent (URL Standard: the
# request's URL excludes it; WARC targets never carry one), so a crawler that drops it collapses
# the application into its first page. In a browser crawl a route is a page of its own: queued as
# ``DOCUMENT#ROUTE``, it is loaded by in-page navigation in a tab that holds the document.
#
# Which fragments are routes: those starting with ``/`` (the convention of every hash router:
# Vue Router's and React Router's hash modes, Angular's ``useHash``, docsify) or ``!`` (the
# "hashbang" of the AJAX crawling scheme). Any other fragment names a place in the document (HTML
# Standard, "scroll to the fragment"): ``#section`` is not a page. The bare ``#/`` and ``#!`` are
# the document's own first route: the document itself, not a page apart.

#: Characters percent-encoded in a fragment (URL Standard, "fragment percent-encode set").
_FRAGMENT_ESCAPES = re.compile(r'[\x00-\x20"<>`\x7f]')


def is_route(fragment: str) -> bool:
    """Whether a fragment (without its ``#``) is a route of a hash-routed application."""
    if fragment.startswith("!"):
        return fragment not in ("!", "!/")
    return fragment.startswith("/") and fragment != "/"


def split_route(url: str) -> tuple[str, str]:
    """``(document, route)`` of a route URL (``route`` without its ``#``), ``(url, "")`` for a
    URL without one."""
    document, sep, fragment = url.partition("#")
    return (document, fragment) if sep and is_route(fragment) else (url, "")


def route_url(url: str) -> str | None:
    """``url`` normalised (:func:`normalize_url`) with its fragment kept when it is a route
    (percent-encoded as the URL Standard encodes fragments); None when it is not an http(s)
    URL. Any other fragment is dropped, as :func:`normalize_url` drops it."""
    document, sep, fragment = url.partition("#")
    try:
        normal = normalize_url(document)
    except InvalidURLError:
        return None
    if not (sep and is_route(fragment)):
        return normal
    return normal + "#" + _FRAGMENT_ESCAPES.sub(lambda m: f"%{ord(m.group()):02X}", fragment)


def page_record_uri(prefix: str, url: str) -> str:
    """The URI of a resource record the crawl makes about a page (``urn:screenshot:URL``,
    ``urn:text:URL``...): a hash route's ``#`` is escaped (``%23``), so that no WARC target
    carries a fragment and the record of a route is not indexed as its document's."""
    return prefix + url.replace("#", "%23")
