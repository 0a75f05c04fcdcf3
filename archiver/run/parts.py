"""What the pipeline of one run is made of: built by :mod:`archiver.run.wiring`, used by
:mod:`archiver.run.pipeline` and the parts it delegates to (discovery, recording, outcomes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from archiver.config.settings import Settings
from archiver.dedup.digests import DigestIndex
from archiver.dedup.previous import PreviousCrawls
from archiver.fetch.fetcher import Fetcher
from archiver.frontier.base import Frontier
from archiver.models import CrawlItem, Exchange
from archiver.policy.ignores import Exclusions
from archiver.policy.robots import RobotsReport, RobotsRules, RobotsStats
from archiver.policy.scope import Scope
from archiver.policy.sitemaps import SitemapPolicy
from archiver.run.stats import CrawlStats
from archiver.warc.records import RecordFactory
from archiver.warc.writer import Writer

if TYPE_CHECKING:
    from archiver.run.browsing import BrowserParts

#: Fetch a URL and archive the exchange as part of the current lease (used for robots.txt).
ArchiveFetch = Callable[[str], Awaitable[Exchange]]


class RobotsChecker(Protocol):
    """What the crawler asks of robots.txt handling (see :mod:`archiver.policy.robots`)."""

    async def allowed(self, item: CrawlItem, fetch: ArchiveFetch) -> bool: ...

    def cached(self, url: str) -> RobotsRules | None: ...

    def take_reports(self) -> list[RobotsReport]: ...

    def statistics(self) -> RobotsStats: ...


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every part of a run reads or reports to: its settings, its counters, its log."""

    settings: Settings
    stats: CrawlStats
    log: Any
    #: writes an ``info`` event as ``log`` would, without its processors (the per-fetch and
    #: per-skip lines, as many as fetches: :meth:`archiver.run.log.CrawlLog.info_event`)
    info_event: Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class Parts:
    """The stages a lease goes through, in pipeline order, all built and started."""

    frontier: Frontier
    robots: RobotsChecker | None
    fetcher: Fetcher
    factory: RecordFactory
    dedup: DigestIndex
    previous: PreviousCrawls | None
    writer: Writer
    scope: Scope
    sitemaps: SitemapPolicy
    pages_file: IO[str] | None
    #: the browser, its requests' recall and its mode, in a crawl that uses one
    browser: BrowserParts | None = None
    #: --exclude and the live ignores: checked again when a URL is leased (run.control)
    exclusions: Exclusions = field(default_factory=Exclusions)


__all__ = ["ArchiveFetch", "Parts", "RobotsChecker", "RunContext"]
