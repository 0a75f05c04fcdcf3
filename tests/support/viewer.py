"""A person at archiver's login page, played by the test: a Chromium of its own (with the
network: it opens http://127.0.0.1:PORT/TOKEN/) whose page it works with the DevTools
protocol's trusted input, as a hand would. Clicks go to the page's canvas at the place of the
streamed page's element, keys to the focused canvas: the login page's own script then sends
them on to the login tab. Nothing here reaches into the login tab itself.

    async with Viewer(tmp_path / "viewer") as viewer:
        await viewer.open(page_url)
        await viewer.wait_for("document.body.dataset.loaded.includes('/login')")
        await viewer.click_streamed(190, 118)   # CSS pixels of the streamed page
        await viewer.type("archivist")
        await viewer.press("Enter")
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Self

from archiver.browser.cdp import Session
from archiver.browser.chromium import ChromiumProcess, chromium_flags, find_chromium

TIMEOUT = 60.0

_CANVAS_BOX = """(() => {
  const box = document.getElementById("screen").getBoundingClientRect();
  return {x: box.left, y: box.top, width: box.width, height: box.height};
})()"""


class Viewer:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.process: ChromiumProcess | None = None
        self._session: Session | None = None

    async def __aenter__(self) -> Self:
        flags = chromium_flags(window=(1400, 1100), offline=False)
        self.process = await ChromiumProcess.launch(find_chromium(), self.state_dir, flags)
        browser = self.process.connection.browser
        created = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=30)
        attached = await browser.send(
            "Target.attachToTarget", {"targetId": created["targetId"], "flatten": True}, timeout=30
        )
        self._session = self.process.connection.session(attached["sessionId"])
        await self._session.send("Page.enable", timeout=30)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None:
            await self.process.close()

    @property
    def session(self) -> Session:
        assert self._session is not None
        return self._session

    async def open(self, url: str) -> None:
        await self.session.send("Page.navigate", {"url": url}, timeout=TIMEOUT)
        await self.wait_for("document.getElementById('screen') !== null")

    async def evaluate(self, expression: str) -> Any:
        reply = await self.session.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            timeout=TIMEOUT,
        )
        return reply.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float = TIMEOUT) -> Any:  # noqa: ASYNC109
        """The value of ``expression`` once it is truthy (polled; the page changes by itself)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            value = await self.evaluate(
                f"(() => {{ try {{ return {expression}; }} catch (e) {{ return null; }} }})()"
            )
            if value:
                return value
            if loop.time() > end:
                state = await self.evaluate("JSON.stringify(document.body.dataset)")
                raise AssertionError(f"not within {timeout:g} s: {expression} (page: {state})")
            await asyncio.sleep(0.1)

    async def click_streamed(self, x: float, y: float) -> None:
        """A click on the canvas where the streamed page's CSS pixel (x, y) is drawn."""
        # the canvas takes the tab's size once the page knows it: measured after that
        width, height = await self.wait_for(
            "document.body.dataset.viewWidth && "
            "[Number(document.body.dataset.viewWidth), Number(document.body.dataset.viewHeight)]"
        )
        box = await self.evaluate(_CANVAS_BOX)
        at = {
            "x": box["x"] + x * box["width"] / width,
            "y": box["y"] + y * box["height"] / height,
        }
        send = self.session.send
        await send("Input.dispatchMouseEvent", {"type": "mouseMoved", **at}, timeout=TIMEOUT)
        for kind, buttons in (("mousePressed", 1), ("mouseReleased", 0)):
            await send(
                "Input.dispatchMouseEvent",
                {"type": kind, "button": "left", "buttons": buttons, "clickCount": 1, **at},
                timeout=TIMEOUT,
            )

    async def type(self, text: str) -> None:
        """Each character as a key going down and up on the focused canvas."""
        for char in text:
            await self.session.send(
                "Input.dispatchKeyEvent",
                {"type": "keyDown", "key": char, "text": char, "unmodifiedText": char},
                timeout=TIMEOUT,
            )
            await self.session.send(
                "Input.dispatchKeyEvent", {"type": "keyUp", "key": char}, timeout=TIMEOUT
            )

    async def press(self, key: str, code: int) -> None:
        """A key that types nothing (Enter, Tab...), with its Windows key code."""
        for kind in ("rawKeyDown", "keyUp"):
            await self.session.send(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
                timeout=TIMEOUT,
            )

    async def click_button(self, element_id: str) -> None:
        """A click on one of the login page's own buttons (Done, Go)."""
        box = await self.evaluate(
            f"(() => {{ const b = document.getElementById({element_id!r})"
            ".getBoundingClientRect();"
            " return {x: b.left + b.width / 2, y: b.top + b.height / 2}; })()"
        )
        for kind, buttons in (("mousePressed", 1), ("mouseReleased", 0)):
            await self.session.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "button": "left", "buttons": buttons, "clickCount": 1, **box},
                timeout=TIMEOUT,
            )


__all__ = ["Viewer"]
