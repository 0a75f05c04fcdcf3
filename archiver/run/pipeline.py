"""What happens to one leased URL: budgets, robots, fetch, records, write, discovery, outcome.

The crawler (:mod:`archiver.run.crawler`) runs the workers and the lifecycle; each worker hands its
lease to :meth:`Pipeline.process` and reports the returned outcome to the frontier. Failures of
one URL (network, protocol, bad content) become outcomes here and never escape; a write failure
or a bug does escape, for the crawler to stop on.

Steps, in order:

0. exclusions: ``--exclude`` and the live ``ignores`` (:mod:`archiver.run.control`) are checked
   again, so a pattern added after the URL was queued (or on resume) skips it;
1. budgets (``--max-pages``, ``--max-bytes``): a budget reached sets :attr:`Pipeline.limit`;
2. robots.txt (fetched and archived inside this lease when the host's copy is missing);
3. the fetch, conditional when an earlier crawl has validators for the URL; a bot challenge
   served instead of the page (:mod:`archiver.policy.challenge`) is not archived but retried later;
4. records, written (:mod:`archiver.run.recording`);
5. discovery: the redirect ``Location`` or the page's links, scope-checked and queued
   (:mod:`archiver.run.discovery`);
6. the outcome: done, retry later (transient failure, 5xx, 429) or failed
   (:mod:`archiver.run.outcomes`).
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING

from archiver.dedup.revalidation import Revalidation, original_exchange
from archiver.errors import FetchError
from archiver.frontier.base import Lease
from archiver.models import CrawlItem, Exchange, SkipReason, TaskResult, WrittenCapture
from archiver.policy import challenge
from archiver.policy.robots import Verdict
from archiver.policy.sitemaps import is_sitemap
from archiver.run.discovery import Discovery
from archiver.run.outcomes import Outcomes
from archiver.run.parts import Parts, RunContext
from archiver.run.recall import Recalled

if TYPE_CHECKING:
    from archiver.run.browsing import Browsing
from archiver.run.recording import Recorder


class Pipeline:
    """Processes leases for the workers of one crawl run; holds the per-run caches."""

    def __init__(self, context: RunContext, parts: Parts) -> None:
        self.context = context
        self.parts = parts
        self.outcomes = Outcomes(context)
        self.discovery = Discovery(context, parts, self.outcomes)
        self.recorder = Recorder(context, parts)
        #: the browser stage, in a crawl that uses one
        self.browsing: Browsing | None = None
        if parts.browser is not None:
            # imported here: a static crawl does not load the browser stage at all
            from archiver.run.browsing import Browsing, SharedParts  # noqa: PLC0415

            shared = SharedParts(
                self.recorder, self.discovery, self.outcomes, self._robots_allow_item
            )
            self.browsing = Browsing(context, parts, parts.browser, shared)
        #: set when a --max-pages / --max-bytes budget is reached: the crawl should stop
        self.limit: str | None = None
        self._pages_reserved = 0
        #: captures of robots.txt (and its redirects): not what a crawl is run for
        self.robots_captures = 0

    @property
    def uncommitted(self) -> collections.Counter[str]:
        """Per WARC file: captures written whose lease outcome the frontier has not yet."""
        return self.recorder.uncommitted

    async def committed(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to was handed to the frontier."""
        self.recorder.committed(captures)
        if self.browsing is not None and captures:
            await self.browsing.recall.committed(captures)

    async def put(self, items: list[CrawlItem]) -> None:
        """Scope-check items (the seeds, sitemaps) and queue the accepted ones."""
        await self.discovery.put(items)

    async def process(self, lease: Lease, captures: list[WrittenCapture]) -> TaskResult:
        """Robots, budgets, fetch, records, write, discovery; the lease's outcome. Every
        capture written for this lease (robots.txt included) is appended to ``captures``."""
        item = lease.item
        unwanted = self.parts.exclusions.check(item.url)  # a pattern given since it was queued
        if unwanted is not None:
            return self.outcomes.skipped(item, unwanted, unsent=True)
        counts_as_page = not item.is_requisite and not is_sitemap(item)
        budget = self._over_budget(counts_as_page)
        if budget is not None:
            self.limit = budget
            return self.outcomes.skipped(item, SkipReason.BUDGET, unsent=True)
        if not await self._robots_allow(lease, captures):
            self._unreserve(counts_as_page)
            # unsent unless robots.txt itself was fetched in this lease
            if self._robots_unreachable(item.url):
                return self.outcomes.robots_unreachable(item, unsent=not captures)
            return self.outcomes.skipped(item, SkipReason.ROBOTS, unsent=not captures)
        browsing = self.browsing
        if browsing is None:
            fetched = await self._fetch_and_record(item, captures, counts_as_page)
        else:
            # a browser's request may have captured this URL, or be capturing it right now
            found = await browsing.recall.claim(item.url)
            if isinstance(found, Recalled):
                return await self._recalled(item, found.exchange(), captures)
            try:
                fetched = await self._fetch_and_record(item, captures, counts_as_page)
                if not isinstance(fetched, TaskResult):
                    browsing.recall.captured(item.url, fetched[1])
            finally:
                found.release()
        if isinstance(fetched, TaskResult):
            return fetched
        exchange, written, content = fetched
        why = self.browsing.wants(item, content) if self.browsing is not None else None
        await self.discovery.discover(item, content, requisites=why is None, list_page=why is None)
        if self.browsing is not None and why is not None:
            failed = await self.browsing.load(item, content, written, why, captures)
            if failed is not None:
                return failed
        return self.outcomes.captured(item, exchange, written)

    async def _fetch_and_record(
        self, item: CrawlItem, captures: list[WrittenCapture], counts_as_page: bool
    ) -> tuple[Exchange, WrittenCapture, Exchange] | TaskResult:
        """The fetch (conditional when an earlier crawl has validators), its records written;
        the exchange, where it went, and what links are read from. A TaskResult when there is
        nothing more to do (the fetch failed, a bot challenge)."""
        previous = self.parts.previous
        revalidation = await previous.revalidation(item.url) if previous is not None else None
        headers = referer_header(item)
        if revalidation is not None:
            headers = {**(headers or {}), **revalidation.headers}
        try:
            exchange = await self.parts.fetcher.fetch(item.url, headers)
        except FetchError as exc:
            self._unreserve(counts_as_page)
            return self.outcomes.failed(item, exc)
        if self.context.settings.challenge_pages == "retry" and (
            provider := challenge.provider(exchange)
        ):
            self._unreserve(counts_as_page)
            return self.outcomes.challenged(item, exchange, provider)
        written = await self.recorder.record(exchange, revalidation)
        captures.append(written)
        if 300 <= exchange.status < 400:
            self._unreserve(counts_as_page)  # a redirect hop is not a page
        return exchange, written, await self._content(exchange, revalidation)

    async def _recalled(
        self, item: CrawlItem, exchange: Exchange, captures: list[WrittenCapture]
    ) -> TaskResult:
        """A URL a browser's request captured already (a frame's document, a stylesheet): its
        record is read back, not fetched again; what it leads to is discovered as usual."""
        assert self.browsing is not None
        why = self.browsing.wants(item, exchange)
        await self.discovery.discover(item, exchange, requisites=why is None, list_page=why is None)
        if why is not None:
            failed = await self.browsing.load(item, exchange, None, why, captures)
            if failed is not None:
                return failed
        return self.outcomes.recalled(item, exchange)

    def _over_budget(self, counts_as_page: bool) -> str | None:
        """Which ``--max-pages`` / ``--max-bytes`` budget this lease would exceed, if any; a
        page within budget reserves its place (given back if it is not fetched)."""
        s = self.context.settings
        if counts_as_page and s.max_pages is not None:
            if self._pages_reserved >= s.max_pages:
                return f"max-pages of {s.max_pages} reached"
            self._pages_reserved += 1
        if s.max_bytes is not None and self.context.stats.bytes_received >= s.max_bytes:
            return f"max-bytes of {s.max_bytes} reached"
        return None

    def _unreserve(self, counts_as_page: bool) -> None:
        if counts_as_page and self.context.settings.max_pages is not None:
            self._pages_reserved -= 1

    async def _robots_allow(self, lease: Lease, captures: list[WrittenCapture]) -> bool:
        """robots.txt's verdict, fetching and archiving it inside this lease when needed."""
        allowed = await self._robots_allow_item(lease.item, captures)
        if allowed and captures:  # robots.txt was fetched in this lease: one more request
            wait = self.parts.frontier.reserve(lease.host)
            if wait > 0:
                await asyncio.sleep(wait)
        return allowed

    async def _robots_allow_item(self, item: CrawlItem, captures: list[WrittenCapture]) -> bool:
        """robots.txt's verdict on ``item``, its fetch archived into ``captures``."""
        robots = self.parts.robots
        if robots is None:
            return True
        allowed = await robots.allowed(item, lambda url: self._fetch_archived(url, captures))
        await self._robots_reports()
        return allowed

    def _robots_unreachable(self, url: str) -> bool:
        """Whether the refusal came from an unreachable robots.txt (RFC 9309 section 2.3.1.4:
        a 5xx, a network or protocol error): the rules are unknown, which is a failure to
        fetch the URL, not a policy that excludes it."""
        robots = self.parts.robots
        rules = robots.cached(url) if robots is not None else None
        return rules is not None and rules.verdict is Verdict.UNREACHABLE

    async def _robots_reports(self) -> None:
        """Log what robots.txt fetches found and queue the sitemaps they list."""
        assert self.parts.robots is not None
        for report in self.parts.robots.take_reports():
            self.context.log.info(
                "robots",
                url=report.url,
                verdict=report.verdict.value,
                status=report.status,
                redirects=report.redirects,
                crawl_delay=report.crawl_delay,
                sitemaps=len(report.sitemaps),
                truncated=report.truncated,
                kept_cached_copy=report.kept_cached_copy,
                error=report.error,
            )
            if report.sitemaps:
                await self.put(self.parts.sitemaps.from_robots(report.url, report.sitemaps))

    async def _fetch_archived(self, url: str, captures: list[WrittenCapture]) -> Exchange:
        """Fetch and archive ``url`` as part of the current lease (robots.txt, sitemaps)."""
        exchange = await self.parts.fetcher.fetch(url)
        captures.append(await self.recorder.record(exchange))
        self.robots_captures += 1
        return exchange

    async def _content(self, ex: Exchange, revalidation: Revalidation | None) -> Exchange:
        """What links and the page entry are read from: a 304 has no body, so the earlier
        capture it stands for."""
        if revalidation is not None and ex.status == 304:
            return await original_exchange(ex, revalidation)
        return ex


def referer_header(item: CrawlItem) -> dict[str, str] | None:
    """``Referer`` as a browser would send it: the page that linked here, unless that would
    leak an https URL to plain http (the default referrer policy's downgrade rule)."""
    via = item.via
    if via is None or (via.startswith("https:") and item.url.startswith("http:")):
        return None
    return {"Referer": via}
