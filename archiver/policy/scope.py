"""Scope rules and crawler-trap defences: should a discovered URL be crawled? (pure)

Called for every discovered link, redirect target and sitemap entry before it is queued, so it
is written to be cheap: string operations, precompiled regexes, no I/O.

Order of decisions (the first that applies wins), each skip with a :class:`SkipReason`:

1. URL length over ``max_url_length`` -> ``url-too-long``;
2. an exclusion regex matches -> ``excluded``;
3. trap shapes -> ``trap``: too many path segments; a segment or run of segments repeated more
   than ``max_segment_repeats`` times (``/a/b/a/b/a/b``, as Heritrix's PathologicalPath and
   Zeno's path-loop rules); a query key repeated too often; and the endless-calendar shape:
   URLs that differ only in their numbers (``/cal?month=N``) found at link depths spread over
   more than ``max_pattern_depth`` hops: an endless calendar keeps getting deeper one month per
   hop, while a catalogue of numbered pages, however large, sits within a few hops of its
   listing pages;
4. seeds, ``include`` matches, and redirect targets of seeds (the seed moved: its new host joins
   the scope, as Heritrix's seedsRedirectNewSeeds) are in scope;
5. page requisites (hop ``E``) of in-scope pages are in scope on any host when
   ``page_requisites`` is on (up to three embeds deep: a stylesheet's fonts and images);
   deeper ones (a JavaScript module graph imports on and on) where a page would be;
6. otherwise the mode decides: ``page`` (the seeds only), ``prefix`` (under a seed's directory),
   ``host`` (a seed's host or its ``www.`` twin), ``domain`` (a seed's domain and subdomains),
   ``any``; a page outside is still crawled within ``extra_hops`` link hops of a page inside
   (Browsertrix's ``--extraHops``: the pages a site links to, not the sites they link to),
   counted on the item (:attr:`~archiver.models.CrawlItem.extra`, kept by every frontier, so
   a resumed crawl counts on); a redirect keeps its source's count (the same page, moved),
   except from a page inside, where it is the first hop outside;
7. a page deeper than ``max_depth`` link hops -> ``depth``; a host over its URL budget ->
   ``host-budget``.

Every trap that trips is remembered with the pattern that tripped it, for the summary.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from archiver.models import CrawlItem, Hop, SkipReason
from archiver.urls import host_port, hostname

_DIGITS = re.compile(r"\d+")
MAX_EMBED_CHAIN = 3
MAX_TRACKED_PATTERNS = 200_000


@dataclass(frozen=True, slots=True)
class ScopeRules:
    seeds: tuple[str, ...]
    mode: str = "host"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    page_requisites: bool = True
    max_url_length: int = 2048
    max_path_segments: int = 32
    max_segment_repeats: int = 3
    max_query_key_repeats: int = 3
    max_pattern_depth: int | None = 100
    max_urls_per_host: int | None = None
    #: pages outside the scope crawled within this many link hops of a page inside
    extra_hops: int = 0
    #: sitemaps the operator named (``--sitemap``): in scope wherever they are
    sitemaps: tuple[str, ...] = ()


@dataclass(slots=True)
class TrapReport:
    """A trap that tripped: its kind, the pattern, and how many URLs it stopped."""

    kind: str
    pattern: str
    example: str
    count: int = 0


def url_pattern(url: str) -> str:
    """The URL with every digit run replaced by ``N`` (fragment-free, normalised URLs)."""
    return _DIGITS.sub("N", url)


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def _seed_prefix(seed: str) -> str:
    """A seed's directory: ``http://h/a/b.html`` -> ``http://h/a/``."""
    base = seed.split("?", 1)[0]
    return base[: base.rfind("/") + 1]


def _scheme_free(url: str) -> str:
    return url.split("://", 1)[1] if "://" in url else url


def _host_part(scheme_free: str) -> str:
    """``host[:port]`` of a URL without its scheme."""
    end = len(scheme_free)
    for stop in "/?#":
        at = scheme_free.find(stop)
        if at >= 0:
            end = min(end, at)
    return scheme_free[:end]


@dataclass(slots=True)
class _Counters:
    #: numeric pattern -> (shallowest, deepest) link depth seen
    patterns: dict[str, tuple[int, int]] = field(default_factory=dict)
    hosts: Counter[str] = field(default_factory=Counter)


class Scope:
    """Decides whether discovered URLs are crawled; keeps the trap report."""

    def __init__(self, rules: ScopeRules) -> None:
        self.rules = rules
        self._seeds = set(rules.sitemaps)
        self._hosts: set[str] = set()
        self._domains: set[str] = set()
        #: the seeds' directories (scheme left out), by the host part they start with: a URL
        #: is compared with its own host's prefixes only, whatever the number of seeds
        self._prefixes: dict[str, list[str]] = {}
        self.add_seeds(rules.seeds)
        self._include = [re.compile(p) for p in rules.include]
        self._exclude = (
            re.compile("|".join(f"(?:{p})" for p in rules.exclude)) if rules.exclude else None
        )
        self._counters = _Counters()
        self.traps: dict[tuple[str, str], TrapReport] = {}

    def add_seeds(self, seeds: Iterable[str]) -> None:
        """Seeds the crawl learns of while it runs (a seeds file is read in batches): in scope
        themselves, and what they put in scope (their host, domain, directory)."""
        for seed in seeds:
            self._seeds.add(seed)
            self.add_seed_host(seed)
            prefix = _scheme_free(_seed_prefix(seed))
            prefixes = self._prefixes.setdefault(_host_part(prefix), [])
            if prefix not in prefixes:
                prefixes.append(prefix)

    def add_seed_host(self, url: str) -> None:
        host = hostname(url)
        bare = _strip_www(host)
        self._hosts.update({host, bare, "www." + bare})
        self._domains.add(bare)

    # -- the decision ---------------------------------------------------------------------

    def check(self, item: CrawlItem) -> SkipReason | None:
        """None when ``item`` should be queued, else why not."""
        return self.admit(item)[0]

    def admit(self, item: CrawlItem) -> tuple[SkipReason | None, CrawlItem]:
        """None and the item to queue (its :attr:`~archiver.models.CrawlItem.extra` count set
        by where it is), or why not and the item as given."""
        url = item.url
        rules = self.rules
        if len(url) > rules.max_url_length:
            return SkipReason.URL_TOO_LONG, item
        if self._exclude is not None and self._exclude.search(url):
            return SkipReason.EXCLUDED, item
        trap = self._trap(item)
        if trap is not None:
            return SkipReason.TRAP, item
        if self._in_scope(item):
            if item.extra:
                item = dataclasses.replace(item, extra=0)
        else:
            extra = self._extra_hop(item)
            if extra is None:
                return SkipReason.SCOPE, item
            item = dataclasses.replace(item, extra=extra)
        return self._limits(item), item

    def _extra_hop(self, item: CrawlItem) -> int | None:
        """The item's count of pages outside the scope if ``extra_hops`` lets it in, else None
        (only pages and redirects: sitemaps are not pages, requisites are in scope already)."""
        limit = self.rules.extra_hops
        if not limit or not item.hops:
            return None
        last = item.hops[-1]
        if last == Hop.REDIRECT and item.extra:
            return item.extra  # an outside page that moved: still the same hop
        if last not in (Hop.LINK, Hop.REDIRECT) or item.extra >= limit:
            return None
        return item.extra + 1

    def _limits(self, item: CrawlItem) -> SkipReason | None:
        """Depth and the per-host budget, for an item in scope."""
        rules = self.rules
        url = item.url
        if (
            rules.max_depth is not None
            and item.depth > rules.max_depth
            and not item.is_requisite
            and not item.is_seed
        ):
            return SkipReason.DEPTH
        if rules.max_urls_per_host is not None:
            host = host_port(url)
            if self._counters.hosts[host] >= rules.max_urls_per_host:
                return SkipReason.HOST_BUDGET
        return None

    def exclusions(self) -> tuple[str, ...]:
        """The exclusion patterns (``--exclude``, ``--exclude-file``): what a worker checks
        again when it leases a URL queued before they were given (a resumed crawl)."""
        return self.rules.exclude

    def accepted(self, item: CrawlItem) -> None:
        """Count a URL that was actually queued (new to the frontier) against budgets."""
        if self.rules.max_urls_per_host is not None:
            self._counters.hosts[host_port(item.url)] += 1
        if self.rules.max_pattern_depth is not None and not item.is_requisite:
            pattern = url_pattern(item.url)
            if pattern != item.url:
                patterns = self._counters.patterns
                low, high = patterns.get(pattern, (item.depth, item.depth))
                if len(patterns) < MAX_TRACKED_PATTERNS or pattern in patterns:
                    patterns[pattern] = (min(low, item.depth), max(high, item.depth))
        if item.hops and set(item.hops) == {Hop.REDIRECT}:
            self.add_seed_host(item.url)  # a seed that redirected: its new home is in scope

    def unaccepted(self, item: CrawlItem) -> None:
        """Undo the budget count of :meth:`accepted` for a URL the frontier had already seen."""
        if self.rules.max_urls_per_host is not None:
            self._counters.hosts[host_port(item.url)] -= 1

    def _in_scope(self, item: CrawlItem) -> bool:
        url = item.url
        if item.is_seed or url in self._seeds:
            return True
        if item.hops and set(item.hops) == {Hop.REDIRECT}:
            return True
        if any(p.search(url) for p in self._include):
            return True
        if item.is_requisite:
            if not self.rules.page_requisites:
                return False
            embeds = item.hops.replace(Hop.REDIRECT, "")
            if len(embeds) - len(embeds.rstrip(Hop.EMBED)) <= MAX_EMBED_CHAIN:
                return True
            # deeper (a module graph: entry -> chunk -> chunk -> ...): in scope where a page
            # would be, so a site's own modules are followed and other hosts' are not
        mode = self.rules.mode
        if mode == "any":
            return True
        if mode == "page":
            return False
        host = hostname(url)
        if mode == "host":
            return host in self._hosts
        if mode == "domain":  # the host or a parent domain is a seed's (each suffix looked up)
            labels = _strip_www(host).split(".")
            return any(".".join(labels[i:]) in self._domains for i in range(len(labels)))
        # prefix: under a seed's directory, http and https alike
        rest = _scheme_free(url)
        prefixes = self._prefixes.get(_host_part(rest), ())
        return any(rest.startswith(prefix) for prefix in prefixes)

    def _trap(self, item: CrawlItem) -> str | None:
        url = item.url
        rules = self.rules
        rest = _scheme_free(url)
        slash = rest.find("/")
        path_query = rest[slash:] if slash >= 0 else "/"
        path, _, query = path_query.partition("?")
        segments = [s for s in path.split("/") if s]
        if len(segments) > rules.max_path_segments:
            return self._trip(
                "too-many-path-segments", f"more than {rules.max_path_segments} segments", url
            )
        repeated = _repeated_run(segments, rules.max_segment_repeats)
        if repeated is not None:
            return self._trip("repeated-path-segments", "/" + "/".join(repeated) + " repeated", url)
        if query:
            keys = Counter(part.split("=", 1)[0] for part in query.split("&") if part)
            key, count = keys.most_common(1)[0] if keys else ("", 0)
            if count > rules.max_query_key_repeats:
                return self._trip("repeated-query-key", f"query key {key!r} repeated", url)
        limit = rules.max_pattern_depth
        if limit is not None and not item.is_requisite:
            pattern = url_pattern(url)
            seen = self._counters.patterns.get(pattern) if pattern != url else None
            if seen is not None and item.depth - seen[0] > limit:
                return self._trip("endless-numbered-urls", pattern, url)
        return None

    def _trip(self, kind: str, pattern: str, url: str) -> str:
        key = (kind, pattern)
        report = self.traps.get(key)
        if report is None:
            report = self.traps[key] = TrapReport(kind, pattern, url)
        report.count += 1
        return kind

    def trap_summary(self) -> list[dict[str, object]]:
        """The traps that tripped, most frequent first (for summary.json)."""
        reports = sorted(self.traps.values(), key=lambda r: -r.count)
        return [
            {"kind": r.kind, "pattern": r.pattern, "example": r.example, "skipped": r.count}
            for r in reports
        ]


def _repeated_run(segments: list[str], max_repeats: int) -> list[str] | None:
    """A run of 1-3 segments that repeats more than ``max_repeats`` times in a row."""
    n = len(segments)
    if n <= max_repeats:
        return None
    for size in (1, 2, 3):
        for start in range(0, n - size * (max_repeats + 1) + 1):
            run = segments[start : start + size]
            repeats = 1
            pos = start + size
            while pos + size <= n and segments[pos : pos + size] == run:
                repeats += 1
                pos += size
            if repeats > max_repeats:
                return run
    return None


def seeds_in_order(seeds: Iterable[str]) -> tuple[str, ...]:
    """Deduplicate seeds keeping their order."""
    return tuple(dict.fromkeys(seeds))
