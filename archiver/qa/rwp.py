"""``--replayer rwp``: the pages replayed by ReplayWeb.page from the crawl's WACZ, in Chromium.

ReplayWeb.page is a service worker: it answers the replayed page's requests inside the browser
from the WACZ, so this Chromium cannot be archiver's capture browser (which has no network and
refuses service workers). It is a Chromium of its own whose resolver knows one host, the one the
command serves ReplayWeb.page and the WACZ on (:mod:`archiver.commands.rwpserver`): every other
host, and every IP literal, resolves to nothing, so a request that escaped the replay fails
instead of reaching the live site.

For each page a tab opens the embedding page (``?url=URL&ts=TIMESTAMP``); the replay runs in a
frame whose URL holds ``mp_/`` and the archived URL. The tab's Network domain reports every
response of that frame, those the service worker made included (``fromServiceWorker``): a
``404`` for an archived URL is a URL ReplayWeb.page could not serve. It is then looked up in the
archive as archiver replays it: lacking there too, a miss of the archive; present there, a miss
of ReplayWeb.page alone, reported apart with the reason found (:mod:`archiver.qa.tools` does the
same for pywb). The page is read once the frame's document has loaded and its network has been
quiet for :data:`QUIET` seconds: its rendered text and a screenshot of the view.

Only the requests of the replay frame and of the frames within it are the page's; the frames
above it are ReplayWeb.page's own, and so are their requests: its address bar looks for the
replayed page's icon by fetching, in turn, each icon the page names and then the site's
``/favicon.ico`` (wombat adds that one whatever the page says; ReplayWeb.page 2.x,
``src/item.ts``, ``onFavIcons``), which a crawl need not hold. Each request's frame comes with
it (``Network.requestWillBeSent``'s ``frameId``), each frame's parent with its attachment
(``Page.frameAttached``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from archiver.browser.cdp import Params, Session
from archiver.browser.chromium import ChromiumProcess, chromium_flags, find_chromium
from archiver.browser.errors import BrowserError
from archiver.browser.exchange import BrowserRequest
from archiver.browser.page import PageResult
from archiver.extract.links import extract_html
from archiver.qa.check import (
    STATUS_COMPLETE,
    STATUS_FAILED,
    STATUS_INCOMPLETE,
    PageCheck,
    SharedArchive,
    browser_own,
)
from archiver.qa.options import QaOptions
from archiver.qa.tools import ReplayTool, archived_url, classify

#: The share of the page timeout after which a tab whose viewer made no replay frame is loaded
#: once more: on a loaded machine the viewer sometimes never makes the frame of a new browser's
#: first tab, and a second load does (the check was otherwise failed at the timeout and made
#: again in a new tab).
RELOAD_SHARE = 1 / 3
#: The replay frame's network is quiet when no request has been in flight for this long.
QUIET = 1.0
POLL = 0.1
READ_TEXT = "document.body ? document.body.innerText : ''"


@dataclass
class FrameTraffic:
    """The tab's requests and responses, from its Network domain."""

    in_flight: set[str] = field(default_factory=set)
    requests: dict[str, BrowserRequest] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    frames: dict[str, str] = field(default_factory=dict)  #: request id -> the frame that made it
    parents: dict[str, str] = field(default_factory=dict)  #: frame id -> its parent frame's
    last_change: float = 0.0

    def watch(self, session: Session) -> None:
        session.on("Network.requestWillBeSent", self._sent)
        session.on("Network.responseReceived", self._received)
        session.on("Network.loadingFinished", self._done)
        session.on("Network.loadingFailed", self._done)
        session.on("Page.frameAttached", self._attached)

    def _attached(self, params: Params) -> None:
        if "parentFrameId" in params:
            self.parents[str(params.get("frameId", ""))] = str(params["parentFrameId"])

    def within(self, request_id: str, frame: str) -> bool:
        """Whether the request was made by ``frame`` or by a frame within it."""
        current: str | None = self.frames.get(request_id)
        seen: set[str] = set()
        while current is not None and current not in seen:
            if current == frame:
                return True
            seen.add(current)
            current = self.parents.get(current)
        return False

    def _touch(self) -> None:
        self.last_change = asyncio.get_running_loop().time()

    def _sent(self, params: Params) -> None:
        request_id = str(params.get("requestId", ""))
        request = params.get("request", {})
        body = request.get("postData")
        self.in_flight.add(request_id)
        self.frames[request_id] = str(params.get("frameId", ""))
        self.requests[request_id] = BrowserRequest(
            method=str(request.get("method", "GET")),
            url=str(request.get("url", "")),
            headers=tuple((str(k), str(v)) for k, v in request.get("headers", {}).items()),
            body=body.encode("utf-8") if isinstance(body, str) else None,
            body_complete=True,
            resource_type=str(params.get("type", "Other")),
            is_navigation=params.get("type") == "Document",
            is_main_frame=False,
            redirected="redirectResponse" in params,
            network_id=request_id,
        )
        self._touch()

    def _received(self, params: Params) -> None:
        self.statuses[str(params.get("requestId", ""))] = int(
            params.get("response", {}).get("status", 0)
        )
        self._touch()

    def _done(self, params: Params) -> None:
        self.in_flight.discard(str(params.get("requestId", "")))
        self._touch()

    def quiet(self, now: float) -> bool:
        """No request in flight for :data:`QUIET` seconds, or no network event at all for
        twice as long (a request the service worker let go of may never report its end)."""
        idle = now - self.last_change
        return idle >= 2 * QUIET or (not self.in_flight and idle >= QUIET)


@dataclass
class RwpReplayer:
    """Replays pages through ReplayWeb.page (see the module docstring)."""

    process: ChromiumProcess
    archive: SharedArchive
    tool: ReplayTool
    options: QaOptions

    async def check(self, url: str, at: str) -> PageCheck:
        """The page replayed in a tab of its own; a check the tool failed (its viewer or
        service worker did not answer in time: seen rarely, on a loaded machine) is made once
        more in a new tab before the page is reported failed."""
        checked = await self._check_once(url, at)
        if checked.status != STATUS_FAILED:
            return checked
        return await self._check_once(url, at)

    async def _check_once(self, url: str, at: str) -> PageCheck:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.options.page_timeout
        connection = self.process.connection
        width, height = self.options.window
        created = await connection.browser.send(
            "Target.createTarget",
            {"url": "about:blank", "width": width, "height": height, "newWindow": True},
            timeout=30,
        )
        target = str(created["targetId"])
        traffic = FrameTraffic()
        try:
            attached = await connection.browser.send(
                "Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=30
            )
            session = connection.session(attached["sessionId"])
            traffic.watch(session)
            for method in ("Page.enable", "Network.enable"):
                await session.send(method, timeout=30)
            page = self.tool.prefix + "?" + urlencode({"url": url, "ts": at})
            await session.send("Page.navigate", {"url": page}, timeout=30)
            reload_at = started + self.options.page_timeout * RELOAD_SHARE
            frame = await _replay_frame(session, traffic, deadline, reload_at)
            text = await _frame_text(session, frame, deadline)
            shot = await session.send("Page.captureScreenshot", {"format": "png"}, timeout=30)
        except BrowserError as exc:
            return PageCheck(
                url, STATUS_FAILED, None, (), (), len(traffic.requests), 0, (), str(exc)
            )
        finally:
            with contextlib.suppress(BrowserError):
                await connection.browser.send(
                    "Target.closeTarget", {"targetId": target}, timeout=10
                )
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.tool.prefix))
        not_served = []
        for request_id, request in traffic.requests.items():
            target_url = archived_url(request.url, origin)
            if target_url is None or traffic.statuses.get(request_id) != 404:
                continue
            if not traffic.within(request_id, frame):
                continue  # ReplayWeb.page's own: the address bar's icon (module docstring)
            asked = BrowserRequest(
                request.method, target_url, request.headers, request.body, True,
                request.resource_type, False, False, False, request_id,
            )  # fmt: skip
            if not browser_own(asked):
                not_served.append(asked)
        lacking, tool_only = await classify(self.archive, self.tool.name, not_served, at)
        result = PageResult(
            url=url, final_url=url, title=None, text=text, links=extract_html(b"", url),
            screenshots={"view": base64.b64decode(shot["data"])},
            requests=len(traffic.requests),
            refused=0, undelivered=(), load_event=True, network_quiet=True,
            dom_truncated=False, duration=loop.time() - started,
        )  # fmt: skip
        status = STATUS_INCOMPLETE if lacking else STATUS_COMPLETE
        served = sum(1 for status_code in traffic.statuses.values() if status_code < 400)
        return PageCheck(
            url, status, result, tuple(lacking), (), len(traffic.requests), served, (),
            replayer_misses=tuple(tool_only),
        )  # fmt: skip


async def _replay_frame(
    session: Session, traffic: FrameTraffic, deadline: float, reload_at: float | None
) -> str:
    """The id of the frame replaying the page, once its network has been quiet; the tab is
    loaded once more at ``reload_at`` if the viewer has made no replay frame by then."""
    loop = asyncio.get_running_loop()
    frame: str | None = None
    while loop.time() < deadline:
        if frame is None:
            tree = await session.send("Page.getFrameTree", timeout=30)
            frame = _find_frame(tree.get("frameTree", {}))
            if frame is None and reload_at is not None and loop.time() >= reload_at:
                reload_at = None
                await session.send("Page.reload", {}, timeout=30)
        if frame is not None and traffic.quiet(loop.time()):
            return frame
        await asyncio.sleep(POLL)
    raise BrowserError("ReplayWeb.page did not show the page within the page timeout")


def _find_frame(node: dict[str, Any]) -> str | None:
    pending = [node]
    while pending:
        current = pending.pop()
        frame = current.get("frame", {})
        if "mp_/" in str(frame.get("url", "")):
            return str(frame["id"])
        pending += current.get("childFrames", [])
    return None


async def _frame_text(session: Session, frame: str, deadline: float) -> str:
    world = await session.send("Page.createIsolatedWorld", {"frameId": frame}, timeout=30)
    reply = await session.send(
        "Runtime.evaluate",
        {
            "expression": READ_TEXT,
            "contextId": world["executionContextId"],
            "returnByValue": True,
        },
        timeout=max(deadline - asyncio.get_running_loop().time(), 1.0),
    )
    return str(reply.get("result", {}).get("value") or "")


@contextlib.asynccontextmanager
async def open_rwp(
    crawl_dir: Path, archive: SharedArchive, options: QaOptions, tool: ReplayTool
) -> AsyncIterator[RwpReplayer]:
    """A Chromium that reaches the ReplayWeb.page server only, for the check's pages."""
    host = urlsplit(tool.prefix).hostname or "localhost"
    flags = [
        flag
        for flag in chromium_flags(window=options.window)
        if not flag.startswith("--host-resolver-rules")
    ]
    flags.append(f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {host}")
    state = crawl_dir / "state" / "qa" / "rwp-browser"
    process = await ChromiumProcess.launch(find_chromium(options.chromium), state, flags)
    try:
        yield RwpReplayer(process, archive, tool, options)
    finally:
        await process.close()


__all__ = ["RwpReplayer", "open_rwp"]
