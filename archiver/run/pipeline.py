"""What happens to one leased URL: robots, budgets, fetch, records, write, discovery.

The crawler (:mod:`archiver.run.crawler`) runs the workers and the lifecycle; each worker hands its
lease to :meth:`Pipeline.process` and reports the returned outcome to the frontier. Failures of
one URL (network, protocol, bad content) become outcomes here and never escape; a write failure
or a bug does escape, for the crawler to stop on.

Steps, in order:

1. budgets (``--max-pages``, ``--max-bytes``): a budget reached sets :attr:`Pipeline.limit`;
2. robots.txt (fetched and archived inside this lease when the host's copy is missing);
3. the fetch, conditional when an earlier crawl has validators for the URL; a bot challenge
   served instead of the page (:mod:`archiver.policy.challenge`) is not archived but retried later;
4. records: a revisit when the payload was stored before (in this crawl or an earlier one), a
   server-not-modified revisit for a 304, else response + request; written by the writer;
5. discovery: the redirect ``Location`` or the page's links, scope-checked and queued (before
   the lease's outcome, so a resumed crawl never loses children of a done URL);
6. the outcome: done, retry later (transient failure, 5xx, 429) or failed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import json
from collections.abc import Awaitable, Callable
from typing import IO, Any, Protocol

import orjson

from archiver import urls
from archiver.config.settings import Settings
from archiver.dedup.digests import DigestIndex
from archiver.dedup.previous import PreviousCrawls, Revalidation
from archiver.errors import BlockedAddressError, FetchError
from archiver.extract import links
from archiver.fetch.fetcher import Fetcher
from archiver.frontier.base import Frontier, Lease
from archiver.models import (
    CrawlItem,
    Exchange,
    FailReason,
    Hop,
    Outcome,
    SkipReason,
    TaskResult,
    WrittenCapture,
)
from archiver.policy import challenge
from archiver.policy.politeness import parse_retry_after
from archiver.policy.robots import RobotsReport, RobotsStats
from archiver.policy.scope import Scope
from archiver.policy.sitemaps import SitemapPolicy, is_sitemap
from archiver.run.stats import CrawlStats
from archiver.warc import records
from archiver.warc.records import Original, PendingCapture, RecordFactory, warc_date
from archiver.warc.writer import Writer

#: failures worth another try later (RFC 9110 5xx, connection trouble)
TRANSIENT = {
    FailReason.CONNECT,
    FailReason.TIMEOUT,
    FailReason.DISCONNECT,
    FailReason.DNS,
}
RETRY_BASE_SECONDS = 2.0
RECENT_LIMIT = 200_000
HTML_TYPES = ("text/html", "application/xhtml+xml")


#: The name of the worker task running the current lease ("worker-3"), set once by each worker:
#: the fetch log's ``worker`` field (crawl.log's thread column). Cheaper than asking asyncio
#: for the current task on every fetch.
WORKER_NAME: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "archiver_worker", default=None
)

#: Fetch a URL and archive the exchange as part of the current lease (used for robots.txt).
ArchiveFetch = Callable[[str], Awaitable[Exchange]]


class RobotsChecker(Protocol):
    """What the crawler asks of robots.txt handling (see :mod:`archiver.policy.robots`)."""

    async def allowed(self, item: CrawlItem, fetch: ArchiveFetch) -> bool: ...

    def take_reports(self) -> list[RobotsReport]: ...

    def statistics(self) -> RobotsStats: ...


class Pipeline:
    """Processes leases for the workers of one crawl run; holds the per-run caches."""

    def __init__(
        self,
        *,
        settings: Settings,
        stats: CrawlStats,
        log: Any,
        frontier: Frontier,
        fetcher: Fetcher,
        writer: Writer,
        scope: Scope,
        robots: RobotsChecker | None,
        sitemaps: SitemapPolicy,
        dedup: DigestIndex,
        previous: PreviousCrawls | None,
        factory: RecordFactory,
        pages_file: IO[str] | None,
    ) -> None:
        self.settings = settings
        self.stats = stats
        self.log = log
        self.frontier = frontier
        self.fetcher = fetcher
        self.writer = writer
        self.scope = scope
        self.robots = robots
        self.sitemaps = sitemaps
        self.dedup = dedup
        self.previous = previous
        self.factory = factory
        self._pages_file = pages_file
        #: set when a --max-pages / --max-bytes budget is reached: the crawl should stop
        self.limit: str | None = None
        #: per WARC file: captures written whose lease outcome is not yet handed to the frontier
        self.uncommitted: collections.Counter[str] = collections.Counter()
        self._pages_reserved = 0
        #: URLs recently queued, and (URL, hop) recently rejected by scope: repeats skip work
        self._recent_queued: set[str] = set()
        self._recent_rejected: set[tuple[str, str]] = set()
        #: payload digests whose first copy is being written right now
        self._dedup_in_flight: dict[str, asyncio.Future[Original | None]] = {}
        self._challenged_hosts: set[str] = set()  # warned about once each
        #: captures of robots.txt (and its redirects): not what a crawl is run for
        self.robots_captures = 0

    def committed(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to was handed to the frontier."""
        for capture in captures:
            self.uncommitted[capture.filename] -= 1

    async def process(self, lease: Lease, captures: list[WrittenCapture]) -> TaskResult:
        """Robots, budgets, fetch, records, write, discovery; the lease's outcome. Every
        capture written for this lease (robots.txt included) is appended to ``captures``."""
        item = lease.item
        s = self.settings
        counts_as_page = not item.is_requisite and not is_sitemap(item)
        if counts_as_page and s.max_pages is not None:
            if self._pages_reserved >= s.max_pages:
                self.limit = f"max-pages of {s.max_pages} reached"
                return self._skipped(item, SkipReason.BUDGET)
            self._pages_reserved += 1
        if s.max_bytes is not None and self.stats.bytes_received >= s.max_bytes:
            self.limit = f"max-bytes of {s.max_bytes} reached"
            return self._skipped(item, SkipReason.BUDGET)
        if self.robots is not None:
            allowed = await self.robots.allowed(
                item, lambda url: self._fetch_archived(url, captures)
            )
            await self._robots_reports()
            if not allowed:
                if counts_as_page and s.max_pages is not None:
                    self._pages_reserved -= 1
                return self._skipped(item, SkipReason.ROBOTS)
            if captures:  # robots.txt was fetched in this lease: the page is one more request
                assert self.frontier is not None
                wait = self.frontier.reserve(lease.host)
                if wait > 0:
                    await asyncio.sleep(wait)
        assert self.fetcher is not None
        previous = self.previous
        revalidation = await previous.revalidation(item.url) if previous is not None else None
        headers = referer_header(item)
        if revalidation is not None:
            headers = {**(headers or {}), **revalidation.headers}
        try:
            exchange = await self.fetcher.fetch(item.url, headers)
        except FetchError as exc:
            if counts_as_page and s.max_pages is not None:
                self._pages_reserved -= 1
            return self._failed(item, exc)
        if s.challenge_pages == "retry" and (provider := self._challenge(exchange)):
            if counts_as_page and s.max_pages is not None:
                self._pages_reserved -= 1
            return self._challenged(item, exchange, provider)
        written = await self._archive(exchange, revalidation)
        captures.append(written)
        if counts_as_page and s.max_pages is not None and 300 <= exchange.status < 400:
            self._pages_reserved -= 1  # a redirect hop is not a page
        content = exchange
        if previous is not None and revalidation is not None and exchange.status == 304:
            # a 304 has no body: links and the page entry come from the earlier capture
            content = await previous.original_exchange(exchange, revalidation)
        await self._discover(item, content)
        return self._outcome(item, exchange, written)

    async def _robots_reports(self) -> None:
        """Log what robots.txt fetches found and queue the sitemaps they list."""
        assert self.robots is not None
        for report in self.robots.take_reports():
            self.log.info(
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
                await self.put(self.sitemaps.from_robots(report.url, report.sitemaps))

    async def _fetch_archived(self, url: str, captures: list[WrittenCapture]) -> Exchange:
        """Fetch and archive ``url`` as part of the current lease (robots.txt, sitemaps)."""
        assert self.fetcher is not None
        exchange = await self.fetcher.fetch(url)
        captures.append(await self._archive(exchange))
        self.robots_captures += 1
        return exchange

    async def _archive(
        self, ex: Exchange, revalidation: Revalidation | None = None
    ) -> WrittenCapture:
        """Records for the exchange (a revisit when the payload was already stored), written.

        An identical payload being written right now by another worker is waited for, so two
        copies fetched at the same moment still become one response and one revisit.
        """
        assert self.writer is not None
        capture: PendingCapture | None = None
        if revalidation is not None and ex.status == 304 and self.previous is not None:
            # a 304 to a conditional request: a server-not-modified revisit (issue 6)
            capture = self.previous.not_modified(self.factory, ex, revalidation)
        digest = ex.payload_digest
        dedupable = capture is None and (
            self.settings.dedup
            and ex.status == 200
            and ex.truncated is None
            and ex.payload_length >= max(self.settings.dedup_min_size, 1)
        )
        pending: asyncio.Future[Original | None] | None = None
        if dedupable:
            in_flight = self._dedup_in_flight.get(digest)
            original = await asyncio.shield(in_flight) if in_flight else None
            if original is None:
                original = await self.dedup.lookup(digest)
            if original is not None:
                capture = self.factory.revisit(ex, original)
                self.stats.dedup_bytes_saved += ex.response_length
            else:
                pending = asyncio.get_running_loop().create_future()
                self._dedup_in_flight[digest] = pending
        if capture is None:
            capture = self.factory.capture(ex)
        revisit = capture.records[0].record_type == "revisit"
        try:
            written = await self.writer.write(capture)
            # not sealed (renamed from .open) until the frontier committed this capture
            self.uncommitted[written.filename] += 1
            primary = written.primary
            if pending is not None and primary is not None:
                original = Original(primary.record_id, primary.target_uri, primary.date)
                await self.dedup.add(digest, original)
                pending.set_result(original)
        finally:
            if pending is not None:
                if not pending.done():
                    pending.set_result(None)  # the write failed: waiters store their own copy
                self._dedup_in_flight.pop(digest, None)
        self.stats.bytes_written = self.writer.stats.bytes
        self.stats.capture(
            url=ex.target_uri,
            host=urls.host_port(ex.target_uri),
            status=ex.status,
            mime=records.cdx_mime(ex.header("Content-Type")) or None,
            size=ex.response_length,
            revisit=revisit,
            is_page=ex.content_type in HTML_TYPES and 200 <= ex.status < 300,
            truncated=ex.truncated.value if ex.truncated else None,
        )
        return written

    async def _discover(self, item: CrawlItem, ex: Exchange) -> None:
        """Queue the redirect target or the links of the response."""
        children: list[CrawlItem] = []
        if 300 <= ex.status < 400:
            location = ex.header("Location")
            if location:
                target = urls.resolve(item.url, location)
                # counted like the skips of Pipeline.put: summary.json's "skips" says why
                # every skip-logged URL was not fetched
                if target is None:
                    self.stats.skip(SkipReason.SCHEME)
                    self._skip_log(item.url, location, SkipReason.SCHEME)
                elif item.redirects_left <= 0:
                    self.stats.skip(SkipReason.REDIRECT_LIMIT)
                    self._skip_log(item.url, target, SkipReason.REDIRECT_LIMIT)
                else:
                    children.append(item.child(target, Hop.REDIRECT))
        elif is_sitemap(item):
            listed = self.sitemaps.children(item, ex)
            if listed.error is not None:
                self.log.warning("sitemap-error", url=item.url, error=listed.error)
            if listed.sitemap is not None:
                self.log.info(
                    "sitemap",
                    url=item.url,
                    kind=listed.sitemap.kind,
                    urls=len(listed.sitemap.urls),
                    skipped=listed.sitemap.skipped,
                    truncated=listed.sitemap.truncated,
                )
            children.extend(listed.items)
        elif 200 <= ex.status < 300 and ex.body is not None:
            found = self._extract(item, ex)
            if found is not None:
                if ex.content_type in HTML_TYPES and not item.is_requisite:
                    self._record_page(ex, found.title)
                queued, rejected = self._recent_queued, self._recent_rejected
                for url in found.pages:
                    if url not in queued and (url, Hop.LINK) not in rejected:
                        children.append(item.child(url, Hop.LINK))
                for url in found.requisites:
                    if url not in queued and (url, Hop.EMBED) not in rejected:
                        children.append(item.child(url, Hop.EMBED))
        if children:
            await self.put(children)

    def _extract(self, item: CrawlItem, ex: Exchange) -> links.Links | None:
        if ex.content_type not in (*HTML_TYPES, "text/css"):
            return None
        try:
            found = links.extract(
                ex.body or b"",
                item.url,
                ex.content_type,
                ex.header("Content-Encoding"),
                max_links=self.settings.max_links_per_page,
            )
        except links.ContentDecodingError as exc:
            self.log.warning("extract-error", url=item.url, error=str(exc))
            return None
        if found.truncated:
            self.log.warning(
                "links-truncated", url=item.url, limit=self.settings.max_links_per_page
            )
        return found

    def _record_page(self, ex: Exchange, title: str | None) -> None:
        if self._pages_file is None:
            return
        entry = {"url": ex.target_uri, "ts": warc_date(ex.date), "title": title}
        try:
            line = orjson.dumps(entry).decode("utf-8")
        except TypeError:  # a lone surrogate in a title: orjson refuses it, escaped JSON keeps it
            line = json.dumps(entry)
        self._pages_file.write(line + "\n")

    async def put(self, items: list[CrawlItem]) -> None:
        """Scope-check discovered items and queue the accepted ones (the frontier drops the
        ones it has seen). Remembers recent outcomes so the navigation links repeated on every
        page cost a dict lookup, not a scope check and a frontier call (bounded memory)."""
        assert self.frontier is not None and self.scope is not None
        accepted = []
        queued, rejected = self._recent_queued, self._recent_rejected
        for child in items:
            reason = self.scope.check(child)
            if reason is None:
                self.scope.accepted(child)  # counted at once: the next link sees the budget
                accepted.append(child)
                continue
            self.stats.skip(reason)
            self._skip_log(child.via, child.url, reason)
            if reason not in (SkipReason.DEPTH, SkipReason.HOST_BUDGET):
                # depth and budgets can change for the same URL found elsewhere: not cached
                rejected.add((child.url, Hop.EMBED if child.is_requisite else Hop.LINK))
        if accepted:
            new = {item.url for item in await self.frontier.put_many(accepted)}
            for child in accepted:
                if child.url not in new:
                    self.scope.unaccepted(child)  # seen before: not queued, uses no budget
            queued.update(child.url for child in accepted)
        if len(queued) > RECENT_LIMIT:
            queued.clear()
        if len(rejected) > RECENT_LIMIT:
            rejected.clear()

    # -- outcomes ---------------------------------------------------------------------------

    def _skip_log(self, via: str | None, url: str, reason: SkipReason) -> None:
        self.log.info("skip", url=url, via=via, reason=reason.value)

    def _skipped(self, item: CrawlItem, reason: SkipReason) -> TaskResult:
        self.stats.skip(reason)
        self._skip_log(item.via, item.url, reason)
        return TaskResult(Outcome.SKIPPED, reason=reason.value)

    def _retry_delay(self, item: CrawlItem) -> float:
        cap = self.settings.max_retry_after or 600.0
        return float(min(RETRY_BASE_SECONDS * 2**item.tries, cap))

    def _failed(self, item: CrawlItem, exc: FetchError) -> TaskResult:
        if isinstance(exc, BlockedAddressError):
            # the SSRF guard's refusal, not a failure of the host: skipped, never retried, and
            # the host is not paused for it
            self.stats.skip(SkipReason.BLOCKED_ADDRESS)
            self.log.info(
                "skip",
                url=item.url,
                via=item.via,
                reason=SkipReason.BLOCKED_ADDRESS.value,
                error=str(exc),
            )
            return TaskResult(Outcome.SKIPPED, reason=SkipReason.BLOCKED_ADDRESS.value)
        reason = exc.reason
        retry = reason in TRANSIENT and item.tries + 1 < self.settings.max_tries
        self._fetch_log(
            item, None, outcome="retry" if retry else "failed", reason=reason, error=str(exc)
        )
        if retry:
            self.stats.retries += 1
            return TaskResult(
                Outcome.RETRY, reason=reason.value, retry_after=self._retry_delay(item)
            )
        self.stats.failure(reason.value)
        return TaskResult(Outcome.FAILED, reason=reason.value)

    @staticmethod
    def _challenge(ex: Exchange) -> str | None:
        """The provider of the bot challenge this response is, if it is one."""
        body = ex.body if ex.status in (403, 503) else None  # only those look at the body
        if body:
            with contextlib.suppress(links.ContentDecodingError):  # else: the bytes as sent
                body = links.decode_content(
                    body, ex.header("Content-Encoding"), limit=challenge.BODY_PREFIX
                )
        return challenge.detect(ex.status, ex.header, body)

    def _challenged(self, item: CrawlItem, ex: Exchange, provider: str) -> TaskResult:
        """A challenge instead of the page: nothing archived, the host paused (every process
        of a shared crawl), the URL tried again later until ``max_tries``; the fetch log keeps
        what was served."""
        ex.response.close()
        host = urls.host_port(item.url)
        if host not in self._challenged_hosts:
            self._challenged_hosts.add(host)
            self.log.warning(
                "challenge",
                host=host,
                provider=provider,
                url=item.url,
                status=ex.status,
                note="a bot challenge instead of the page: not archived, retried later "
                "(--challenge-pages keep archives it)",
            )
        retry = item.tries + 1 < self.settings.max_tries
        reason = FailReason.CHALLENGE.value
        retry_after = parse_retry_after(ex.header("Retry-After"))
        delay = retry_after if retry_after is not None else self._retry_delay(item)
        self._fetch_log(
            item, ex, outcome="retry" if retry else "failed", reason=reason, challenge=provider
        )
        if retry:
            self.stats.retries += 1
            return TaskResult(Outcome.RETRY, status=ex.status, retry_after=delay, reason=reason)
        self.stats.failure(reason)
        return TaskResult(Outcome.FAILED, status=ex.status, retry_after=delay, reason=reason)

    def _outcome(self, item: CrawlItem, ex: Exchange, written: WrittenCapture) -> TaskResult:
        status = ex.status
        retry_after = parse_retry_after(ex.header("Retry-After"))
        if status >= 500 or status == 429:  # noqa: SIM102 - the retry rule reads better apart
            if item.tries + 1 < self.settings.max_tries:
                self.stats.retries += 1
                delay = retry_after if retry_after is not None else self._retry_delay(item)
                self._fetch_log(item, ex, written, outcome="retry")
                return TaskResult(
                    Outcome.RETRY,
                    status=status,
                    retry_after=delay,
                    reason=FailReason.THROTTLED.value
                    if status == 429
                    else FailReason.SERVER_ERROR.value,
                )
        self._fetch_log(item, ex, written, outcome="captured")
        return TaskResult(Outcome.DONE, status=status, retry_after=retry_after)

    def _fetch_log(
        self,
        item: CrawlItem,
        ex: Exchange | None,
        written: WrittenCapture | None = None,
        **extra: Any,
    ) -> None:
        event: dict[str, Any] = {
            "url": item.url,
            "depth": item.depth,
            "hops": item.hops,
            "via": item.via,
            "retries": item.tries,
        }
        if ex is not None:
            event.update(
                status=ex.status,
                size=ex.response_length,
                payload_size=ex.payload_length,
                fetch_began=warc_date(ex.date),
                mime=records.cdx_mime(ex.header("Content-Type")) or None,
                duration=round(ex.duration, 4),
                digest=ex.payload_digest,
                ip=ex.ip_address,
            )
            if ex.truncated is not None:
                event["truncated"] = ex.truncated.value
            if ex.protocol_error:
                event["protocol_error"] = ex.protocol_error
        if written is not None:
            primary = written.primary
            event.update(
                warc=written.filename,
                offset=written.start,
                record=primary.record_type if primary else None,
            )
        worker = WORKER_NAME.get()
        if worker is not None:
            event["worker"] = worker  # "worker-3": crawl.log's thread field "#003"
        event.update(extra)
        self.log.info("fetch", **event)


def referer_header(item: CrawlItem) -> dict[str, str] | None:
    """``Referer`` as a browser would send it: the page that linked here, unless that would
    leak an https URL to plain http (the default referrer policy's downgrade rule)."""
    via = item.via
    if via is None or (via.startswith("https:") and item.url.startswith("http:")):
        return None
    return {"Referer": via}
