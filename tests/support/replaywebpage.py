"""ReplayWeb.page (webrecorder's serverless replay, npm package ``replaywebpage``) opening a WACZ
offline, in a real Chromium, for tests.

The package's prebuilt ``ui.js`` and ``sw.js`` are served on 127.0.0.1 beside the WACZ, with a
page embedding ``<replay-web-page>`` (the documented way to embed it: the service worker at
``replay/sw.js``). Chromium opens that page; the replay happens in a frame whose URL holds
``mp_/`` and the archived URL; :meth:`ReplayWebPage.text_of` waits until that frame's rendered
text holds what the test expects, and returns it.

Chromium here is not archiver's capture browser: it needs its network (to reach this server)
and service workers (ReplayWeb.page is one). It is started with archiver's own process handling
(a process group, reaped on close) and driven over the DevTools pipe with archiver's client.
The package comes from ``scripts/test``, which fetches it with ``npm pack`` when it is missing;
without it the tests fail saying so.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from archiver.browser.cdp import Session
from archiver.browser.chromium import ChromiumProcess, chromium_flags, find_chromium

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.5.3"
PACKAGE = REPO / ".venv-tools" / f"replaywebpage-{VERSION}" / "package"
#: The longest wait for the replayed page to show what is expected (a hang guard).
REPLAY_WAIT = 90.0


def package_dir() -> Path:
    if not (PACKAGE / "ui.js").exists() or not (PACKAGE / "sw.js").exists():
        raise RuntimeError(
            f"ReplayWeb.page {VERSION} is not in {PACKAGE.parent}: scripts/test fetches it "
            f"(npm pack replaywebpage@{VERSION})"
        )
    return PACKAGE


EMBED = """<!doctype html><html><head><meta charset="utf-8"><script src="/ui.js"></script></head>
<body><replay-web-page source="/archive.wacz" url="{url}" replayBase="/replay/"
embed="replayonly" style="display:block;width:1200px;height:900px"></replay-web-page></body></html>
"""


class ReplayWebPage:
    """``async with ReplayWebPage(wacz, state_dir) as replay: await replay.text_of(url, ...)``."""

    def __init__(self, wacz: Path, state_dir: Path) -> None:
        self.wacz = wacz
        self.state_dir = state_dir
        self.package = package_dir()
        self._runner: web.AppRunner | None = None
        self._browser: ChromiumProcess | None = None
        self.base = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/", self._embed)
        app.router.add_get("/ui.js", self._file("ui.js"))
        app.router.add_get("/replay/sw.js", self._file("sw.js"))
        app.router.add_get("/archive.wacz", self._wacz)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        flags = [
            flag
            for flag in chromium_flags(window=(1280, 960))
            if not flag.startswith("--host-resolver-rules")  # this browser uses its network
        ]
        shutil.rmtree(self.state_dir, ignore_errors=True)
        self._browser = await ChromiumProcess.launch(find_chromium(), self.state_dir, flags)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._browser is not None:
            await self._browser.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _embed(self, request: web.Request) -> web.Response:
        url = request.query.get("url", "")
        return web.Response(
            text=EMBED.format(url=url.replace('"', "%22")), content_type="text/html"
        )

    def _file(self, name: str) -> Callable[[web.Request], Any]:
        async def serve(_: web.Request) -> web.FileResponse:
            return web.FileResponse(
                self.package / name, headers={"Content-Type": "application/javascript"}
            )

        return serve

    async def _wacz(self, _: web.Request) -> web.FileResponse:
        return web.FileResponse(self.wacz)  # Range requests: the WACZ is read as a ZIP

    async def text_of(self, url: str, done: Callable[[str], bool]) -> str:
        """The rendered text of ``url`` replayed from the WACZ, once ``done`` accepts it."""
        text = await self.value_of(url, _BODY_TEXT, lambda value: done(str(value or "")))
        return str(text or "")

    async def value_of(self, url: str, expression: str, done: Callable[[Any], bool]) -> Any:
        """The value of a JavaScript ``expression`` evaluated in the frame replaying ``url``
        (in an isolated world: the page's DOM, not its globals), once ``done`` accepts it."""
        assert self._browser is not None
        browser = self._browser.connection.browser
        created = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=30)
        try:
            attached = await browser.send(
                "Target.attachToTarget", {"targetId": created["targetId"], "flatten": True},
                timeout=30,
            )  # fmt: skip
            session = self._browser.connection.session(attached["sessionId"])
            await session.send("Page.enable", timeout=30)
            await session.send("Page.navigate", {"url": f"{self.base}/?url={url}"}, timeout=30)
            return await _replayed_value(session, url, expression, done)
        finally:
            await browser.send("Target.closeTarget", {"targetId": created["targetId"]}, timeout=30)


async def _replayed_value(
    session: Session, url: str, expression: str, done: Callable[[Any], bool]
) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + REPLAY_WAIT
    value: Any = None
    while loop.time() < end:
        frame = await _replay_frame(session, url)
        if frame is not None:
            value = await _frame_value(session, frame, expression)
            if done(value):
                return value
        await asyncio.sleep(0.25)
    raise AssertionError(f"ReplayWeb.page did not show {url} as expected; last value: {value!r}")


async def _replay_frame(session: Session, url: str) -> str | None:
    """The id of the frame replaying ``url`` (``…mp_/URL``), if it exists yet."""
    tree = await session.send("Page.getFrameTree", timeout=30)
    pending = [tree["frameTree"]]
    while pending:
        node = pending.pop()
        frame = node["frame"]
        if str(frame.get("url", "")).endswith("mp_/" + url):
            return str(frame["id"])
        pending += node.get("childFrames", [])
    return None


_BODY_TEXT = "document.body ? document.body.innerText : ''"


async def _frame_value(session: Session, frame: str, expression: str) -> Any:
    world = await session.send("Page.createIsolatedWorld", {"frameId": frame}, timeout=30)
    reply = await session.send(
        "Runtime.evaluate",
        {
            "expression": expression,
            "contextId": world["executionContextId"],
            "returnByValue": True,
        },
        timeout=30,
    )
    return reply.get("result", {}).get("value")
