"""Per-seed rules: which seed a URL belongs to, and what that seed's rules say (pure).

One job often covers sites that need different rules (a blog crawled whole, a documentation
prefix two links deep, a forum with its calendar excluded). Each seed may carry its own scope,
include and exclude patterns, depth, extra hops, page budget, per-host delay and browser mode
(``[[seed]]`` tables of a config file, JSON lines of a seeds file: :mod:`archiver.config.seeds`);
what it leaves out is the crawl's.

Which seed judges a URL. A seed's *site* is what its scope names: the seed URL itself
(``page``), its directory (``prefix``), its host and that host's ``www.`` twin (``host``), its
domain with every subdomain (``domain``), or every URL (``any``). A URL is judged by the seed
whose site it is on; when it is on the sites of several seeds, by the most specific of them:
the seed URL itself, then the longest directory, then the host, then the longest domain, then
``any``, and between equally specific sites the seed given first. This is how Heritrix applies
its sheets (the most specific SURT prefix wins), and it makes the answer the same whichever
page a URL is found on first: the crawl's order, which depends on the network, never decides
which rules apply. A URL on no seed's site (a page requisite on another host, an ``include``
match, a page within ``extra_hops``) is judged by the seed of the page that led to it, whose
rules let it in. Link depth counts the hops from the seed the path started at, whichever seed
judges the URL.

A URL carries its seed's key (:attr:`archiver.models.CrawlItem.seed`, kept by every frontier),
so a resumed crawl, or another process of a shared one, judges a queued URL as the run that
queued it did. A seed's key is a hash of its URL (:func:`seed_key`): the same in every process
and every run, with no table to agree on. The rules of the seeds that have their own are
stored with the frontier (a :class:`SeedStore`), for processes and runs that have not read
them from their seeds file yet.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from archiver.urls import hostname

#: Bytes of BLAKE2b in a seed's key: 48 bits, exact in every JSON reader (and in Lua's
#: numbers), with no collision to expect below millions of seeds.
SEED_KEY_BYTES = 6
#: Seeds whose URLs a :class:`SeedTable` keeps to name them (every seed with rules of its own
#: besides): a summary names its busiest seeds, and a seeds file may hold millions.
NAMED_SEEDS = 10_000
#: Scope modes, from the narrowest site to the widest.
MODES = ("page", "prefix", "host", "domain", "any")


def seed_key(url: str) -> int:
    """The key of the seed at ``url`` (normalised): 48 bits of BLAKE2b, never 0 (0 is the
    crawl's own rules, for what no seed judges)."""
    digest = hashlib.blake2b(url.encode("utf-8"), digest_size=SEED_KEY_BYTES).digest()
    return int.from_bytes(digest, "big") or 1


@dataclass(frozen=True, slots=True)
class SeedRules:
    """One seed's rules, resolved: the seed's own values where it gave them, the crawl's
    elsewhere. ``include`` and ``exclude`` are the seed's own patterns, checked besides the
    crawl's (``--include``, ``--exclude`` hold for every seed); ``max_pages`` is the seed's own
    budget (``--max-pages`` stays the crawl's); ``per_host_delay`` None is the crawl's delay,
    as ``control.toml`` may change it while the crawl runs."""

    mode: str = "host"
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_depth: int | None = None
    extra_hops: int = 0
    max_pages: int | None = None
    per_host_delay: float | None = None
    browser: str = "off"


@dataclass(frozen=True, slots=True)
class Seed:
    """A seed: its URL (normalised), its key and its rules. ``spec`` is the seed's own table as
    given (JSON text), for the :class:`SeedStore`; None when it gave no rules of its own."""

    url: str
    rules: SeedRules
    spec: str | None = None
    key: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", seed_key(self.url))


class SeedStore(Protocol):
    """Where the seeds with rules of their own are kept for the crawl's other processes and
    later runs (each frontier backend has one: a dict, a table, a Redis hash)."""

    async def keep_seeds(self, specs: Mapping[int, str]) -> None:
        """Keep each seed's table (JSON text) under its key."""
        ...

    async def seed_specs(self, keys: Collection[int]) -> dict[int, str]:
        """The tables kept under ``keys`` (a key not kept is left out)."""
        ...


class MemorySeedStore:
    """A :class:`SeedStore` in this process (the memory frontier's crawl: nothing to share)."""

    def __init__(self) -> None:
        self._specs: dict[int, str] = {}

    async def keep_seeds(self, specs: Mapping[int, str]) -> None:
        self._specs.update(specs)

    async def seed_specs(self, keys: Collection[int]) -> dict[int, str]:
        return {key: self._specs[key] for key in keys if key in self._specs}


def _strip_www(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def scheme_free(url: str) -> str:
    return url.split("://", 1)[1] if "://" in url else url


def host_part(rest: str) -> str:
    """``host[:port]`` of a URL without its scheme."""
    end = len(rest)
    for stop in "/?#":
        at = rest.find(stop)
        if at >= 0:
            end = min(end, at)
    return rest[:end]


def seed_prefix(seed: str) -> str:
    """A seed's directory, without its scheme: ``http://h/a/b.html`` -> ``h/a/``."""
    base = seed.split("?", 1)[0]
    return scheme_free(base[: base.rfind("/") + 1])


class SeedSites:
    """The seeds' sites, and which seed's site a URL is on (see the module docstring): a dict
    lookup per kind of site, whatever the number of seeds."""

    def __init__(self) -> None:
        self._pages: dict[str, int] = {}
        #: directories by the host part they start with: ``[(prefix, key), ...]``
        self._prefixes: dict[str, list[tuple[str, int]]] = {}
        self._hosts: dict[str, int] = {}
        self._domains: dict[str, int] = {}
        self._any: int | None = None

    def add(self, url: str, key: int, mode: str) -> None:
        """Add the site of the seed at ``url`` (a site taken already keeps its first seed)."""
        if mode == "page":
            self._pages.setdefault(url, key)
        elif mode == "prefix":
            prefix = seed_prefix(url)
            prefixes = self._prefixes.setdefault(host_part(prefix), [])
            if all(known != prefix for known, _ in prefixes):
                prefixes.append((prefix, key))
                prefixes.sort(key=lambda entry: -len(entry[0]))  # longest first, stable
        elif mode == "host":
            bare = _strip_www(hostname(url))
            for host in (bare, "www." + bare):
                self._hosts.setdefault(host, key)
        elif mode == "domain":
            self._domains.setdefault(_strip_www(hostname(url)), key)
        elif self._any is None:
            self._any = key

    def moved(self, url: str, key: int, mode: str) -> None:
        """A seed redirected to ``url``: its new home joins its site (host and domain: the
        new host or domain; a page or a directory does not move with a redirect)."""
        if mode in ("host", "domain"):
            self.add(url, key, mode)

    def owner(self, url: str) -> int | None:
        """The key of the seed whose site is the most specific one ``url`` is on, or None."""
        key = self._pages.get(url)
        if key is not None:
            return key
        rest = scheme_free(url)
        prefixes = self._prefixes.get(host_part(rest)) if self._prefixes else None
        if prefixes:
            for prefix, key in prefixes:
                if rest.startswith(prefix):
                    return key
        host = hostname(url) if self._hosts or self._domains else ""
        if self._hosts:
            key = self._hosts.get(host)
            if key is not None:
                return key
        if self._domains:
            name = _strip_www(host)
            while name:
                key = self._domains.get(name)
                if key is not None:
                    return key
                _, _, name = name.partition(".")
        return self._any


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """A seed's patterns, compiled once per distinct rules."""

    include: tuple[re.Pattern[str], ...]
    exclude: re.Pattern[str] | None


def compile_rules(rules: SeedRules) -> CompiledRules:
    exclude = "|".join(f"(?:{p})" for p in rules.exclude)
    return CompiledRules(
        tuple(re.compile(p) for p in rules.include), re.compile(exclude) if exclude else None
    )


#: How a :class:`SeedTable` finds a seed it does not know: the seed kept under a key, or None.
SeedLoader = Callable[[Collection[int]], Awaitable[list[Seed]]]


class SeedTable:
    """Each seed's rules by its key: the seeds this process was given, the crawl's own rules for
    key 0 and for a seed that gave none, and what ``loader`` finds for a key learned from a
    queued URL (a seed another process, or an earlier run, read; looked up once, then known).
    """

    def __init__(self, default: SeedRules, loader: SeedLoader | None = None) -> None:
        self.default = default
        self._loader = loader
        self._rules: dict[int, SeedRules] = {}
        self._urls: dict[int, str] = {}
        self._compiled: dict[SeedRules, CompiledRules] = {}
        #: keys looked up and not kept: seeds with the crawl's own rules
        self._plain: set[int] = set()

    def add(self, seeds: Iterable[Seed]) -> None:
        """Seeds and their rules (a seed given again keeps its first rules and URL)."""
        urls, rules, plain = self._urls, self._rules, self._plain
        for seed in seeds:
            key = seed.key
            own = seed.rules != self.default
            if own or len(urls) < NAMED_SEEDS:
                urls.setdefault(key, seed.url)
            if own:
                rules.setdefault(key, seed.rules)
                plain.discard(key)
            elif len(plain) < NAMED_SEEDS * 10:
                plain.add(key)

    def rules(self, key: int) -> SeedRules:
        """The rules of the seed ``key`` as far as this process knows (see :meth:`learn`)."""
        return self._rules.get(key, self.default)

    def compiled(self, rules: SeedRules) -> CompiledRules:
        found = self._compiled.get(rules)
        if found is None:
            found = self._compiled[rules] = compile_rules(rules)
        return found

    def url(self, key: int) -> str | None:
        """The seed's URL, when this process knows it (the first :data:`NAMED_SEEDS` seeds
        and every seed with rules of its own)."""
        return self._urls.get(key)

    def known(self, key: int) -> bool:
        return key == 0 or key in self._rules or key in self._urls or key in self._plain

    async def learn(self, key: int) -> SeedRules:
        """The rules of seed ``key``, asking the loader once for a seed not known here."""
        if not self.known(key) and self._loader is not None:
            found = await self._loader([key])
            self.add(found)
            if not any(seed.key == key for seed in found):
                if len(self._plain) >= NAMED_SEEDS * 10:
                    self._plain.clear()  # asked again later: bounded memory
                self._plain.add(key)
        return self.rules(key)

    @property
    def any_extra_hops(self) -> bool:
        """Whether any seed lets pages outside the scope in (``extra_hops``)."""
        return bool(self.default.extra_hops) or any(r.extra_hops for r in self._rules.values())

    def all_rules(self) -> Iterable[SeedRules]:
        """The distinct rules of the seeds known here, the crawl's own first."""
        return dict.fromkeys([self.default, *self._rules.values()])


__all__ = [
    "MODES",
    "NAMED_SEEDS",
    "SEED_KEY_BYTES",
    "CompiledRules",
    "MemorySeedStore",
    "Seed",
    "SeedLoader",
    "SeedRules",
    "SeedSites",
    "SeedStore",
    "SeedTable",
    "compile_rules",
    "host_part",
    "scheme_free",
    "seed_key",
    "seed_prefix",
]
