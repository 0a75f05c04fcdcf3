"""The browser's cookie store and the crawl's jar, kept in step during a browser crawl.

The fetcher sends the jar's cookies (:mod:`archiver.fetch.cookies`); a page loaded in the
browser keeps its own store, and its scripts write there (``document.cookie``, the Cookie Store
API; a script that logs in with ``fetch()`` and then turns a token, or what it keeps in
``localStorage``, into a cookie). Chromium adds its ``Cookie`` header after the point where
requests are paused, so the fetcher never sends the browser's cookies by itself: without this
module, a cookie set by script would never reach the site, and the crawl would be logged out
wherever a site logs in by script.

:meth:`BrowserCookies.sync` makes one step, serialised (the browser's store is shared by every
tab):

1. what the browser holds is read (``Storage.getCookies``) and compared with what it held at
   the last step, as far as archiver knows (:attr:`BrowserCookies.known`): a cookie added,
   changed or deleted since was a page's doing (nothing else writes there, see 3), and goes
   into the jar, which hands it to its store (a resumed crawl, the other processes of
   ``--processes N`` or a Redis crawl);
2. the jar's cookies that the browser lacks or holds otherwise are written into it
   (``Storage.setCookies``), those the jar no longer has are deleted: the jar is the truth, so
   a page reads in ``document.cookie`` what the crawl would send, including a value a static
   fetch received since the browser last looked;
3. the answers given to the browser carry no ``Set-Cookie`` (:func:`without_set_cookie`): the
   response's cookies went into the jar when it was fetched and reach the browser through step
   2, before the answer, so the browser's store changes only through archiver or the pages.

The browsing stage syncs before each request it fetches (the request carries what the page's
scripts set up to then), after a fetch whose response set cookies (before the page is
answered), and when a page is done. A fresh Chromium (a crash, a restart) starts empty: the
whole jar is written into it at its first step. Comparing ignores expiry (Chromium cuts an
expiry beyond 400 days), so a script that only renews a cookie's expiry is not noticed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from archiver.browser.cdp import Connection
from archiver.browser.cookies import BrowserCookie, read_cookies, write_cookies
from archiver.browser.errors import BrowserError
from archiver.browser.pool import BrowserPool
from archiver.fetch.cookies import CrawlCookies
from archiver.fetch.cookiestxt import CookieKey
from archiver.login.cookies import to_browser, to_line

Key = CookieKey


def page_changes(
    known: dict[Key, BrowserCookie], held: dict[Key, BrowserCookie], now: float
) -> tuple[list[BrowserCookie], list[Key]]:
    """What the pages did since ``known`` was the browser's store: cookies added or changed,
    and the keys of those deleted (an expired one is not a deletion: the jar drops it too)."""
    changed = [c for key, c in held.items() if key not in known or not known[key].same_as(c)]
    deleted = [
        key
        for key, cookie in known.items()
        if key not in held and (cookie.expires is None or cookie.expires > now)
    ]
    return changed, deleted


def jar_changes(
    wanted: dict[Key, BrowserCookie], held: dict[Key, BrowserCookie]
) -> tuple[list[BrowserCookie], list[BrowserCookie]]:
    """What to write into the browser so that it holds ``wanted`` (the jar): cookies to set,
    and cookies to delete."""
    to_set = [c for key, c in wanted.items() if key not in held or not held[key].same_as(c)]
    to_delete = [cookie for key, cookie in held.items() if key not in wanted]
    return to_set, to_delete


class BrowserCookies:
    """The crawl's jar and its browser's cookie store in step (see the module docstring)."""

    def __init__(self, pool: BrowserPool, cookies: CrawlCookies) -> None:
        self._pool = pool
        self._cookies = cookies
        self._lock = asyncio.Lock()
        self._launch = -1
        #: the browser's store as archiver last saw or wrote it
        self.known: dict[Key, BrowserCookie] = {}
        #: (key, value) of cookies Chromium refused: not tried again
        self._refused: set[tuple[Key, str]] = set()
        #: cookies pages set, changed or deleted, taken into the jar
        self.from_pages = 0

    async def sync(self) -> None:
        """One step; nothing when no browser runs. A browser that dies meanwhile is left to
        the page's own failure (the step is simply not made)."""
        process = self._pool.process
        if process is None or not process.alive:
            return
        async with self._lock:
            if self._pool.stats.launches != self._launch:  # a fresh Chromium: an empty store
                self._launch = self._pool.stats.launches
                self.known, self._refused = {}, set()
            try:
                await self._step(process.connection)
            except BrowserError:
                return

    async def _step(self, connection: Connection) -> None:
        held = {cookie.key: cookie for cookie in await read_cookies(connection)}
        changed, deleted = page_changes(self.known, held, time.time())
        jar = self._cookies.jar
        for cookie in changed:
            line = to_line(cookie)
            jar.apply(line)
            jar.pending[line.key] = line
        for key in deleted:
            jar.remove(key)
            jar.pending[key] = None
        if changed or deleted:
            self.from_pages += len(changed) + len(deleted)
            await self._cookies.publish()
        wanted = {line.key: to_browser(line) for line in jar.lines()}
        to_set, to_delete = jar_changes(wanted, held)
        to_set = [c for c in to_set if (c.key, c.value) not in self._refused]
        refused = await write_cookies(connection, to_set, to_delete)
        refused_keys = {(c.key, c.value) for c in refused}
        self._refused |= refused_keys
        self.known = dict(held)
        for cookie in to_delete:
            self.known.pop(cookie.key, None)
        for cookie in to_set:
            if (cookie.key, cookie.value) not in refused_keys:
                self.known[cookie.key] = cookie


def without_set_cookie(headers: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """A response's header fields for the browser, without ``Set-Cookie``: its cookies reach
    the browser from the jar (step 3 of the module docstring)."""
    return [(name, value) for name, value in headers if name.lower() != "set-cookie"]


__all__ = ["BrowserCookies", "jar_changes", "page_changes", "without_set_cookie"]
