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

:class:`ReplayWebPageApp` opens the whole application instead (``embed="full"``, no URL): the
archive's page list, its search box ("Search by Page URL, Title, or Text", which searches the
``text`` of ``pages.jsonl``), and its "Archive Info" (who signed the package). Its text is read
through every shadow root, as a reader sees it; its IndexedDB ``verification`` store says
whether ReplayWeb.page found the signature valid.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

from aiohttp import web

from archiver.browser.cdp import Session
from archiver.browser.chromium import ChromiumProcess, chromium_flags, find_chromium

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.5.3"
PACKAGE = REPO / ".venv-tools" / f"replaywebpage-{VERSION}" / "package"
#: The longest wait for the replayed page to show what is expected (a hang guard).
REPLAY_WAIT = 90.0
#: On a loaded machine the viewer sometimes never makes the replay frame of a tab's first load
#: (seen: none after 90 s, while a second load shows it at once); after this long without the
#: frame the tab is loaded once more, as ``archiver qa --replayer rwp`` tries a failed check
#: once more.
RELOAD_AFTER = 30.0


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


APP = """<!doctype html><html><head><meta charset="utf-8"><script src="/ui.js"></script></head>
<body><replay-web-page source="/archive.wacz" replayBase="/replay/" embed="full"
style="display:block;width:1200px;height:900px"></replay-web-page></body></html>
"""
#: The text of a document through its shadow roots and slots (what a reader sees, in order).
DEEP_TEXT = r"""(() => { const out = [];
  const walk = (node) => {
    if (node.nodeType === 3) { const t = node.textContent.trim(); if (t) out.push(t); return; }
    if (node.tagName === 'STYLE' || node.tagName === 'SCRIPT') return;
    if (node.shadowRoot) walk(node.shadowRoot);
    if (node.tagName === 'SLOT') for (const a of node.assignedNodes()) walk(a);
    for (const child of node.childNodes) walk(child);
  };
  if (document.body) walk(document.body);
  return out.join('\n'); })()"""
#: Focus the page list's search box (inside the app's shadow roots).
FOCUS_SEARCH = r"""(() => { let found = null;
  const walk = (node) => {
    if (found || !node) return;
    if (node.tagName === 'INPUT' && (node.placeholder || '').startsWith('Search by Page')) {
      found = node; return; }
    if (node.shadowRoot) walk(node.shadowRoot);
    for (const child of node.children || []) walk(child);
  };
  walk(document.body); if (found) found.focus(); return !!found; })()"""
#: ReplayWeb.page's verification records of every collection (IndexedDB ``db:*``).
VERIFICATION = r"""(async () => { const out = [];
  for (const info of await indexedDB.databases()) {
    if (!info.name.startsWith('db:')) continue;
    const db = await new Promise((ok, fail) => {
      const r = indexedDB.open(info.name); r.onsuccess = () => ok(r.result); r.onerror = fail; });
    if (!db.objectStoreNames.contains('verification')) { db.close(); continue; }
    const rows = await new Promise((ok) => {
      const r = db.transaction('verification').objectStore('verification').getAll();
      r.onsuccess = () => ok(r.result); });
    out.push(...rows); db.close();
  }
  return JSON.stringify(out); })()"""


class ReplayWebPage:
    """``async with ReplayWebPage(wacz, state_dir) as replay: await replay.text_of(url, ...)``."""

    page = EMBED

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
            text=self.page.format(url=url.replace('"', "%22")), content_type="text/html"
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
        target, session = await self._open_tab(f"{self.base}/?url={quote(url, safe='')}")
        try:
            return await _replayed_value(session, url, expression, done)
        finally:
            await browser.send("Target.closeTarget", {"targetId": target}, timeout=30)

    async def run_in(self, url: str, ready: Callable[[str], bool], expression: str) -> Any:
        """Evaluate ``expression`` in the frame replaying ``url`` (a promise is awaited), once
        its rendered text satisfies ``ready``: a reader's action on the replayed page (a
        click, a play), with what it gave."""
        assert self._browser is not None
        browser = self._browser.connection.browser
        target, session = await self._open_tab(f"{self.base}/?url={quote(url, safe='')}")
        try:
            await _replayed_value(session, url, _BODY_TEXT, lambda value: ready(str(value or "")))
            frame = await _replay_frame(session, url)
            assert frame is not None
            world = await session.send("Page.createIsolatedWorld", {"frameId": frame}, timeout=30)
            reply = await session.send(
                "Runtime.evaluate",
                {
                    "expression": expression,
                    "contextId": world["executionContextId"],
                    "returnByValue": True,
                    "awaitPromise": True,
                },
                timeout=REPLAY_WAIT,
            )
            if "exceptionDetails" in reply:
                raise AssertionError(
                    f"the action failed in the replay: {reply['exceptionDetails']}"
                )
            return reply.get("result", {}).get("value")
        finally:
            await browser.send("Target.closeTarget", {"targetId": target}, timeout=30)

    async def _open_tab(self, url: str) -> tuple[str, Session]:
        """A new tab navigating to ``url``: its target id and its session."""
        assert self._browser is not None
        browser = self._browser.connection.browser
        created = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=30)
        attached = await browser.send(
            "Target.attachToTarget", {"targetId": created["targetId"], "flatten": True},
            timeout=30,
        )  # fmt: skip
        session = self._browser.connection.session(attached["sessionId"])
        await session.send("Page.enable", timeout=30)
        await session.send("Page.navigate", {"url": url}, timeout=30)
        return str(created["targetId"]), session


async def _replayed_value(
    session: Session, url: str, expression: str, done: Callable[[Any], bool]
) -> Any:
    loop = asyncio.get_running_loop()
    end = loop.time() + REPLAY_WAIT
    reload_at: float | None = loop.time() + RELOAD_AFTER
    value: Any = None
    while loop.time() < end:
        frame = await _replay_frame(session, url)
        if frame is not None:
            reload_at = None
            value = await _frame_value(session, frame, expression)
            if done(value):
                return value
        elif reload_at is not None and loop.time() > reload_at:
            reload_at = None  # the viewer never made its frame: loaded once more (see above)
            await session.send("Page.reload", {"ignoreCache": False}, timeout=30)
        await asyncio.sleep(0.25)
    raise AssertionError(f"ReplayWeb.page did not show {url} as expected; last value: {value!r}")


async def _replay_frame(session: Session, url: str) -> str | None:
    """The id of the frame replaying ``url`` (``…mp_/URL``), if it exists yet."""
    tree = await session.send("Page.getFrameTree", timeout=30)
    pending = [tree["frameTree"]]
    while pending:
        node = pending.pop()
        frame = node["frame"]
        # the protocol keeps a frame's fragment apart (a hash route's, here)
        location = str(frame.get("url", "")) + str(frame.get("urlFragment", ""))
        if location.endswith("mp_/" + url):
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


class ReplayWebPageApp(ReplayWebPage):
    """The whole application on the package: ``async with ReplayWebPageApp(wacz, dir) as app:
    await app.open(); await app.wait_for(lambda text: ...); await app.search("word")``."""

    page = APP

    def __init__(self, wacz: Path, state_dir: Path) -> None:
        super().__init__(wacz, state_dir)
        self._session: Session | None = None

    async def open(self) -> None:
        """The application in a new tab (closed with the browser)."""
        _, self._session = await self._open_tab(f"{self.base}/")

    async def _app_frame(self) -> str | None:
        """The frame of the application (``/replay/?source=…``), once it exists."""
        assert self._session is not None
        tree = await self._session.send("Page.getFrameTree", timeout=30)
        pending = [tree["frameTree"]]
        while pending:
            node = pending.pop()
            if "/replay/?source=" in str(node["frame"].get("url", "")):
                return str(node["frame"]["id"])
            pending += node.get("childFrames", [])
        return None

    async def _evaluate(self, expression: str) -> Any:
        assert self._session is not None
        frame = await self._app_frame()
        if frame is None:
            return None
        world = await self._session.send("Page.createIsolatedWorld", {"frameId": frame}, timeout=30)
        reply = await self._session.send(
            "Runtime.evaluate",
            {
                "expression": expression,
                "contextId": world["executionContextId"],
                "returnByValue": True,
                "awaitPromise": True,
            },
            timeout=30,
        )
        return reply.get("result", {}).get("value")

    async def wait_for(self, done: Callable[[str], bool]) -> str:
        """The application's text, once ``done`` accepts it."""
        loop = asyncio.get_running_loop()
        end = loop.time() + REPLAY_WAIT
        text = ""
        while loop.time() < end:
            text = str(await self._evaluate(DEEP_TEXT) or "")
            if done(text):
                return text
            await asyncio.sleep(0.25)
        raise AssertionError(
            f"ReplayWeb.page did not show what was expected; its text ended: {text[-1500:]!r}"
        )

    async def search(self, words: str) -> None:
        """Type ``words`` into the page list's search box."""
        assert self._session is not None
        if not await self._evaluate(FOCUS_SEARCH):
            raise AssertionError("ReplayWeb.page shows no page search box")
        await self._session.send("Input.insertText", {"text": words}, timeout=30)

    async def verification(self) -> list[dict[str, Any]]:
        """ReplayWeb.page's verification records (``id``, ``expected``, ``matched``)."""
        rows = json.loads(str(await self._evaluate(VERIFICATION) or "[]"))
        assert isinstance(rows, list)
        return rows
