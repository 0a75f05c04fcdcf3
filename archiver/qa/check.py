"""One page replayed from the archive in Chromium: every request answered from the crawl's own
records, and everything the archive could not answer named.

:class:`ArchiveAnswers` is the page's request handler (:class:`archiver.browser.RequestHandler`):
each request is looked up as a replay tool looks it up (:class:`archiver.qa.archive.Archive`) and
answered with the stored response, or with a ``404`` as pywb answers what it lacks (so the page's
scripts see what they see in replay). Nothing reaches the network: the browser has none, and the
handler never fetches. What it records, per request: served exactly, served by pywb's fuzzy rule
(another capture of the same resource: reported apart, with the reason), or missing (the URL, the
request's resource type, its initiator, and the in-page navigation that made it).

:class:`ArchiveReplay` loads the page (scrolled and settled by the pool's behaviours, as a browser
crawl does), optionally follows links in the page (:class:`archiver.browser.navigate.LinkWalk`),
and returns a :class:`PageCheck`. A page that opens a WebSocket is *unreplayable* for that
reason: a WebSocket is a live conversation no archive holds, so no fetch can fix it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any

from archiver.browser.errors import BrowserError, NavigationError
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.navigate import LinkWalk
from archiver.browser.page import PageOptions, PageResult
from archiver.browser.pool import BrowserPool
from archiver.index.postquery import APPENDED_METHODS
from archiver.qa.archive import Archive, Lacking, Served

#: What a request the archive lacks is answered with (pywb answers a 404 too).
NOT_ARCHIVED = BrowserResponse(
    404, [("Content-Type", "text/plain; charset=utf-8")], b"not in the archive", "Not Found"
)
#: The most misses (and fuzzy answers) listed per page.
MAX_LISTED = 500
#: The largest request body kept with a POST or PUT miss, so that it can be fetched: a search
#: or a form is a few hundred bytes; an upload is not something to send again.
MAX_KEPT_BODY = 64 * 1024

STATUS_COMPLETE = "complete"
STATUS_INCOMPLETE = "incomplete"
STATUS_UNREPLAYABLE = "unreplayable"
STATUS_FAILED = "failed"
#: nothing missing, yet the replay reads unlike what the crawl saw (a script that fails in
#: replay, a replay tool's rewriting): see the page's console errors
STATUS_DIFFERS = "differs"
#: text similarity under which a page with nothing missing still ``differs``
DIFFERS_BELOW = 0.9


@dataclass(frozen=True, slots=True)
class Miss:
    """A request the archive could not answer."""

    url: str
    method: str
    resource_type: str
    reason: str
    navigation: str = ""
    """The link whose in-page click made the request ("" for the page load)."""
    initiator: str = ""
    network_id: str = ""
    body: bytes | None = None
    """A POST's or PUT's body as the page sent it (at most :data:`MAX_KEPT_BODY` bytes), so
    that the request can be made again; None for other methods, and when it is not kept
    (:attr:`body_missing` says why)."""
    content_type: str | None = None
    body_missing: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "url": self.url,
            "method": self.method,
            "type": self.resource_type,
            "reason": self.reason,
            "initiator": self.initiator,
        }
        if self.navigation:
            out["navigation"] = self.navigation
        if self.body is not None:
            out["body"] = base64.b64encode(self.body).decode("ascii")
            out["content_type"] = self.content_type
        if self.body_missing is not None:
            out["body_missing"] = self.body_missing
        return out

    def not_requested(self) -> str | None:
        """Why this miss cannot be requested again (to be fetched), or None: a GET can, a
        POST or PUT with its body kept can; anything else cannot."""
        method = self.method.upper()
        if method == "GET":
            return None
        if method not in APPENDED_METHODS:
            return f"a {method}: only GET, POST and PUT are requested again"
        if self.body is None:
            return f"a {method} whose body was not kept: {self.body_missing or 'none recorded'}"
        return None

    @classmethod
    def of(cls, request: BrowserRequest, reason: str, navigation: str = "") -> Miss:
        """The miss of ``request`` (a POST's or PUT's body kept, see :func:`kept_body`)."""
        body, content_type, missing = kept_body(request)
        return cls(
            request.url,
            request.method,
            request.resource_type,
            reason,
            navigation,
            network_id=request.network_id,
            body=body,
            content_type=content_type,
            body_missing=missing,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Miss:
        """A miss read back from ``qa.jsonl`` (a body that does not decode reads as none)."""
        body = None
        if isinstance(data.get("body"), str):
            try:
                body = base64.b64decode(data["body"], validate=True)
            except (binascii.Error, ValueError):
                body = None
        content_type = data.get("content_type")
        missing = data.get("body_missing")
        return cls(
            url=str(data.get("url", "")),
            method=str(data.get("method", "GET")),
            resource_type=str(data.get("type", "")),
            reason=str(data.get("reason", "")),
            navigation=str(data.get("navigation", "")),
            initiator=str(data.get("initiator", "")),
            body=body,
            content_type=content_type if isinstance(content_type, str) else None,
            body_missing=missing if isinstance(missing, str) else None,
        )


def kept_body(request: BrowserRequest) -> tuple[bytes | None, str | None, str | None]:
    """``(body, content_type, why_not_kept)`` of a request that carries its parameters in its
    body (POST, PUT: what replay appends to the key), else three Nones."""
    if request.method.upper() not in APPENDED_METHODS:
        return None, None, None
    content_type = next(
        (value for name, value in request.headers if name.lower() == "content-type"), None
    )
    if not request.body_complete:
        return None, content_type, "the browser did not report the whole body (a file, a stream)"
    body = request.body or b""
    if len(body) > MAX_KEPT_BODY:
        return None, content_type, f"its body is over {MAX_KEPT_BODY} bytes (an upload)"
    return body, content_type, None


@dataclass(frozen=True, slots=True)
class FuzzyAnswer:
    """A request answered with a capture of another URL (pywb's fuzzy rule)."""

    url: str
    served: str
    reason: str
    resource_type: str
    navigation: str = ""

    def to_json(self) -> dict[str, str]:
        out = {
            "url": self.url,
            "served": self.served,
            "reason": self.reason,
            "type": self.resource_type,
        }
        if self.navigation:
            out["navigation"] = self.navigation
        return out


@dataclass
class ArchiveAnswers:
    """Answers a replayed page's requests from the archive (see the module docstring)."""

    archive: SharedArchive
    at: str
    """The page's capture time (14 digits): the closest capture to it is served."""
    navigation: str = ""
    requests: int = 0
    served: int = 0
    misses: list[Miss] = field(default_factory=list)
    fuzzy: list[FuzzyAnswer] = field(default_factory=list)
    _seen: set[tuple[str, str, str]] = field(default_factory=set)

    def set_navigation(self, link: str) -> None:
        self.navigation = link

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.requests += 1
        navigation = self.navigation
        found = await asyncio.to_thread(self.archive.lookup, request, self.at)
        if isinstance(found, Lacking):
            if not browser_own(request):
                self._note_miss(request, found.reason, navigation)
            if request.is_main_frame and not request.redirected and not navigation:
                return Refusal(found.reason)  # the page itself: nothing to replay
            return NOT_ARCHIVED
        self.served += 1
        if found.fuzzy is not None and len(self.fuzzy) < MAX_LISTED:
            self.fuzzy.append(
                FuzzyAnswer(
                    request.url, found.capture.url, found.fuzzy, request.resource_type, navigation
                )
            )
        return found.response

    def _note_miss(self, request: BrowserRequest, reason: str, navigation: str) -> None:
        seen = (request.method, request.url, navigation)
        if seen in self._seen or len(self.misses) >= MAX_LISTED:
            return
        self._seen.add(seen)
        self.misses.append(Miss.of(request, reason, navigation))


def browser_own(request: BrowserRequest) -> bool:
    """The browser's own request for the site's icon (``/favicon.ico``, made when a tab shows,
    not by the page; whether it comes before the page is read varies): not a miss of the page.
    An icon the page names (``<link rel=icon>``) is requested as an image and counts."""
    if request.resource_type != "Other" or request.method != "GET":
        return False
    rest = request.url.split("://", 1)[-1]
    return "/" in rest and rest.split("/", 1)[1] == "favicon.ico"


@dataclass(frozen=True, slots=True)
class PageCheck:
    """What replaying one page from the archive showed."""

    url: str
    status: str
    result: PageResult | None
    misses: tuple[Miss, ...]
    fuzzy: tuple[FuzzyAnswer, ...]
    requests: int
    served: int
    navigations: tuple[dict[str, str], ...]
    error: str | None = None
    replayer_misses: tuple[Miss, ...] = ()
    """URLs the archive holds that a replay tool (``--replayer``) did not serve, with why."""
    walk_cut_short: bool = False
    """The page timeout came before every link wanted was clicked."""

    @property
    def unfixable(self) -> list[dict[str, str]]:
        """What no fetch can fix: WebSockets the page opens."""
        sockets = self.result.sockets if self.result is not None else ()
        return [
            {
                "url": url,
                "reason": "a WebSocket: a live connection the archive cannot answer",
            }
            for url in sockets
        ]


class SharedArchive:
    """The archive, read by the lookups of every tab (in threads: a record can be large), one
    at a time (each index file is read through one handle)."""

    def __init__(self, archive: Archive) -> None:
        self.archive = archive
        self._lock = threading.Lock()

    def refresh(self) -> int:
        """Read what the crawl wrote since (a running crawl's archive grows); the lines added."""
        with self._lock:
            return self.archive.refresh()

    def close(self) -> None:
        with self._lock:
            self.archive.close()

    def lookup(self, request: BrowserRequest, at: str) -> Served | Lacking:
        with self._lock:
            return self.archive.lookup(request, at)

    def resource(self, uri: str, at: str) -> bytes | None:
        with self._lock:
            return self.archive.resource(uri, at)


@dataclass(frozen=True, slots=True)
class ArchiveReplay:
    """Replays pages from the crawl's own records in archiver's capture browser (no network)."""

    pool: BrowserPool
    archive: SharedArchive
    options: PageOptions
    follow_links: int = 0

    async def check(self, url: str, at: str) -> PageCheck:
        """Replay ``url`` (captured at ``at``, 14 digits) and say what it lacked."""
        answers = ArchiveAnswers(self.archive, at)
        walk = None
        if self.follow_links > 0:
            walk = LinkWalk(self.follow_links, answers.set_navigation)
        try:
            result = await self.pool.load(url, answers, options=self.options, explore=walk)
        except (BrowserError, NavigationError) as exc:
            return PageCheck(
                url, STATUS_FAILED, None, tuple(answers.misses), tuple(answers.fuzzy),
                answers.requests, answers.served, (), str(exc),
            )  # fmt: skip
        misses = tuple(_with_initiator(miss, result) for miss in answers.misses)
        if misses:
            status = STATUS_INCOMPLETE
        elif result.sockets:
            status = STATUS_UNREPLAYABLE
        else:
            status = STATUS_COMPLETE
        steps = walk.navigations if walk is not None else []
        navigations = tuple({"link": step.link, "landed": step.landed} for step in steps)
        return PageCheck(
            url, status, result, misses, tuple(answers.fuzzy), answers.requests, answers.served,
            navigations, walk_cut_short=walk is not None and walk.cut_short,
        )  # fmt: skip


def _with_initiator(miss: Miss, result: PageResult) -> Miss:
    initiator = result.initiators.get(miss.network_id, "") if miss.network_id else ""
    return dataclasses.replace(miss, initiator=initiator, network_id="")


__all__ = [
    "DIFFERS_BELOW",
    "MAX_KEPT_BODY",
    "NOT_ARCHIVED",
    "STATUS_COMPLETE",
    "STATUS_DIFFERS",
    "STATUS_FAILED",
    "STATUS_INCOMPLETE",
    "STATUS_UNREPLAYABLE",
    "ArchiveAnswers",
    "ArchiveReplay",
    "FuzzyAnswer",
    "Miss",
    "PageCheck",
    "SharedArchive",
    "kept_body",
]
