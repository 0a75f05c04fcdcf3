"""Loading one page in a new tab: every request answered by the caller, then the live DOM read.

The steps, all inside the page timeout:

1. a new target (its own window, so it is visible and renders: a background tab would not run
   IntersectionObserver callbacks), attached as a flat session;
2. the session set up before anything loads: the Fetch domain pauses every http(s) request at
   the request stage (:mod:`archiver.browser.intercept`); related targets (out-of-process
   iframes, workers) are auto-attached paused, set up the same way, then resumed; service
   workers cannot register (``navigator.serviceWorker.register`` rejects in every frame, and a
   service worker target that appears anyway gets every request failed), and requests bypass
   any that exists; JavaScript dialogs are dismissed so that they cannot block the page;
3. ``Page.navigate``; a navigation error (the handler refused the document, a download) is a
   :class:`~archiver.browser.errors.NavigationError`; once the document committed, the page
   is held there: a request for another main-frame document (a script setting
   ``location.href``, a meta refresh) is aborted, which leaves the document in place, and its
   URL is listed in the result (``navigations``) for the caller to follow as a link;
4. wait for the main frame's ``load`` event, then for the network to go quiet (both bounded), run
   the behaviours, and wait for quiet again;
5. read the live DOM in an isolated world (page scripts cannot interfere): the document
   serialised (open shadow roots appended), ``location.href``, ``document.title`` and the
   body's rendered text; the links
   come from :func:`archiver.extract.links.extract_html` over that serialisation, so exactly
   the element kinds of the static extractor are read, after the scripts ran;
6. optionally a PNG screenshot of the top of the page, or of the whole page (``full_page``);
7. optionally an ``explore`` step the caller gives (:class:`archiver.browser.navigate.LinkWalk`
   clicks links in the page), after the page was read, so that it does not change what was
   read; then the tab is closed.

With ``observe`` the page's console errors, WebSockets and the initiator of each request are
collected as well (:mod:`archiver.browser.observe`).

Waiting stops a few seconds before the page timeout so that the DOM can still be read: a page
whose network never goes quiet (polling, a long download) is read as it is. The tab crashing,
the browser dying, or the tab not answering in time raise
:class:`~archiver.browser.errors.BrowserError` (:class:`~archiver.browser.errors.PageTimeoutError`
for the timeout); the handler raising stops the page and its exception is raised again here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from archiver.browser import observe
from archiver.browser.behaviors import BEHAVIORS, PageControl
from archiver.browser.cdp import CommandError, CommandTimeoutError, Connection, Params, Session
from archiver.browser.errors import BrowserError, NavigationError, PageTimeoutError
from archiver.browser.exchange import MAX_FULFILL_BODY, RequestHandler
from archiver.browser.intercept import PATTERNS, Interceptor
from archiver.browser.observe import ConsoleEntry, PageObserver
from archiver.extract.found import Links
from archiver.extract.links import MAX_DECODED, extract_html

#: Every frame: service workers would answer requests from their own cache, past archiver.
NO_SERVICE_WORKERS = """(() => {
  const container = globalThis.ServiceWorkerContainer;
  if (!container) return;
  const refuse = () => Promise.reject(
    new DOMException("service workers are disabled while archiving", "SecurityError"));
  try {
    Object.defineProperty(container.prototype, "register", {value: refuse, configurable: false});
  } catch (e) {}
})()"""

# The live document, serialised; the content of open shadow roots (web components) appended
# in a hidden element so that their links are read too; at most LIMIT characters.
READ_DOM = """(() => {
  const limit = %d;
  const root = document.documentElement;
  let html = root ? root.outerHTML : "";
  const shadows = [];
  let size = html.length;
  const pending = [document];
  while (pending.length && size < limit) {
    const walker = document.createTreeWalker(pending.pop(), NodeFilter.SHOW_ELEMENT);
    for (let node = walker.nextNode(); node && size < limit; node = walker.nextNode()) {
      const shadow = node.shadowRoot;
      if (shadow) {
        const text = shadow.innerHTML;
        shadows.push(text);
        size += text.length;
        pending.push(shadow);
      }
    }
  }
  if (shadows.length) html += "<div hidden>" + shadows.join("") + "</div>";
  const truncated = html.length > limit;
  const text = document.body ? document.body.innerText : "";
  return {url: location.href, title: document.title, truncated: truncated,
          text: text.slice(0, %d),
          html: "<!DOCTYPE html>" + (truncated ? html.slice(0, limit) : html)};
})()"""
#: The most of a page's rendered text kept in its result (``PageResult.text``).
MAX_TEXT = 64 * 1024

_AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
#: Time kept at the end of the page timeout for reading the DOM and the screenshot.
MAX_RESERVE = 5.0
#: The longest wait for the network to go quiet after the load event and after behaviours.
QUIET_TIMEOUT = 10.0
#: The tallest full-page screenshot, in CSS pixels (an endless page is cut there).
MAX_FULL_PAGE_HEIGHT = 16384

#: What the caller may do with the page once it was read (see :func:`load_page`).
Explore = Callable[[PageControl, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class PageOptions:
    """How one page is loaded."""

    timeout: float = 30.0
    behaviors: tuple[str, ...] = ("autoscroll",)
    screenshot: bool = False
    window: tuple[int, int] = (1280, 960)
    #: the network is quiet when no request has been in flight for this long
    network_quiet: float = 0.5
    max_body: int = MAX_FULFILL_BODY
    max_dom: int = MAX_DECODED
    #: the screenshot shows the whole page (up to :data:`MAX_FULL_PAGE_HEIGHT`), not the top
    full_page: bool = False
    #: collect console errors, WebSockets and initiators (:mod:`archiver.browser.observe`)
    observe: bool = False


@dataclass(frozen=True, slots=True)
class PageResult:
    """What loading a page gave, besides the requests the handler answered."""

    url: str
    """The URL asked for."""
    final_url: str
    """``location.href`` once loaded: after redirects and history changes (a navigation to
    another document is not followed: see ``navigations``)."""
    title: str | None
    text: str
    """The rendered text of the page's body (``innerText``), at most :data:`MAX_TEXT`
    characters: what a reader sees once the scripts ran."""
    links: Links
    """The live DOM's links, split as the static extractor splits them."""
    screenshot: bytes | None
    requests: int
    """Requests the page made (each went to the handler once)."""
    refused: int
    """Requests the handler refused."""
    undelivered: tuple[tuple[str, str], ...]
    """(url, reason) of answers the browser could not be given (too large, undecodable)."""
    load_event: bool
    """False when the load event had not fired when the page was read."""
    network_quiet: bool
    """False when the network had not gone quiet when the page was read."""
    dom_truncated: bool
    duration: float
    navigations: tuple[str, ...] = ()
    """URLs the page tried to navigate itself to once loaded (``location.href = …``, a meta
    refresh): not followed, so that the page is read as it was; links for the caller."""
    console: tuple[ConsoleEntry, ...] = ()
    """Errors the page reported (with ``observe``)."""
    sockets: tuple[str, ...] = ()
    """WebSocket URLs the page tried to open (with ``observe``): the browser has no network."""
    initiators: Mapping[str, str] = field(default_factory=dict)
    """``BrowserRequest.network_id`` -> who made the request (with ``observe``)."""


@dataclass
class _Tab:
    """One page being loaded: its session, its interceptor, its deadline."""

    connection: Connection
    session: Session
    target: str
    interceptor: Interceptor
    options: PageOptions
    deadline: float
    stage: str = "opening the tab"
    world: int | None = None
    loader: str = ""
    """The main frame's current document (its loader id), once navigation committed."""
    loads: set[str] = field(default_factory=set)
    """The documents whose load event fired."""
    loaded: asyncio.Event = field(default_factory=asyncio.Event)
    observer: PageObserver | None = None

    def await_load(self, loader: str) -> None:
        """Wait for ``loader``'s load event from now on (set if it already fired)."""
        self.loader = loader
        if loader and loader in self.loads:
            self.loaded.set()
        else:
            self.loaded.clear()

    # -- PageControl, for behaviours ---------------------------------------------------------

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def remaining(self, until: float | None = None) -> float:
        return max((until if until is not None else self.deadline) - self.now(), 0.001)

    async def evaluate(self, expression: str, *, until: float) -> Any:
        """Evaluate in the isolated world (made again if a navigation replaced it)."""
        try:
            return await self._evaluate(expression, until)
        except CommandError:  # "cannot find context": the document changed meanwhile
            self.world = None
            return await self._evaluate(expression, until)

    async def _evaluate(self, expression: str, until: float) -> Any:
        if self.world is None:
            made = await self.session.send(
                "Page.createIsolatedWorld",
                {"frameId": self.target, "worldName": "archiver"},
                timeout=self.remaining(until),
            )
            self.world = int(made["executionContextId"])
        reply = await self.session.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "contextId": self.world,
                "returnByValue": True,
                "awaitPromise": True,
            },
            timeout=self.remaining(until),
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"a script of archiver failed in the page: {text}")
        return reply.get("result", {}).get("value")

    async def settle(self, quiet: float, until: float, *, since: float | None = None) -> bool:
        return await self.interceptor.wait_quiet(self.session, quiet, until, since=since)


async def load_page(
    connection: Connection,
    url: str,
    handler: RequestHandler,
    options: PageOptions,
    explore: Explore | None = None,
) -> PageResult:
    """Load ``url`` in a new tab of the browser behind ``connection`` (see the module doc);
    ``explore(page, until)`` runs once the page was read, within the page timeout."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    deadline = started + options.timeout
    width, height = options.window
    created = await connection.browser.send(
        "Target.createTarget",
        {"url": "about:blank", "width": width, "height": height, "newWindow": True},
        timeout=options.timeout,
    )
    target = str(created["targetId"])
    tab: _Tab | None = None
    try:
        attached = await connection.browser.send(
            "Target.attachToTarget",
            {"targetId": target, "flatten": True},
            timeout=max(deadline - loop.time(), 0.001),
        )
        session = connection.session(attached["sessionId"])
        interceptor = Interceptor(
            handler,
            main_frame=target,
            max_body=options.max_body,
            on_failure=lambda exc: session.end(BrowserError(f"the page was stopped: {exc!r}")),
        )
        tab = _Tab(connection, session, target, interceptor, options, deadline)
        if options.observe:
            tab.observer = PageObserver()
        result = await _load(tab, url, started, explore)
        if interceptor.failure is not None:
            raise interceptor.failure
        return result
    except (BrowserError, NavigationError) as exc:
        if tab is not None and tab.interceptor.failure is not None:
            raise tab.interceptor.failure from None
        if isinstance(exc, CommandTimeoutError) or (
            isinstance(exc, BrowserError) and loop.time() >= deadline - 0.01
        ):
            stage = tab.stage if tab is not None else "opening the tab"
            raise PageTimeoutError(
                f"{url}: no result within the page timeout of {options.timeout:g} s ({stage})"
            ) from exc
        raise
    finally:
        if tab is not None:
            await tab.interceptor.close()
        await _close_target(connection, target)


async def _load(tab: _Tab, url: str, started: float, explore: Explore | None) -> PageResult:
    session, options = tab.session, tab.options
    await _prepare(tab, session, top=True)
    reserve = min(MAX_RESERVE, options.timeout / 4)
    soft_deadline = tab.deadline - reserve
    tab.stage = "navigating"
    navigation = await session.send("Page.navigate", {"url": url}, timeout=tab.remaining())
    error = navigation.get("errorText")
    if error:
        raise NavigationError(url, str(error))
    if navigation.get("isDownload"):
        raise NavigationError(url, "a download, not a page")
    tab.await_load(str(navigation.get("loaderId", "")))
    tab.stage = "waiting for the load event"
    load_event = await session.wait(tab.loaded, soft_deadline - tab.now())
    tab.stage = "waiting for the network to go quiet"
    until = min(soft_deadline, tab.now() + QUIET_TIMEOUT)
    quiet = await tab.settle(options.network_quiet, until)
    for name in options.behaviors:
        tab.stage = f"running the {name} behaviour"
        await BEHAVIORS[name](tab, soft_deadline)
    if options.behaviors and options.behaviors != ("none",):
        tab.stage = "waiting for the network to go quiet"
        until = min(soft_deadline, tab.now() + QUIET_TIMEOUT)
        quiet = await tab.settle(options.network_quiet, until)
    tab.stage = "reading the page"
    dom = await tab.evaluate(READ_DOM % (options.max_dom, MAX_TEXT), until=tab.deadline)
    if not isinstance(dom, dict):
        raise BrowserError(f"{url}: the page's document could not be read")
    screenshot = await _screenshot(tab) if options.screenshot else None
    if explore is not None:
        tab.stage = "exploring the page"
        await explore(tab, soft_deadline)
    final_url = str(dom.get("url") or url)
    html = str(dom.get("html") or "")
    interceptor = tab.interceptor
    return PageResult(
        url=url,
        final_url=final_url,
        title=str(dom.get("title") or "").strip() or None,
        text=str(dom.get("text") or ""),
        # a BOM: the serialisation is UTF-8 whatever <meta charset> the document declares
        links=extract_html(b"\xef\xbb\xbf" + html.encode("utf-8", "replace"), final_url),
        screenshot=screenshot,
        requests=interceptor.requests,
        refused=interceptor.refused,
        undelivered=tuple(interceptor.undelivered),
        load_event=load_event,
        network_quiet=quiet,
        dom_truncated=bool(dom.get("truncated")),
        duration=tab.now() - started,
        navigations=tuple(interceptor.navigations),
        console=tuple(tab.observer.console) if tab.observer else (),
        sockets=tuple(tab.observer.sockets) if tab.observer else (),
        initiators=dict(tab.observer.initiators) if tab.observer else {},
    )


async def _screenshot(tab: _Tab) -> bytes:
    """A PNG of the viewport, or of the whole page (its content size from
    ``Page.getLayoutMetrics``, captured beyond the viewport, at most
    :data:`MAX_FULL_PAGE_HEIGHT` pixels tall)."""
    tab.stage = "taking the screenshot"
    params: Params = {"format": "png"}
    if tab.options.full_page:
        metrics = await tab.session.send("Page.getLayoutMetrics", timeout=tab.remaining())
        size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
        width = max(1, min(int(size.get("width", 0)), tab.options.window[0] * 4))
        height = max(1, min(int(size.get("height", 0)), MAX_FULL_PAGE_HEIGHT))
        params["captureBeyondViewport"] = True
        params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    shot = await tab.session.send("Page.captureScreenshot", params, timeout=tab.remaining())
    return base64.b64decode(shot["data"])


async def _prepare(tab: _Tab, session: Session, *, top: bool) -> None:
    """Set a session up before its target loads anything (the tab, or an iframe)."""
    tab.interceptor.watch(session)
    session.on("Target.attachedToTarget", lambda params: _adopt_later(tab, params))
    session.on("Page.javascriptDialogOpening", lambda params: _dismiss_later(tab, session, params))
    if top:
        session.on("Page.lifecycleEvent", lambda params: _lifecycle(tab, params))
        session.on("Page.frameNavigated", lambda params: _navigated(tab, params))
        session.on(
            "Inspector.targetCrashed", lambda _: session.end(BrowserError("the tab crashed"))
        )
    commands: list[tuple[str, Params]] = [
        ("Page.enable", {}),
        ("Page.addScriptToEvaluateOnNewDocument", {"source": NO_SERVICE_WORKERS}),
        ("Network.setBypassServiceWorker", {"bypass": True}),
        ("Target.setAutoAttach", _AUTO_ATTACH),
        ("Fetch.enable", {"patterns": PATTERNS}),
    ]
    if top:
        commands += [
            ("Page.setLifecycleEventsEnabled", {"enabled": True}),
            ("Inspector.enable", {}),
        ]
    if tab.observer is not None:
        tab.observer.watch(session)
        commands += observe.COMMANDS
    replies = await asyncio.gather(
        *(session.send(method, params, timeout=tab.remaining()) for method, params in commands),
        return_exceptions=True,
    )
    for reply in replies:
        if isinstance(reply, BaseException):
            raise reply


def _lifecycle(tab: _Tab, params: Params) -> None:
    """The main frame's load events, by document (loader). Enabling lifecycle events replays
    those of the current document (about:blank), and the event for the page may be read before
    the reply to Page.navigate is seen: so each is kept and matched with the loader awaited."""
    if params.get("frameId") == tab.target and params.get("name") == "load":
        tab.loads.add(str(params.get("loaderId", "")))
        tab.await_load(tab.loader)


def _navigated(tab: _Tab, params: Params) -> None:
    """The main frame committed a document. The first http(s) one is the page (after any
    redirects): from then on the interceptor holds the page where it is. A navigation that
    does not go through the network (``about:blank``) replaces the document all the same:
    wait for that one's load."""
    frame = params.get("frame", {})
    main = frame.get("id") == tab.target and not frame.get("parentId")
    if main and str(frame.get("url", "")).startswith(("http://", "https://")):
        tab.interceptor.document_committed = True
    if main and tab.loader and frame.get("loaderId") != tab.loader:
        tab.await_load(str(frame.get("loaderId", "")))
        tab.world = None


def _adopt_later(tab: _Tab, params: Params) -> None:
    tab.interceptor.spawn(_adopt(tab, params))


async def _adopt(tab: _Tab, params: Params) -> None:
    """A related target was attached, paused: set it up, then let it run."""
    child = tab.connection.session(params["sessionId"])
    kind = params.get("targetInfo", {}).get("type", "")
    if kind == "page":  # a popup: not part of this page
        with contextlib.suppress(BrowserError):
            await tab.connection.browser.send(
                "Target.closeTarget",
                {"targetId": params["targetInfo"]["targetId"]},
                timeout=tab.remaining(),
            )
        return
    try:
        if kind == "iframe":
            await _prepare(tab, child, top=False)
        elif kind == "service_worker":
            tab.interceptor.block(child, "a service worker's request")
            await child.send("Fetch.enable", {"patterns": PATTERNS}, timeout=tab.remaining())
    except BrowserError:
        pass  # gone already, or a target without these domains: let it run as it is
    finally:
        with contextlib.suppress(BrowserError):
            await child.send("Runtime.runIfWaitingForDebugger", timeout=tab.remaining())


def _dismiss_later(tab: _Tab, session: Session, params: Params) -> None:
    accept = params.get("type") == "alert"
    tab.interceptor.spawn(_dismiss(tab, session, accept))


async def _dismiss(tab: _Tab, session: Session, accept: bool) -> None:
    with contextlib.suppress(BrowserError):
        await session.send(
            "Page.handleJavaScriptDialog", {"accept": accept}, timeout=tab.remaining()
        )


async def _close_target(connection: Connection, target: str) -> None:
    """Close the tab. A browser that does not answer this is hung: its connection is ended, so
    that the pool starts a new one."""
    try:
        await connection.browser.send("Target.closeTarget", {"targetId": target}, timeout=10.0)
    except CommandError:
        pass  # already gone (crashed, closed by the page)
    except BrowserError as exc:
        if connection.error is None:
            connection.fail(BrowserError(f"the browser stopped answering: {exc}"))
