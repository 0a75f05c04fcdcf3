"""Plain data that flows through the crawl: frontier -> fetch -> records -> writer -> index.

Nothing here does I/O or imports a third-party library (only the leaf :mod:`archiver.spool`), so
every other module can depend on it.
The types are small and mostly frozen: a value that crosses a queue is never mutated afterwards.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from archiver.spool import Spool

#: Default number of redirect hops the crawler follows from one URL (wget and Zeno use 20,
#: grab-site 8; every hop is archived, so a modest limit costs nothing).
MAX_REDIRECTS = 10


class Hop(enum.StrEnum):
    """How a URL was discovered: the letters of Heritrix's crawl.log discovery path."""

    LINK = "L"  #: a navigational link (a[href], area, iframe, sitemap entry)
    EMBED = "E"  #: a page requisite (img, script, stylesheet, font, media)
    REDIRECT = "R"  #: the Location of a 3xx response
    PREREQUISITE = "P"  #: fetched before its host can be crawled (robots.txt)
    MANIFEST = "M"  #: a sitemap (robots.txt Sitemap:, /sitemap.xml, a sitemap index entry)


@dataclass(frozen=True, slots=True)
class CrawlItem:
    """One unit of frontier work: the seed design's ``(url, redirects_left)`` pair plus lineage.

    ``hops`` is the discovery path from the seed (``""`` for a seed, ``"LLE"`` for an image on a
    page two links away); ``depth`` counts link hops only, so requisites and redirects inherit the
    depth of the page that led to them. ``tries`` counts earlier attempts of this URL.
    ``extra`` counts the pages outside the scope on the path since the last page inside it
    (``--extra-hops``): 0 for an item in scope; a child inherits it, and the scope raises it for
    a child outside, or resets it for one inside. ``found_by`` names the extractor that found
    the URL (:class:`archiver.extract.found.Extractor`: ``html``, ``feed``, ``pdf``…), ``""``
    for a seed, a sitemap entry or robots.txt; a redirect's target keeps its source's, so a
    link that redirects to a 404 still counts against the extractor that found it. ``page``
    names the page a requisite serves when that is not ``via`` (a playlist's segment, an image
    of a page's stylesheet, a requisite reached through a redirect), ``""`` otherwise: what a
    per-page budget counts against (:attr:`page_url`).
    ``seed`` names the seed whose rules judge the URL (:func:`archiver.policy.seeds.seed_key`
    of the seed's URL; 0: the crawl's own rules): a child inherits it, and the scope gives it
    the seed whose site it is on. Every frontier keeps it, so a resumed or shared crawl judges
    a queued URL as the run that queued it did.
    """

    url: str
    redirects_left: int = MAX_REDIRECTS
    depth: int = 0
    hops: str = ""
    via: str | None = None
    tries: int = 0
    extra: int = 0
    found_by: str = ""
    page: str = ""
    seed: int = 0

    @property
    def is_seed(self) -> bool:
        return self.hops == ""

    @property
    def is_requisite(self) -> bool:
        """True when the URL was reached as a page requisite (possibly through redirects)."""
        last = self.hops[-1:]
        if last == "E":
            return True
        if last != "R":
            return False
        return self.hops.rstrip("R").endswith("E")

    @property
    def page_url(self) -> str:
        """The page this URL serves: itself unless it is a requisite, else the page whose
        requisites led to it (through playlists, stylesheets and redirects)."""
        if not self.is_requisite:
            return self.url
        return self.page or self.via or self.url

    def _child_page(self) -> str:
        """``page`` of a requisite child: ``""`` when the child's ``via`` (this URL) is its
        page."""
        page = self.page_url
        return "" if page == self.url else page

    def child(self, url: str, hop: Hop, found_by: str = "") -> CrawlItem:
        """The item for a URL discovered while processing this one (by extractor
        ``found_by``)."""
        if hop is Hop.REDIRECT:
            return CrawlItem(
                url=url,
                redirects_left=self.redirects_left - 1,
                depth=self.depth,
                hops=self.hops + hop,
                via=self.url,
                extra=self.extra,
                found_by=self.found_by,
                page=self._child_page(),
                seed=self.seed,
            )
        depth = self.depth + 1 if hop is Hop.LINK else self.depth
        return CrawlItem(
            url=url,
            depth=depth,
            hops=self.hops + hop,
            via=self.url,
            extra=self.extra,
            found_by=found_by,
            page=self._child_page() if hop is Hop.EMBED else "",
            seed=self.seed,
        )

    def retry(self) -> CrawlItem:
        return CrawlItem(
            url=self.url,
            redirects_left=self.redirects_left,
            depth=self.depth,
            hops=self.hops,
            via=self.via,
            tries=self.tries + 1,
            extra=self.extra,
            found_by=self.found_by,
            page=self.page,
            seed=self.seed,
        )


class Truncation(enum.StrEnum):
    """Values of ``WARC-Truncated`` (WARC 1.1 section 5.13)."""

    LENGTH = "length"
    TIME = "time"
    DISCONNECT = "disconnect"
    UNSPECIFIED = "unspecified"


class SkipReason(enum.StrEnum):
    """Why a discovered URL was not fetched. Each is counted in the summary and logged."""

    SCOPE = "scope"
    ROBOTS = "robots"
    DEPTH = "depth"
    SCHEME = "scheme"
    URL_TOO_LONG = "url-too-long"
    TRAP = "trap"
    BLOCKED_ADDRESS = "blocked-address"
    EXCLUDED = "excluded"
    IGNORED = "ignored"  #: matched a line of the crawl directory's ``ignores`` file
    BUDGET = "budget"
    HOST_BUDGET = "host-budget"
    SEED_BUDGET = "seed-budget"  #: its seed's ``max_pages`` reached (the crawl goes on)
    #: a media requisite of a page that has spent its media byte budget (--media-max-bytes)
    MEDIA_BUDGET = "media-budget"
    REDIRECT_LIMIT = "redirect-limit"
    INVALID_URL = "invalid-url"


class FailReason(enum.StrEnum):
    """Why a fetch produced no capture (or only a partial one)."""

    CONNECT = "connect-error"
    PROXY = "proxy-error"  #: the proxy could not be reached or refused the tunnel
    DNS = "dns-error"
    TIMEOUT = "timeout"
    TLS = "tls-error"
    BLOCKED_ADDRESS = "blocked-address"
    BAD_RESPONSE = "bad-response"
    HEADERS_TOO_LARGE = "headers-too-large"
    DISCONNECT = "disconnect"
    SERVER_ERROR = "server-error"
    THROTTLED = "throttled"
    CHALLENGE = "challenge"  #: a bot challenge (CDN/WAF interstitial) instead of the page
    BROWSER = "browser"  #: the page was captured, but the browser could not load it
    ROBOTS_UNREACHABLE = "robots-unreachable"
    WRITE_ERROR = "write-error"
    INTERNAL = "internal-error"


@dataclass(frozen=True, slots=True)
class TlsInfo:
    """What the TLS layer told us about an https exchange."""

    version: str  #: e.g. ``tls/1.3`` as written in ``WARC-Protocol``
    cipher_suite: str | None  #: IANA name when the runtime knows it, else OpenSSL's
    verified: bool  #: the certificate chain and host name were verified
    verify_error: str | None = None  #: why verification failed, when it did


@dataclass(slots=True)
class Exchange:
    """One HTTP request/response pair exactly as it crossed the connection.

    ``request`` and ``response`` hold the raw bytes (the response may be spooled to disk: see
    :class:`archiver.spool.Spool`); the other fields are what the crawler needs to decide what to
    do next and what the WARC headers say. Digests are ``algo:value`` strings computed while the
    bytes streamed in (``payload_digest`` over the entity body with transfer coding removed and
    content coding kept, WARC 1.1 section 5.9 / iipc/warc-specifications#22).
    """

    target_uri: str
    date: datetime
    request: bytes
    response: Spool
    response_length: int
    status: int
    headers: list[tuple[str, str]]
    block_digest: str
    payload_digest: str
    payload_length: int
    request_block_digest: str
    request_payload_digest: str
    ip_address: str | None = None
    tls: TlsInfo | None = None
    truncated: Truncation | None = None
    protocol_error: str | None = None
    duration: float = 0.0
    #: The entity body (content-coded as sent, transfer coding removed) when it was small enough
    #: to keep for link extraction; None when it was not kept.
    body: bytes | None = None
    #: interim (1xx) responses received before this one, and runs of empty lines passed over
    #: before a status line, as received and in order (not in ``response``)
    interim: tuple[bytes, ...] = ()
    _first: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)

    def header(self, name: str) -> str | None:
        """First value of a response header, case-insensitively (looked up in a table built on
        first use: the crawler asks for several headers of every response)."""
        table = self._first
        if table is None:
            table = {}
            for key, value in self.headers:
                table.setdefault(key.lower(), value)
            self._first = table
        return table.get(name.lower())

    @property
    def content_type(self) -> str:
        """The media type without parameters, lowercased (``text/html``), or ``""``."""
        value = self.header("Content-Type") or ""
        return value.split(";", 1)[0].strip().lower()


@dataclass(frozen=True, slots=True)
class WrittenRecord:
    """Where the writer put one WARC record: enough for an index line without re-reading."""

    record_type: str
    record_id: str
    target_uri: str
    date: str  #: the record's WARC-Date, as written
    filename: str  #: the final file name (never ``.open``), relative to the WARC directory
    offset: int  #: of the record's gzip member in the file
    length: int  #: of that gzip member
    status: int | None = None
    mime: str | None = None  #: as cdxj-indexer computes it (``warc/revisit`` for revisits)
    payload_digest: str | None = None


@dataclass(frozen=True, slots=True)
class WrittenCapture:
    """A capture (response or revisit, its request and any metadata) as written to one file."""

    filename: str
    start: int  #: offset of the capture's first member
    end: int  #: offset just past its last member
    records: tuple[WrittenRecord, ...] = ()

    @property
    def primary(self) -> WrittenRecord | None:
        """The record an index line and a dedup entry describe: the response or revisit of an
        HTTP capture (never the request or the metadata beside it), the resource of one the
        crawl made, or the metadata record of a capture that is only that (yt-dlp's info)."""
        for rec in self.records:
            if rec.record_type in ("response", "revisit", "resource"):
                return rec
        if len(self.records) == 1 and self.records[0].record_type == "metadata":
            return self.records[0]
        return None


@dataclass(frozen=True, slots=True)
class Original:
    """The earlier capture a revisit refers to (WARC 1.1 section 6.7.2: ``WARC-Refers-To``,
    ``WARC-Refers-To-Target-URI``, ``WARC-Refers-To-Date``): what a payload-digest index maps a
    digest to."""

    record_id: str | None
    target_uri: str
    date: str  #: its WARC-Date


@dataclass(frozen=True, slots=True)
class RecordLocation:
    """Where one record lies in the crawl's WARC files: its gzip member, as an index line says
    (``filename`` relative to the WARC directory, never with ``.open``)."""

    filename: str
    offset: int
    length: int

    def encode(self) -> str:
        """``"FILENAME OFFSET LENGTH"`` (WARC file names never hold a space)."""
        return f"{self.filename} {self.offset} {self.length}"

    @classmethod
    def decode(cls, text: str) -> RecordLocation:
        filename, offset, length = text.rsplit(" ", 2)
        return cls(filename, int(offset), int(length))


class Outcome(enum.StrEnum):
    """How a frontier task ended."""

    DONE = "done"  #: fetched (and captured when there was anything to capture)
    FAILED = "failed"  #: gave up after the last try
    SKIPPED = "skipped"  #: not fetched on purpose (robots, scope decided late, budget)
    RETRY = "retry"  #: transient failure: back to the queue after ``retry_after`` seconds


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What a worker reports to the frontier for one lease."""

    outcome: Outcome
    #: every capture written while processing this lease (robots.txt included), committed
    #: together with the outcome so a resumed crawl knows which WARC data is accounted for
    captures: tuple[WrittenCapture, ...] = ()
    status: int | None = None
    reason: str | None = None
    retry_after: float | None = None  #: for RETRY, and for 429/503 host backoff
    #: no request was sent for the lease (skipped before any fetch, or answered from the
    #: crawl's records): the host's time booked for it is given back, so a queue of URLs
    #: dropped by an exclusion does not cost a politeness delay each
    unsent: bool = False

    @property
    def host_pause(self) -> float | None:
        """Seconds the host asked every process to stay away (a 429, a 503, a bot challenge):
        its Retry-After or the backoff, 30 s when neither is known; None otherwise."""
        if self.status in (429, 503) or self.reason == FailReason.CHALLENGE:
            return self.retry_after if self.retry_after is not None else 30.0
        return None


@dataclass(frozen=True, slots=True)
class FrontierStats:
    """An immutable snapshot of the frontier's counters (trio's ``statistics()`` style)."""

    queued: int = 0
    in_flight: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    seen: int = 0
    hosts: int = 0


@dataclass(slots=True)
class ResumeInfo:
    """What opening a persistent frontier found from an earlier run."""

    resumed: bool = False
    requeued_in_flight: int = 0
    queued: int = 0
    done: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class CachedRobots:
    """A robots.txt as fetched: enough for any process to parse it again (RFC 9309 section 2.3:
    the status decides allow-all or disallow-all when there is no usable body)."""

    body: bytes  #: content coding removed (what ``parse_robots`` reads)
    status: int | None  #: HTTP status; None when the fetch failed (unreachable)
    fetched_at: float  #: Unix time of the fetch (wall clock: processes on several machines)
    url: str = ""  #: where the body came from (the last hop of a redirect chain)
