"""The browser's own cookie store, read and written over the DevTools protocol.

Chromium keeps cookies per browser (every tab shares them): those a response sets, and those a
page's script sets (``document.cookie``, the Cookie Store API). A crawl keeps its own jar, the
one its fetcher sends from (:mod:`archiver.fetch.cookies`); these functions are what keeping the
two in step needs, at the browser level (``Storage.getCookies``, ``Storage.setCookies``: every
cookie, HttpOnly ones included, without a page), in terms of :class:`BrowserCookie`, so that
the browser package knows nothing of the jar.

What Chromium does (checked on Chromium 156): a host-only cookie is listed with its host as
``domain``, a domain cookie with a leading dot; a session cookie has ``expires`` -1; an expiry
more than 400 days ahead is cut to 400 days (RFC 6265bis section 5.5, "cookie lifetime
limits"); one invalid cookie in ``Storage.setCookies`` fails the whole command, and a cookie
set with an expiry in the past is deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from archiver.browser.cdp import CommandError, Connection, Params

#: The time a command of this module may take.
COMMAND_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class BrowserCookie:
    """One cookie as a browser holds it (RFC 6265 section 5.3's storage model)."""

    name: str
    value: str
    domain: str
    """Lowercase, without a leading dot."""
    host_only: bool
    path: str
    secure: bool
    http_only: bool
    expires: float | None = None
    """Unix time; None for a session cookie."""

    @property
    def key(self) -> tuple[str, str, str]:
        """Its identity (RFC 6265 section 5.3 step 11: name, domain, path)."""
        return (self.domain, self.path.rstrip("/"), self.name)

    def same_as(self, other: BrowserCookie) -> bool:
        """The same cookie for what a request sends: the expiry is left out (Chromium cuts
        long ones, so a cookie written and read back differs there)."""
        return (
            self.value == other.value
            and self.host_only == other.host_only
            and self.secure == other.secure
            and self.http_only == other.http_only
            and self.path == other.path
        )


def from_protocol(cookie: Params) -> BrowserCookie:
    """A cookie of ``Storage.getCookies``."""
    domain = str(cookie.get("domain", ""))
    expires = cookie.get("expires")
    session = bool(cookie.get("session")) or not isinstance(expires, int | float) or expires < 0
    return BrowserCookie(
        name=str(cookie.get("name", "")),
        value=str(cookie.get("value", "")),
        domain=domain.lstrip(".").lower(),
        host_only=not domain.startswith("."),
        path=str(cookie.get("path") or "/"),
        secure=bool(cookie.get("secure")),
        http_only=bool(cookie.get("httpOnly")),
        expires=None if session else float(expires),  # type: ignore[arg-type]
    )


def to_protocol(cookie: BrowserCookie, *, delete: bool = False) -> Params:
    """A ``Network.CookieParam`` for ``Storage.setCookies``. A host-only cookie is given by
    URL (Chromium then makes it host-only), a domain cookie by its domain; ``delete`` gives it
    an expiry in the past."""
    param: Params = {"name": cookie.name, "value": cookie.value, "path": cookie.path}
    if cookie.host_only:
        scheme = "https" if cookie.secure else "http"
        param["url"] = f"{scheme}://{_host(cookie.domain)}{cookie.path}"
    else:
        param["domain"] = "." + cookie.domain
    if cookie.secure:
        param["secure"] = True
    if cookie.http_only:
        param["httpOnly"] = True
    if delete:
        param["expires"] = 1
    elif cookie.expires is not None:
        param["expires"] = cookie.expires
    return param


def _host(domain: str) -> str:
    """A host for a URL: an IPv6 address in brackets."""
    return f"[{domain}]" if ":" in domain and not domain.startswith("[") else domain


async def read_cookies(connection: Connection) -> list[BrowserCookie]:
    """Every cookie the browser holds."""
    reply = await connection.browser.send("Storage.getCookies", {}, timeout=COMMAND_TIMEOUT)
    return [from_protocol(cookie) for cookie in reply.get("cookies", ())]


async def write_cookies(
    connection: Connection,
    cookies: Sequence[BrowserCookie],
    deleted: Iterable[BrowserCookie] = (),
) -> list[BrowserCookie]:
    """Set ``cookies`` and delete ``deleted`` in the browser; return the cookies it refused
    (Chromium refuses a whole batch for one bad cookie, so a refused batch is set one by
    one)."""
    params: list[tuple[BrowserCookie, dict[str, Any]]] = [(c, to_protocol(c)) for c in cookies]
    params += [(c, to_protocol(c, delete=True)) for c in deleted]
    if not params:
        return []
    browser = connection.browser
    try:
        await browser.send(
            "Storage.setCookies", {"cookies": [p for _, p in params]}, timeout=COMMAND_TIMEOUT
        )
        return []
    except CommandError:
        pass
    refused = []
    for cookie, param in params:
        try:
            await browser.send("Storage.setCookies", {"cookies": [param]}, timeout=COMMAND_TIMEOUT)
        except CommandError:
            refused.append(cookie)
    return refused


__all__ = ["BrowserCookie", "from_protocol", "read_cookies", "to_protocol", "write_cookies"]
