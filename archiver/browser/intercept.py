"""Answering the requests a page's sessions pause, and knowing when the page's network is quiet.

Every session of a page (the tab, its out-of-process iframes) has the Fetch domain enabled at
the request stage for http and https URLs, so each request stops in the browser as a
``Fetch.requestPaused`` event before anything is sent. Each one is answered in its own task:
the caller's handler performs it, and the browser gets ``Fetch.fulfillRequest`` or
``Fetch.failRequest``. ``data:`` and ``blob:`` URLs are not requests and are not paused.

The count of requests paused and not yet answered is the page's network activity: the page is
quiet when none has been in flight for a while (:meth:`Interceptor.wait_quiet`). This is exact
where Chromium's own ``networkIdle`` lifecycle event counts connections.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from archiver.browser.cdp import Params, Session
from archiver.browser.errors import BrowserError
from archiver.browser.exchange import (
    MAX_FULFILL_BODY,
    Refusal,
    RequestHandler,
    UndeliverableError,
    browser_request,
    fulfill_params,
)

#: Only these are paused; every other scheme is the browser's own business (data:, blob:...).
PATTERNS = [
    {"urlPattern": "http://*", "requestStage": "Request"},
    {"urlPattern": "https://*", "requestStage": "Request"},
]
#: Time allowed to hand one answer to the browser (a 64 MiB body takes a few seconds).
ANSWER_TIMEOUT = 60.0
#: Answers with larger bodies are prepared in a thread, so the event loop does not stall.
IN_LOOP_BODY = 1024 * 1024
#: At most this many undelivered responses are listed in a page's result.
MAX_LISTED = 100
#: The protocol's Network.ErrorReason values: Fetch.failRequest takes nothing else.
ERROR_REASONS = frozenset(
    {
        "Failed",
        "Aborted",
        "TimedOut",
        "AccessDenied",
        "ConnectionClosed",
        "ConnectionReset",
        "ConnectionRefused",
        "ConnectionAborted",
        "ConnectionFailed",
        "NameNotResolved",
        "InternetDisconnected",
        "AddressUnreachable",
        "BlockedByClient",
        "BlockedByResponse",
    }
)


class Interceptor:
    """Answers one page's paused requests with ``handler``; counts them."""

    def __init__(
        self,
        handler: RequestHandler,
        *,
        main_frame: str,
        max_body: int = MAX_FULFILL_BODY,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.handler = handler
        self.main_frame = main_frame
        self.max_body = max_body
        self.on_failure = on_failure
        self.requests = 0
        self.refused = 0
        #: (url, reason) of responses the browser could not be given
        self.undelivered: list[tuple[str, str]] = []
        #: the first exception the handler raised: it stops the page
        self.failure: BaseException | None = None
        #: set once the main frame's document committed: from then on, a request for a new
        #: main-frame document (the page navigating itself) is not answered but listed
        self.document_committed = False
        #: URLs the page tried to navigate its main frame to once loaded, at most MAX_LISTED
        self.navigations: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self._last_change = asyncio.get_running_loop().time()
        self._changed = asyncio.Event()

    def watch(self, session: Session) -> None:
        """Answer the requests this session pauses through the handler."""
        session.on("Fetch.requestPaused", lambda params: self.spawn(self._answer(session, params)))

    def block(self, session: Session, reason: str) -> None:
        """Fail every request this session pauses, without asking the handler."""
        session.on(
            "Fetch.requestPaused", lambda params: self.spawn(self._refuse(session, params, reason))
        )

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task of this page (cancelled when the page is done)."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def wait_quiet(
        self, session: Session, quiet: float, until: float, *, since: float | None = None
    ) -> bool:
        """Wait until no request has been in flight for ``quiet`` seconds (counted from
        ``since`` at the earliest, when given); False if the loop time ``until`` comes first.
        Raises when the session ends."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            last = self._last_change if since is None else max(self._last_change, since)
            if self._in_flight == 0 and now - last >= quiet:
                return True
            if now >= until:
                return False
            self._changed.clear()
            wait = until - now
            if self._in_flight == 0:
                wait = min(wait, quiet - (now - last))
            await session.wait(self._changed, wait)

    async def close(self) -> None:
        """Cancel the answers still being worked on and wait for them to end."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _touch(self, delta: int) -> None:
        self._in_flight += delta
        self._last_change = asyncio.get_running_loop().time()
        self._changed.set()

    async def _answer(self, session: Session, params: Params) -> None:
        self._touch(+1)
        self.requests += 1
        request_id = params["requestId"]
        try:
            request = browser_request(params, self.main_frame)
            if request.is_main_frame and self.document_committed:
                await self._hold_page(session, request_id, request.url)
                return
            try:
                outcome = await self.handler(request)
            except Exception as exc:  # the handler's way to stop the page: see RequestHandler
                if self.failure is None:
                    self.failure = exc
                    if self.on_failure is not None:
                        self.on_failure(exc)
                await _fail(session, request_id, "Failed")
                return
            if isinstance(outcome, Refusal):
                self.refused += 1
                await _fail(session, request_id, outcome.error)
                return
            try:
                if len(outcome.body) > IN_LOOP_BODY:  # decoding and base64: not in the loop
                    answer = await asyncio.to_thread(
                        fulfill_params, request_id, outcome, max_body=self.max_body
                    )
                else:
                    answer = fulfill_params(request_id, outcome, max_body=self.max_body)
                await session.send("Fetch.fulfillRequest", answer, timeout=ANSWER_TIMEOUT)
            except (UndeliverableError, BrowserError) as exc:
                if session.error is not None or "Invalid InterceptionId" in str(exc):
                    return  # the tab is gone, or the page gave up the request (aborted it)
                if len(self.undelivered) < MAX_LISTED:
                    self.undelivered.append((request.url, str(exc)))
                await _fail(session, request_id, "Failed")
        finally:
            self._touch(-1)

    async def _hold_page(self, session: Session, request_id: str, url: str) -> None:
        """The page navigates itself elsewhere (a script, a meta refresh): the page stays the
        document it is, and the URL is listed for the caller to follow as a link. Aborted is
        the one failure Chromium takes without showing its error page (``chrome-error://``)
        in place of the document."""
        if len(self.navigations) < MAX_LISTED and url not in self.navigations:
            self.navigations.append(url)
        await _fail(session, request_id, "Aborted")

    async def _refuse(self, session: Session, params: Params, reason: str) -> None:
        self._touch(+1)
        try:
            if len(self.undelivered) < MAX_LISTED:
                self.undelivered.append((params["request"]["url"], reason))
            await _fail(session, params["requestId"], "BlockedByClient")
        finally:
            self._touch(-1)


async def _fail(session: Session, request_id: str, reason: str) -> None:
    """Fail a paused request; nothing to do when it is already gone (the tab closed, the
    navigation was replaced). An unknown reason would leave the request paused: it becomes
    ``Failed``."""
    if reason not in ERROR_REASONS:
        reason = "Failed"
    with contextlib.suppress(BrowserError):
        await session.send(
            "Fetch.failRequest",
            {"requestId": request_id, "errorReason": reason},
            timeout=ANSWER_TIMEOUT,
        )
