"""What can go wrong when a page is loaded in Chromium, split by what the caller should do.

::

    ArchiverError
    ├── BrowserUnavailableError  Chromium cannot be found or started: the crawl cannot use a
    │                            browser at all (a usage error: exit 2, one line)
    ├── BrowserError             the browser or the tab failed (crash, hang, lost connection,
    │   │                        page timeout): this page may be retried; the pool restarts
    │   │                        Chromium by itself when it died
    │   ├── PageTimeoutError     the page did not get far enough within the page timeout
    │   └── PageScriptError      a script run in the page threw (archiver's: a bug; a user
    │                            behaviour's: noted, the page goes on)
    └── NavigationError          the page's own document did not load (refused by the handler,
                                 a download, a network error reported by the browser): retrying
                                 the same page gives the same answer
"""

from __future__ import annotations

from archiver.errors import ArchiverError


class BrowserUnavailableError(ArchiverError):
    """Chromium is missing or does not start; the message says how to install or fix it."""


class BrowserError(ArchiverError):
    """The browser or its tab failed while loading a page; the page may be tried again."""


class PageTimeoutError(BrowserError):
    """The page did not load (or the tab stopped answering) within the page timeout."""


class PageScriptError(BrowserError):
    """A script evaluated in the page threw; the message is the exception's description."""


class NavigationError(ArchiverError):
    """The page's document was not loaded: ``error`` is the browser's net error name."""

    def __init__(self, url: str, error: str) -> None:
        super().__init__(f"{url}: the browser did not load the page ({error})")
        self.url = url
        self.error = error
