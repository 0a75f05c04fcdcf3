"""robots.txt per RFC 9309: fetched once per origin, cached, and asked before every fetch.

The crawler calls :meth:`Robots.allowed` for each leased URL. The first call for an origin
(scheme, host and port: RFC 9309 section 2.3 applies the file to "the protocol, host and port"
it was fetched from) fetches ``/robots.txt`` through the crawler's ``fetch``, which archives the
exchange as part of the current lease, so every robots.txt the crawl obeyed is in the WARCs.
Concurrent callers for the same origin wait for that one fetch (one :class:`asyncio.Future`
per origin) instead of fetching it again.

What a fetch result means (RFC 9309 section 2.3.1):

* 2xx: the body is parsed and obeyed. At least the first 500 KiB must be parsed (section 2.5);
  we parse ``max_bytes`` (1 MiB by default), cut at the last complete line;
* 3xx: up to five consecutive redirects are followed, across hosts too (section 2.3.1.2), each
  hop fetched (and archived) through ``fetch``; past five, or on a loop or a missing
  ``Location``, the file is "unavailable";
* 4xx ("unavailable", 401 and 403 included, section 2.3.1.3): everything may be crawled. The
  exception is 429 Too Many Requests, which we treat as "unreachable" like Google does: the
  server asked us to slow down, not told us there are no rules;
* 5xx, a network error, a timeout or a body cut short ("unreachable", section 2.3.1.4): complete
  disallow for the origin, and the file is fetched again after ``retry_after`` seconds. If an
  earlier copy was parsed, that copy stays in force instead (section 2.4 allows a cached copy
  while the file is unreachable);
* the SSRF guard refused the address: nothing reached the network, and the URL's own fetch
  will be refused (and logged) the same way, so it is allowed here and retried like
  "unreachable" (a DNS answer can change).

Entries are cached for ``cache_ttl`` (24 hours, section 2.4: "SHOULD NOT use a cached version
for more than 24 hours"); the cache is bounded (least recently used origins are forgotten first).
``/robots.txt`` itself is always allowed (section 2.2.2).

Matching is protego's: the longest matching rule wins, Allow wins a tie, ``*`` and ``$`` are
special, percent-encoding is normalised on both sides (section 2.2.2). Group selection is done
here, before protego sees the file: protego matches a ``User-agent`` value anywhere in our token
(``User-agent: arch`` would apply to ``archiver``) and misses ``User-agent: archiver/1.0``.
RFC 9309 section 2.2.1 matches the product token (``[A-Za-z_-]+``) case-insensitively, so each
``User-agent`` line is rewritten to ``*``, our token, or a value that matches nothing.

Nothing is logged here: :meth:`Robots.take_reports` hands the crawler what each fetch found
(verdict, Crawl-delay applied, new ``Sitemap:`` URLs) for its log and its sitemap seeding, and
``Crawl-delay`` goes to the frontier through the ``set_host_delay`` function given at
construction (capped at ``max_crawl_delay``). Time comes from an injectable monotonic clock.
"""

from __future__ import annotations

import asyncio
import enum
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from protego import Protego

from archiver import urls
from archiver.errors import BlockedAddressError, FetchError
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.models import CachedRobots, CrawlItem, Exchange, Truncation

#: Fetch a URL and archive the exchange as part of the current lease (the crawler's
#: ``ArchiveFetch``; declared again here because robots sits below the crawler).
Fetch = Callable[[str], Awaitable[Exchange]]
Clock = Callable[[], float]
HostDelay = Callable[[str, float], None]

#: Parse limit: RFC 9309 section 2.5 requires at least 500 KiB (512,000 bytes); Google parses
#: 500 KiB, Heritrix 500 KiB, Browsertrix 100,000 bytes (too few). We read twice the minimum.
MAX_ROBOTS_BYTES = 1024 * 1024
#: RFC 9309 section 2.3.1.2: "SHOULD follow at least five consecutive redirects".
MAX_ROBOTS_REDIRECTS = 5
#: RFC 9309 section 2.4: a cached copy SHOULD NOT be used for more than 24 hours.
CACHE_TTL = 24 * 3600.0
#: How soon an unreachable robots.txt is fetched again (RFC 9309 section 2.3.1.4 leaves it open).
RETRY_UNREACHABLE = 60.0
#: Origins whose rules are kept at most (least recently used are dropped and fetched again).
MAX_CACHED_ORIGINS = 100_000

_USER_AGENT_LINE = re.compile(r"\s*(user-agent|useragent|user agent)\s*(?::|\s)\s*(.*)", re.I)
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]*")
#: An Allow or Disallow rule (RFC 9309 section 2.2.2), with the misspellings protego accepts.
_RULE_LINE = re.compile(
    r"(allow|disallow|dissallow|dissalow|disalow|diasllow|disallaw)\s*(?::|\s|\Z)", re.I
)
#: Written in place of a user-agent that is not ours: ``~`` is never part of a product token,
#: so protego's substring match cannot find it in our token.
_NOT_US = "~"


class Verdict(enum.StrEnum):
    """What the robots.txt fetch of an origin amounted to (RFC 9309 section 2.3.1)."""

    PARSED = "parsed"  #: 2xx: the rules are obeyed
    UNAVAILABLE = "unavailable"  #: 4xx, a broken redirect chain: everything allowed
    UNREACHABLE = "unreachable"  #: 5xx, 429, network error: complete disallow
    BLOCKED = "blocked"  #: the SSRF guard refused the address: the URL's own fetch will be too


def product_token(agent: str) -> str:
    """The RFC 9309 section 2.2.1 product token of ``agent`` (``archiver/1.0`` -> ``archiver``).

    Raises ValueError when ``agent`` does not start with one.
    """
    match = _PRODUCT_TOKEN.match(agent.strip())
    token = match.group() if match else ""
    if not token:
        raise ValueError(f"robots agent {agent!r} does not start with a product token [A-Za-z_-]")
    return token


def robots_url(url: str) -> str:
    """The robots.txt URL for a normalised URL's origin (RFC 9309 section 2.3)."""
    return urls.origin(url) + "/robots.txt"


def is_robots_url(url: str) -> bool:
    """True for ``/robots.txt`` itself, which is always allowed (RFC 9309 section 2.2.2)."""
    return urls.request_target(url) == "/robots.txt"


def select_groups(text: str, token: str) -> str:
    """Rewrite the file so protego forms and selects groups as RFC 9309 section 2.2 says.

    Selection (section 2.2.1): a ``User-agent`` line's value matches when its product token
    equals ``token`` case-insensitively; ``*`` (alone, or followed by white space) is the
    catch-all group. Any other value becomes a value that matches nothing.

    Forming (section 2.2.4): a group is its ``User-agent`` lines and the ``Allow`` /
    ``Disallow`` rules after them; any other line (``Crawl-delay``, ``Sitemap``, an unknown
    key) "MUST NOT interfere with the parsing of explicitly defined records". protego starts a
    new group at a ``User-agent`` line that follows such a line, which would cut the group in
    two and give its rules to the second half only. So a line that is neither a group member
    nor empty, met between a group's ``User-agent`` lines, is moved after the last of them: it
    keeps its meaning for the whole group (a ``Crawl-delay`` applies to every agent named
    there) and no longer splits it. Everything else is left as it is.
    """
    lowered = token.lower()
    out: list[str] = []
    held: list[str] = []  # other lines met since the group's first User-agent line
    starting = False  # between a group's User-agent lines, before its first rule
    for line in text.splitlines():
        content = line.split("#", 1)[0].strip()
        match = _USER_AGENT_LINE.fullmatch(content)
        if match is not None:
            out.append(_agent_line(line, match.group(2).strip(), lowered))
            starting = True
            continue
        if starting:
            if not content:  # an empty line or a comment keeps the group open
                out.append(line)
                continue
            if _RULE_LINE.match(content) is None:
                held.append(line)
                continue
            out.extend(held)  # the first rule: the group's User-agent lines are all known
            held.clear()
            starting = False
        out.append(line)
    out.extend(held)
    return "\n".join(out)


def _agent_line(line: str, value: str, token: str) -> str:
    """A ``User-agent`` line as protego should read it (see :func:`select_groups`)."""
    if not value:
        return line
    if value == "*" or (value[0] == "*" and value[1].isspace()):
        return "User-agent: *"
    ua = _PRODUCT_TOKEN.match(value)
    ours = ua is not None and ua.group().lower() == token
    return "User-agent: " + (token if ours else _NOT_US)


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """The decision for one origin: parsed rules, allow-all or disallow-all."""

    verdict: Verdict
    token: str = ""
    parser: Protego | None = None
    #: Crawl-delay of our group in seconds, uncapped (None: none given)
    crawl_delay: float | None = None
    #: Sitemap: URLs of the file (RFC 9309 section 2.2.4), normalised, http(s) only
    sitemaps: tuple[str, ...] = ()
    #: bytes of the file beyond the parse limit that were not read
    truncated: bool = False

    def allowed(self, url: str) -> bool:
        """May ``url`` (normalised, on this origin) be fetched?"""
        if is_robots_url(url):
            return True
        if self.verdict is Verdict.UNREACHABLE:
            return False
        if self.parser is None:
            return True
        return bool(self.parser.can_fetch(url, self.token))


ALLOW_ALL = RobotsRules(Verdict.UNAVAILABLE)
DISALLOW_ALL = RobotsRules(Verdict.UNREACHABLE)


def parse_robots(
    body: bytes, agent: str, *, url: str, max_bytes: int = MAX_ROBOTS_BYTES
) -> RobotsRules:
    """Parse a robots.txt body (content coding already removed) for the product token of
    ``agent``; ``url`` is where it was fetched (relative ``Sitemap:`` values resolve there).

    The file is UTF-8 (RFC 9309 section 2.3); a byte-order mark is skipped and invalid bytes
    become U+FFFD, so one bad byte costs one rule at most ("parse every line", section 2.2).
    """
    token = product_token(agent)
    truncated = len(body) > max_bytes
    if truncated:
        cut = body.rfind(b"\n", 0, max_bytes)
        body = body[: cut + 1] if cut >= 0 else b""
    text = body.decode("utf-8", errors="replace").removeprefix("\ufeff")
    parser = Protego.parse(select_groups(text, token))
    delay = parser.crawl_delay(token.lower())
    sitemaps: list[str] = []
    for value in parser.sitemaps:
        resolved = urls.resolve(url, value)
        if resolved is not None and resolved not in sitemaps:
            sitemaps.append(resolved)
    return RobotsRules(
        Verdict.PARSED,
        token=token.lower(),
        parser=parser,
        crawl_delay=float(delay) if delay is not None else None,
        sitemaps=tuple(sitemaps),
        truncated=truncated,
    )


@dataclass(frozen=True, slots=True)
class RobotsReport:
    """What one robots.txt fetch found, for the crawl log and sitemap seeding."""

    origin: str
    url: str  #: the robots.txt URL first requested
    verdict: Verdict
    status: int | None  #: HTTP status of the last hop (None: no response)
    redirects: int  #: redirect hops followed
    crawl_delay: float | None  #: as applied to the host (capped), None when none
    sitemaps: tuple[str, ...]  #: Sitemap: URLs not reported before
    error: str | None = None
    truncated: bool = False  #: the file was longer than the parse limit
    kept_cached_copy: bool = False  #: unreachable, but an earlier parsed copy stays in force


@dataclass(frozen=True, slots=True)
class RobotsStats:
    """An immutable snapshot of the robots counters (for the summary)."""

    origins: int = 0  #: origins with cached rules
    fetches: int = 0  #: robots.txt fetches (redirect hops not counted separately)
    parsed: int = 0
    unavailable: int = 0
    unreachable: int = 0
    blocked: int = 0
    disallowed: int = 0  #: URLs refused


@dataclass(frozen=True, slots=True)
class _Fetched:
    """The outcome of fetching one origin's robots.txt, redirects followed."""

    url: str
    rules: RobotsRules
    status: int | None
    redirects: int
    error: str | None = None
    body: bytes = b""  #: the parsed text (content coding removed), for the shared cache
    last_url: str = ""  #: the last hop of a redirect chain


class RobotsCache(Protocol):
    """Where processes sharing one crawl share robots.txt fetches (Redis: RedisRobotsCache):
    one process fetches and archives an origin's robots.txt, the others parse its copy."""

    async def get(self, origin: str) -> CachedRobots | None: ...

    async def set(self, origin: str, entry: CachedRobots, ttl: float = ...) -> None: ...


@dataclass(slots=True)
class _Entry:
    rules: RobotsRules
    expires: float


@dataclass(slots=True)
class _Counts:
    fetches: int = 0
    disallowed: int = 0


class Robots:
    """The crawler's robots.txt checker (:class:`archiver.pipeline.parts.RobotsChecker`)."""

    def __init__(
        self,
        *,
        agent: str = "archiver",
        obey: bool = True,
        exempt_requisites: bool = False,
        max_crawl_delay: float | None = 30.0,
        set_host_delay: HostDelay | None = None,
        cache_ttl: float = CACHE_TTL,
        retry_after: float = RETRY_UNREACHABLE,
        max_bytes: int = MAX_ROBOTS_BYTES,
        max_redirects: int = MAX_ROBOTS_REDIRECTS,
        max_origins: int = MAX_CACHED_ORIGINS,
        clock: Clock = time.monotonic,
        shared: RobotsCache | None = None,
    ) -> None:
        self.agent = agent
        self.token = product_token(agent)
        self.obey = obey
        self.exempt_requisites = exempt_requisites
        self.max_crawl_delay = max_crawl_delay
        self.cache_ttl = cache_ttl
        self.retry_after = retry_after
        self.max_bytes = max_bytes
        self.max_redirects = max_redirects
        self.max_origins = max_origins
        self._set_host_delay = set_host_delay
        self._clock = clock
        self._shared = shared
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: dict[str, asyncio.Future[None]] = {}
        self._reports: list[RobotsReport] = []
        self._sitemaps_seen: set[str] = set()
        self._verdicts: dict[Verdict, int] = dict.fromkeys(Verdict, 0)
        self._counts = _Counts()

    # -- the crawler's question ---------------------------------------------------------------

    async def allowed(self, item: CrawlItem, fetch: Fetch) -> bool:
        """May ``item`` be fetched? Fetches the origin's robots.txt through ``fetch`` if needed."""
        if not self.obey or is_robots_url(item.url):
            return True
        if self.exempt_requisites and item.is_requisite:
            return True
        rules = await self.rules_for(item.url, fetch)
        ok = rules.allowed(item.url)
        if not ok:
            self._counts.disallowed += 1
        return ok

    async def rules_for(self, url: str, fetch: Fetch) -> RobotsRules:
        """The rules in force for ``url``'s origin, fetching robots.txt once when needed."""
        origin = urls.origin(url)
        while True:
            entry = self._cache.get(origin)
            if entry is not None and self._clock() < entry.expires:
                self._cache.move_to_end(origin)
                return entry.rules
            pending = self._pending.get(origin)
            if pending is None:
                break
            # shield: a cancelled waiter must not cancel the fetch others wait for
            await asyncio.shield(pending)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[origin] = future
        try:
            if self._shared is not None:
                copy = await self._shared.get(origin)
                if copy is not None:
                    return self._adopt(origin, copy)
            fetched = await self._fetch(robots_url(url), fetch)
            rules = self._store(origin, fetched)
            verdict = fetched.rules.verdict
            if self._shared is not None and verdict is not Verdict.BLOCKED:
                # what others need to reach the same verdict: a parsed body, an "unavailable"
                # status, or no status at all for "unreachable" (retried sooner)
                known = verdict in (Verdict.PARSED, Verdict.UNAVAILABLE)
                shared_copy = CachedRobots(
                    fetched.body if known else b"",
                    fetched.status if known else None,
                    time.time(),
                    fetched.last_url,
                )
                await self._shared.set(
                    origin, shared_copy, self.cache_ttl if known else self.retry_after
                )
            return rules
        finally:
            # If this fetch was cancelled nothing was stored: a waiter loops and fetches itself.
            del self._pending[origin]
            future.set_result(None)

    def _adopt(self, origin: str, copy: CachedRobots) -> RobotsRules:
        """Rules from another process's fetch (a shared crawl): parsed here, cached here until
        the copy expires, its Crawl-delay applied; no fetch, no report."""
        status = copy.status
        if status is not None and 200 <= status < 300:
            rules = parse_robots(copy.body, self.token, url=copy.url, max_bytes=self.max_bytes)
            ttl = self.cache_ttl
        elif status is not None and 300 <= status < 500 and status != 429:
            rules, ttl = ALLOW_ALL, self.cache_ttl
        else:
            rules, ttl = DISALLOW_ALL, self.retry_after
        remaining = max(copy.fetched_at + ttl - time.time(), 1.0)
        self._cache[origin] = _Entry(rules, self._clock() + remaining)
        self._cache.move_to_end(origin)
        if rules.crawl_delay is not None and self._set_host_delay is not None:
            delay = rules.crawl_delay
            if self.max_crawl_delay is not None:
                delay = min(delay, self.max_crawl_delay)
            self._set_host_delay(urls.host_port(origin + "/"), delay)
        return rules

    def cached(self, url: str) -> RobotsRules | None:
        """The unexpired rules for ``url``'s origin, without fetching (None if unknown)."""
        entry = self._cache.get(urls.origin(url))
        if entry is None or self._clock() >= entry.expires:
            return None
        return entry.rules

    # -- results for the crawler ----------------------------------------------------------

    def take_reports(self) -> list[RobotsReport]:
        """Reports of the robots.txt fetches finished since the last call (each given once)."""
        reports, self._reports = self._reports, []
        return reports

    def statistics(self) -> RobotsStats:
        v = self._verdicts
        return RobotsStats(
            origins=len(self._cache),
            fetches=self._counts.fetches,
            parsed=v[Verdict.PARSED],
            unavailable=v[Verdict.UNAVAILABLE],
            unreachable=v[Verdict.UNREACHABLE],
            blocked=v[Verdict.BLOCKED],
            disallowed=self._counts.disallowed,
        )

    # -- fetching -------------------------------------------------------------------------

    async def _fetch(self, first: str, fetch: Fetch) -> _Fetched:
        """Fetch robots.txt, following redirects (RFC 9309 section 2.3.1)."""
        self._counts.fetches += 1
        url = first
        seen = {url}
        status: int | None = None
        for hop in range(self.max_redirects + 1):
            try:
                exchange = await fetch(url)
            except BlockedAddressError as exc:
                return _Fetched(first, RobotsRules(Verdict.BLOCKED), None, hop, str(exc))
            except FetchError as exc:
                return _Fetched(first, DISALLOW_ALL, None, hop, str(exc))
            status = exchange.status
            if 200 <= status < 300:
                rules, error, body = self._parse(exchange, url)
                return _Fetched(first, rules, status, hop, error, body, url)
            if 300 <= status < 400:
                location = exchange.header("Location")
                target = urls.resolve(url, location) if location else None
                if target is None or target in seen:
                    error = "redirect loop" if target else "redirect without a usable Location"
                    return _Fetched(first, ALLOW_ALL, status, hop, error)
                seen.add(target)
                url = target
                continue
            if 400 <= status < 500 and status != 429:
                return _Fetched(first, ALLOW_ALL, status, hop)
            return _Fetched(first, DISALLOW_ALL, status, hop, f"HTTP {status}")
        return _Fetched(first, ALLOW_ALL, status, self.max_redirects, "too many redirects")

    def _parse(self, exchange: Exchange, url: str) -> tuple[RobotsRules, str | None, bytes]:
        if exchange.truncated in (Truncation.TIME, Truncation.DISCONNECT, Truncation.UNSPECIFIED):
            # A file cut short may have lost the very rule that matters: unreachable.
            return DISALLOW_ALL, f"robots.txt cut short ({exchange.truncated.value})", b""
        try:
            body = decode_content(
                exchange.body or b"",
                exchange.header("Content-Encoding"),
                limit=self.max_bytes + 1,
            )
        except ContentDecodingError as exc:
            return DISALLOW_ALL, str(exc), b""
        return parse_robots(body, self.token, url=url, max_bytes=self.max_bytes), None, body

    def _store(self, origin: str, fetched: _Fetched) -> RobotsRules:
        """Cache the outcome, apply its Crawl-delay, queue its report; the rules in force."""
        rules = fetched.rules
        now = self._clock()
        verdict = rules.verdict
        self._verdicts[verdict] += 1
        kept = False
        if verdict in (Verdict.UNREACHABLE, Verdict.BLOCKED):
            previous = self._cache.get(origin)
            if previous is not None and previous.rules.verdict is Verdict.PARSED:
                rules, kept = previous.rules, True  # RFC 9309 section 2.4
            ttl = self.retry_after
        else:
            ttl = self.cache_ttl
        self._cache[origin] = _Entry(rules, now + ttl)
        self._cache.move_to_end(origin)
        while len(self._cache) > self.max_origins:
            self._cache.popitem(last=False)
        applied = None
        if rules.crawl_delay is not None and not kept:
            applied = rules.crawl_delay
            if self.max_crawl_delay is not None:
                applied = min(applied, self.max_crawl_delay)
            if self._set_host_delay is not None:
                self._set_host_delay(urls.host_port(origin + "/"), applied)
        new_sitemaps = tuple(s for s in rules.sitemaps if s not in self._sitemaps_seen)
        self._sitemaps_seen.update(new_sitemaps)
        self._reports.append(
            RobotsReport(
                origin=origin,
                url=fetched.url,
                verdict=verdict,
                status=fetched.status,
                redirects=fetched.redirects,
                crawl_delay=applied,
                sitemaps=new_sitemaps,
                error=fetched.error,
                truncated=rules.truncated and not kept,
                kept_cached_copy=kept,
            )
        )
        return rules
