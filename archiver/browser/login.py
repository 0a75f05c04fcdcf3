"""A browser to log in with: one tab, the network to itself, a person or a script at the keys.

Unlike the crawl's browser (:mod:`archiver.browser.pool`), whose every request is answered by
archiver's fetcher and which has no network of its own, a login browser reaches the site
directly: a login is not captured (nothing of it may be recorded), and its pages are whatever
the site needs to log someone in (TLS client hints, WebSockets, an identity provider's
redirects) without archiver standing in between. It is headless unless asked (a person then
sees its window), in a state directory that is deleted when it closes: its own profile holds
what the site set and the person typed, and only what :meth:`LoginBrowser.cookies` and
:meth:`LoginBrowser.local_storage` return is kept (by :mod:`archiver.login.session`).

The tab's ``DOMStorage`` events are followed from before the first page
(:class:`~archiver.browser.storage.StorageLog`), so the localStorage of every origin the login
went through is known, including origins the tab has left.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from archiver import urls
from archiver.browser.cdp import Params, Session
from archiver.browser.chromium import ChromiumProcess, chromium_flags, find_chromium
from archiver.browser.cookies import BrowserCookie, read_cookies
from archiver.browser.errors import BrowserError
from archiver.browser.steps import Step, run_steps
from archiver.browser.storage import StorageLog
from archiver.errors import LoginError

#: The time one protocol command of a login may take.
COMMAND_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class LoginBrowserConfig:
    """How the login browser is started."""

    state_dir: Path
    """Its profile, pid file and log; deleted when it closes."""
    chromium: str | None = None
    headless: bool = True
    window: tuple[int, int] = (1280, 960)
    user_agent: str | None = None
    """The crawl's User-Agent: some sites tie a session to it."""
    launch_timeout: float = 60.0


class LoginBrowser:
    """One Chromium and its one tab, for a login (see the module docstring)."""

    def __init__(
        self, config: LoginBrowserConfig, process: ChromiumProcess, session: Session
    ) -> None:
        self.config = config
        self.process = process
        self.session = session
        self.storage = StorageLog()
        #: the tab's current address (its main frame's last committed navigation)
        self.url = "about:blank"
        self._loaded = asyncio.Event()
        self._listeners: list[Callable[[str], None]] = []

    @classmethod
    async def open(cls, config: LoginBrowserConfig) -> LoginBrowser:
        """Start Chromium and take its tab. Raises
        :class:`~archiver.browser.errors.BrowserUnavailableError`."""
        binary = find_chromium(config.chromium)
        flags = chromium_flags(
            window=config.window,
            user_agent=config.user_agent,
            headless=config.headless,
            offline=False,
        )
        process = await ChromiumProcess.launch(
            binary, config.state_dir, flags, timeout=config.launch_timeout
        )
        try:
            session = await _page_session(process)
            browser = cls(config, process, session)
            await browser._prepare()
        except BaseException:
            await process.close()
            shutil.rmtree(config.state_dir, ignore_errors=True)
            raise
        return browser

    async def _prepare(self) -> None:
        session = self.session
        session.on("Page.loadEventFired", lambda _: self._loaded.set())
        session.on("Page.frameNavigated", self._navigated)
        await self.storage.watch(session, timeout=COMMAND_TIMEOUT)
        await session.send("Page.enable", timeout=COMMAND_TIMEOUT)
        # what a login downloads is not wanted on disk
        await self.process.connection.browser.send(
            "Browser.setDownloadBehavior", {"behavior": "deny"}, timeout=COMMAND_TIMEOUT
        )

    def on_navigated(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(url)`` whenever the tab shows another page."""
        self._listeners.append(listener)

    def _navigated(self, params: Params) -> None:
        frame = params.get("frame", {})
        if frame.get("parentId"):
            return
        self.url = str(frame.get("url", self.url))
        for listener in self._listeners:
            listener(self.url)

    @property
    def gone(self) -> BrowserError | None:
        """Why the tab can no longer be used (closed, crashed, the browser quit), or None."""
        if self.session.error is not None:
            return self.session.error
        if not self.process.alive:
            return BrowserError("the browser quit")
        return None

    async def navigate(self, url: str, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        """Load ``url`` in the tab and wait for its load event. Raises
        :class:`~archiver.errors.LoginError` when it fails or does not load in time."""
        self._loaded.clear()
        reply = await self.session.send("Page.navigate", {"url": url}, timeout=timeout)
        if reply.get("errorText"):
            raise LoginError(f"{url} could not be loaded: {reply['errorText']}")
        if not await self.session.wait(self._loaded, timeout):
            raise LoginError(f"{url} did not load within {timeout:g} s")

    async def run(
        self, steps: Sequence[Step], on_step: Callable[[int, Step], None] | None = None
    ) -> None:
        """A login script's steps (:mod:`archiver.browser.steps`)."""
        await run_steps(self.session, steps, self.navigate, on_step=on_step)

    async def cookies(self) -> list[BrowserCookie]:
        """Every cookie the browser holds: those responses set (HttpOnly ones too) and those
        scripts set."""
        return await read_cookies(self.process.connection)

    async def local_storage(self) -> dict[str, dict[str, str]]:
        """The localStorage of every origin the tab went through, by origin; the current
        page's origin read afresh (in case it wrote before the events were followed)."""
        items = self.storage.snapshot()
        origin = _origin(self.url)
        if origin is not None:
            with contextlib.suppress(BrowserError):
                reply = await self.session.send(
                    "DOMStorage.getDOMStorageItems",
                    {"storageId": {"securityOrigin": origin, "isLocalStorage": True}},
                    timeout=COMMAND_TIMEOUT,
                )
                entries = {str(key): str(value) for key, value in reply.get("entries", ())}
                if entries:
                    items[origin] = entries
                else:
                    items.pop(origin, None)
        return items

    async def close(self) -> None:
        """Stop Chromium and delete its state directory (what the site set, what was typed)."""
        try:
            await self.process.close()
        finally:
            shutil.rmtree(self.config.state_dir, ignore_errors=True)


async def _page_session(process: ChromiumProcess) -> Session:
    """A session attached to the browser's first tab (a headful Chromium opens one), or to a
    new one."""
    browser = process.connection.browser
    targets = await browser.send("Target.getTargets", timeout=COMMAND_TIMEOUT)
    pages = [t for t in targets.get("targetInfos", ()) if t.get("type") == "page"]
    if pages:
        target = str(pages[0]["targetId"])
    else:
        created = await browser.send(
            "Target.createTarget", {"url": "about:blank"}, timeout=COMMAND_TIMEOUT
        )
        target = str(created["targetId"])
    attached = await browser.send(
        "Target.attachToTarget", {"targetId": target, "flatten": True}, timeout=COMMAND_TIMEOUT
    )
    await browser.send("Target.activateTarget", {"targetId": target}, timeout=COMMAND_TIMEOUT)
    return process.connection.session(attached["sessionId"])


def _origin(url: str) -> str | None:
    """The origin of an http(s) page (its localStorage's), None for another (about:blank)."""
    return urls.origin(url) if url.startswith(("http://", "https://")) else None


__all__ = ["LoginBrowser", "LoginBrowserConfig"]
