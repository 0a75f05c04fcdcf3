"""Shared fixtures: real local servers (never mocks), and a crawl runner."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from archiver.config.settings import Settings
from archiver.run.crawler import Crawler, CrawlResult
from tests.support.raw import RawServer
from tests.support.site import SiteServer


@pytest.fixture
async def site() -> AsyncIterator[SiteServer]:
    async with SiteServer() as server:
        yield server


@pytest.fixture
async def raw_server() -> AsyncIterator[RawServer]:
    async with RawServer() as server:
        yield server


def fast_settings(output: Path, *seeds: str, **overrides: Any) -> Settings:
    """Settings for a quick local test crawl: no politeness delay, robots ignored, memory
    frontier, unless the test says otherwise."""
    values: dict[str, Any] = {
        "seeds": tuple(seeds),
        "output": output,
        "frontier": "memory",
        "per_host_delay": 0.0,
        "per_host_concurrency": 8,
        "workers": 8,
        "robots": "ignore",
        "sitemaps": "off",
        "min_free_disk": None,
        "progress": "off",
        "quiet": True,
    }
    values.update(overrides)
    return Settings(**values)


async def run_crawl(output: Path, *seeds: str, **overrides: Any) -> CrawlResult:
    return await Crawler(fast_settings(output, *seeds, **overrides)).run()
