"""Discovery: what a response leads to, scope-checked and queued.

A redirect's ``Location`` (RFC 9110 section 10.2.2), a sitemap's entries, or the links of a
document become children of the lease's item; scope decides which are crawled, and the frontier
drops the ones it has seen. A document's links are read by the extractor its media type calls
for (:mod:`archiver.extract.dispatch`: HTML, CSS, feeds, scripts, JSON, HLS and DASH playlists
here, PDFs in a child process) plus its ``Link`` header fields (RFC 8288); each child carries the
name of the extractor that found it (``found_by``: the fetch log's field, and the summary's
per-extractor count of URLs queued). Each HTML page is also listed in ``pages.jsonl`` (the
WACZ's page list), with its text when ``--text`` asks (:mod:`archiver.extract.text`). Children
are queued before the lease's outcome is handed to the frontier, so a resumed crawl never loses
the children of a done URL.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from archiver import urls
from archiver.config.settings import Settings
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.dispatch import (
    ExtractOptions,
    document_kind,
    extract_document,
    header_links,
)
from archiver.extract.found import Extractor, Links, link_limit, merge
from archiver.extract.isolated import read_pdf
from archiver.extract.links import HTML_TYPES
from archiver.extract.media import MediaLimits
from archiver.extract.pdf import PdfLimits
from archiver.extract.text import page_text
from archiver.models import CrawlItem, Exchange, Hop, SkipReason
from archiver.pipeline.mediabudget import MediaBudget
from archiver.pipeline.outcomes import Outcomes
from archiver.pipeline.parts import Parts, RunContext
from archiver.pipeline.seeds import SeedRuns
from archiver.policy.sitemaps import is_sitemap

#: URLs remembered as recently queued or rejected (each set is cleared when it grows past this)
RECENT_LIMIT = 200_000


class Discovery:
    """Queues what responses lead to; remembers recent outcomes so that the navigation links
    repeated on every page cost a set lookup, not a scope check and a frontier call."""

    def __init__(
        self,
        context: RunContext,
        parts: Parts,
        outcomes: Outcomes,
        seeds: SeedRuns,
        media: MediaBudget,
    ) -> None:
        self._settings = context.settings
        self._stats = context.stats
        self._log = context.log
        self._frontier = parts.frontier
        self._scope = parts.scope
        self._sitemaps = parts.sitemaps
        self._pages = parts.pages
        self._outcomes = outcomes
        #: the per-seed part of admission (a seed's hosts spaced as its URLs are queued)
        self.seeds = seeds
        #: URLs recently queued, and (URL, hop, seed) recently rejected by scope: repeats skip
        #: work (the seed too: a URL on no seed's site is judged by the rules of the seed of
        #: the page that led to it, which another seed's may not share)
        self._recent_queued: set[str] = set()
        self._recent_rejected: set[tuple[str, str, int]] = set()
        self._exclusions = parts.exclusions
        self._uncached = {SkipReason.DEPTH, SkipReason.HOST_BUDGET}
        self._ignores_version = parts.exclusions.version
        self._options = extract_options(self._settings)
        #: the per-page media byte budget: what a playlist of a page may still list
        self.media = media
        self._pdf_limits = PdfLimits(
            max_pages=self._settings.pdf_max_pages,
            seconds=self._settings.pdf_timeout or PDF_NO_TIMEOUT,
        )

    async def discover(
        self, item: CrawlItem, ex: Exchange, *, requisites: bool = True, list_page: bool = True
    ) -> str | None:
        """Queue the redirect target, the sitemap's entries or the links of the response. A
        page that a browser is about to load has its requisites loaded by the browser and is
        listed with its DOM's title: then ``requisites`` and ``list_page`` are False. Returns
        the text the page was listed with (``--text``), for its record."""
        children, text = await self.children(item, ex, requisites=requisites, list_page=list_page)
        if children:
            await self.put(children)
        return text

    async def children(
        self, item: CrawlItem, ex: Exchange, *, requisites: bool = True, list_page: bool = True
    ) -> tuple[list[CrawlItem], str | None]:
        """What :meth:`discover` queues, not queued yet (a caller that drops some first: the
        yt-dlp stage, for what it captured already), and the page's text."""
        if 300 <= ex.status < 400:
            return self._redirect(item, ex), None
        if is_sitemap(item):
            return self._sitemap_entries(item, ex), None
        if 200 <= ex.status < 300 and ex.body is not None:
            return await self._links(item, ex, requisites=requisites, list_page=list_page)
        return [], None

    def _redirect(self, item: CrawlItem, ex: Exchange) -> list[CrawlItem]:
        location = ex.header("Location")
        if not location:
            return []
        target = urls.resolve(item.url, location)
        # counted like the skips of put(): summary.json's "skips" says why every skip-logged
        # URL was not fetched
        if target is None:
            self._stats.skip(SkipReason.SCHEME)
            self._outcomes.skip_log(item.url, location, SkipReason.SCHEME)
            return []
        if item.redirects_left <= 0:
            self._stats.skip(SkipReason.REDIRECT_LIMIT)
            self._outcomes.skip_log(item.url, target, SkipReason.REDIRECT_LIMIT)
            return []
        return [item.child(target, Hop.REDIRECT)]

    def _sitemap_entries(self, item: CrawlItem, ex: Exchange) -> list[CrawlItem]:
        listed = self._sitemaps.children(item, ex)
        if listed.error is not None:
            self._log.warning("sitemap-error", url=item.url, error=listed.error)
        if listed.sitemap is not None:
            self._log.info(
                "sitemap",
                url=item.url,
                kind=listed.sitemap.kind,
                urls=len(listed.sitemap.urls),
                skipped=listed.sitemap.skipped,
                older=listed.sitemap.older,  # left out by --sitemap-from
                truncated=listed.sitemap.truncated,
            )
        return list(listed.items)

    async def _links(
        self, item: CrawlItem, ex: Exchange, *, requisites: bool, list_page: bool
    ) -> tuple[list[CrawlItem], str | None]:
        """The page's links and requisites not queued or rejected recently; the page listed
        (and its text, with ``--text``)."""
        found = await self._extract(item, ex)
        if found is None:
            return [], None
        text = None
        if list_page and ex.content_type in HTML_TYPES and not item.is_requisite:
            text = self._text(item, ex)
            self.record_page(ex.target_uri, ex.date, found.title, text)
        queued, rejected, seed = self._recent_queued, self._recent_rejected, item.seed
        of = found.extractor_of
        children = [
            item.child(url, Hop.LINK, of(url))
            for url in found.pages
            if url not in queued and (url, Hop.LINK, seed) not in rejected
        ]
        if requisites:
            children += [
                item.child(url, Hop.EMBED, of(url))
                for url in found.requisites
                if url not in queued and (url, Hop.EMBED, seed) not in rejected
            ]
        return children, text

    def _text(self, item: CrawlItem, ex: Exchange) -> str | None:
        """The page's text for ``--text`` (None without it, or when it cannot be decoded)."""
        if not self._settings.text:
            return None
        try:
            return page_text(
                ex.body or b"", ex.header("Content-Encoding"), limit=self._settings.text_max
            )
        except ContentDecodingError:
            return None  # already warned about by the link extraction

    async def _extract(self, item: CrawlItem, ex: Exchange) -> Links | None:
        """The links of the document (by its media type) and of its ``Link`` fields."""
        body = ex.body or b""
        encoding = ex.header("Content-Encoding")
        kind = document_kind(ex.content_type, body, encoding)
        found: Links | None = None
        if kind is not None:
            try:
                if kind is Extractor.PDF:
                    found = await self._pdf(item, ex, body, encoding)
                else:
                    options = self._options
                    if kind in (Extractor.HLS, Extractor.DASH):
                        options = await self._media_options(item)
                    extracted = extract_document(kind, body, item.url, encoding, options)
                    if extracted.note is not None:
                        event, fields = extracted.note
                        self._log.info(event, url=item.url, **fields)
                    found = extracted.links
            except ContentDecodingError as exc:
                self._log.warning("extract-error", url=item.url, error=str(exc))
        if any(name.lower() == "link" for name, _ in ex.headers):
            values = [value for name, value in ex.headers if name.lower() == "link"]
            linked = header_links(values, item.url, link_limit(self._settings.max_links_per_page))
            found = linked if found is None else merge(found, linked)
        if found is not None and found.truncated:
            self._log.warning(
                "links-truncated", url=item.url, limit=self._settings.max_links_per_page
            )
        return found

    async def _media_options(self, item: CrawlItem) -> ExtractOptions:
        """The options a playlist is read with: its segments are listed within what its page
        has left of the media budget (:mod:`archiver.pipeline.mediabudget`)."""
        options = self._options
        left = await self.media.left(item)
        if options.media is None or left is None:
            return options
        return replace(options, media=replace(options.media, max_bytes=left))

    async def _pdf(
        self, item: CrawlItem, ex: Exchange, body: bytes, encoding: str | None
    ) -> Links | None:
        """A PDF's links, read in a child process when the fetch kept all of its body."""
        if len(body) < ex.payload_length:
            self._log.info(
                "pdf-not-read",
                url=item.url,
                reason=f"larger than the {len(body)} bytes a fetch keeps for link extraction",
            )
            return None
        data = decode_content(body, encoding, limit=self._options.max_decoded)
        result = await read_pdf(
            data,
            item.url,
            limits=self._pdf_limits,
            max_links=link_limit(self._settings.max_links_per_page),
        )
        if result.error is not None:
            self._log.info("pdf-error", url=item.url, error=result.error, pages=result.pages)
        return result.links

    def record_page(
        self, url: str, date: datetime, title: str | None, text: str | None = None
    ) -> None:
        """List a page in ``pages.jsonl`` (the WACZ's page list): its URL, capture time,
        title, and text (``--text``)."""
        if self._pages is not None:
            self._pages.add(url, date, title, text)

    def _verdict(self, found: CrawlItem) -> tuple[SkipReason | None, CrawlItem]:
        """The live ignores, then the scope; an accepted item is counted against the budgets
        at once (the next link sees them), and its host spaced by its seed's delay."""
        if self._exclusions.ignored(found.url):
            return SkipReason.IGNORED, found
        reason, child = self._scope.admit(found)
        if reason is None:
            self._scope.accepted(child)
            rules = self._scope.table.rules(child.seed)
            if rules.per_host_delay is not None:  # its seed's delay, before it is leased
                self.seeds.space(urls.host_port(child.url), rules)
        return reason, child

    async def add(self, added: list[str]) -> list[tuple[str, str]]:
        """Queue URLs the operator added (``archiver add``): each checked as the command did
        (the live ignores, the scope: :meth:`~archiver.policy.scope.Scope.admit_added`).
        Returns ``(url, outcome)`` for each: ``queued``, ``seen`` (the crawl knew it), or why
        it was refused."""
        redirects = self._settings.max_redirects
        outcomes: list[tuple[str, str]] = []
        accepted: list[CrawlItem] = []
        for text in added:
            try:
                url = urls.normalize_url(text)
            except urls.InvalidURLError:
                outcomes.append((text, SkipReason.INVALID_URL.value))
                continue
            reason = self._exclusions.check(url)
            child = None
            if reason is None:
                reason, child = self._scope.admit_added(url, redirects)
            if reason is not None or child is None:
                outcomes.append((url, (reason or SkipReason.SCOPE).value))
                continue
            self._scope.accepted(child)
            rules = self._scope.table.rules(child.seed)
            if rules.per_host_delay is not None:
                self.seeds.space(urls.host_port(child.url), rules)
            accepted.append(child)
        new = {item.url for item in await self._frontier.put_many(accepted)}
        for child in accepted:
            if child.url not in new:
                self._scope.unaccepted(child)
            outcomes.append((child.url, "queued" if child.url in new else "seen"))
        return outcomes

    async def put(self, items: list[CrawlItem]) -> None:
        """Scope-check discovered items and queue the accepted ones (the frontier drops the
        ones it has seen). Remembers recent outcomes so the navigation links repeated on every
        page cost a dict lookup, not a scope check and a frontier call (bounded memory)."""
        accepted = []
        queued, rejected = self._recent_queued, self._recent_rejected
        exclusions = self._exclusions
        if exclusions.version != self._ignores_version:  # the ignores changed: verdicts too
            self._ignores_version = exclusions.version
            rejected.clear()
        uncached = self._uncached
        if self._scope.extra_hops:  # whether a page is near enough depends on its path
            uncached = uncached | {SkipReason.SCOPE}
        for found in items:
            reason, child = self._verdict(found)
            if reason is None:
                accepted.append(child)
                continue
            self._stats.skip(reason)
            self._outcomes.skip_log(child.via, child.url, reason)
            if reason not in uncached:
                # depth and budgets can change for the same URL found elsewhere (and, with
                # --extra-hops, whether it is near enough to the scope): not cached
                hop = Hop.EMBED if child.is_requisite else Hop.LINK
                rejected.add((child.url, hop, found.seed))
        if accepted:
            new = {item.url for item in await self._frontier.put_many(accepted)}
            for child in accepted:
                if child.url not in new:
                    self._scope.unaccepted(child)  # seen before: not queued, uses no budget
                elif child.found_by:
                    self._stats.queued_by(child.found_by)
            queued.update(child.url for child in accepted)
        if len(queued) > RECENT_LIMIT:
            queued.clear()
        if len(rejected) > RECENT_LIMIT:
            rejected.clear()


def extract_options(settings: Settings) -> ExtractOptions:
    """What the settings say about extraction."""
    media = None
    if settings.media != "off":
        media = MediaLimits(
            max_bitrate=settings.media_max_bitrate or UNCAPPED,
            max_bytes=settings.media_max_bytes or UNCAPPED,
        )
    return ExtractOptions(
        max_links=link_limit(settings.max_links_per_page),
        js_relative=settings.js_relative_strings,
        media=media,
    )


#: a cap that is no cap (--media-max-bitrate 0, --media-max-bytes 0)
UNCAPPED = 10**18
#: --pdf-timeout 0: an hour still ends a reader that loops forever
PDF_NO_TIMEOUT = 3600.0

__all__ = ["RECENT_LIMIT", "Discovery", "extract_options"]
