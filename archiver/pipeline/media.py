"""``--media yt-dlp``: a page's media resolved by yt-dlp, every byte through the lease's capturer.

After a page is captured (2xx HTML, not a requisite), it is handed to yt-dlp
(:mod:`archiver.media.resolver`, in a child process with no network) with the page's own URL.
yt-dlp runs the extractor of the site if it knows one, or its generic extractor when the page
shows media (:func:`archiver.extract.mediahint.shows_media`). Each HTTP request it makes comes
back here (:class:`_Bridge`) and is admitted and captured by the capturer of the page's lease,
like a browser's request (:mod:`archiver.pipeline.capture`): the live ignores, scope,
robots.txt, the politeness booking, the SSRF guard at connect time, the records, dedup. A
request refused there fails in yt-dlp (which may give up: one logged failure). The page's own
URL is answered from the capture just made, so the server sees it once. yt-dlp's headers are
sent except those that are the crawl's own (``User-Agent``: the crawl's identity, which robots.txt
was read for; ``Cookie``: the crawl's jar; the connection's fields); redirects are followed
here, each hop captured, as yt-dlp's own HTTP handlers follow them.

What yt-dlp resolved is kept twice:

- its info dict (``sanitize_info``'d, as ``--write-info-json`` writes it) as a ``metadata``
  record (WARC 1.1 section 6.6) of ``application/json``, ``WARC-Target-URI: urn:yt-dlp:PAGE``,
  ``WARC-Refers-To`` the page's response. A target URI of its own, not the page's: an index
  keys a record by its target URI, and pywb and cdxj-indexer index a metadata record that is
  not ``application/warc-fields`` like any other, so under the page's URI it would be a second
  capture of the page that replay could serve instead of the page. Under ``urn:yt-dlp:``
  (the form of Browsertrix's ``urn:pageinfo:`` and archiver's own ``urn:text:``) it has a key
  of its own, identical in ``archiver index`` and cdxj-indexer;
- the media URLs of the formats it chose (:func:`archiver.media.formats.media_urls`: files,
  HLS playlists, DASH manifests and fragments, the thumbnail) queued as requisites of the page,
  tagged ``yt-dlp``, with what the captures made while resolving lead to (the segments of a
  playlist yt-dlp read), except what was captured while resolving: fetched by the crawl under
  the page's media budget (:mod:`archiver.pipeline.mediabudget`) like every requisite, with
  the page as ``Referer``. Other headers yt-dlp says a format needs are in the info record,
  not sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from archiver import urls
from archiver.errors import FetchError
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.found import Extractor, link_limit
from archiver.extract.links import HTML_TYPES, MAX_DECODED
from archiver.extract.mediahint import shows_media
from archiver.media.formats import media_urls
from archiver.media.resolver import HttpAnswer, HttpRequest, Refusal, YtDlpResolver
from archiver.models import MAX_REDIRECTS, CrawlItem, Exchange, Hop, WrittenCapture
from archiver.pipeline.capture import Capturer, Refused, Request
from archiver.pipeline.discovery import Discovery
from archiver.pipeline.parts import RunContext
from archiver.pipeline.recall import Recalled
from archiver.policy.sitemaps import is_sitemap
from archiver.warc.records import RecordFactory

#: the target URI prefix of a page's yt-dlp info record
METADATA_PREFIX = "urn:yt-dlp:"
METADATA_TYPE = "application/json"
#: the largest payload handed to yt-dlp (an API answer, a manifest); a larger one is still
#: captured, and yt-dlp is told it was not fetched
ANSWER_LIMIT = 16 << 20
#: request fields that are the crawl's own, or the connection's: not taken from yt-dlp
_OWN_FIELDS = frozenset(
    {
        "user-agent",
        "cookie",
        "accept-encoding",
        "host",
        "connection",
        "keep-alive",
        "content-length",
        "transfer-encoding",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
    }
)
#: answer fields that no longer describe the payload once it is decoded
_CODING_FIELDS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
_LOG_FIELDS = (("yt_dlp", True),)


class MediaResolving:
    """The yt-dlp stage of one run (``--media yt-dlp``)."""

    def __init__(
        self,
        context: RunContext,
        resolver: YtDlpResolver,
        discovery: Discovery,
        factory: RecordFactory,
    ) -> None:
        self.context = context
        self.resolver = resolver
        self.discovery = discovery
        self.factory = factory

    @staticmethod
    def wants(item: CrawlItem, content: Exchange) -> bool:
        """A page whose media yt-dlp may resolve: 2xx HTML, neither a requisite nor a sitemap."""
        return (
            200 <= content.status < 300
            and content.content_type in HTML_TYPES
            and not item.is_requisite
            and not is_sitemap(item)
        )

    async def resolve(
        self, capturer: Capturer, content: Exchange, written: WrittenCapture | None
    ) -> None:
        """Resolve the page's media, keep yt-dlp's info as a metadata record of the page and
        queue the media as its requisites; a failure is logged, the crawl goes on."""
        item = capturer.lease.item
        page = _page_body(content)
        bridge = _Bridge(capturer, item, content, page)
        hint = page is not None and shows_media(page)
        resolution = await self.resolver.resolve(item.url, bridge.fetch, media_hint=hint)
        log = self.context.log
        if resolution.skipped:
            return
        if resolution.info is None:
            log.warning(
                "yt-dlp-failed", url=item.url, error=resolution.error, requests=resolution.requests
            )
            return
        data = json.dumps(resolution.info, ensure_ascii=False).encode("utf-8")
        refers_to = written.primary.record_id if written and written.primary else None
        await capturer.write(
            self.factory.described(
                METADATA_PREFIX + item.url, METADATA_TYPE, data, refers_to=refers_to
            )
        )
        found = media_urls(
            resolution.info,
            item.url,
            max_urls=link_limit(self.context.settings.max_links_per_page),
        )
        children = [item.child(url, Hop.EMBED, Extractor.YT_DLP) for url in found.urls]
        for captured, exchange in bridge.captures:  # what they lead to: a playlist's segments
            children += (await self.discovery.children(captured, exchange, list_page=False))[0]
        # each URL once: not what was captured while resolving (in the archive already)
        unique = {child.url: child for child in reversed(children)}
        children = [c for c in unique.values() if c.url not in bridge.answered][::-1]
        if children:
            await self.discovery.put(children)
        log.info(
            "yt-dlp",
            url=item.url,
            extractor=resolution.extractor,
            requests=resolution.requests,
            media=len(found.urls),
            unsupported=dict(found.unsupported) or None,
            truncated=found.truncated or None,
            warnings=list(resolution.warnings) or None,
        )


def _page_body(content: Exchange) -> bytes | None:
    """The page's payload decoded, when the fetch kept all of it (else None)."""
    body = content.body
    if body is None or len(body) != content.payload_length:
        return None
    try:
        return decode_content(body, content.header("Content-Encoding"), limit=MAX_DECODED)
    except ContentDecodingError:
        return None


@dataclass(frozen=True, slots=True)
class _Got:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    payload: bytes


class _Bridge:
    """yt-dlp's requests for one page, each admitted and captured by the lease's capturer."""

    def __init__(
        self, capturer: Capturer, page: CrawlItem, content: Exchange, body: bytes | None
    ) -> None:
        self._capturer = capturer
        self._page = page
        self._content = content
        self._body = body
        #: the URLs answered with a capture (made now, recalled, or the page's own)
        self.answered: set[str] = set()
        #: the captures made for yt-dlp's requests, and the items they were made for
        self.captures: list[tuple[CrawlItem, Exchange]] = []

    async def fetch(self, request: HttpRequest) -> HttpAnswer | Refusal:
        url = urls.resolve(self._page.url, request.url)
        if url is None:
            return Refusal("not an http(s) URL")
        method, body = request.method, request.body
        headers = {
            name: value for name, value in request.headers if name.lower() not in _OWN_FIELDS
        }
        item = self._page.child(url, Hop.EMBED, Extractor.YT_DLP)
        for _ in range(MAX_REDIRECTS + 1):
            got = self._own_page(item, method) or await self._one(item, method, headers, body)
            if isinstance(got, Refusal):
                return got
            self.answered.add(item.url)
            location = _field(got.headers, "location")
            target = urls.resolve(item.url, location) if location else None
            if not 300 <= got.status < 400 or got.status == 304 or target is None:
                return _answer(item.url, got)
            if got.status == 303 or (got.status in (301, 302) and method == "POST"):
                # RFC 9110 section 15.4: the redirected request becomes a GET without a body
                method, body = "GET", None
                headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            item = item.child(target, Hop.REDIRECT)
        return Refusal(f"more than {MAX_REDIRECTS} redirects")

    def _own_page(self, item: CrawlItem, method: str) -> _Got | None:
        """The page itself, answered from the capture just made."""
        if method != "GET" or item.url != self._page.url or self._body is None:
            return None
        content = self._content
        headers = [(k, v) for k, v in content.headers if k.lower() not in _CODING_FIELDS]
        return _Got(content.status, "", headers, self._body)

    async def _one(
        self, item: CrawlItem, method: str, headers: dict[str, str], body: bytes | None
    ) -> _Got | Refusal:
        capturer = self._capturer
        request = Request(item, method, headers or None, body, _LOG_FIELDS)
        admission = await capturer.admit(request)
        if isinstance(admission, Refused):
            return Refusal(admission.reason.value)
        if isinstance(admission, Recalled):
            stored = admission.response
            if stored.payload is None:
                return Refusal("captured already, too large to read back")
            return _decoded(stored.status, stored.reason, stored.headers, stored.payload)
        with admission:
            try:
                captured = await capturer.capture(admission, answer_limit=ANSWER_LIMIT)
            except FetchError as exc:
                return Refusal(f"the fetch failed: {exc}")
        self.captures.append((item, captured.exchange))
        answer = captured.answer
        if answer is None:
            return Refusal(f"captured, but larger than the {ANSWER_LIMIT} bytes yt-dlp is given")
        return _decoded(answer.status, answer.reason, answer.headers, answer.payload)


def _decoded(status: int, reason: str, headers: list[tuple[str, str]], payload: bytes) -> _Got:
    """The payload with its content coding removed, as an HTTP library hands it over."""
    coding = _field(headers, "content-encoding")
    if coding:
        try:
            payload = decode_content(payload, coding, limit=ANSWER_LIMIT)
        except ContentDecodingError:
            return _Got(status, reason, headers, payload)
    kept = [(k, v) for k, v in headers if k.lower() not in _CODING_FIELDS]
    return _Got(status, reason, kept, payload)


def _field(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def _answer(url: str, got: _Got) -> HttpAnswer:
    return HttpAnswer(got.status, got.reason, url, tuple(got.headers), got.payload)


__all__ = ["METADATA_PREFIX", "MediaResolving"]
