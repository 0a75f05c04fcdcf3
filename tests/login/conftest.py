"""Crawls behind a login run real Chromium (the login browser, the crawl's browser, the test's
own viewer of the login page): the browser fixtures apply here too."""

from __future__ import annotations

from tests.browser.conftest import chromium_installed, no_orphans

__all__ = ["chromium_installed", "no_orphans"]
