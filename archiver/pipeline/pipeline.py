"""What happens to one leased URL: admitted, captured, what it leads to discovered, its outcome.

The crawler (:mod:`archiver.run.crawler`) runs the workers and the lifecycle; each worker hands the
capturer of its lease (:meth:`Pipeline.capturer`) to :meth:`Pipeline.process` and reports the
returned outcome to the frontier, with the captures the capturer wrote. Failures of one URL
(network, protocol, bad content) become outcomes here and never escape; a write failure or a bug
does escape, for the crawler to stop on.

Steps, in order:

1. admission (:mod:`archiver.pipeline.capture`): the exclusions again (``--exclude`` and the
   live ``ignores`` of :mod:`archiver.run.control`, so a pattern added after the URL was queued,
   or on resume, skips it), the budgets (``--max-pages``, ``--max-bytes``: a budget reached sets
   :attr:`Pipeline.limit`), robots.txt (fetched and archived inside this lease when the host's
   copy is missing), and in a browser crawl the claim on the URL (captured already by a page's
   request: recalled from its record, not fetched again);
2. the fetch, conditional when an earlier crawl has validators for the URL; a bot challenge
   served instead of the page (:mod:`archiver.policy.challenge`) is not archived but retried later;
3. records, written (:mod:`archiver.pipeline.recording`, through the capturer);
4. discovery: the redirect ``Location`` or the page's links, scope-checked and queued
   (:mod:`archiver.pipeline.discovery`); with ``--media yt-dlp``, the page's media resolved by
   yt-dlp, its requests captured by the lease's capturer (:mod:`archiver.pipeline.media`); a
   page that needs a browser is loaded in it, every request it makes admitted and captured by
   the same capturer (:mod:`archiver.pipeline.browsing`);
5. the outcome: done, retry later (transient failure, 5xx, 429) or failed
   (:mod:`archiver.pipeline.outcomes`); in a crawl with a login session, a response that
   shows the session ended (step 2, or any request of a browser page) stops the lease with
   :class:`~archiver.errors.SessionEndedError`, and with a ``--login-check`` URL a capture
   leads on (to discovery, to its outcome) only once a check vouched for the session after it
   (:mod:`archiver.pipeline.session`).
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING

from archiver import urls
from archiver.dedup.revalidation import original_exchange
from archiver.errors import FetchError
from archiver.frontier.base import Lease
from archiver.models import CrawlItem, Exchange, TaskResult, WrittenCapture
from archiver.pipeline.capture import Admitted, Capturer, Capturers, Refused
from archiver.pipeline.discovery import Discovery
from archiver.pipeline.media import MediaResolving
from archiver.pipeline.mediabudget import MediaBudget
from archiver.pipeline.outcomes import Outcomes
from archiver.pipeline.parts import Parts, RunContext
from archiver.pipeline.recording import text_capture
from archiver.pipeline.seeds import SeedRuns
from archiver.policy import challenge

if TYPE_CHECKING:
    from archiver.pipeline.browsing import Browsing


class Pipeline:
    """Processes leases for the workers of one crawl run; holds the per-run caches."""

    def __init__(self, context: RunContext, parts: Parts) -> None:
        self.context = context
        self.parts = parts
        self.outcomes = Outcomes(context)
        self.seeds = SeedRuns(parts.scope.table, parts.frontier)
        media = MediaBudget(context.settings.media_max_bytes or None, parts.media_bytes)
        self.discovery = Discovery(context, parts, self.outcomes, self.seeds, media)
        recall = parts.browser.recall if parts.browser is not None else None
        self.capturers = Capturers(context, parts, self.outcomes, self.discovery, recall)
        #: yt-dlp's stage, in a crawl with --media yt-dlp
        self.media: MediaResolving | None = None
        if parts.media_resolver is not None:
            self.media = MediaResolving(
                context, parts.media_resolver, self.discovery, parts.factory
            )
        #: the browser stage, in a crawl that uses one
        self.browsing: Browsing | None = None
        if parts.browser is not None:
            # imported here: a static crawl does not load the browser stage at all
            from archiver.pipeline.browsing import Browsing  # noqa: PLC0415

            self.browsing = Browsing(
                context, parts.browser, self.discovery, self.outcomes, parts.factory
            )

    @property
    def limit(self) -> str | None:
        """Set when a ``--max-pages`` / ``--max-bytes`` budget is reached: the crawl should
        stop."""
        return self.capturers.budgets.limit

    @property
    def robots_captures(self) -> int:
        """Captures of robots.txt (and its redirects): not what a crawl is run for."""
        return self.capturers.robots_captures

    @property
    def uncommitted(self) -> collections.Counter[str]:
        """Per WARC file: captures written whose lease outcome the frontier has not yet."""
        return self.capturers.recorder.uncommitted

    def capturer(self, lease: Lease) -> Capturer:
        """The capturer of one lease: what the worker commits with the lease's outcome."""
        return self.capturers.for_lease(lease)

    async def put(self, items: list[CrawlItem]) -> None:
        """Scope-check items (the seeds, sitemaps) and queue the accepted ones."""
        await self.discovery.put(items)

    async def add(self, urls: list[str]) -> list[tuple[str, str]]:
        """Queue URLs the operator added; ``(url, outcome)`` for each
        (:meth:`archiver.pipeline.discovery.Discovery.add`)."""
        return await self.discovery.add(urls)

    async def verify_session(self) -> None:
        """Before the first lease: is the session alive (``--login-check``)? Raises
        :class:`~archiver.errors.SessionEndedError` when it is not."""
        if self.parts.session is not None:
            await self.parts.session.verify()

    async def _vouch(self) -> None:
        """With a ``--login-check`` URL: return once a check begun now found the session
        alive, so that what was just captured is known to be a logged-in capture; raises
        :class:`~archiver.errors.SessionEndedError` otherwise (:mod:`archiver.pipeline.session`)."""
        session = self.parts.session
        if session is not None:
            await session.confirm(asyncio.get_running_loop().time())

    async def process(self, capturer: Capturer) -> TaskResult:
        """Admission, fetch, records, discovery, the browser; the lease's outcome. Raises
        :class:`~archiver.errors.SessionEndedError` when the crawl's login session ended: the
        lease is then not to be committed."""
        item = capturer.lease.item
        if self.browsing is not None and urls.split_route(item.url)[1]:
            return await self._route(capturer)
        admission = await capturer.admit_lease()
        if isinstance(admission, Refused):
            if admission.robots_unreachable:
                return self.outcomes.robots_unreachable(item, unsent=True)
            return self.outcomes.skipped(item, admission.reason, unsent=True)
        if not isinstance(admission, Admitted):  # captured by a browser's request already
            return await self._recalled(capturer, admission.exchange())
        with admission:
            fetched = await self._capture(capturer, admission)
        if isinstance(fetched, TaskResult):
            return fetched
        exchange, written, content = fetched
        await self._vouch()  # before its links are queued: a login wall's would be junk
        browsing = self.browsing
        why = browsing.wants(item, content, capturer.rules.browser) if browsing else None
        text = await self.discovery.discover(
            item, content, requisites=why is None, list_page=why is None
        )
        await self._text_record(capturer, text)
        media = self.media
        if media is not None and media.wants(item, content):
            await media.resolve(capturer, content, written)
        if browsing is not None:  # loaded in the browser when it wants; checked with --qa
            failed = await browsing.page_captured(capturer, content, written, why)
            if failed is not None:
                return failed
            await self._vouch()  # and what the page loaded
        return self.outcomes.captured(item, exchange, written)

    async def _capture(
        self, capturer: Capturer, admitted: Admitted
    ) -> tuple[Exchange, WrittenCapture, Exchange] | TaskResult:
        """The fetch, its records written; the exchange, where it went, and what links are read
        from. A TaskResult when there is nothing more to do (the fetch failed, a bot
        challenge)."""
        item = admitted.request.item
        try:
            exchange = await capturer.fetch(admitted)
        except FetchError as exc:
            return self.outcomes.failed(item, exc)
        if self.context.settings.challenge_pages == "retry" and (
            provider := challenge.provider(exchange)
        ):
            capturer.not_recorded(admitted)
            return self.outcomes.challenged(item, exchange, provider)
        written = await capturer.record(admitted, exchange)
        return exchange, written, await self._content(admitted, exchange)

    async def _recalled(self, capturer: Capturer, exchange: Exchange) -> TaskResult:
        """A URL a browser's request captured already (a frame's document, a stylesheet): its
        record is read back, not fetched again; what it leads to is discovered as usual."""
        assert self.browsing is not None
        item = capturer.lease.item
        why = self.browsing.wants(item, exchange, capturer.rules.browser)
        text = await self.discovery.discover(
            item, exchange, requisites=why is None, list_page=why is None
        )
        await self._text_record(capturer, text)
        failed = await self.browsing.page_captured(capturer, exchange, None, why)
        if failed is not None:
            return failed
        return self.outcomes.recalled(item, exchange)

    async def _route(self, capturer: Capturer) -> TaskResult:
        """A hash route (queued only by a browser crawl): admitted as a page, rendered from its
        document in the browser (:meth:`~archiver.pipeline.browsing.Browsing.load_route`)."""
        assert self.browsing is not None
        refused = await capturer.admit_route()
        if refused is not None:
            return self.outcomes.skipped(capturer.lease.item, refused.reason, unsent=True)
        return await self.browsing.load_route(capturer)

    async def _text_record(self, capturer: Capturer, text: str | None) -> None:
        """A listed page's text as a ``urn:text:`` record of the lease (``--text-records``)."""
        if text is not None and self.context.settings.text_records:
            url = capturer.lease.item.url
            await capturer.write(text_capture(self.parts.factory, url, text))

    @staticmethod
    async def _content(admitted: Admitted, exchange: Exchange) -> Exchange:
        """What links and the page entry are read from: a 304 has no body, so the earlier
        capture it stands for."""
        revalidation = admitted.revalidation
        if revalidation is not None and exchange.status == 304:
            return await original_exchange(exchange, revalidation)
        return exchange


__all__ = ["Pipeline"]
