"""Shared fixtures: real local servers (never mocks), and a crawl runner."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from archiver.config.settings import Settings
from archiver.run.crawler import Crawler, CrawlResult
from tests.docs.shell import DocShell
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


# -------------------------------------------------- documented commands (tests/docs/registry.py)


@pytest.fixture(scope="session")
def doc() -> DocShell:
    """Runs command lines of the documentation as written, recording which ran."""
    return DocShell(set())


@pytest.fixture(autouse=True)
def _documented_commands_ran(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked ``documents(TEXT...)`` must have run each TEXT through ``doc`` by its end
    (itself or through a fixture), or the marker would claim a test that does not exist."""
    texts = [text for mark in request.node.iter_markers("documents") for text in mark.args]
    if not texts:
        yield
        return
    shell: DocShell = request.getfixturevalue("doc")
    yield
    if getattr(request.node, "call_failed", False):
        return  # the test's own failure says more
    missing = [text for text in texts if text not in shell.ran]
    assert not missing, f"marked documents(...) but never ran through doc: {missing}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item.call_failed = True  # type: ignore[attr-defined]
    return report
