"""One lease's captures: every request made for a lease is admitted and captured here, whoever
makes it: the pipeline for the leased URL, the browser for everything the page loads. So a
browser's capture and a static one obey the same rules, because they run the same code.

Admission, in order (:meth:`Capturer.admit_lease` for the leased URL, :meth:`Capturer.admit`
for a request made on its behalf):

1. exclusions and scope. The leased URL passed the scope when it was queued, so only
   ``--exclude``, the live ``ignores`` and its seed's ``exclude`` are checked again (a pattern
   given since it was queued, or on resume, skips it; the seed's rules are learned first:
   :mod:`archiver.pipeline.seeds`); a request made on its behalf is checked as discovery checks
   a link (the live ``ignores``, then the scope), except the leased URL itself;
2. budgets, for the leased URL: its page's media byte budget (:mod:`.mediabudget`: a
   segment of a page that has spent it is skipped), ``--max-pages``, ``--max-bytes`` and its
   seed's ``max_pages``: a page within budget reserves its place, given back when it is not
   captured as a page (the fetch failed, a bot challenge was served, a redirect); a seed past
   its budget has its pages skipped, the crawl goes on;
3. robots.txt (RFC 9309), fetched and archived inside this lease when the host's copy is
   missing (:meth:`Capturer.fetch_robots`, handed to :mod:`archiver.policy.robots`); the
   sitemaps it lists are queued;
4. the claim, in a crawl that recalls what it captured (a browser crawl,
   :mod:`archiver.pipeline.recall`): a GET of a URL the crawl captured already is answered from
   its record, one being captured right now by another worker or tab is waited for, anything
   else is claimed until its capture is written.

Capture: :meth:`Capturer.fetch` books the request with its host's politeness gate and performs
it; :meth:`Capturer.record` writes its records (:mod:`archiver.pipeline.recording`), keeps them in
the lease's list of captures (committed with the lease's outcome, so a resume knows what the
WARC files hold) and notes them for recall. Between the two, the pipeline looks for a bot
challenge (not archived); :meth:`Capturer.capture` does both for a request made on the lease's
behalf, reading in between the answer its maker is given (:class:`Answer`: the writer releases
the response's spool once written). The leased URL's fetch log line is written with its outcome
(:mod:`archiver.pipeline.outcomes`); a request made on its behalf is logged as it is written.

Politeness: the frontier booked one request to the lease's host when it handed the lease out.
The leased URL's fetch uses that booking unless a robots.txt fetch of this lease did; every
other request books its own (:meth:`archiver.frontier.base.Frontier.reserve`) and waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from archiver import urls
from archiver.dedup.captured import response_parts
from archiver.dedup.revalidation import Revalidation
from archiver.errors import FetchError, SessionEndedError
from archiver.frontier.base import Lease
from archiver.httphead import parse_status_line, start_line
from archiver.models import CrawlItem, Exchange, SkipReason, TaskResult, WrittenCapture
from archiver.pipeline.counters import Counted
from archiver.pipeline.discovery import Discovery
from archiver.pipeline.outcomes import Outcomes
from archiver.pipeline.parts import Parts, RunContext
from archiver.pipeline.recall import RECALLED_METHODS, Claim, Recall, Recalled
from archiver.pipeline.recording import Recorder
from archiver.pipeline.seeds import SeedRuns
from archiver.policy.robots import Verdict
from archiver.policy.sitemaps import is_sitemap
from archiver.warc.records import PendingCapture


@dataclass(frozen=True, slots=True)
class Request:
    """A request to capture: the URL as the crawl reached it (its hops say how) and what the
    fetcher sends for it (the fetcher adds its own fields: ``Cookie`` from the crawl's jar,
    ``Accept-Encoding``, the connection's)."""

    item: CrawlItem
    method: str = "GET"
    headers: Mapping[str, str] | None = None
    body: bytes | None = None
    #: fields added to the fetch log line of a capture made on the lease's behalf
    #: (``browser: true`` for a page's requests)
    log_fields: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Refused:
    """Not admitted, and why."""

    reason: SkipReason
    #: refused because robots.txt could not be fetched (RFC 9309 section 2.3.1.4: complete
    #: disallow until it can): the rules are unknown, so the URL failed rather than skipped
    robots_unreachable: bool = False


class Admitted:
    """A request admitted for capture, holding the claim on its URL (when the crawl recalls):
    whoever else asks for the URL waits until :meth:`release` (or the end of a ``with``)."""

    __slots__ = ("claim", "counts_as_page", "own", "request", "revalidation")

    def __init__(
        self, request: Request, claim: Claim | None, *, own: bool, counts_as_page: bool = False
    ) -> None:
        self.request = request
        self.claim = claim
        #: the leased URL itself (else a request made on the lease's behalf)
        self.own = own
        #: a page that reserved its place in ``--max-pages``
        self.counts_as_page = counts_as_page
        #: the validators of an earlier capture, when the fetch was conditional
        self.revalidation: Revalidation | None = None

    def release(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    def __enter__(self) -> Admitted:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


#: What an admission comes to: refused, answered from the crawl's records, or to be captured.
Admission = Refused | Recalled | Admitted


@dataclass(frozen=True, slots=True)
class Answer:
    """A response as its requester is given it: status, reason phrase and header fields as
    received, the payload with the transfer coding removed (content coding kept)."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    payload: bytes


@dataclass(frozen=True, slots=True)
class Captured:
    """A request captured on the lease's behalf: the exchange, where its records went, and its
    answer (None when the payload is over the limit asked for)."""

    exchange: Exchange
    written: WrittenCapture
    answer: Answer | None


class Budgets:
    """``--max-pages`` and ``--max-bytes`` for one run: pages reserve their place when their
    lease is admitted; :attr:`limit` says which budget was reached."""

    def __init__(self, context: RunContext) -> None:
        self._settings = context.settings
        self._stats = context.stats
        self._pages_reserved = 0
        #: set when a budget is reached: the crawl should stop
        self.limit: str | None = None

    def reserve(self, counts_as_page: bool) -> str | None:
        """Which budget this lease would exceed, if any; a page within budget reserves its
        place (:meth:`give_back` when it is not captured as a page)."""
        s = self._settings
        if counts_as_page and s.max_pages is not None:
            if self._pages_reserved >= s.max_pages:
                return f"max-pages of {s.max_pages} reached"
            self._pages_reserved += 1
        if s.max_bytes is not None and self._stats.bytes_received >= s.max_bytes:
            return f"max-bytes of {s.max_bytes} reached"
        return None

    def give_back(self, counts_as_page: bool) -> None:
        if counts_as_page and self._settings.max_pages is not None:
            self._pages_reserved -= 1


class Capturers:
    """What the capturers of one run share: its parts, its budgets, the recorder, the recall of
    what the crawl captured (a browser crawl). :meth:`for_lease` makes each lease's capturer."""

    def __init__(
        self,
        context: RunContext,
        parts: Parts,
        outcomes: Outcomes,
        discovery: Discovery,
        recall: Recall | None,
    ) -> None:
        self.context = context
        self.parts = parts
        self.outcomes = outcomes
        self.discovery = discovery
        self.recall = recall
        self.recorder = Recorder(context, parts)
        self.budgets = Budgets(context)
        #: the rules of each lease's seed, its page budget, its hosts' spacing
        self.seeds: SeedRuns = discovery.seeds
        #: the per-page media byte budget (--media-max-bytes), the one discovery reads
        self.media = discovery.media
        #: captures of robots.txt (and its redirects): not what a crawl is run for
        self.robots_captures = 0

    def for_lease(self, lease: Lease) -> Capturer:
        return Capturer(self, lease)

    async def robots_reports(self) -> None:
        """Log what robots.txt fetches found and queue the sitemaps they list."""
        robots, log = self.parts.robots, self.context.log
        assert robots is not None
        for report in robots.take_reports():
            log.info(
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
                sitemaps = self.parts.sitemaps.from_robots(report.url, report.sitemaps)
                await self.discovery.put(sitemaps)


class Capturer:
    """One lease's captures (see the module docstring): admits its requests, captures them, and
    owns the list of what was written for it."""

    def __init__(self, shared: Capturers, lease: Lease) -> None:
        self._shared = shared
        self._parts = shared.parts
        self.lease = lease
        #: the rules of the seed that judges the leased URL (known once it is admitted)
        self.rules = shared.seeds.table.default
        self._captures: list[WrittenCapture] = []
        #: what each capture added to the crawl's figures (screenshots and text add nothing)
        self._counted: list[Counted] = []
        #: what :meth:`_keep` added to the lease's seed's captures (taken back by withdraw)
        self._seed_captures = 0
        #: the frontier's booking of the lease's first request is still unused
        self._booked = True
        #: the leased URL, and the document of a leased hash route: admitted with the lease
        self._own_urls = {lease.item.url, urls.split_route(lease.item.url)[0]}
        #: the leased URL's own capture was recalled from an earlier try (it is in the archive)
        self.lease_recalled = False
        #: tasks writing a capture right now (robots.txt's, or a request's records): a task
        #: cancelled there would lose a capture the lease must commit, so whoever cancels the
        #: lease's requests lets these finish (``PageRequests.drain`` of the browser stage)
        self.writing: set[asyncio.Task[Any]] = set()

    @property
    def captures(self) -> tuple[WrittenCapture, ...]:
        """Every capture written for this lease so far (robots.txt included)."""
        return tuple(self._captures)

    # -- admission ----------------------------------------------------------------------

    async def admit_lease(self) -> Admission:
        """The leased URL: its seed's rules learned, exclusions again (the crawl's, the
        ignores, its seed's), budgets (the crawl's, its seed's), robots.txt, the claim."""
        shared, item = self._shared, self.lease.item
        self.rules = await shared.seeds.rules(item, self.lease.host)
        unwanted = self._parts.exclusions.check(item.url)
        if unwanted is not None:
            return Refused(unwanted)
        if self._parts.scope.seed_excluded(item):
            return Refused(SkipReason.EXCLUDED)
        if await shared.media.over(item):
            return Refused(SkipReason.MEDIA_BUDGET)
        counts_as_page = not item.is_requisite and not is_sitemap(item)
        budget = shared.budgets.reserve(counts_as_page)
        if budget is not None:
            shared.budgets.limit = budget
            return Refused(SkipReason.BUDGET)
        if counts_as_page and not shared.seeds.reserve_page(item.seed, self.rules):
            shared.budgets.give_back(counts_as_page)
            return Refused(SkipReason.SEED_BUDGET)
        if not await self._robots_allow(item):
            self._give_back_page(counts_as_page)
            return Refused(SkipReason.ROBOTS, robots_unreachable=self._robots_unreachable(item))
        request = Request(item, headers=referer_header(item))
        kept = self._parts.kept_requests.get(item.url)
        if kept is not None:  # a POST or PUT a replayed page made (archiver patch)
            request = Request(item, kept.method, kept.headers(request.headers), kept.body)
        found = await self._claim(request)
        if isinstance(found, Recalled):
            self.lease_recalled = True
            return found
        return Admitted(request, found, own=True, counts_as_page=counts_as_page)

    async def admit_route(self) -> Refused | None:
        """The leased URL is a hash route (``DOCUMENT#/ROUTE``, :func:`archiver.urls.is_route`):
        a page of its own, rendered from its document by in-page navigation. The exclusions
        again and the budgets as for any page, robots.txt on the document (the URL a request is
        made for); nothing is claimed: the route itself is never fetched, its document is, as
        one of the lease's requests (recalled when the crawl holds it)."""
        shared, item = self._shared, self.lease.item
        unwanted = self._parts.exclusions.check(item.url)
        if unwanted is not None:
            return Refused(unwanted)
        budget = shared.budgets.reserve(True)
        if budget is not None:
            shared.budgets.limit = budget
            return Refused(SkipReason.BUDGET)
        document = replace(item, url=urls.split_route(item.url)[0])
        if not await self._robots_allow(document):
            shared.budgets.give_back(True)
            return Refused(SkipReason.ROBOTS)
        return None

    async def admit(self, request: Request) -> Admission:
        """A request made on the lease's behalf: ignores and scope (the leased URL passed them
        already, and a leased route's document with it), robots.txt, the claim."""
        item = request.item
        if item.url not in self._own_urls:
            if self._parts.exclusions.ignored(item.url):
                return Refused(SkipReason.IGNORED)
            reason = self._parts.scope.check(item)
            if reason is not None:
                return Refused(reason)
            if not await self._robots_allow(item):
                return Refused(SkipReason.ROBOTS)
        found = await self._claim(request)
        if isinstance(found, Recalled):
            return found
        return Admitted(request, found, own=False)

    async def _claim(self, request: Request) -> Recalled | Claim | None:
        """The URL's capture recalled, or the claim on it; None in a crawl that does not
        recall (a static one) and for a method whose answer depends on its body."""
        recall = self._shared.recall
        if recall is None or request.method not in RECALLED_METHODS:
            return None
        return await recall.claim(request.item.url)

    async def _robots_allow(self, item: CrawlItem) -> bool:
        """robots.txt's verdict on ``item``, robots.txt fetched and archived in this lease."""
        robots = self._parts.robots
        if robots is None:
            return True
        with self._writing():
            allowed = await robots.allowed(item, self.fetch_robots)
            await self._shared.robots_reports()
        return allowed

    def _robots_unreachable(self, item: CrawlItem) -> bool:
        """Whether robots.txt refused ``item`` because it could not be fetched."""
        robots = self._parts.robots
        rules = robots.cached(item.url) if robots is not None else None
        return rules is not None and rules.verdict is Verdict.UNREACHABLE

    async def fetch_robots(self, url: str) -> Exchange:
        """Fetch and archive a robots.txt (or a hop of its redirects) in this lease. It uses
        the lease's booking, never books one: it is how the lease's first request begins."""
        exchange = await self._parts.fetcher.fetch(url)
        self._keep(*await self._shared.recorder.record(exchange))
        self._shared.robots_captures += 1
        self._booked = False
        return exchange

    # -- capture ------------------------------------------------------------------------

    async def fetch(self, admitted: Admitted) -> Exchange:
        """Book the request with its host's politeness gate and perform it; conditional when
        the leased URL has validators from an earlier crawl. Raises
        :class:`~archiver.errors.FetchError`, or :class:`~archiver.errors.SessionEndedError`
        when the response shows that the crawl's login session ended
        (:mod:`archiver.pipeline.session`: nothing of it is archived); a page's place in the
        budget is then given back."""
        request = admitted.request
        headers = request.headers
        if admitted.own:
            previous = self._parts.previous
            if previous is not None:
                admitted.revalidation = await previous.revalidation(request.item.url)
                if admitted.revalidation is not None:
                    headers = {**(headers or {}), **admitted.revalidation.headers}
        await self._book(admitted)
        try:
            exchange = await self._parts.fetcher.fetch(
                request.item.url, headers, method=request.method, body=request.body
            )
            if self._parts.session is not None:
                self._parts.session.judge(exchange)
        except (FetchError, SessionEndedError):
            self.not_recorded(admitted)
            raise
        return exchange

    async def _book(self, admitted: Admitted) -> None:
        if admitted.own and self._booked:
            self._booked = False
            return
        host = self.lease.host if admitted.own else urls.host_port(admitted.request.item.url)
        wait = self._parts.frontier.reserve(host)
        if wait > 0:
            await asyncio.sleep(wait)

    def not_recorded(self, admitted: Admitted) -> None:
        """The request's exchange is not archived (the fetch failed, a bot challenge): a page
        gives back its place in the budgets."""
        if admitted.own:
            self._give_back_page(admitted.counts_as_page)

    def _give_back_page(self, counts_as_page: bool) -> None:
        self._shared.budgets.give_back(counts_as_page)
        if counts_as_page:
            self._shared.seeds.give_back_page(self.lease.item.seed, self.rules)

    async def record(self, admitted: Admitted, exchange: Exchange) -> WrittenCapture:
        """Write the exchange's records (a revisit when the payload was stored before, a
        server-not-modified revisit for a 304 to a conditional request), keep them in the
        lease's captures and note them for recall; a request made on the lease's behalf is
        logged as captured."""
        with self._writing():
            written, counted = await self._shared.recorder.record(exchange, admitted.revalidation)
            self._keep(written, counted)
            await self._shared.media.spend(admitted.request.item, exchange)
            recall = self._shared.recall
            if admitted.claim is not None and recall is not None:
                recall.captured(admitted.request.item.url, written)
        if admitted.own:
            if 300 <= exchange.status < 400:
                self.not_recorded(admitted)  # a redirect hop is not a page
        else:
            request = admitted.request
            self._shared.outcomes.fetch_log(
                request.item, exchange, written, outcome="captured", **dict(request.log_fields)
            )
        return written

    async def capture(self, admitted: Admitted, *, answer_limit: int) -> Captured:
        """Fetch and record a request made on the lease's behalf, with the answer its maker
        is given (None when its payload is over ``answer_limit``). Raises
        :class:`~archiver.errors.FetchError`."""
        exchange = await self.fetch(admitted)
        with self._writing():
            answer = await read_answer(exchange, answer_limit)
            written = await self.record(admitted, exchange)
        return Captured(exchange, written, answer)

    async def write(self, capture: PendingCapture) -> WrittenCapture:
        """Write a capture the crawl made itself for this lease (a screenshot)."""
        with self._writing():
            written = await self._shared.recorder.write(capture)
            self._keep(written)
        return written

    def _keep(self, written: WrittenCapture, counted: Counted | None = None) -> None:
        self._captures.append(written)
        self._shared.context.stats.seed(self.lease.item.seed).captures += 1
        self._seed_captures += 1
        if counted is not None:
            self._counted.append(counted)

    def withdraw(self) -> None:
        """The lease is abandoned uncommitted (the login session ended): what its captures
        added to the crawl's figures is taken back, as the next run's resume cuts them from
        the WARC files (:mod:`archiver.run.resume`); its seed's count of captures too, which
        counted every record the lease kept (a screenshot's included). No later capture may
        be a revisit of a payload first stored by this lease (:mod:`.recording`)."""
        self._shared.recorder.withdrawn(self._captures)
        stats = self._shared.context.stats
        for counted in self._counted:
            stats.withdraw(counted)
        self._counted.clear()
        stats.seed(self.lease.item.seed).captures -= self._seed_captures
        self._seed_captures = 0

    def _writing(self) -> _Writing:
        return _Writing(self.writing)

    # -- the lease's end ------------------------------------------------------------------

    def with_captures(self, result: TaskResult) -> TaskResult:
        """The lease's outcome as the frontier commits it: with every capture written for it
        (a lease that wrote something sent a request, whatever its outcome says)."""
        captures = self.captures
        return TaskResult(
            result.outcome,
            captures=captures,
            status=result.status,
            reason=result.reason,
            retry_after=result.retry_after,
            unsent=result.unsent and not captures,
        )

    async def committed(self) -> None:
        """The frontier committed the lease: its WARC files may be sealed once no other
        lease's captures are pending in them, the digest index learns of the payloads it stored
        first, and recall's store learns of its captures."""
        captures = self._captures
        await self._shared.recorder.committed(captures)
        recall = self._shared.recall
        if recall is not None and captures:
            await recall.committed(captures)


class _Writing:
    """Marks the current task as writing a capture while inside (see :attr:`Capturer.writing`);
    a class rather than a generator: it runs for every capture."""

    __slots__ = ("_marked", "_task", "_tasks")

    def __init__(self, tasks: set[asyncio.Task[Any]]) -> None:
        self._tasks = tasks
        self._task: asyncio.Task[Any] | None = None
        self._marked = False

    def __enter__(self) -> None:
        task = self._task = asyncio.current_task()
        if task is not None and task not in self._tasks:
            self._tasks.add(task)
            self._marked = True

    def __exit__(self, *_: object) -> None:
        if self._marked:
            self._tasks.discard(self._task)


async def read_answer(exchange: Exchange, limit: int) -> Answer | None:
    """The answer to a request just fetched: status, fields as received, the payload with the
    transfer coding removed (RFC 9112 section 7). None when the payload is over ``limit``.
    Read before the exchange is recorded (the writer releases its spool)."""
    body = exchange.body
    if body is None or len(body) != exchange.payload_length:
        if exchange.payload_length > limit or exchange.response_length > 2 * limit:
            return None
        raw = await asyncio.to_thread(_raw, exchange)
        parts = response_parts(raw)
        if parts is None:
            return None
        body = parts[3]
    status_line = parse_status_line(start_line(exchange.response.head(512)))
    reason = status_line.reason.decode("latin-1").strip() if status_line else ""
    return Answer(exchange.status, reason, exchange.headers, body)


def _raw(exchange: Exchange) -> bytes:
    with exchange.response.open() as reader:
        return reader.read()


def referer_header(item: CrawlItem) -> dict[str, str] | None:
    """``Referer`` as a browser would send it: the page that linked here, unless that would
    leak an https URL to plain http (the default referrer policy's downgrade rule)."""
    via = item.via
    if via is None or (via.startswith("https:") and item.url.startswith("http:")):
        return None
    return {"Referer": via}


__all__ = [
    "Admission",
    "Admitted",
    "Answer",
    "Budgets",
    "Captured",
    "Capturer",
    "Capturers",
    "Refused",
    "Request",
    "read_answer",
    "referer_header",
]
