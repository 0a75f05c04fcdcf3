"""Each page checked right after it is captured (``crawl --qa``), and what its replay lacks
captured in its own lease, so that the crawl ends proven.

The check is ``archiver qa``'s (:class:`archiver.qa.check.ArchiveReplay`): the page loaded in
the crawl's Chromium with every request answered from the archive only, looked up as pywb looks
it up, scrolled and settled, links clicked in the page. The archive is what the crawl has written
so far (:class:`archiver.qa.journals.JournalIndex` follows the writers' journals: the lines
``index.cdxj`` will be merged from), so a page is checked before the crawl ends.

For one page, inside its lease:

1. a page kept static has its requisites captured first, as a browser would load them: those
   its HTML names, and those its stylesheets and its frames' documents name in turn
   (:func:`archiver.extract.links.extract`), each through the lease's capturer (a URL captured
   already is recalled, not fetched again), so that the check judges the page as a reader's
   first load would find it, not as the crawl's queue happens to stand;
2. the page is replayed and checked; with ``--browser auto``, a page the static rule kept
   static whose replay lacks URLs or shows markedly less text than its HTML
   (:func:`archiver.qa.evidence.replay_evidence`) is loaded in the browser now, the reason
   logged with it, and checked again;
3. each miss is captured as a requisite of the page through the lease's capturer (admitted:
   ignores, scope, robots.txt, the claim; captured: politeness, the fetcher's SSRF guard,
   records, dedup), a POST or PUT with the body the page sent (:attr:`archiver.qa.check.Miss.body`);
   then the page is checked again, at most ``--qa-rounds`` checks in all; a round that
   captures nothing new ends the rounds;
4. what the last check still finds and no round tried is queued as a requisite of the page for
   the crawl to capture in a lease of its own (a follow-up; in a crawl of several processes,
   in the shared frontier);
5. the page's line is added to ``qa.jsonl`` (``archiver qa``'s line, with what the rounds did:
   ``found``, ``patched``, ``not_patched``, ``queued``, ``capture`` and ``browser_why``) and
   counted (:class:`archiver.pipeline.counters.QaCounters`).

A hash route the browser rendered as a page of its own (``DOCUMENT#/ROUTE``,
:meth:`archiver.pipeline.browsing.Browsing.load_route`) is checked in its own lease the same
way, from step 3 (a browser capture; its document's requisites were its document's lease's).

The captures a check makes belong to the page's lease: committed with its outcome, so a resumed
crawl knows them, and a lease cut short by a stop is processed again on resume, its page checked
again (its new line replaces the old one in the totals).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from archiver import urls
from archiver.errors import BlockedAddressError, FetchError
from archiver.extract import links
from archiver.extract.decoding import ContentDecodingError
from archiver.extract.links import CSS_TYPES, HTML_TYPES, MAX_DECODED
from archiver.extract.text import page_text
from archiver.models import CrawlItem, Exchange, Hop, WrittenCapture
from archiver.pipeline.browsing import REPLAY_EVIDENCE, Browsing
from archiver.pipeline.capture import Capturer, Refused, Request, referer_header
from archiver.pipeline.counters import QaCounters
from archiver.pipeline.parts import CheckParts
from archiver.pipeline.recall import Recalled
from archiver.qa.archive import page_timestamp
from archiver.qa.check import ArchiveReplay, Miss, PageCheck
from archiver.qa.evidence import replay_evidence
from archiver.qa.options import Page, QaOptions, page_options
from archiver.qa.run import QA_LINES, append_line, page_line, reference_of
from archiver.timefmt import warc_date

#: Requests a check makes at once for one page (each still books its host's politeness).
AT_ONCE = 4
#: How deep requisites are followed before a static page's check: the page, its stylesheets,
#: the stylesheets those import.
REQUISITE_DEPTH = 3
#: Requisites whose own requisites are followed: stylesheets, and frames' documents.
NAMING_TYPES = CSS_TYPES | HTML_TYPES
#: What a capture made for a check adds to its fetch log line.
_BY_CHECK = (("qa", True),)


@dataclass
class Proof:
    """What the rounds of one page's check did."""

    capture: str  #: ``static`` or ``browser``: how the page was captured in the end
    browser_why: str | None
    rounds: int = 0
    found: dict[tuple[str, str], Miss] = field(default_factory=dict)
    tried: set[tuple[str, str]] = field(default_factory=set)
    patched: list[dict[str, Any]] = field(default_factory=list)
    not_patched: dict[tuple[str, str], str] = field(default_factory=dict)
    queued: list[str] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """What the rounds add to the page's ``qa.jsonl`` line."""
        return {
            "checked": "crawl",
            "capture": self.capture,
            "browser_why": self.browser_why,
            "rounds": self.rounds,
            "found": [{"method": m, "url": u} for m, u in self.found],
            "patched": self.patched,
            "not_patched": [
                {"method": m, "url": u, "reason": why} for (m, u), why in self.not_patched.items()
            ],
            "queued": self.queued,
        }


class Proving:
    """Checks each page of a run right after its capture (see the module docstring)."""

    def __init__(self, stage: Browsing, parts: CheckParts) -> None:
        self.stage = stage
        self.parts = parts
        stats = stage.context.stats
        if stats.qa is None:
            stats.qa = QaCounters()
        self.counters: QaCounters = stats.qa
        settings = stage.context.settings
        options = QaOptions(
            page_timeout=settings.page_timeout,
            follow_links=parts.follow_links,
            chromium=settings.chromium,
        )
        self.replay = ArchiveReplay(
            stage.browser.pool, parts.archive, page_options(options), parts.follow_links
        )
        self.lines = parts.crawl_dir / QA_LINES

    async def prove(
        self, capturer: Capturer, ex: Exchange, written: WrittenCapture | None, why: str | None
    ) -> None:
        """Check the lease's page (``ex``: its capture; ``why``: why the browser loaded it,
        None when it stayed static), capture what it lacks, check again; write its line."""
        page = Page(ex.target_uri, warc_date(ex.date))
        proof = Proof("static" if why is None else "browser", why)
        if why is None:
            await self._requisites(capturer, ex)
        await self._rounds(capturer, page, proof, ex, written)

    async def prove_route(self, capturer: Capturer, url: str, date: datetime) -> None:
        """Check the lease's hash route (``DOCUMENT#/ROUTE``, a page of its own rendered by the
        browser from its document captured at ``date``), capture what it lacks, check again;
        write its line. A route is a browser capture: its replay is no evidence to weigh, and
        its document's requisites were captured by the document's lease."""
        await self._rounds(capturer, Page(url, warc_date(date)), Proof("browser", "route"))

    async def _rounds(
        self,
        capturer: Capturer,
        page: Page,
        proof: Proof,
        ex: Exchange | None = None,
        written: WrittenCapture | None = None,
    ) -> None:
        """The checks of one page and the captures between them (``ex``: the page's own
        capture, which a page kept static is loaded in the browser from on its replay's
        evidence; None for a route)."""
        at = page_timestamp(page.ts)
        rounds = self.stage.context.settings.qa_rounds
        check = await self._check(page.url, at, proof)
        while True:
            if ex is not None and proof.capture == "static" and capturer.rules.browser == "auto":
                evidence = replay_evidence(check, _html_text(ex))
                if evidence is not None:
                    proof.capture, proof.browser_why = "browser", REPLAY_EVIDENCE + evidence
                    await self.stage.load(capturer, ex, written, proof.browser_why, listed=True)
                    if proof.rounds < rounds:
                        check = await self._check(page.url, at, proof)
                        continue
            fresh = [miss for miss in check.misses if (miss.method, miss.url) not in proof.tried]
            if not fresh or proof.rounds >= rounds:
                break
            if not await self._patch(capturer, fresh, proof):
                break  # nothing new in the archive: a check would show the same
            check = await self._check(page.url, at, proof)
        await self._leave(capturer, check, proof)
        await self._write(page, at, check, proof)

    async def _check(self, url: str, at: str, proof: Proof) -> PageCheck:
        """One replay of the page over what the crawl has written until now."""
        await asyncio.to_thread(self.parts.archive.refresh)
        check = await self.replay.check(url, at)
        proof.rounds += 1
        for miss in check.misses:
            proof.found.setdefault((miss.method, miss.url), miss)
        return check

    # -- captures made for the check ---------------------------------------------------------

    async def _requisites(self, capturer: Capturer, ex: Exchange) -> None:
        """The requisites a static page's HTML names, and those its stylesheets name (see the
        module docstring), captured in the lease."""
        page = capturer.lease.item
        seen = {page.url}
        body = Body(ex.body or b"", ex.content_type, ex.header("Content-Encoding"))
        level = [page.child(url, Hop.EMBED) for url in body.requisites(page.url)]
        for _depth in range(REQUISITE_DEPTH):
            level = [item for item in level if item.url not in seen]
            if not level:
                return
            seen.update(item.url for item in level)
            fetched = await _at_once(self._requisite(capturer, item) for item in level)
            level = [
                child.child(url, Hop.EMBED)
                for child, style in zip(level, fetched, strict=True)
                if style is not None
                for url in style.requisites(child.url)
            ]

    async def _requisite(self, capturer: Capturer, item: CrawlItem) -> Body | None:
        """One requisite captured (or recalled: captured already); its body when it names
        requisites of its own (a stylesheet, a frame's document), else None."""
        request = Request(item, headers=referer_header(item), log_fields=_BY_CHECK)
        admission = await capturer.admit(request)
        if isinstance(admission, Refused):
            return None
        if isinstance(admission, Recalled):
            stored = admission.response
            content_type = stored.header("Content-Type") or ""
            payload, encoding = stored.payload, stored.header("Content-Encoding")
        else:
            with admission:
                try:
                    captured = await capturer.capture(admission, answer_limit=MAX_DECODED)
                except FetchError:
                    return None
            exchange, answer = captured.exchange, captured.answer
            content_type, encoding = exchange.content_type, exchange.header("Content-Encoding")
            payload = answer.payload if answer is not None else None
        media_type = content_type.split(";", 1)[0].strip().lower()
        if payload is None or media_type not in NAMING_TYPES:
            return None
        return Body(payload, media_type, encoding)

    async def _patch(self, capturer: Capturer, misses: list[Miss], proof: Proof) -> bool:
        """Capture the misses as requisites of the page; True when any is in the archive now."""
        outcomes = await _at_once(self._capture_miss(capturer, miss, proof) for miss in misses)
        return any(outcomes)

    async def _capture_miss(self, capturer: Capturer, miss: Miss, proof: Proof) -> bool:
        key = (miss.method, miss.url)
        proof.tried.add(key)
        why = miss.not_requested()
        url = _normal(miss.url)
        if why is None and url is None:
            why = "not a URL the crawl can fetch"
        if why is not None or url is None:
            proof.not_patched[key] = why or ""
            return False
        item = capturer.lease.item.child(url, Hop.EMBED)
        headers = referer_header(item) or {}
        if miss.content_type is not None:
            headers["Content-Type"] = miss.content_type
        request = Request(item, miss.method, headers, miss.body, log_fields=_BY_CHECK)
        admission = await capturer.admit(request)
        if isinstance(admission, Refused):
            proof.not_patched[key] = f"refused: {admission.reason.value}"
            return False
        if isinstance(admission, Recalled):
            return True  # captured by another lease since the check
        with admission:
            try:
                captured = await capturer.capture(admission, answer_limit=0)
            except BlockedAddressError:
                proof.not_patched[key] = "refused: blocked-address"
                return False
            except FetchError as exc:
                proof.not_patched[key] = f"the fetch failed: {exc.reason.value}"
                return False
        status = captured.exchange.status
        proof.patched.append({"method": miss.method, "url": miss.url, "status": status})
        return True

    async def _leave(self, capturer: Capturer, check: PageCheck, proof: Proof) -> None:
        """What the last check found and no round tried: a GET is queued for the crawl (a
        follow-up lease captures it), anything else is listed as not patched."""
        children = []
        for miss in check.misses:
            key = (miss.method, miss.url)
            if key in proof.tried:
                continue
            url = _normal(miss.url)
            if miss.method == "GET" and url is not None:
                if url not in proof.queued:
                    proof.queued.append(url)
                    children.append(capturer.lease.item.child(url, Hop.EMBED))
            else:
                proof.not_patched[key] = f"found by the last of {proof.rounds} checks"
        if children:
            await self.stage.discovery.put(children)

    # -- the page's line ---------------------------------------------------------------------

    async def _write(self, page: Page, at: str, check: PageCheck, proof: Proof) -> None:
        archive = self.parts.archive
        await asyncio.to_thread(archive.refresh)  # the page's text and screenshot records
        reference = await reference_of(page, archive, None)
        titled = Page(page.url, page.ts, check.result.title if check.result else None)

        def write() -> dict[str, Any]:
            line = page_line(titled, check, reference, self.parts.crawl_dir, "archive")
            line.update(proof.fields())
            append_line(self.lines, line)
            return line

        line = await asyncio.to_thread(write)
        counters = self.counters
        counters.checked += 1
        counters.by_status[str(line["status"])] += 1
        counters.misses_found += len(proof.found)
        counters.misses_patched += len(proof.patched)
        self.stage.context.log.info(
            "qa-page",
            url=page.url,
            status=line["status"],
            rounds=proof.rounds,
            capture=proof.capture,
            browser_why=proof.browser_why,
            found=len(proof.found),
            patched=len(proof.patched),
            missing=len(check.misses),
            queued=len(proof.queued),
        )


async def _at_once(calls: Iterable[Any]) -> list[Any]:
    """Run the coroutines, :data:`AT_ONCE` at a time; their results in order."""
    slots = asyncio.Semaphore(AT_ONCE)

    async def one(call: Any) -> Any:
        async with slots:
            return await call

    return list(await asyncio.gather(*(one(call) for call in calls)))


@dataclass(frozen=True, slots=True)
class Body:
    """A response's payload as received (content coding kept), to read requisites from."""

    payload: bytes
    content_type: str
    encoding: str | None

    def requisites(self, url: str) -> list[str]:
        """The requisites an HTML page or a stylesheet names."""
        try:
            found = links.extract(self.payload, url, self.content_type, self.encoding)
        except ContentDecodingError:
            return []
        return list(found.requisites)


def _html_text(ex: Exchange) -> str:
    try:
        return page_text(ex.body or b"", ex.header("Content-Encoding"), limit=MAX_DECODED)
    except ContentDecodingError:
        return ""


def _normal(url: str) -> str | None:
    try:
        return urls.normalize_url(url)
    except urls.InvalidURLError:
        return None


__all__ = ["Proof", "Proving"]
