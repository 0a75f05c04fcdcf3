"""Second opinions: the pages replayed by a real replay tool, and what it could not serve.

``--replayer pywb``: the command starts pywb on the crawl (unframed: the archived page is the top
document, its scripts rewritten by wombat) and hands its replay prefix here. Each page is loaded
in archiver's capture browser at ``PREFIX + TIMESTAMP/URL``; every request the page makes goes
to pywb through archiver's fetcher (only to pywb's address: the browser has no network, and a
request that escaped pywb's rewriting is refused and reported). A ``404`` from pywb for an
archived URL (``/crawl/TIMESTAMP[mod_]/URL``) is a URL pywb could not serve; it is then looked
up in the archive as archiver replays it (:class:`archiver.qa.archive.Archive`): missing there
too, it is a miss of the archive; present there, it is a miss of the replay tool alone, reported
apart with the reason found (archiver served it by the fuzzy rule that pywb did not apply, or
under the exact key pywb did not find).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from archiver.browser.errors import BrowserError, NavigationError
from archiver.browser.exchange import (
    MAX_FULFILL_BODY,
    BrowserRequest,
    BrowserResponse,
    Refusal,
)
from archiver.browser.pool import BrowserPool
from archiver.fetch.fetcher import FetchConfig, Fetcher
from archiver.policy.netguard import AddressPolicy
from archiver.qa.archive import Lacking
from archiver.qa.check import (
    STATUS_COMPLETE,
    STATUS_FAILED,
    STATUS_INCOMPLETE,
    STATUS_UNREPLAYABLE,
    Miss,
    PageCheck,
    SharedArchive,
    browser_own,
)
from archiver.qa.live import LiveAnswers
from archiver.qa.options import QaOptions, browser_config, page_options

#: A replayed URL's tail: the timestamp with its modifier (pywb ``/crawl/TS[mod_]/URL``,
#: ReplayWeb.page ``/replay/w/ID/TS[mod_]/URL``), then the archived URL.
_REPLAYED = re.compile(r"/(\d{1,14})(?:[a-z]{2}_)?/(https?:/?/?.+)$")


@dataclass(frozen=True, slots=True)
class ReplayTool:
    """A replay tool the command started: its name and replay prefix (``…/crawl/``)."""

    name: str
    prefix: str


def archived_url(url: str, origin: str) -> str | None:
    """The archived URL a replay tool's URL stands for, or None for the tool's own files."""
    if not url.startswith(origin + "/"):
        return None
    rest = url[len(origin) :]
    match = _REPLAYED.search(rest)
    if match is None:
        return None
    target = match.group(2)
    if target.startswith(("http:/", "https:/")) and not target.startswith(("http://", "https://")):
        target = target.replace(":/", "://", 1)  # a path normaliser folded the double slash
    return target


@dataclass
class ToolAnswers:
    """Forwards a page's requests to the replay tool only; notes what it did not serve."""

    forward: LiveAnswers
    origin: str
    not_served: list[BrowserRequest] = field(default_factory=list)
    escaped: list[BrowserRequest] = field(default_factory=list)
    requests: int = 0
    served: int = 0

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.requests += 1
        if not request.url.startswith(self.origin + "/"):
            self.escaped.append(request)
            return Refusal("not the replay tool")
        answer = await self.forward(request)
        target = archived_url(request.url, self.origin)
        if isinstance(answer, BrowserResponse) and answer.status == 404 and target:
            asked = replace(request, url=target)
            if not browser_own(asked):
                self.not_served.append(asked)
        elif isinstance(answer, BrowserResponse):
            self.served += 1
        return answer


@dataclass
class PywbReplayer:
    """Replays pages through pywb (see the module docstring)."""

    pool: BrowserPool
    fetcher: Fetcher
    archive: SharedArchive
    tool: ReplayTool
    options: QaOptions

    async def check(self, url: str, at: str) -> PageCheck:
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.tool.prefix))
        answers = ToolAnswers(LiveAnswers(self.fetcher, MAX_FULFILL_BODY), origin)
        page = f"{self.tool.prefix}{at}/{url}"
        try:
            result = await self.pool.load(page, answers, options=page_options(self.options))
        except (BrowserError, NavigationError) as exc:
            return PageCheck(url, STATUS_FAILED, None, (), (), answers.requests, 0, (), str(exc))
        lacking, tool_only = await classify(self.archive, self.tool.name, answers.not_served, at)
        for request in answers.escaped:
            tool_only.append(
                Miss(
                    request.url,
                    request.method,
                    request.resource_type,
                    f"the page asked the live web: {self.tool.name} did not rewrite this URL",
                )
            )
        if lacking:
            status = STATUS_INCOMPLETE
        elif result.sockets:
            status = STATUS_UNREPLAYABLE
        else:
            status = STATUS_COMPLETE
        return PageCheck(
            url, status, result, tuple(lacking), (), answers.requests, answers.served, (),
            replayer_misses=tuple(tool_only),
        )  # fmt: skip


async def classify(
    archive: SharedArchive, tool: str, not_served: list[BrowserRequest], at: str
) -> tuple[list[Miss], list[Miss]]:
    """What a replay tool did not serve, split: lacking in the archive too, or the tool's
    alone (with the reason found)."""
    lacking: list[Miss] = []
    tool_only: list[Miss] = []
    seen: set[tuple[str, str]] = set()
    for request in not_served:
        if (request.method, request.url) in seen:
            continue
        seen.add((request.method, request.url))
        found = await asyncio.to_thread(archive.lookup, request, at)
        kind = request.resource_type
        if isinstance(found, Lacking):
            lacking.append(Miss.of(request, found.reason))
            continue
        if found.response.status == 404:
            continue  # the archived answer is a 404 itself: the tool served it
        if found.fuzzy is not None:
            why = f"{tool} did not serve {found.capture.url} ({found.fuzzy})"
        else:
            why = f"{tool} did not find the capture of key {found.capture.key}"
        tool_only.append(Miss(request.url, request.method, kind, why))
    return lacking, tool_only


@contextlib.asynccontextmanager
async def open_tool(
    name: str, crawl_dir: Path, archive: SharedArchive, options: QaOptions, tool: Any
) -> AsyncIterator[Any]:
    """The replayer of the tool the command started (``tool``: a :class:`ReplayTool`; for
    ``rwp`` a function giving the server's context, which runs in the check's event loop)."""
    if name == "rwp":
        from archiver.qa.rwp import open_rwp  # noqa: PLC0415

        async with tool() as started, open_rwp(crawl_dir, archive, options, started) as rwp:
            yield rwp
        return
    if not isinstance(tool, ReplayTool) or tool.name != name:
        raise ValueError(f"--replayer {name}: the replay tool was not started")
    parts = urlsplit(tool.prefix)
    policy = AddressPolicy(allowed=[(parts.hostname or "127.0.0.1", parts.port or 80)])
    async with (
        Fetcher(FetchConfig(), policy) as fetcher,
        BrowserPool(browser_config(crawl_dir, options, name)) as pool,
    ):
        yield PywbReplayer(pool, fetcher, archive, tool, options)


__all__ = ["PywbReplayer", "ReplayTool", "ToolAnswers", "archived_url", "classify", "open_tool"]
