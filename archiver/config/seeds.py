"""The crawl's seeds and the rules each is judged by, from its settings.

Seeds come from three places, in this order (a URL given twice keeps its first place):

* ``[[seed]]`` tables of the config file, each with its own rules (:class:`SeedEntry`);
* the command line's URLs, or ``[crawl] seeds`` when the command line gives none: the crawl's
  own rules;
* a ``--seeds-file``: one seed per line, a URL (the crawl's rules) or a JSON object with the
  keys of a ``[[seed]]`` table (``{"url": "https://example.org/docs/", "max_depth": 2}``),
  Browsertrix Crawler's per-seed settings written one per line; read in batches while the
  crawl runs (:mod:`archiver.run.seeds`), each line by :func:`seed_line`.

A seed's table becomes :class:`~archiver.policy.seeds.SeedRules` here: its own values over the
crawl's (``scope`` names the mode; ``include`` and ``exclude`` add to the crawl's, which hold
everywhere). Its JSON text is what the frontier keeps for other processes and later runs
(:class:`~archiver.policy.seeds.SeedStore`), read back by :func:`seed_from_spec` against the
settings of the run that reads it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from archiver import urls
from archiver.config.settings import SeedEntry, Settings, parse_seed_entry
from archiver.errors import SettingsError
from archiver.policy.seeds import Seed, SeedRules

#: A seed's key -> the field of :class:`~archiver.policy.seeds.SeedRules` it sets.
RULE_FIELDS = {"scope": "mode"}


def crawl_rules(s: Settings) -> SeedRules:
    """The crawl's own rules: those of every seed that gives none."""
    return SeedRules(
        mode=s.scope,
        max_depth=s.max_depth,
        extra_hops=s.extra_hops,
        browser=s.browser,
    )


def normalized(url: str) -> str:
    """A seed as the crawl queues it (``example.org`` is ``http://example.org/``)."""
    return urls.seed_url(url)


def resolve(entry: SeedEntry, s: Settings) -> Seed:
    """A seed and its rules: its own values over the crawl's."""
    own = {RULE_FIELDS.get(key, key): value for key, value in entry.own}
    if "per_host_delay" in own and own["per_host_delay"] is None:
        own["per_host_delay"] = 0.0  # "0": no delay for this seed's hosts, not the crawl's
    rules = dataclasses.replace(crawl_rules(s), **own)
    spec = json.dumps(entry.to_json(), separators=(",", ":"), ensure_ascii=False)
    return Seed(normalized(entry.url), rules, spec if entry.own else None)


def seed_line(text: str, s: Settings, where: str) -> Seed:
    """One line of a seeds file: a URL, or a JSON object with the keys of a ``[[seed]]``
    table. Raises :class:`~archiver.errors.SettingsError` naming ``where``."""
    if text.startswith("{"):
        try:
            table: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsError(where, f"not a URL nor a JSON object: {exc}") from None
        return resolve(parse_seed_entry(table, where), s)
    try:
        return Seed(normalized(text), crawl_rules(s))
    except urls.InvalidURLError as exc:
        raise SettingsError(where, f"{text!r} is not an http(s) URL: {exc}") from None


def crawl_seeds(s: Settings) -> tuple[Seed, ...]:
    """The seeds of the config file and the command line with their rules, in order, each URL
    once (its first place wins); no seed at all, and no seeds file, is a usage error."""
    found: list[Seed] = [resolve(entry, s) for entry in s.seed]
    plain = crawl_rules(s)
    for url in s.seeds:
        try:
            found.append(Seed(normalized(url), plain))
        except urls.InvalidURLError as exc:
            raise SettingsError("seeds", f"{url!r} is not an http(s) URL: {exc}") from None
    if not found and s.seeds_file is None:
        raise SettingsError("seeds", "give at least one seed URL (or --seeds-file, or [[seed]])")
    return first_of_each(found)


def first_of_each(seeds: Iterable[Seed]) -> tuple[Seed, ...]:
    """The seeds in order, a URL given twice keeping its first place (and rules)."""
    kept: dict[str, Seed] = {}
    for seed in seeds:
        kept.setdefault(seed.url, seed)
    return tuple(kept.values())


def seed_from_spec(spec: str, s: Settings) -> Seed | None:
    """A seed from the table the frontier kept (:func:`resolve`'s JSON), resolved against
    this run's settings; None for one that no longer reads (written by another version)."""
    try:
        return resolve(parse_seed_entry(json.loads(spec), "seed"), s)
    except (SettingsError, ValueError, urls.InvalidURLError):
        return None


def wants_browser(s: Settings, seeds: Iterable[Seed]) -> bool:
    """Whether the crawl loads pages in a browser: ``--browser``, or a seed's own ``browser``."""
    return s.browser != "off" or any(seed.rules.browser != "off" for seed in seeds)


__all__ = [
    "crawl_rules",
    "crawl_seeds",
    "first_of_each",
    "normalized",
    "resolve",
    "seed_from_spec",
    "seed_line",
    "wants_browser",
]
