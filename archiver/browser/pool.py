"""A pool of tabs in one Chromium, shared by the crawl's browser workers.

``tabs`` pages load at once (each in a new tab, closed after the page); a coroutine calling
:meth:`BrowserPool.load` waits for a free slot. The pool owns the Chromium process: launched on
the first page (``start`` only checks the binary and reaps what an earlier run left), launched
again when it died (a crash costs the pages it was loading, each a
:class:`~archiver.browser.errors.BrowserError`, and nothing after), and replaced after
``restart_after`` pages, once the pages it is loading are done, so that memory a long crawl
leaks into the browser is given back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from archiver.browser.behaviors import BEHAVIORS
from archiver.browser.chromium import (
    ChromiumProcess,
    chromium_flags,
    find_chromium,
    reap_leftovers,
)
from archiver.browser.errors import BrowserError, BrowserUnavailableError
from archiver.browser.exchange import MAX_FULFILL_BODY, RequestHandler
from archiver.browser.page import Explore, PageOptions, PageResult, load_page
from archiver.browser.storage import seed_local_storage
from archiver.errors import SettingsError


@dataclass(frozen=True, slots=True)
class BrowserConfig:
    """Everything the browser stage needs; built from the crawl's settings."""

    state_dir: Path
    """Where the profile, the pid file and Chromium's log live (the crawl's state)."""
    chromium: str | None = None
    """The executable (``--chromium``); None: looked up on PATH."""
    tabs: int = 4
    page_timeout: float = 30.0
    behaviors: tuple[str, ...] = ("autoscroll",)
    screenshots: bool = False
    #: the screenshots show the whole page, not the top (up to ``MAX_FULL_PAGE_HEIGHT``)
    full_page: bool = False
    window: tuple[int, int] = (1280, 960)
    user_agent: str | None = None
    """The browser's User-Agent (navigator.userAgent): the fetcher's, so that both agree."""
    restart_after: int = 100
    """Pages per Chromium before it is replaced by a fresh one."""
    network_quiet: float = 0.5
    max_body: int = MAX_FULFILL_BODY
    launch_timeout: float = 60.0
    local_storage: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """localStorage items by origin, set in every Chromium launched (a login profile's)."""

    def __post_init__(self) -> None:
        if self.tabs < 1:
            raise SettingsError("--browser-tabs", "must be at least 1")
        if self.page_timeout <= 0:
            raise SettingsError("--page-timeout", "must be more than 0 seconds")
        unknown = [name for name in self.behaviors if name not in BEHAVIORS]
        if unknown:
            raise SettingsError(
                "--behaviors", f"unknown {', '.join(unknown)} (known: {', '.join(BEHAVIORS)})"
            )
        if self.restart_after < 1:
            raise SettingsError("restart_after", "must be at least 1")

    def page_options(self, screenshot: bool | None = None) -> PageOptions:
        return PageOptions(
            timeout=self.page_timeout,
            behaviors=self.behaviors,
            screenshot=self.screenshots if screenshot is None else screenshot,
            full_page=self.full_page,
            window=self.window,
            network_quiet=self.network_quiet,
            max_body=self.max_body,
        )


@dataclass
class PoolStats:
    pages: int = 0
    """Pages loaded and read."""
    failed: int = 0
    """Pages that ended in a BrowserError (crash, hang, timeout)."""
    launches: int = 0
    """Chromium processes started (the first one, then one per crash or restart)."""
    crashes: int = 0
    """Chromium processes found dead while they were in use."""


class BrowserPool:
    """``tabs`` concurrent page loads in one Chromium that is relaunched when needed."""

    def __init__(self, config: BrowserConfig) -> None:
        self.config = config
        self.stats = PoolStats()
        self.binary: str | None = None
        self._process: ChromiumProcess | None = None
        self._served = 0  # pages started on the current process
        self._busy = 0  # pages loading now
        self._slots = asyncio.Semaphore(config.tabs)
        self._lock = asyncio.Lock()
        self._idle = asyncio.Condition()
        self._closed = False

    async def __aenter__(self) -> BrowserPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def process(self) -> ChromiumProcess | None:
        """The running Chromium, if any."""
        return self._process

    async def start(self, *, launch: bool = False) -> None:
        """Find Chromium and reap what an earlier run left in the state directory; start the
        browser now if ``launch``, else with the first page. Raises
        :class:`~archiver.browser.errors.BrowserUnavailableError`."""
        self.binary = find_chromium(self.config.chromium)
        self.config.state_dir.mkdir(parents=True, exist_ok=True)
        await reap_leftovers(self.config.state_dir)
        if launch:
            async with self._lock:
                await self._launch()

    async def close(self) -> None:
        """Stop Chromium and every process of its group. Pages still loading fail."""
        self._closed = True
        async with self._lock:
            process, self._process = self._process, None
            if process is not None:
                await process.close()

    async def load(
        self,
        url: str,
        handler: RequestHandler,
        *,
        screenshot: bool | None = None,
        options: PageOptions | None = None,
        explore: Explore | None = None,
    ) -> PageResult:
        """Load ``url`` in a new tab, every request answered by ``handler`` (see
        :func:`archiver.browser.page.load_page`); ``options`` replace the pool's page options
        for this page. Raises
        :class:`~archiver.browser.errors.BrowserError` (may be retried),
        :class:`~archiver.browser.errors.NavigationError`, or what the handler raised."""
        async with self._slots:
            process = await self._current()
            self._busy += 1
            try:
                result = await load_page(
                    process.connection,
                    url,
                    handler,
                    options or self.config.page_options(screenshot),
                    explore,
                )
            except BrowserError:
                self.stats.failed += 1
                if not process.alive and process is self._process:
                    self.stats.crashes += 1
                    process.kill()  # whatever is left of it; reaped at the next launch
                raise
            finally:
                async with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()
            self.stats.pages += 1
            return result

    async def _current(self) -> ChromiumProcess:
        """The browser to load the next page in: the running one, or a new one if it died or
        has served ``restart_after`` pages (then once its pages are done)."""
        async with self._lock:
            if self._closed:
                raise BrowserError("the browser pool is closed")
            process = self._process
            if process is not None and process.alive and self._served < self.config.restart_after:
                self._served += 1
                return process
            if process is not None and process.alive:
                async with self._idle:
                    await self._idle.wait_for(lambda: self._busy == 0)
            process = await self._launch()
            self._served = 1
            return process

    async def _launch(self) -> ChromiumProcess:
        """Close the current browser if any and start a new one (the lock is held)."""
        old, self._process = self._process, None
        if old is not None:
            await old.close()
        if self.binary is None:
            self.binary = find_chromium(self.config.chromium)
        flags = chromium_flags(window=self.config.window, user_agent=self.config.user_agent)
        process = await ChromiumProcess.launch(
            self.binary, self.config.state_dir, flags, timeout=self.config.launch_timeout
        )
        try:
            # a download is captured by the handler like any response; the browser must not
            # also write it to disk
            await process.connection.browser.send(
                "Browser.setDownloadBehavior", {"behavior": "deny"}, timeout=30.0
            )
            await seed_local_storage(process.connection, self.config.local_storage, timeout=30.0)
        except BrowserError as exc:
            await process.close()
            raise BrowserUnavailableError(f"Chromium does not take commands: {exc}") from exc
        self._process = process
        self.stats.launches += 1
        self._served = 0
        return self._process
