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
4. seeds, ``include`` matches (the crawl's and the judging seed's), and redirect targets of
   seeds (the seed moved: its new host joins its site, as Heritrix's seedsRedirectNewSeeds)
   are in scope;
5. page requisites (hop ``E``) of in-scope pages are in scope on any host when
   ``page_requisites`` is on (up to three embeds deep: a stylesheet's fonts and images);
   deeper ones (a JavaScript module graph imports on and on) where a page would be;
6. otherwise a URL is in scope when it is on a seed's site (:mod:`archiver.policy.seeds`: the
   seed URL itself for ``page``, under its directory for ``prefix``, its host or that host's
   ``www.`` twin for ``host``, its domain and subdomains for ``domain``, anything for ``any``;
   each seed in its own mode, the crawl's ``--scope`` when it gave none); a page outside is
   still crawled within ``extra_hops`` link hops of a page inside (Browsertrix's
   ``--extraHops``: the pages a site links to, not the sites they link to), counted on the item
   (:attr:`~archiver.models.CrawlItem.extra`, kept by every frontier, so a resumed crawl counts
   on); a redirect keeps its source's count (the same page, moved), except from a page inside,
   where it is the first hop outside;
7. a page deeper than ``max_depth`` link hops -> ``depth``; a host over its URL budget ->
   ``host-budget``.

Which seed's rules judge a URL (its exclusions, includes, depth, extra hops) is decided first:
the seed whose site the URL is on, the most specific first, else the seed of the page that led
to it (:mod:`archiver.policy.seeds` says why); the item is queued with that seed's key.

Every trap that trips is remembered with the pattern that tripped it, for the summary.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from archiver.models import CrawlItem, Hop, SkipReason
from archiver.policy.seeds import Seed, SeedRules, SeedSites, SeedTable, scheme_free
from archiver.urls import host_port

_DIGITS = re.compile(r"\d+")
MAX_EMBED_CHAIN = 3
MAX_TRACKED_PATTERNS = 200_000


@dataclass(frozen=True, slots=True)
class ScopeRules:
    """The crawl's scope: its seeds with its own rules (``mode``, ``max_depth`` and
    ``extra_hops`` are those of every seed that gave none), its patterns and trap limits."""

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


@dataclass(slots=True)
class _Counters:
    #: numeric pattern -> (shallowest, deepest) link depth seen
    patterns: dict[str, tuple[int, int]] = field(default_factory=dict)
    hosts: Counter[str] = field(default_factory=Counter)


class Scope:
    """Decides whether discovered URLs are crawled, and by which seed's rules; keeps the trap
    report. ``table`` holds the seeds' rules (the crawl's own, from ``rules``, when None);
    ``seeds`` are the seeds in their order, each with its rules (``rules.seeds`` with the
    crawl's own, when None)."""

    def __init__(
        self,
        rules: ScopeRules,
        table: SeedTable | None = None,
        seeds: Iterable[Seed] | None = None,
    ) -> None:
        self.rules = rules
        self.table = table or SeedTable(
            SeedRules(mode=rules.mode, max_depth=rules.max_depth, extra_hops=rules.extra_hops)
        )
        self._named = set(rules.sitemaps)
        self._sites = SeedSites()
        self._include = [re.compile(p) for p in rules.include]
        self._exclude = (
            re.compile("|".join(f"(?:{p})" for p in rules.exclude)) if rules.exclude else None
        )
        self._counters = _Counters()
        self.traps: dict[tuple[str, str], TrapReport] = {}
        default = self.table.default
        self.add_seeds(seeds if seeds is not None else (Seed(u, default) for u in rules.seeds))

    def add_seeds(self, seeds: Iterable[Seed]) -> None:
        """Seeds and their sites (the seeds of a file come in batches while the crawl runs)."""
        seeds = list(seeds)
        self.table.add(seeds)
        for seed in seeds:
            self._sites.add(seed.url, seed.key, seed.rules.mode)

    def owner(self, url: str) -> int | None:
        """The key of the seed whose site ``url`` is on (the most specific), or None."""
        return self._sites.owner(url)

    # -- the decision ---------------------------------------------------------------------

    def check(self, item: CrawlItem) -> SkipReason | None:
        """None when ``item`` should be queued, else why not."""
        return self.admit(item)[0]

    def admit(self, item: CrawlItem) -> tuple[SkipReason | None, CrawlItem]:
        """None and the item to queue (its seed set to the seed whose rules judged it, its
        :attr:`~archiver.models.CrawlItem.extra` count set by where it is), or why not and the
        item as given."""
        url = item.url
        rules = self.rules
        if len(url) > rules.max_url_length:
            return SkipReason.URL_TOO_LONG, item
        if self._exclude is not None and self._exclude.search(url):
            return SkipReason.EXCLUDED, item
        trap = self._trap(item)
        if trap is not None:
            return SkipReason.TRAP, item
        owner = self._sites.owner(url)
        key = item.seed if owner is None else owner
        own = self.table.rules(key)
        compiled = self.table.compiled(own)
        if compiled.exclude is not None and compiled.exclude.search(url):
            return SkipReason.EXCLUDED, item
        if self._in_scope(item, owner is not None, compiled.include):
            if item.extra or item.seed != key:
                item = dataclasses.replace(item, extra=0, seed=key)
        else:
            extra = self._extra_hop(item, own.extra_hops)
            if extra is None:
                return SkipReason.SCOPE, item
            item = dataclasses.replace(item, extra=extra, seed=key)
        return self._limits(item, own), item

    def admit_added(self, url: str, redirects: int) -> tuple[SkipReason | None, CrawlItem]:
        """A URL the operator adds (``archiver add``): in scope when it is on a seed's site or
        matches an ``include`` (an extra hop is a page's, not the operator's), judged by its
        seed's rules, queued as a link that no page led to (depth 0, no ``via``)."""
        item = CrawlItem(url, redirects_left=redirects, hops=Hop.LINK)
        reason, child = self.admit(item)
        if reason is None and child.extra:
            return SkipReason.SCOPE, item
        return reason, child

    def _extra_hop(self, item: CrawlItem, limit: int) -> int | None:
        """The item's count of pages outside the scope if its seed's ``extra_hops`` lets it in,
        else None (only pages and redirects: sitemaps are not pages, requisites are in scope
        already)."""
        if not limit or not item.hops:
            return None
        last = item.hops[-1]
        if last == Hop.REDIRECT and item.extra:
            return item.extra  # an outside page that moved: still the same hop
        if last not in (Hop.LINK, Hop.REDIRECT) or item.extra >= limit:
            return None
        return item.extra + 1

    def _limits(self, item: CrawlItem, own: SeedRules) -> SkipReason | None:
        """Depth (the judging seed's) and the per-host budget, for an item in scope."""
        rules = self.rules
        if (
            own.max_depth is not None
            and item.depth > own.max_depth
            and not item.is_requisite
            and not item.is_seed
        ):
            return SkipReason.DEPTH
        if rules.max_urls_per_host is not None:
            host = host_port(item.url)
            if self._counters.hosts[host] >= rules.max_urls_per_host:
                return SkipReason.HOST_BUDGET
        return None

    def exclusions(self) -> tuple[str, ...]:
        """The exclusion patterns (``--exclude``, ``--exclude-file``): what a worker checks
        again when it leases a URL queued before they were given (a resumed crawl)."""
        return self.rules.exclude

    def seed_excluded(self, item: CrawlItem) -> bool:
        """Whether the exclusions of the seed that judges ``item`` match it (checked again at
        lease time, as the crawl's are: a resumed crawl may have been given new ones)."""
        pattern = self.table.compiled(self.table.rules(item.seed)).exclude
        return pattern is not None and pattern.search(item.url) is not None

    @property
    def extra_hops(self) -> bool:
        """Whether any seed lets pages outside the scope in (a scope verdict then depends on
        the path, and is not cached)."""
        return self.table.any_extra_hops

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
            # a seed that redirected: its new home is on its site
            self._sites.moved(item.url, item.seed, self.table.rules(item.seed).mode)

    def unaccepted(self, item: CrawlItem) -> None:
        """Undo the budget count of :meth:`accepted` for a URL the frontier had already seen."""
        if self.rules.max_urls_per_host is not None:
            self._counters.hosts[host_port(item.url)] -= 1

    def _in_scope(
        self, item: CrawlItem, on_a_site: bool, include: tuple[re.Pattern[str], ...]
    ) -> bool:
        url = item.url
        if item.is_seed or url in self._named:
            return True
        if item.hops and set(item.hops) == {Hop.REDIRECT}:
            return True
        if any(p.search(url) for p in self._include) or any(p.search(url) for p in include):
            return True
        if item.is_requisite:
            if not self.rules.page_requisites:
                return False
            embeds = item.hops.replace(Hop.REDIRECT, "")
            if len(embeds) - len(embeds.rstrip(Hop.EMBED)) <= MAX_EMBED_CHAIN:
                return True
            # deeper (a module graph: entry -> chunk -> chunk -> ...): in scope where a page
            # would be, so a site's own modules are followed and other hosts' are not
        return on_a_site

    def _trap(self, item: CrawlItem) -> str | None:
        url = item.url
        rules = self.rules
        rest = scheme_free(url)
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
