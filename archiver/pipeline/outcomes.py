"""What the end of a lease becomes: done, retried later or failed, and the fetch log line saying so.

The retry rules, in one place: connection trouble and timeouts (:data:`TRANSIENT`), a 5xx, a 429
(RFC 9110 section 15.6, RFC 6585 section 4) and a bot challenge are tried again later, up to
``max_tries``, after the server's ``Retry-After`` (RFC 9110 section 10.2.3) or an exponential
back-off capped at ``max_retry_after``; everything else is final. Every fetch writes one ``fetch``
event to crawl.log.jsonl (the Heritrix crawl.log line is made from it).
"""

from __future__ import annotations

import contextvars
from typing import Any

from archiver import urls
from archiver.errors import BlockedAddressError, FetchError
from archiver.extract.links import HTML_TYPES
from archiver.models import (
    CrawlItem,
    Exchange,
    FailReason,
    Outcome,
    SkipReason,
    TaskResult,
    WrittenCapture,
)
from archiver.pipeline.parts import RunContext
from archiver.policy.politeness import parse_retry_after
from archiver.timefmt import warc_date
from archiver.warc import records

#: failures worth another try later (RFC 9110 5xx, connection trouble)
TRANSIENT = {
    FailReason.CONNECT,
    FailReason.PROXY,
    FailReason.TIMEOUT,
    FailReason.DISCONNECT,
    FailReason.DNS,
}
RETRY_BASE_SECONDS = 2.0

#: The name of the worker task running the current lease ("worker-3"), set once by each worker:
#: the fetch log's ``worker`` field (crawl.log's thread column). Cheaper than asking asyncio
#: for the current task on every fetch.
WORKER_NAME: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "archiver_worker", default=None
)


class Outcomes:
    """Turns what happened to a lease into its :class:`TaskResult`, counted and logged."""

    def __init__(self, context: RunContext) -> None:
        self._settings = context.settings
        self._stats = context.stats
        self._log = context.log
        self._info_event = context.info_event
        self._challenged_hosts: set[str] = set()  # warned about once each

    def skip_log(self, via: str | None, url: str, reason: SkipReason) -> None:
        self._info_event("skip", {"url": url, "via": via, "reason": reason.value})

    def skipped(self, item: CrawlItem, reason: SkipReason, *, unsent: bool = False) -> TaskResult:
        """The lease is skipped; ``unsent`` when no request at all was made for it (its
        host's politeness booking is then given back)."""
        self._stats.skip(reason)
        self._stats.seed(item.seed).skipped += 1
        self.skip_log(item.via, item.url, reason)
        return TaskResult(Outcome.SKIPPED, reason=reason.value, unsent=unsent)

    def robots_unreachable(self, item: CrawlItem, *, unsent: bool) -> TaskResult:
        """robots.txt could not be fetched (RFC 9309 section 2.3.1.4: complete disallow until
        it can): the URL failed, so a crawl that reached nothing else reports a failure."""
        reason = FailReason.ROBOTS_UNREACHABLE
        self.fetch_log(item, None, outcome="failed", reason=reason)
        self._stats.failure(reason.value)
        return TaskResult(Outcome.FAILED, reason=reason.value, unsent=unsent)

    def _retry_delay(self, item: CrawlItem) -> float:
        cap = self._settings.max_retry_after or 600.0
        return float(min(RETRY_BASE_SECONDS * 2**item.tries, cap))

    def failed(self, item: CrawlItem, exc: FetchError) -> TaskResult:
        if isinstance(exc, BlockedAddressError):
            # the SSRF guard's refusal, not a failure of the host: skipped, never retried, and
            # the host is not paused for it
            self._stats.skip(SkipReason.BLOCKED_ADDRESS)
            self._stats.seed(item.seed).skipped += 1
            self._log.info(
                "skip",
                url=item.url,
                via=item.via,
                reason=SkipReason.BLOCKED_ADDRESS.value,
                error=str(exc),
            )
            return TaskResult(Outcome.SKIPPED, reason=SkipReason.BLOCKED_ADDRESS.value)
        reason = exc.reason
        retry = reason in TRANSIENT and item.tries + 1 < self._settings.max_tries
        self.fetch_log(
            item, None, outcome="retry" if retry else "failed", reason=reason, error=str(exc)
        )
        if retry:
            self._stats.retries += 1
            return TaskResult(
                Outcome.RETRY, reason=reason.value, retry_after=self._retry_delay(item)
            )
        self._stats.failure(reason.value)
        self._stats.seed(item.seed).failed += 1
        return TaskResult(Outcome.FAILED, reason=reason.value)

    def challenged(self, item: CrawlItem, ex: Exchange, provider: str) -> TaskResult:
        """A challenge instead of the page: nothing archived, the host paused (every process
        of a shared crawl), the URL tried again later until ``max_tries``; the fetch log keeps
        what was served."""
        ex.response.close()
        host = urls.host_port(item.url)
        if host not in self._challenged_hosts:
            self._challenged_hosts.add(host)
            self._log.warning(
                "challenge",
                host=host,
                provider=provider,
                url=item.url,
                status=ex.status,
                note="a bot challenge instead of the page: not archived, retried later "
                "(--challenge-pages keep archives it)",
            )
        retry = item.tries + 1 < self._settings.max_tries
        reason = FailReason.CHALLENGE.value
        retry_after = parse_retry_after(ex.header("Retry-After"))
        delay = retry_after if retry_after is not None else self._retry_delay(item)
        self.fetch_log(
            item, ex, outcome="retry" if retry else "failed", reason=reason, challenge=provider
        )
        if retry:
            self._stats.retries += 1
            return TaskResult(Outcome.RETRY, status=ex.status, retry_after=delay, reason=reason)
        self._stats.failure(reason)
        self._stats.seed(item.seed).failed += 1
        return TaskResult(Outcome.FAILED, status=ex.status, retry_after=delay, reason=reason)

    def browser_failed(
        self, item: CrawlItem, ex: Exchange, written: WrittenCapture | None, exc: Exception
    ) -> TaskResult:
        """The page was captured but the browser could not load it (crashed, hung, timed out):
        tried again later, until ``max_tries``, then failed with reason ``browser``."""
        retry = item.tries + 1 < self._settings.max_tries
        reason = FailReason.BROWSER.value
        self._log.warning("browser-error", url=item.url, error=str(exc), retry=retry)
        self.fetch_log(item, ex, written, outcome="retry" if retry else "failed", reason=reason)
        if retry:
            self._stats.retries += 1
            return TaskResult(
                Outcome.RETRY,
                status=ex.status,
                reason=reason,
                retry_after=self._retry_delay(item),
            )
        self._stats.failure(reason)
        self._stats.seed(item.seed).failed += 1
        return TaskResult(Outcome.FAILED, status=ex.status, reason=reason)

    def recalled(self, item: CrawlItem, ex: Exchange) -> TaskResult:
        """The URL was captured already, by a browser's request: nothing fetched again."""
        self.fetch_log(item, ex, outcome="recalled")
        self._stats.seed(item.seed).done += 1
        return TaskResult(Outcome.DONE, status=ex.status, unsent=True)

    def routed(self, item: CrawlItem, status: int | None) -> TaskResult:
        """A hash route was rendered from its document (``status``: the document's): nothing of
        its own was fetched; the document's requests were logged as they were captured."""
        self.fetch_log(item, None, outcome="route", status=status)
        return TaskResult(Outcome.DONE, status=status, unsent=True)

    def route_failed(self, item: CrawlItem, exc: Exception) -> TaskResult:
        """The browser could not render a hash route (crashed, hung, timed out, or its document
        did not load): tried again later until ``max_tries``, then failed with reason
        ``browser``."""
        retry = item.tries + 1 < self._settings.max_tries
        reason = FailReason.BROWSER.value
        self._log.warning("browser-error", url=item.url, error=str(exc), retry=retry)
        self.fetch_log(item, None, outcome="retry" if retry else "failed", reason=reason)
        if retry:
            self._stats.retries += 1
            return TaskResult(Outcome.RETRY, reason=reason, retry_after=self._retry_delay(item))
        self._stats.failure(reason)
        return TaskResult(Outcome.FAILED, reason=reason)

    def captured(self, item: CrawlItem, ex: Exchange, written: WrittenCapture) -> TaskResult:
        status = ex.status
        retry_after = parse_retry_after(ex.header("Retry-After"))
        if status >= 500 or status == 429:  # noqa: SIM102 - the retry rule reads better apart
            if item.tries + 1 < self._settings.max_tries:
                self._stats.retries += 1
                delay = retry_after if retry_after is not None else self._retry_delay(item)
                self.fetch_log(item, ex, written, outcome="retry")
                return TaskResult(
                    Outcome.RETRY,
                    status=status,
                    retry_after=delay,
                    reason=FailReason.THROTTLED.value
                    if status == 429
                    else FailReason.SERVER_ERROR.value,
                )
        if 400 <= status < 500 and item.found_by:
            self._stats.client_error_of(item.found_by)
        self.fetch_log(item, ex, written, outcome="captured")
        counts = self._stats.seed(item.seed)
        counts.done += 1
        if 200 <= status < 300 and ex.content_type in HTML_TYPES and not item.is_requisite:
            counts.pages += 1
        return TaskResult(Outcome.DONE, status=status, retry_after=retry_after)

    def fetch_log(
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
        if item.found_by:
            event["found_by"] = item.found_by  # the extractor that found the URL
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
        self._info_event("fetch", event)


__all__ = ["RETRY_BASE_SECONDS", "TRANSIENT", "WORKER_NAME", "Outcomes"]
