"""The login page: a person logs in through a page archiver serves, on a machine with no display.

``archiver login URL --profile DIR`` opens a login browser (:mod:`archiver.login.session`) and
serves, on 127.0.0.1, a page that shows the browser's tab and works it: the tab's screencast
frames go to the page over a WebSocket and are drawn on a canvas; the person's clicks, keys,
wheel and pastes on that canvas come back and are given to the tab as trusted input
(:mod:`archiver.browser.screencast`); an address field loads another page; **Done** saves the
session. On a server, forward the port (``ssh -L PORT:127.0.0.1:PORT server``) and open the
page locally.

The page's address carries a random token (``/TOKEN/``): another user of the machine can reach
127.0.0.1 too, and without the token gets a 404, not the logged-in tab. Nothing the page or the
tab does is logged or recorded; what the person types goes to the tab and nowhere else.

Messages, JSON over the WebSocket, besides binary JPEG frames to the page:

* page to archiver: ``{"type": "mouse" | "wheel" | "key" | "text", ...}`` (input, see
  :func:`archiver.browser.screencast.parse_input`), ``{"type": "goto", "url": ...}``,
  ``{"type": "done"}``;
* archiver to page: ``{"type": "size", "width", "height"}`` (the tab's viewport in CSS
  pixels, what input coordinates are in), ``{"type": "url", "url"}`` (the tab's address),
  ``{"type": "loaded", "url"}`` (a page's load event), ``{"type": "status", "state", "text"}``
  (``ready``, ``saving``, ``saved``, ``failed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from archiver.browser.errors import BrowserError
from archiver.browser.login import LoginBrowser
from archiver.browser.screencast import Screencast, parse_input
from archiver.errors import LoginError

#: The largest message the page may send (a paste of 10,000 characters fits).
MAX_MESSAGE = 64 * 1024


@dataclass
class LoginPage:
    """The server of one login: its address, and the person's Done."""

    host: str = "127.0.0.1"
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    url: str = ""
    #: resolved when the person presses Done
    done: asyncio.Future[None] | None = None
    _browser: LoginBrowser | None = None
    _screencast: Screencast | None = None
    _sockets: set[web.WebSocketResponse] = field(default_factory=set)
    _runner: web.AppRunner | None = None
    _state: tuple[str, str] = ("ready", "log in in the page below, then press Done")
    #: the address of the last page whose load event fired
    _loaded: str = ""
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    async def start(self) -> None:
        """Listen (port 0: one the system picks); :attr:`url` is then the page's address."""
        self.done = asyncio.get_running_loop().create_future()
        app = web.Application(client_max_size=MAX_MESSAGE)
        app.router.add_get(f"/{self.token}/", self._page)
        app.router.add_get(f"/{self.token}/ws", self._socket)
        runner = self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, self.host, self.port).start()
        port = runner.addresses[0][1]
        self.url = f"http://{self.host}:{port}/{self.token}/"

    async def close(self) -> None:
        for socket in list(self._sockets):
            with contextlib.suppress(Exception):
                await socket.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._screencast is not None:
            await self._screencast.stop()
        if self._runner is not None:
            await self._runner.cleanup()

    async def show(self, browser: LoginBrowser) -> None:
        """Show ``browser``'s tab on the page from now on."""
        self._browser = browser
        width, height = browser.config.window
        screencast = self._screencast = Screencast(browser.session, size=(width, height))
        browser.on_navigated(lambda url: self._broadcast({"type": "url", "url": url}))
        browser.session.on("Page.loadEventFired", lambda _: self._page_loaded(browser.url))
        await screencast.start()
        self._broadcast({"type": "url", "url": browser.url})
        self._page_loaded(browser.url)  # the login page, loaded before the page was shown

    async def until_done(self, browser: LoginBrowser) -> None:
        """Return once the person pressed Done; raise :class:`LoginError` when the tab goes
        away first."""
        assert self.done is not None
        ended = browser.session.ended
        await asyncio.wait({self.done, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not self.done.done():
            raise LoginError("the login tab was closed before Done: nothing was saved")
        await self.status("saving", "saving the session…")

    def _page_loaded(self, url: str) -> None:
        self._loaded = url
        self._broadcast({"type": "loaded", "url": url})

    async def status(self, state: str, text: str) -> None:
        """Tell every open page how the login stands (returns once each was sent)."""
        self._state = (state, text)
        message = {"type": "status", "state": state, "text": text}
        await asyncio.gather(*(_send_json(socket, message) for socket in list(self._sockets)))

    # -- the page and its socket ------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(
            text=PAGE,
            content_type="text/html",
            headers={
                "Cache-Control": "no-store",
                "Referrer-Policy": "no-referrer",
                "Content-Security-Policy": "default-src 'self'; script-src 'unsafe-inline'; "
                "style-src 'unsafe-inline'; img-src blob: data:; connect-src 'self'",
            },
        )

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, heartbeat=20.0)
        await socket.prepare(request)
        self._sockets.add(socket)
        sender = asyncio.create_task(self._send_frames(socket))
        try:
            state, text = self._state
            await socket.send_json({"type": "status", "state": state, "text": text})
            if self._browser is not None:
                await socket.send_json({"type": "url", "url": self._browser.url})
            if self._loaded:
                await socket.send_json({"type": "loaded", "url": self._loaded})
            async for message in socket:
                if message.type == WSMsgType.TEXT:
                    await self._received(message.data)
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            self._sockets.discard(socket)
        return socket

    async def _send_frames(self, socket: web.WebSocketResponse) -> None:
        last, size = 0, (0, 0)
        while not socket.closed:
            screencast = self._screencast
            if screencast is None:
                await asyncio.sleep(0.05)
                continue
            frame = await screencast.next_frame(last)
            last = frame.number
            if (frame.width, frame.height) != size:
                size = (frame.width, frame.height)
                await socket.send_json({"type": "size", "width": size[0], "height": size[1]})
            await socket.send_bytes(frame.jpeg)

    async def _received(self, data: str) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        browser, screencast = self._browser, self._screencast
        if kind == "done":
            if self.done is not None and not self.done.done():
                self.done.set_result(None)
            return
        if browser is None or screencast is None or self._state[0] != "ready":
            return
        if kind == "goto":
            url = message.get("url")
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                self._spawn(self._goto(browser, url))
            return
        try:
            item = parse_input(message)
        except ValueError:
            return  # not from our page: ignored
        with contextlib.suppress(BrowserError):
            await screencast.give(item)

    async def _goto(self, browser: LoginBrowser, url: str) -> None:
        with contextlib.suppress(LoginError, BrowserError):
            await browser.navigate(url)

    def _spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _broadcast(self, message: dict[str, Any]) -> None:
        for socket in list(self._sockets):
            if not socket.closed:
                self._spawn(_send_json(socket, message))


async def _send_json(socket: web.WebSocketResponse, message: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        await socket.send_json(message)


@contextlib.asynccontextmanager
async def serving(port: int) -> AsyncIterator[LoginPage]:
    """The login page, listening on 127.0.0.1 while inside."""
    page = LoginPage(port=port)
    await page.start()
    try:
        yield page
    finally:
        await page.close()


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>archiver login</title>
<meta name="viewport" content="width=device-width">
<style>
body { margin: 0; font: 14px system-ui, sans-serif; background: #2b2b2b; color: #eee; }
#bar { display: flex; gap: 8px; align-items: center; padding: 0 8px; height: 36px;
       box-sizing: border-box; background: #3a3a3a; }
#address { flex: 1; font: inherit; padding: 3px 6px; }
#done { font: inherit; font-weight: bold; }
#status { white-space: nowrap; overflow: hidden; max-width: 40%; }
#screen { display: block; outline: none; background: #fff; }
body[data-state="saved"] #screen, body[data-state="failed"] #screen { opacity: 0.4; }
</style></head>
<body data-frames="0" data-state="connecting" data-loaded="">
<div id="bar">
  <input id="address" aria-label="address" spellcheck="false">
  <button id="go">Go</button>
  <button id="done">Done: save the session</button>
  <span id="status">connecting…</span>
</div>
<canvas id="screen" tabindex="0" width="1280" height="960"></canvas>
<script>
(() => {
  "use strict";
  const canvas = document.getElementById("screen");
  const context = canvas.getContext("2d");
  const address = document.getElementById("address");
  const status = document.getElementById("status");
  const body = document.body;
  const socket = new WebSocket(location.href.replace(/^http/, "ws").replace(/\\/?$/, "/ws"));
  socket.binaryType = "blob";
  let view = {width: canvas.width, height: canvas.height};
  let frames = 0;
  let lastMove = 0;

  socket.onmessage = async (event) => {
    if (typeof event.data !== "string") {
      const bitmap = await createImageBitmap(event.data);
      context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      frames += 1;
      body.dataset.frames = String(frames);
      return;
    }
    const message = JSON.parse(event.data);
    if (message.type === "size") {
      // the canvas is the tab's viewport, in CSS pixels (a frame is drawn to fill it)
      view = {width: message.width, height: message.height};
      canvas.width = message.width;
      canvas.height = message.height;
      body.dataset.viewWidth = String(message.width);
      body.dataset.viewHeight = String(message.height);
    }
    else if (message.type === "url") {
      body.dataset.url = message.url;
      if (document.activeElement !== address) address.value = message.url;
    } else if (message.type === "loaded") body.dataset.loaded = message.url;
    else if (message.type === "status") {
      body.dataset.state = message.state;
      status.textContent = message.text;
    }
  };
  socket.onclose = () => {
    body.dataset.closed = "true";
    status.textContent += " (disconnected)";
  };
  const send = (message) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };
  const modifiers = (event) =>
    (event.altKey ? 1 : 0) | (event.ctrlKey ? 2 : 0) | (event.metaKey ? 4 : 0) |
    (event.shiftKey ? 8 : 0);
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    return {
      x: Math.max(0, (event.clientX - box.left) * view.width / box.width),
      y: Math.max(0, (event.clientY - box.top) * view.height / box.height),
    };
  };
  const BUTTONS = ["left", "middle", "right", "back", "forward"];
  const mouse = (kind) => (event) => {
    if (kind === "down") canvas.focus();
    if (kind === "move") {
      const now = performance.now();
      if (!event.buttons && now - lastMove < 50) return;
      lastMove = now;
    }
    event.preventDefault();
    send({type: "mouse", event: kind, ...point(event),
          button: kind === "move" ? "none" : (BUTTONS[event.button] || "none"),
          buttons: event.buttons, clicks: kind === "move" ? 0 : Math.min(event.detail || 1, 3),
          modifiers: modifiers(event)});
  };
  canvas.addEventListener("mousedown", mouse("down"));
  canvas.addEventListener("mouseup", mouse("up"));
  canvas.addEventListener("mousemove", mouse("move"));
  canvas.addEventListener("contextmenu", (event) => event.preventDefault());
  canvas.addEventListener("wheel", (event) => {
    event.preventDefault();
    send({type: "wheel", ...point(event), dx: event.deltaX, dy: event.deltaY});
  }, {passive: false});
  // keys typed anywhere but in the address field go to the tab (whatever has the focus here)
  const forTab = (event) => event.target !== address;
  const key = (kind) => (event) => {
    if (!forTab(event)) return;
    const paste = (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "v";
    if (paste) return;  // the paste event types the clipboard's text
    event.preventDefault();
    send({type: "key", event: kind, key: event.key, code: event.code,
          modifiers: modifiers(event)});
  };
  document.addEventListener("keydown", key("down"));
  document.addEventListener("keyup", key("up"));
  document.addEventListener("paste", (event) => {
    if (!forTab(event)) return;
    event.preventDefault();
    const text = event.clipboardData.getData("text/plain");
    if (text) send({type: "text", text: text});
  });
  document.getElementById("go").addEventListener("click", () => {
    send({type: "goto", url: address.value.trim()});
    canvas.focus();
  });
  address.addEventListener("keydown", (event) => {
    if (event.key === "Enter") document.getElementById("go").click();
  });
  document.getElementById("done").addEventListener("click", () => {
    send({type: "done"});
  });
  canvas.focus();
})();
</script>
</body></html>
"""


__all__ = ["PAGE", "LoginPage", "serving"]
