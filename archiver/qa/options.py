"""How ``archiver qa`` runs, and what crosses between its modules: a page to check, and what
it is compared with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from archiver.browser.page import PageOptions
from archiver.browser.pool import BrowserConfig
from archiver.errors import SettingsError

#: The resource records a crawl with ``--qa`` stores for each page its browser loaded: the
#: page's rendered text and its full-page screenshot, what a replay is compared with.
TEXT_PREFIX = "urn:text:"
FULL_SCREENSHOT_PREFIX = "urn:screenshot-full:"


@dataclass(frozen=True, slots=True)
class QaOptions:
    """How a check runs (the command's options)."""

    tabs: int = 2
    page_timeout: float = 45.0
    sample: int | None = None
    urls: tuple[str, ...] = ()
    follow_links: int = 3
    live: bool = False
    fresh: bool = False
    chromium: str | None = None
    window: tuple[int, int] = (1280, 960)

    def __post_init__(self) -> None:
        if self.tabs < 1:
            raise SettingsError("--browser-tabs", "must be at least 1")
        if self.page_timeout <= 0:
            raise SettingsError("--page-timeout", "must be more than 0 seconds")
        if self.sample is not None and self.sample < 1:
            raise SettingsError("--sample", "must be at least 1")
        if self.follow_links < 0:
            raise SettingsError("--follow-links", "must be 0 or more")


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    ts: str
    title: str | None = None


@dataclass
class Reference:
    text: str | None
    screenshot: bytes | None
    source: str | None  #: ``crawl``, ``live`` or None


def page_options(options: QaOptions) -> PageOptions:
    return PageOptions(
        timeout=options.page_timeout,
        screenshot=True,
        full_page=True,
        observe=True,
        window=options.window,
    )


def browser_config(crawl_dir: Path, options: QaOptions, name: str) -> BrowserConfig:
    return BrowserConfig(
        state_dir=crawl_dir / "state" / "qa" / name,
        chromium=options.chromium,
        tabs=options.tabs,
        page_timeout=options.page_timeout,
        screenshots=True,
        window=options.window,
    )


__all__ = [
    "FULL_SCREENSHOT_PREFIX",
    "TEXT_PREFIX",
    "Page",
    "QaOptions",
    "Reference",
    "browser_config",
    "page_options",
]
