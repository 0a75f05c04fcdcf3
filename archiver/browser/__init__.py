"""Pages loaded in headless Chromium, every request they make answered by archiver itself.

Why this design. A browser-built page (a single-page application, content fetched as JSON,
images loaded when scrolled into view) needs a browser to be captured, but what the browser
reports is not what the server sent: the DevTools protocol gives decoded bodies, rebuilt header
lists and no bytes of the HTTP/1.1 message. Browsertrix Crawler rebuilds WARC records from
that report (its records are reconstructions, not captures); brozzler sends the browser through
warcprox, a man-in-the-middle proxy with its own certificate authority, so that the proxy
records the raw exchanges. archiver does neither: every request the page makes is *paused in
the browser before it is sent* (``Fetch.enable`` at the request stage) and handed to a
:class:`RequestHandler` supplied by the crawl, which performs it with archiver's own byte-exact
fetcher, through the single writer, under the SSRF guard, robots.txt, politeness, scope and
dedup rules of every other capture, or answers it from a record the crawl already holds, or
refuses it. The browser is answered with ``Fetch.fulfillRequest`` (or ``Fetch.failRequest``).
So a page loaded in the browser is captured exactly as a static crawl captures, with no proxy,
no certificate to install and no second copy of the traffic; the browser itself has no network
at all (its resolver maps every host to nothing), so nothing it does escapes the handler.

What follows from it:

- The browser sees decoded bodies: Chromium does not undo ``Content-Encoding`` in a fulfilled
  response, so the decoded payload is given with the wire framing headers left out (the WARC
  keeps the wire bytes). Headers travel as bytes, so non-UTF-8 values reach the page exactly.
- A redirect is answered as a 3xx; the browser asks for the next hop, which comes to the
  handler as a new request (``redirected``), just as the crawler follows redirects itself.
- Request bodies (POST, PUT) reach the handler byte for byte (from ``postDataEntries``).
- Chromium adds ``Cookie`` and ``Accept-Encoding`` after the point where requests are paused:
  the handler does not see the page's cookies; the fetcher sends its own headers. The caller
  keeps the browser's cookie store in step with its own jar (:mod:`.cookies` reads and writes
  the store; the crawl's :mod:`archiver.pipeline.cookiesync` does it).
- Service workers cannot register (they would answer requests from their own cache, past the
  handler). WebSocket traffic is not captured: with no network of its own the browser cannot
  open one. A response body over ``max_body`` (64 MiB; the protocol's messages are limited to
  about 100 MiB) is captured but not given to the browser.

The public API, for the crawl's pipeline::

    pool = BrowserPool(BrowserConfig(state_dir=..., chromium=..., tabs=4, page_timeout=30,
                                     behaviors=("autoscroll",), screenshots=False,
                                     user_agent=...))
    await pool.start()            # BrowserUnavailableError: Chromium missing (exit 2)
    result = await pool.load(url, handler)   # from up to ``tabs`` coroutines at once
    result.links.pages, result.links.requisites, result.title, result.screenshot
    await pool.close()            # no Chromium process is left

    async def handler(request: BrowserRequest) -> BrowserResponse | Refusal: ...

The handler is called concurrently (every request of every tab in its own task). Wrapped in
:class:`SharedRequests`, requests for the same URL made at the same moment by several tabs
share one answer, so the server sees one request.
:func:`needs_browser` is the ``--browser auto`` test over a statically fetched page. A
:class:`BrowserError` from ``load`` may be retried (the pool has already restarted a dead
Chromium); a :class:`NavigationError` will not change; anything the handler raises stops the
page and is raised again from ``load``.

Modules: :mod:`.chromium` (the process), :mod:`.cdp` (the protocol client), :mod:`.exchange`
(requests and answers), :mod:`.intercept` (answering paused requests), :mod:`.page` (one
page), :mod:`.behaviors`, :mod:`.pool`, :mod:`.share`, :mod:`.detect`, :mod:`.errors`,
:mod:`.cookies` and :mod:`.storage` (the browser's cookies and localStorage); for a login,
:mod:`.login` (a browser with the network), :mod:`.steps` and :mod:`.screencast`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from archiver.browser.behaviors import BEHAVIORS
    from archiver.browser.detect import needs_browser
    from archiver.browser.errors import (
        BrowserError,
        BrowserUnavailableError,
        NavigationError,
        PageTimeoutError,
    )
    from archiver.browser.exchange import (
        MAX_FULFILL_BODY,
        BrowserRequest,
        BrowserResponse,
        Refusal,
        RequestHandler,
    )
    from archiver.browser.page import PageResult
    from archiver.browser.pool import BrowserConfig, BrowserPool, PoolStats
    from archiver.browser.share import SharedRequests

#: Where each public name lives. The package is imported lazily (PEP 562): a static crawl, and
#: the settings that only need the behaviour names, do not pay for the protocol client.
_HOMES = {
    "BEHAVIORS": "behaviors",
    "needs_browser": "detect",
    "BrowserError": "errors",
    "BrowserUnavailableError": "errors",
    "NavigationError": "errors",
    "PageTimeoutError": "errors",
    "MAX_FULFILL_BODY": "exchange",
    "BrowserRequest": "exchange",
    "BrowserResponse": "exchange",
    "Refusal": "exchange",
    "RequestHandler": "exchange",
    "PageResult": "page",
    "BrowserConfig": "pool",
    "BrowserPool": "pool",
    "PoolStats": "pool",
    "SharedRequests": "share",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "BEHAVIORS",
    "MAX_FULFILL_BODY",
    "BrowserConfig",
    "BrowserError",
    "BrowserPool",
    "BrowserRequest",
    "BrowserResponse",
    "BrowserUnavailableError",
    "NavigationError",
    "PageResult",
    "PageTimeoutError",
    "PoolStats",
    "Refusal",
    "RequestHandler",
    "SharedRequests",
    "needs_browser",
]
