"""A cookie as the browser holds it and as the crawl's jar keeps it: the one conversion.

The browser package speaks of :class:`~archiver.browser.cookies.BrowserCookie` (what
``Storage.getCookies`` lists), the fetcher's jar and the profile of
:class:`~archiver.fetch.cookiestxt.CookieLine` (a cookies.txt line); a login saves the first as
the second, a browser crawl keeps the two stores in step (:mod:`archiver.pipeline.cookiesync`).
Both carry RFC 6265's storage model; the expiry of a session cookie is None on one side and 0
on the other.
"""

from __future__ import annotations

from archiver.browser.cookies import BrowserCookie
from archiver.fetch.cookiestxt import CookieLine


def to_line(cookie: BrowserCookie) -> CookieLine:
    """The browser's cookie as a cookies.txt line (an expiry rounded down to the second)."""
    return CookieLine(
        domain=cookie.domain,
        host_only=cookie.host_only,
        path=cookie.path,
        secure=cookie.secure,
        expires=max(int(cookie.expires), 1) if cookie.expires is not None else 0,
        name=cookie.name,
        value=cookie.value,
        http_only=cookie.http_only,
    )


def to_browser(line: CookieLine) -> BrowserCookie:
    """A cookies.txt line as a cookie to give the browser."""
    return BrowserCookie(
        name=line.name,
        value=line.value,
        domain=line.domain,
        host_only=line.host_only,
        path=line.path,
        secure=line.secure,
        http_only=line.http_only,
        expires=float(line.expires) if line.expires else None,
    )


__all__ = ["to_browser", "to_line"]
