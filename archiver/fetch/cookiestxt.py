"""The Netscape ``cookies.txt`` format: what ``wget --load-cookies``/``--save-cookies``, curl's
cookie jar, yt-dlp and the browsers' cookie-export extensions read and write (pure functions).

One cookie per line, seven fields separated by tabs::

    domain  include-subdomains  path  secure  expires  name  value
    .example.org  TRUE  /  TRUE  1767225600  session  abc123

``include-subdomains`` FALSE is a host-only cookie (RFC 6265 section 5.3 step 6: sent to that
host only); ``expires`` is a Unix time, 0 for a session cookie; a domain written
``#HttpOnly_.example.org`` is an ``HttpOnly`` cookie (the prefix curl introduced, which the
export extensions copy). Other lines starting with ``#`` are comments; blank lines are skipped.
Some exporters drop the tab before an empty value, so six fields are a cookie with no value.

This is a file format, not cookie parsing: ``Set-Cookie`` headers are parsed by aiohttp's RFC 6265
jar (:mod:`archiver.fetch.cookies`), and these lines only carry its cookies in and out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

HTTP_ONLY_PREFIX = "#HttpOnly_"
HEADER = "# Netscape HTTP Cookie File"
#: Characters a cookie's name, value, domain or path can never hold (RFC 6265 section 4.1.1:
#: no control characters; tabs would break the format itself).
_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")
_FLAGS = {"TRUE": True, "FALSE": False}

#: (domain, path without its trailing slash, name): a cookie's identity in the jar
#: (RFC 6265 section 5.3 step 11 replaces a cookie with the same name, domain and path).
CookieKey = tuple[str, str, str]


class CookieFileError(ValueError):
    """A line of a cookies.txt file is not a cookie (the message names the line)."""


@dataclass(frozen=True, slots=True)
class CookieLine:
    """One cookie as cookies.txt carries it."""

    domain: str  #: lowercase, without a leading dot
    host_only: bool  #: include-subdomains FALSE
    path: str
    secure: bool
    expires: int  #: Unix time; 0 for a session cookie
    name: str
    value: str  #: as sent in the Cookie header (quotes kept)
    http_only: bool = False

    @property
    def key(self) -> CookieKey:
        return (self.domain, self.path.rstrip("/"), self.name)

    def expired(self, now: float) -> bool:
        return self.expires != 0 and self.expires <= now

    def to_line(self) -> str:
        domain = self.domain if self.host_only else "." + self.domain
        if self.http_only:
            domain = HTTP_ONLY_PREFIX + domain
        flags = ("FALSE" if self.host_only else "TRUE", "TRUE" if self.secure else "FALSE")
        return "\t".join(
            (domain, flags[0], self.path, flags[1], str(self.expires), self.name, self.value)
        )


def parse_line(text: str) -> CookieLine | None:
    """The cookie on one line, or None for a comment or a blank line.

    Raises :class:`CookieFileError` saying what is wrong with a line that is neither.
    """
    line = text.rstrip("\r\n")
    http_only = line.startswith(HTTP_ONLY_PREFIX)
    if http_only:
        line = line[len(HTTP_ONLY_PREFIX) :]
    elif not line.strip() or line.lstrip().startswith("#"):
        return None
    fields = line.split("\t")
    if len(fields) == 6:
        fields.append("")
    if len(fields) != 7:
        raise CookieFileError(f"expected 7 tab-separated fields, found {len(fields)}")
    domain, subdomains, path, secure, expires, name, value = fields
    if _FORBIDDEN.search(name + value + domain + path):
        raise CookieFileError("control characters in a cookie")
    flags = _FLAGS.get(subdomains.upper()), _FLAGS.get(secure.upper())
    if None in flags:
        raise CookieFileError("the include-subdomains and secure fields must be TRUE or FALSE")
    try:
        expiry = int(float(expires or "0"))
    except (ValueError, OverflowError):  # "x", "nan"; "inf", "1e400"
        raise CookieFileError(f"expiry {expires!r} is not a Unix time") from None
    domain = domain.strip().lower().lstrip(".")
    if not domain or not name.strip():
        raise CookieFileError("a cookie needs a domain and a name")
    if "#" in domain or any(c.isspace() for c in domain):
        # no host name has them; and a host-only "#x" line is a comment, ". x" reads as " x"
        raise CookieFileError(f"domain {domain[:40]!r} is no host name")
    return CookieLine(
        domain=domain,
        host_only=not flags[0],
        path=path if path.startswith("/") else "/",
        secure=bool(flags[1]),
        expires=max(expiry, 0),
        name=name.strip(),
        value=value,
        http_only=http_only,
    )


def parse_text(text: str) -> list[CookieLine]:
    """Every cookie of a cookies.txt file, in file order.

    Raises :class:`CookieFileError` naming the first line that is not a cookie.
    """
    cookies = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            cookie = parse_line(line)
        except CookieFileError as exc:
            raise CookieFileError(f"line {number}: {exc}") from None
        if cookie is not None:
            cookies.append(cookie)
    return cookies


def format_text(cookies: Iterable[CookieLine], comments: Iterable[str] = ()) -> str:
    """A cookies.txt file (with the header line wget and curl write) holding ``cookies``."""
    lines = [HEADER, *(f"# {comment}" for comment in comments)]
    lines += sorted(cookie.to_line() for cookie in cookies)
    return "\n".join(lines) + "\n"


__all__ = [
    "HEADER",
    "CookieFileError",
    "CookieKey",
    "CookieLine",
    "format_text",
    "parse_line",
    "parse_text",
]
