"""Fixtures for the browser stage: the client-rendered site, a handler that answers the browser
from it through a plain aiohttp client (the crawl will use archiver's own fetcher), and a
browser pool whose Chromium processes are checked to be gone after every test.

Chromium is Debian's package. These tests never skip: without it they fail saying how to
install it.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archiver.browser.chromium import profile_users
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from tests.support.npm_packages import BROWSERTRIX_BEHAVIORS, package_tree
from tests.support.spa_site import SpaSite

Refuse = Callable[[BrowserRequest], str | None]


def _never(_: BrowserRequest) -> str | None:
    return None


@dataclass
class SiteHandler:
    """Answers every request the page makes from the live site, and logs it."""

    http: aiohttp.ClientSession
    refuse: Refuse = _never
    log: list[BrowserRequest] = field(default_factory=list)

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.log.append(request)
        reason = self.refuse(request)
        if reason is not None:
            return Refusal(reason)
        async with self.http.request(
            request.method,
            request.url,
            headers=list(request.headers),
            data=request.body,
            allow_redirects=False,
        ) as response:
            body = await response.read()
            headers = [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in response.raw_headers
            ]
            return BrowserResponse(response.status, headers, body, response.reason or "")

    def requested(self) -> list[str]:
        """``METHOD path?query`` of every request the handler answered (not refused)."""
        return [
            f"{request.method} {_path_qs(request.url)}"
            for request in self.log
            if self.refuse(request) is None
        ]


def _path_qs(url: str) -> str:
    rest = url.split("://", 1)[1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else "/"


@pytest.fixture(autouse=True)
def no_orphans(tmp_path: Path) -> Iterator[None]:
    """After each test, no process may still use a browser profile under the test's tmp_path."""
    yield
    left = [
        proc for path in tmp_path.rglob("profile") if path.is_dir() for proc in profile_users(path)
    ]
    assert not left, f"Chromium processes outlived the test: {left}"


@pytest.fixture
def chromium_installed() -> None:
    if not any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")):
        pytest.fail(
            "Chromium is not installed: install Debian's package (apt-get install -y chromium)",
            pytrace=False,
        )


@pytest.fixture
async def spa() -> AsyncIterator[SpaSite]:
    async with SpaSite() as site:
        yield site


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    # auto_decompress off: the browser stage gets the bytes as the server sent them
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        yield session


@pytest.fixture
def handler(http: aiohttp.ClientSession) -> SiteHandler:
    return SiteHandler(http)


@pytest.fixture
def browser_config(tmp_path: Path, chromium_installed: None) -> Callable[..., BrowserConfig]:
    def make(**overrides: Any) -> BrowserConfig:
        values: dict[str, Any] = {"state_dir": tmp_path / "browser", "tabs": 2}
        values.update(overrides)
        return BrowserConfig(**values)

    return make


@pytest.fixture
async def pool(browser_config: Callable[..., BrowserConfig]) -> AsyncIterator[BrowserPool]:
    async with BrowserPool(browser_config()) as browser_pool:
        yield browser_pool


@pytest.fixture(scope="session")
def browsertrix_bundle() -> Path:
    """The real Browsertrix Behaviors bundle (``dist/behaviors.js``), fetched with ``npm pack``
    as the README tells a user to (archiver ships none: it is AGPL-3.0)."""
    return package_tree(BROWSERTRIX_BEHAVIORS) / "dist" / "behaviors.js"
