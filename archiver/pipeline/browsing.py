"""The browser in a crawl run: which pages it loads, how its requests are answered, what follows.

A page goes to the browser after its static capture (the pipeline fetched and recorded it as
any page): with ``--browser all`` every HTML page (2xx, not a page requisite), with ``auto`` a
page whose static HTML looks built by scripts (:func:`archiver.browser.needs_browser` gives the
reason, which is logged). The browser then asks for the page, and for everything the page
loads; :class:`PageRequests` hands each request to the capturer of the page's lease
(:mod:`archiver.pipeline.capture`), the code that captures the leased URLs themselves:

1. admission: the live ``ignores``, the scope (a request is a requisite of the page; a
   navigation of the page's own frame elsewhere is a link) and robots.txt, as for any URL the
   crawl reaches; a refusal fails the request in the page and is logged with its reason;
2. a GET the crawl captured already (this page's document included) is answered from its record
   (:mod:`archiver.pipeline.recall`), and one being captured by another tab or worker is waited for;
3. anything else is performed by the crawl's fetcher (the browser's method, header fields and
   body; the crawl's cookie jar and ``Accept-Encoding``; the SSRF guard; a booking with the
   host's politeness gate) and recorded byte for byte by the single writer, like any capture,
   into the lease of the page (so a resume knows about it); the browser is answered with the
   payload just received. The browser's cookie store and the jar are kept in step around it
   (:mod:`archiver.pipeline.cookiesync`): cookies the page's scripts set go with the request,
   and the response's cookies reach the browser from the jar, not from ``Set-Cookie``.

Once the page settled and its behaviours ran, the live DOM's links go to discovery (requisites
the browser already loaded are not queued again), the page is listed in ``pages.jsonl`` with
its DOM title, and each of ``--screenshots`` is stored as a ``resource`` record. A browser that
crashes or hangs costs the page one try: the lease is tried again later (the document is then
recalled, not fetched again) and, after ``--max-tries``, fails with reason ``browser``; its
static capture stays, and so do its static links.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from archiver import urls
from archiver.browser.detect import needs_browser
from archiver.browser.errors import BrowserError, BrowserUnavailableError, NavigationError
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.page import PageResult
from archiver.browser.screenshots import MEDIA_TYPES
from archiver.errors import BlockedAddressError, FetchError
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.links import HTML_TYPES, MAX_DECODED
from archiver.fetch.fetcher import relayed_fields
from archiver.models import CrawlItem, Exchange, Hop, TaskResult, WrittenCapture
from archiver.pipeline.behaviors import (
    behavior_children,
    behavior_fields,
    bounds_reached,
    count_behaviors,
)
from archiver.pipeline.capture import Admitted, Capturer, Refused, Request
from archiver.pipeline.cookiesync import without_set_cookie
from archiver.pipeline.counters import BrowserCounters
from archiver.pipeline.discovery import Discovery
from archiver.pipeline.outcomes import Outcomes
from archiver.pipeline.parts import BrowserParts, RunContext
from archiver.pipeline.recall import Recalled
from archiver.pipeline.recording import text_capture
from archiver.policy.sitemaps import is_sitemap
from archiver.qa.options import FULL_SCREENSHOT_PREFIX, TEXT_PREFIX
from archiver.timefmt import utcnow
from archiver.warc.records import RecordFactory

if TYPE_CHECKING:
    from archiver.pipeline.proving import Proving

#: The reason logged for a page loaded in the browser on its replay's evidence (``--qa``)
#: starts so (:mod:`archiver.pipeline.proving`).
REPLAY_EVIDENCE = "replay evidence: "

#: The reason logged for a page loaded because every page is (``--browser all``).
ALL_PAGES = "--browser all"
#: What a screenshot's resource record is named after (Browsertrix Crawler's convention), by
#: kind (:mod:`archiver.browser.screenshots`).
SCREENSHOT_PREFIXES = {
    "view": "urn:screenshot:",
    "full": FULL_SCREENSHOT_PREFIX,  # the name archiver qa reads its reference under
    "thumbnail": "urn:thumbnail:",
}
#: What a page's request adds to its fetch log line.
_BY_BROWSER = (("browser", True),)


class Browsing:
    """Loads the pages that need a browser, for the pipeline of one run."""

    def __init__(
        self,
        context: RunContext,
        browser: BrowserParts,
        discovery: Discovery,
        outcomes: Outcomes,
        factory: RecordFactory,
    ) -> None:
        self.context = context
        self.browser = browser
        self.discovery = discovery
        self.outcomes = outcomes
        self.factory = factory
        if context.stats.browser is None:
            context.stats.browser = BrowserCounters()
        self.counters: BrowserCounters = context.stats.browser
        #: ``--qa``: each page checked right after its capture
        self.proving: Proving | None = None
        if browser.checks is not None:
            from archiver.pipeline.proving import Proving  # noqa: PLC0415 - only for --qa

            self.proving = Proving(self, browser.checks)

    def wants(self, item: CrawlItem, ex: Exchange, mode: str) -> str | None:
        """Why this response's page is to be loaded in the browser, or None; ``mode`` is the
        browser mode of the item's seed (``off``, ``all``, ``auto``: ``--browser`` unless the
        seed gives its own). ``off`` while the stage runs: it is there for another seed, or
        only to replay pages for ``--qa``."""
        if mode == "off" or not is_page(item, ex) or ex.body is None:
            return None
        if mode == "all":
            return ALL_PAGES
        try:
            html = decode_content(ex.body, ex.header("Content-Encoding"), limit=MAX_DECODED)
        except ContentDecodingError:
            return None
        return needs_browser(html, ex.content_type)

    async def page_captured(
        self, capturer: Capturer, ex: Exchange, written: WrittenCapture | None, why: str | None
    ) -> TaskResult | None:
        """The lease's response was just captured: loaded in the browser when ``why`` says
        so (:meth:`load`), then, with ``--qa``, the page checked and what it lacks captured
        (:mod:`archiver.pipeline.proving`). None when the lease's outcome is the capture's."""
        if why is not None:
            failed = await self.load(capturer, ex, written, why)
            if failed is not None:
                return failed  # retried later (then checked), or failed
        if self.proving is not None and is_page(capturer.lease.item, ex):
            await self.proving.prove(capturer, ex, written, why)
        return None

    async def load(
        self,
        capturer: Capturer,
        ex: Exchange,
        written: WrittenCapture | None,
        why: str,
        *,
        listed: bool = False,
    ) -> TaskResult | None:
        """Load the lease's page in the browser, every request it makes captured by the
        lease's ``capturer``, and queue what its live DOM links to. None when the lease's
        outcome is the static capture's; a retry or failure when the browser failed.

        ``listed``: the page was listed and its static links queued already (a page kept
        static, sent to the browser by its replay's evidence): it is not listed again, and a
        browser that fails leaves the static capture as the lease's outcome (logged)."""
        item = capturer.lease.item
        requests = PageRequests(self, capturer)
        try:
            result = await self.browser.pool.load(item.url, requests)
        except (BrowserError, BrowserUnavailableError) as exc:
            await requests.drain()
            if listed:
                self.counters.failed += 1
                self.context.log.warning("browser-failed", url=item.url, why=why, error=str(exc))
                return None
            return await self._failed(capturer, ex, written, exc)
        except NavigationError as exc:
            await requests.drain()
            self.context.log.warning("browser-navigation", url=item.url, error=str(exc))
            if not listed:
                await self.static_links(capturer, ex)
            return None
        except BaseException:
            await requests.drain()
            raise
        await requests.drain()
        if self.browser.cookies is not None:
            await self.browser.cookies.sync()  # what the page's last scripts set
        self.counters.pages += 1
        self.counters.by_reason[why_kind(why)] += 1
        count_behaviors(self.counters, result)
        screenshots = await self._screenshots(capturer, result)
        if not listed:
            settings = self.context.settings
            text = result.text[: settings.text_max] if settings.text else None
            self.discovery.record_page(ex.target_uri, ex.date, result.title, text)
            await self._text_record(capturer, text)
        await self._discover(item, result, requests)
        self._log(item, why, result, requests, screenshots)
        return None

    async def load_route(self, capturer: Capturer) -> TaskResult:
        """The lease is a hash route (``DOCUMENT#/ROUTE``): its document loaded in a tab (from
        the crawl's records when captured already: it is not fetched again), the route followed
        by in-page navigation, the page read, listed (title and text) and its links queued as
        any browser page's. The document's requests are the lease's."""
        item = capturer.lease.item
        document, route = urls.split_route(item.url)
        requests = PageRequests(self, capturer)
        try:
            result = await self.browser.pool.load(document, requests, route=route)
        except (BrowserError, BrowserUnavailableError, NavigationError) as exc:
            await requests.drain()
            failed = self.outcomes.route_failed(item, exc)
            if failed.outcome.value == "retry":
                self.counters.retried += 1
            else:
                self.counters.failed += 1
            return failed
        except BaseException:
            await requests.drain()
            raise
        await requests.drain()
        if self.browser.cookies is not None:
            await self.browser.cookies.sync()  # what the route's scripts set
        self.counters.pages += 1
        self.counters.routes += 1
        self.counters.by_reason["route"] += 1
        count_behaviors(self.counters, result)
        screenshots = await self._screenshots(capturer, result)
        status, date = requests.document or (None, utcnow())
        # a route's entry always carries its text: it is what tells the routes of one
        # document apart (other pages' with --text)
        text = result.text[: self.context.settings.text_max]
        self.discovery.record_page(item.url, date, result.title, text)
        await self._text_record(capturer, text)
        await self._discover(item, result, requests)
        self._log(item, "route", result, requests, screenshots)
        if self.proving is not None:  # --qa: a route is a page, checked as it is captured
            await self.proving.prove_route(capturer, item.url, date)
        return self.outcomes.routed(item, status)

    async def static_links(self, capturer: Capturer, ex: Exchange) -> None:
        """What the static HTML leads to, for a page the browser did not read; the page listed
        from it (with its text and text record, as a static page's)."""
        item = capturer.lease.item
        text = await self.discovery.discover(item, ex, requisites=True, list_page=True)
        await self._text_record(capturer, text)

    async def _text_record(self, capturer: Capturer, text: str | None) -> None:
        """The page's text as a ``urn:text:`` record of the lease (``--text-records``)."""
        if text is not None and self.context.settings.text_records:
            await capturer.write(text_capture(self.factory, capturer.lease.item.url, text))

    async def _failed(
        self, capturer: Capturer, ex: Exchange, written: WrittenCapture | None, exc: Exception
    ) -> TaskResult:
        item = capturer.lease.item
        result = self.outcomes.browser_failed(item, ex, written, exc)
        if result.outcome.value == "retry":
            self.counters.retried += 1
        else:
            self.counters.failed += 1
            # the page stays archived as it was served: what its HTML names is captured too
            await self.static_links(capturer, ex)
        return result

    async def _screenshots(
        self, capturer: Capturer, result: PageResult
    ) -> list[tuple[str, WrittenCapture]]:
        """Each screenshot of the page as a ``resource`` record of the lease: by kind, where
        it was written; with ``--qa`` the page's text too (``urn:text:URL``): with the whole
        page's screenshot (which ``--qa`` takes), what ``archiver qa`` compares the replay
        with. A hash route's ``#`` is escaped in the records' URIs."""
        if self.browser.references:
            uri = urls.page_record_uri(TEXT_PREFIX, capturer.lease.item.url)
            text = result.text.encode("utf-8", "replace")
            await capturer.write(self.factory.resource(uri, "text/plain; charset=utf-8", text))
        written = []
        for kind, picture in result.screenshots.items():
            uri = screenshot_uri(capturer.lease.item.url, kind)
            capture = self.factory.resource(uri, MEDIA_TYPES[kind], picture)
            written.append((kind, await capturer.write(capture)))
            self.counters.screenshots += 1
        return written

    async def _discover(self, item: CrawlItem, result: PageResult, requests: PageRequests) -> None:
        """The live DOM's links; requisites the browser loaded are captured already."""
        children = [item.child(url, Hop.LINK) for url in result.links.pages]
        children += [  # where the page tried to go: followed as links, the page kept as it was
            item.child(url, Hop.LINK) for url in map(_normal, result.navigations) if url
        ]
        children += [
            item.child(url, Hop.EMBED)
            for url in result.links.requisites
            if url not in requests.answered
        ]
        final = _normal(result.final_url)
        if final is not None and final != item.url:
            children.append(item.child(final, Hop.LINK))  # a script moved the page
        children += behavior_children(item, result, requests.answered, urls.route_url)
        children += [item.child(url, Hop.LINK) for url in result.routes]
        if children:
            await self.discovery.put(children)

    def _log(
        self,
        item: CrawlItem,
        why: str,
        result: PageResult,
        requests: PageRequests,
        screenshots: list[tuple[str, WrittenCapture]],
    ) -> None:
        event: dict[str, object] = {
            "url": item.url,
            "why": why,
            "final_url": result.final_url,
            "title": result.title,
            "requests": result.requests,
            "from_records": requests.recalled,
            "fetched": requests.fetched,
            "refused": requests.refused,
            "links": len(result.links.pages),
            "navigations": list(result.navigations[:10]),
            "load_event": result.load_event,
            "network_quiet": result.network_quiet,
            "duration": round(result.duration, 3),
        }
        event.update(behavior_fields(result))
        if result.undelivered:
            event["undelivered"] = [list(pair) for pair in result.undelivered[:10]]
        shots = [
            {
                "kind": kind,
                "uri": record.target_uri,
                "warc": record.filename,
                "offset": record.offset,
                "length": record.length,
            }
            for kind, written in screenshots
            if (record := written.primary) is not None
        ]
        if shots:
            event["screenshots"] = shots
        self.context.log.info("browser-page", **event)
        for bound in bounds_reached(result):
            self.context.log.warning("behavior-bounds", url=item.url, **bound)


@dataclass
class PageRequests:
    """Answers the requests of one page loaded in the browser (a
    :class:`~archiver.browser.exchange.RequestHandler`; see the module docstring): each is
    admitted and captured by the capturer of the page's lease."""

    stage: Browsing
    capturer: Capturer
    #: URLs answered, fetched or from records: the DOM's requisites among them are not queued
    answered: set[str] = field(default_factory=set)
    recalled: int = 0
    fetched: int = 0
    refused: int = 0
    #: (status, capture time) of the page's own document as answered (its last redirect hop)
    document: tuple[int, datetime] | None = None
    _tasks: set[asyncio.Task[BrowserResponse | Refusal]] = field(default_factory=set)

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        """Answer in a task of its own: the interception cancels its callers when the page is
        done, but a capture once begun (robots.txt's, or the request's own recording) must
        finish, so that the lease commits what was written; :meth:`drain` waits for those."""
        task = asyncio.create_task(self._answer(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(task)

    async def _answer(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.stage.counters.requests += 1
        url = _normal(request.url)
        if url is None:
            return self._refuse(request.url, "invalid-url")
        page = self.capturer.lease.item
        wanted = Request(
            page.child(url, _hop(request)),
            request.method,
            relayed_fields(request.headers),
            request.body,
            log_fields=_BY_BROWSER,
        )
        admission = await self.capturer.admit(wanted)
        if isinstance(admission, Refused):
            return self._refuse(url, admission.reason.value)
        if isinstance(admission, Recalled):
            if request.is_main_frame:
                self.document = (admission.response.status, admission.exchange().date)
            return self._recalled(url, admission)
        with admission:
            cookies = self.stage.browser.cookies
            if cookies is not None:
                await cookies.sync()  # what the page's scripts set goes with the request
            return await self._capture(request, url, admission)

    def _refuse(self, url: str, reason: str) -> Refusal:
        self.refused += 1
        self.stage.counters.refused[reason] += 1
        page = self.capturer.lease.item.url
        self.stage.context.log.info("browser-refused", url=url, page=page, reason=reason)
        return Refusal(reason)

    def _recalled(self, url: str, found: Recalled) -> BrowserResponse | Refusal:
        stored = found.response
        if stored.payload is None:
            return self._refuse(url, "too-large-for-the-browser")
        self.answered.add(url)
        self.recalled += 1
        self.stage.counters.from_records += 1
        return BrowserResponse(
            stored.status, self._headers(stored.headers), stored.payload, stored.reason
        )

    async def _capture(
        self, request: BrowserRequest, url: str, admitted: Admitted
    ) -> BrowserResponse | Refusal:
        if not request.body_complete:
            return self._refuse(url, "request-body-unavailable")
        try:
            captured = await self.capturer.capture(
                admitted, answer_limit=self.stage.browser.max_body
            )
        except BlockedAddressError:
            return self._refuse(url, "blocked-address")
        except FetchError as exc:
            return self._refuse(url, exc.reason.value)
        self.answered.add(url)
        self.fetched += 1
        if request.is_main_frame:
            self.document = (captured.exchange.status, captured.exchange.date)
        self.stage.counters.fetched += 1
        cookies = self.stage.browser.cookies
        if cookies is not None and captured.exchange.header("Set-Cookie") is not None:
            await cookies.sync()  # the browser holds the response's cookies before its answer
        answer = captured.answer
        if answer is None:
            return self._refuse(url, "too-large-for-the-browser")
        return BrowserResponse(
            answer.status, self._headers(answer.headers), answer.payload, answer.reason
        )

    def _headers(self, headers: Sequence[tuple[str, str]]) -> Sequence[tuple[str, str]]:
        """The answer's header fields; without ``Set-Cookie`` when the browser's cookies are
        kept in step with the jar (:mod:`archiver.pipeline.cookiesync`)."""
        if self.stage.browser.cookies is None:
            return headers
        return without_set_cookie(headers)

    async def drain(self) -> None:
        """The page is done: requests not answered yet are cancelled (nothing of them was
        written), captures being written are finished (:attr:`Capturer.writing`)."""
        writing = self.capturer.writing
        while self._tasks:
            for task in list(self._tasks):
                if task not in writing:
                    task.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.gather(*self._tasks, return_exceptions=True)


def screenshot_uri(url: str, kind: str = "view") -> str:
    """A screenshot's record URI (``urn:screenshot:URL``, ``urn:screenshot-full:URL``,
    ``urn:thumbnail:URL``); a hash route's ``#`` is escaped, so that no WARC target carries a
    fragment."""
    return urls.page_record_uri(SCREENSHOT_PREFIXES[kind], url)


def is_page(item: CrawlItem, ex: Exchange) -> bool:
    """Whether a response is a page (listed in ``pages.jsonl``; what the browser loads and
    ``--qa`` checks): HTML with a 2xx status, reached as a link, not a requisite nor a
    sitemap."""
    if item.is_requisite or is_sitemap(item) or not 200 <= ex.status < 300:
        return False
    return ex.content_type in HTML_TYPES and ex.body is not None


def why_kind(why: str) -> str:
    """The rule behind a reason to load a page in the browser, for counting (the reason itself
    names the element or the sizes measured)."""
    if why == ALL_PAGES:
        return "all"
    if why.startswith(REPLAY_EVIDENCE):
        return "replay evidence"
    if why.startswith("empty application root"):
        return "empty application root"
    if why.endswith("script(s)"):
        return "little text beside scripts"
    if why.endswith("link(s) to hash routes"):
        return "links to hash routes"
    return why


def _hop(request: BrowserRequest) -> Hop:
    """A navigation of the page's own frame is a link; everything else the page loads (frames
    included, as the static extractor counts them) is a requisite."""
    return Hop.LINK if request.is_main_frame else Hop.EMBED


def _normal(url: str) -> str | None:
    try:
        return urls.normalize_url(url)
    except urls.InvalidURLError:
        return None


__all__ = [
    "REPLAY_EVIDENCE",
    "SCREENSHOT_PREFIXES",
    "Browsing",
    "PageRequests",
    "is_page",
    "screenshot_uri",
]
