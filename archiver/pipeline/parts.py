"""What the pipeline of one run is made of: built by :mod:`archiver.run.wiring`, used by
:mod:`archiver.pipeline.pipeline` and the parts it delegates to (capture, discovery, recording,
outcomes, browsing)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from archiver.config.settings import Settings
from archiver.dedup.digests import DigestIndex
from archiver.dedup.previous import PreviousCrawls
from archiver.fetch.fetcher import Fetcher
from archiver.frontier.base import Frontier
from archiver.models import CrawlItem, Exchange
from archiver.pipeline.counters import CrawlStats
from archiver.pipeline.mediabudget import MediaBytes, MemoryMediaBytes
from archiver.pipeline.recall import Recall
from archiver.policy.ignores import Exclusions
from archiver.policy.robots import RobotsReport, RobotsRules, RobotsStats
from archiver.policy.scope import Scope
from archiver.policy.sitemaps import SitemapPolicy
from archiver.warc.records import RecordFactory
from archiver.warc.writer import Writer

if TYPE_CHECKING:
    from archiver.browser.pool import BrowserPool
    from archiver.media.resolver import YtDlpResolver
    from archiver.pipeline.cookiesync import BrowserCookies
    from archiver.pipeline.session import SessionWatch
    from archiver.qa.check import SharedArchive

#: Fetch a URL and archive the exchange as part of the current lease (used for robots.txt).
ArchiveFetch = Callable[[str], Awaitable[Exchange]]


class RobotsChecker(Protocol):
    """What the crawler asks of robots.txt handling (see :mod:`archiver.policy.robots`)."""

    async def allowed(self, item: CrawlItem, fetch: ArchiveFetch) -> bool: ...

    def cached(self, url: str) -> RobotsRules | None: ...

    def take_reports(self) -> list[RobotsReport]: ...

    def statistics(self) -> RobotsStats: ...


class PageList(Protocol):
    """Where the crawl's pages are listed (``pages.jsonl``, the WACZ's page list)."""

    def add(self, url: str, date: datetime, title: str | None, text: str | None = None) -> None: ...


@dataclass(frozen=True, slots=True)
class KeptRequest:
    """The request to make for a leased URL instead of a GET: a POST or PUT a replayed page
    made, its body kept by the replay check (``archiver patch``)."""

    method: str
    content_type: str | None
    body: bytes

    def headers(self, referer: Mapping[str, str] | None) -> dict[str, str]:
        fields = dict(referer or {})
        if self.content_type is not None:
            fields["Content-Type"] = self.content_type
        return fields


@dataclass(frozen=True, slots=True)
class CheckParts:
    """What checking each page as it is captured needs (``--qa``)."""

    #: what the crawl has written so far, as replay looks it up (refreshed before each check)
    archive: SharedArchive
    crawl_dir: Path  #: where ``qa.jsonl`` and the screenshots of ``qa/`` go
    follow_links: int = 3


@dataclass(frozen=True, slots=True)
class BrowserParts:
    """What the browser stage is made of (``--browser all|auto``, a seed's ``browser``, or
    ``--qa``). It carries no browser mode: each page's seed's rules say whether the browser
    loads it (``off`` for every seed: the browser only replays pages for ``--qa``)."""

    pool: BrowserPool
    recall: Recall
    max_body: int
    #: ``--qa``: each page's rendered text and full-page screenshot stored as resource
    #: records (``urn:text:URL``, ``urn:screenshot-full:URL``), what a replay is compared with
    references: bool = False
    #: ``--qa``: each page checked as it is captured
    checks: CheckParts | None = None
    #: the browser's cookie store kept in step with the crawl's jar (None with --no-cookies)
    cookies: BrowserCookies | None = None


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
    pages: PageList | None
    #: the browser and its requests' recall, in a crawl that uses one (each seed's rules say
    #: which of its pages it loads)
    browser: BrowserParts | None = None
    #: --exclude and the live ignores: checked again when a URL is leased (run.control)
    exclusions: Exclusions = field(default_factory=Exclusions)
    #: URL -> the request with a body to make when it is leased (``archiver patch``)
    kept_requests: Mapping[str, KeptRequest] = field(default_factory=dict)
    #: whether the login session is still alive (--logged-out, --login-check), when asked
    session: SessionWatch | None = None
    #: the media bytes each page's requisites took (the per-page media budget)
    media_bytes: MediaBytes = field(default_factory=MemoryMediaBytes)
    #: yt-dlp, in a crawl with ``--media yt-dlp``
    media_resolver: YtDlpResolver | None = None


__all__ = [
    "ArchiveFetch",
    "BrowserParts",
    "CheckParts",
    "KeptRequest",
    "PageList",
    "Parts",
    "RobotsChecker",
    "RunContext",
]
