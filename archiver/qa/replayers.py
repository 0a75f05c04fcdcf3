"""Who replays the pages: archiver itself from the crawl's records, or a replay tool as a
second opinion (``--replayer pywb|rwp``, :mod:`archiver.qa.tools`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from archiver.browser.pool import BrowserPool
from archiver.errors import SettingsError
from archiver.qa.check import ArchiveReplay, PageCheck, SharedArchive
from archiver.qa.options import QaOptions, browser_config, page_options

REPLAYERS = ("archive", "pywb", "rwp")


class Replayer(Protocol):
    """Replays one page (captured at ``at``, 14 digits) and says what it could not serve."""

    async def check(self, url: str, at: str) -> PageCheck: ...


@contextlib.asynccontextmanager
async def open_replayer(
    name: str, crawl_dir: Path, archive: SharedArchive, options: QaOptions, tools: Any
) -> AsyncIterator[Replayer]:
    """The replayer called ``name``, started; stopped on leaving."""
    if name == "archive":
        async with BrowserPool(browser_config(crawl_dir, options, "browser")) as pool:
            yield ArchiveReplay(pool, archive, page_options(options), options.follow_links)
        return
    if name not in REPLAYERS:
        raise SettingsError("--replayer", f"unknown {name} (known: {', '.join(REPLAYERS)})")
    from archiver.qa.tools import open_tool  # noqa: PLC0415 - only for a second opinion

    async with open_tool(name, crawl_dir, archive, options, tools) as replayer:
        yield replayer


__all__ = ["REPLAYERS", "Replayer", "open_replayer"]
