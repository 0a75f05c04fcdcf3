"""``archiver patch DIR``: fetch what the replay check found missing, into the same crawl, and
check those pages again, until nothing new is missing.

Each round:

1. the misses in ``qa.jsonl`` (``archiver qa`` writes it; a first check is run when there is
   none) become requisites of the page that needed them (``Hop.EMBED``, ``via`` the page), so
   they pass the crawl's own rules: scope (a requisite of a page in scope), robots.txt,
   politeness, the SSRF guard, dedup (an identical payload becomes a revisit);
2. the crawl is resumed with those items only, under the settings it was started with
   (``state/crawl.json``): the capture path is the crawl's (:class:`archiver.run.crawler.Crawler`
   resumed on a completed directory), so the new captures go to new WARC files, the index is
   merged from every journal and the WACZ is packaged again as a finished crawl does;
3. the pages that had misses are checked again (their lines of ``qa.jsonl`` replaced).

It stops when a round finds no miss it has not tried already (what could not be fetched, what
the crawl's rules refuse, what a page asks for with a body, are reported and not retried), or
after ``--rounds`` rounds. A miss can hide another (a missing script fetches nothing): the
next round's check finds it once the first is there.

Requests with a body (POST, PUT) are made by a page's scripts with data only the page has: they
are not fetched here (a crawl with ``--browser`` captures them as the page makes them), and are
listed as such.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.config.settings import Settings, parse_value, setting_fields
from archiver.errors import ArchiverError
from archiver.models import CrawlItem, Hop
from archiver.qa.options import QaOptions
from archiver.qa.run import QA_LINES, QaRun, totals
from archiver.run.crawler import Crawler, CrawlResult

DEFAULT_ROUNDS = 3
#: Settings a patch run never takes from the crawl it patches.
_NOT_KEPT = frozenset({"overwrite", "job", "sitemaps", "progress"})


class PatchError(ArchiverError):
    """The directory cannot be patched (no crawl, no settings to resume it with)."""


@dataclass
class PatchRound:
    number: int
    tried: int
    captures: int
    missing_after: int


@dataclass
class PatchResult:
    rounds: list[PatchRound] = field(default_factory=list)
    #: misses not fetched: (url, why)
    left: dict[str, str] = field(default_factory=dict)
    missing: int = 0
    """URLs still missing after the last check."""


def crawl_settings(crawl_dir: Path, **overrides: Any) -> Settings:
    """The settings the crawl in ``crawl_dir`` was run with (``state/crawl.json``), for a
    resumed run; a value that does not read back (a redacted credential) keeps its default."""
    try:
        state = json.loads((crawl_dir / "state" / "crawl.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise PatchError(f"{crawl_dir} holds no archiver crawl (no state/crawl.json)") from None
    stored = state.get("settings") if isinstance(state, dict) else None
    if not isinstance(stored, dict):
        raise PatchError(f"{crawl_dir}/state/crawl.json names no settings to resume the crawl")
    values: dict[str, Any] = {}
    known = {f.name for f in setting_fields()}
    for name, raw in stored.items():
        if name not in known or name in _NOT_KEPT or raw is None:
            continue
        try:
            values[name] = parse_value(name, raw, source="config")
        except (ArchiverError, TypeError, ValueError):
            continue
    values.update(output=crawl_dir, sitemaps="off", progress="off", **overrides)
    return Settings(**values)


def misses_to_fetch(lines: Path, tried: set[str]) -> tuple[list[CrawlItem], dict[str, str]]:
    """The GET misses of ``qa.jsonl`` not tried yet, each a requisite of its page; and the
    misses that are not fetched, with why."""
    items: dict[str, CrawlItem] = {}
    left: dict[str, str] = {}
    if not lines.is_file():
        return [], left
    for raw in lines.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        page = str(line.get("url", ""))
        for miss in line.get("misses", []):
            url = str(miss.get("url", ""))
            if miss.get("method", "GET") != "GET":
                left[url] = f"a {miss.get('method')} with a body only the page's script has"
                continue
            if url in tried:
                if url not in items:
                    left.setdefault(url, "fetched in an earlier round, still not replayable")
                continue
            items.setdefault(url, CrawlItem(url=page).child(url, Hop.EMBED))
        for item in line.get("unfixable", []):
            left[str(item.get("url"))] = str(item.get("reason"))
    return list(items.values()), left


async def patch_crawl(
    crawl_dir: Path, options: QaOptions, *, rounds: int = DEFAULT_ROUNDS
) -> PatchResult:
    """Fetch what ``qa.jsonl`` names as missing, and check again (see the module docstring)."""
    if not (crawl_dir / "index.cdxj").is_file():
        raise PatchError(f"no index.cdxj in {crawl_dir}: is it a crawl directory?")
    lines = crawl_dir / QA_LINES
    if not lines.is_file():
        await QaRun(crawl_dir, options).run()
    result = PatchResult()
    tried: set[str] = set()
    for number in range(1, rounds + 1):
        items, left = misses_to_fetch(lines, tried)
        result.left = left
        if not items:
            break
        tried.update(item.url for item in items)
        crawl = await _fetch(crawl_dir, items)
        pages = sorted({item.via for item in items if item.via})
        _forget(lines, set(pages))
        qa = await QaRun(crawl_dir, _only(options, pages)).run()
        result.rounds.append(
            PatchRound(number, len(items), _captures(crawl), int(qa.totals["missing_urls"]))
        )
    _items, result.left = misses_to_fetch(lines, tried)
    result.missing = int(totals(lines)["missing_urls"])
    return result


async def _fetch(crawl_dir: Path, items: list[CrawlItem]) -> CrawlResult:
    settings = crawl_settings(crawl_dir)
    result = await Crawler(settings, patch=tuple(items)).run()
    if result.status not in ("completed", "limit"):
        raise PatchError(
            f"the patch run of {crawl_dir} ended {result.status}: {result.reason or ''}".strip()
        )
    return result


def _captures(result: CrawlResult) -> int:
    return int(result.summary.get("captures", 0) or 0) if result.summary else 0


def _only(options: QaOptions, pages: list[str]) -> QaOptions:
    return QaOptions(
        tabs=options.tabs,
        page_timeout=options.page_timeout,
        urls=tuple(pages),
        follow_links=options.follow_links,
        live=options.live,
        chromium=options.chromium,
        window=options.window,
    )


def _forget(lines: Path, pages: set[str]) -> None:
    """Remove the lines of ``pages`` from ``qa.jsonl`` (rewritten whole, then renamed)."""
    kept = []
    for raw in lines.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            url = json.loads(raw).get("url")
        except (ValueError, AttributeError):
            continue
        if url not in pages:
            kept.append(raw)
    tmp = lines.with_name(lines.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    os.replace(tmp, lines)


__all__ = ["DEFAULT_ROUNDS", "PatchError", "PatchResult", "crawl_settings", "patch_crawl"]
