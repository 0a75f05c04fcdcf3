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

A request with a body (a POST search, a PUT) is made again with the body the page sent in the
replay (the check keeps it, up to :data:`archiver.qa.check.MAX_KEPT_BODY` bytes): its lease
makes that request instead of a GET, so the capture is indexed under the key replay looks it
up with (the body's parameters appended) and pywb's fuzzy rule serves it to the next load,
whose body differs (a timestamp). Not fetched, and listed with why: another method (only GET,
POST and PUT are requested again), a body the browser did not report whole (a file, a stream)
or larger than that limit (an upload), and a POST or PUT to a URL the crawl's frontier holds
already (it queues each URL once: when the URL was fetched with GET, the POST is not queued
again; ``crawl --qa`` fetches it in its page's own lease instead).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver import atomicfile
from archiver.config.settings import Settings, parse_value, setting_fields
from archiver.errors import ArchiverError
from archiver.models import CrawlItem, Hop
from archiver.pipeline.parts import KeptRequest
from archiver.qa.check import Miss
from archiver.qa.options import QaOptions
from archiver.qa.run import QA_LINES, QaRun, done_pages, read_pages, totals
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


@dataclass
class PatchPlan:
    """What a round fetches: the misses as requisites of their pages, those to be requested
    with their body (a POST or PUT), and the misses not fetched, with why."""

    items: list[CrawlItem] = field(default_factory=list)
    kept: dict[str, KeptRequest] = field(default_factory=dict)
    left: dict[str, str] = field(default_factory=dict)


def misses_to_fetch(lines: Path, tried: set[str], pages: set[str] | None = None) -> PatchPlan:
    """The misses of ``qa.jsonl`` (of ``pages`` only, when given) not tried yet, each a
    requisite of its page; a POST or PUT with the body the check kept; and the misses that
    are not fetched, with why."""
    plan = PatchPlan()
    items: dict[str, CrawlItem] = {}
    if not lines.is_file():
        return plan
    for raw in lines.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        page = str(line.get("url", ""))
        if pages is not None and page not in pages:
            continue
        for listed in line.get("misses", []):
            miss = Miss.from_json(listed)
            url = miss.url
            why = miss.not_requested()
            if why is not None:
                plan.left[url] = why
                continue
            if url in tried:
                if url not in items:
                    plan.left.setdefault(url, "fetched in an earlier round, still not replayable")
                continue
            items.setdefault(url, CrawlItem(url=page).child(url, Hop.EMBED))
            if miss.body is not None:
                plan.kept.setdefault(url, KeptRequest(miss.method, miss.content_type, miss.body))
        for item in line.get("unfixable", []):
            plan.left[str(item.get("url"))] = str(item.get("reason"))
    plan.items = list(items.values())
    return plan


async def patch_crawl(
    crawl_dir: Path,
    options: QaOptions,
    *,
    rounds: int = DEFAULT_ROUNDS,
    only: set[str] | None = None,
) -> PatchResult:
    """Fetch what ``qa.jsonl`` names as missing (the misses of the pages ``only`` names, when
    given), and check again (see the module docstring)."""
    if not (crawl_dir / "index.cdxj").is_file():
        raise PatchError(f"no index.cdxj in {crawl_dir}: is it a crawl directory?")
    lines = crawl_dir / QA_LINES
    if not lines.is_file():
        await QaRun(crawl_dir, options).run()
    result = PatchResult()
    tried: set[str] = set()
    for number in range(1, rounds + 1):
        plan = misses_to_fetch(lines, tried, only)
        result.left = plan.left
        items = plan.items
        if not items:
            break
        tried.update(item.url for item in items)
        crawl = await _fetch(crawl_dir, plan)
        pages = sorted({item.via for item in items if item.via})
        _forget(lines, set(pages))
        qa = await QaRun(crawl_dir, _only(options, pages)).run()
        result.rounds.append(
            PatchRound(number, len(items), _captures(crawl), int(qa.totals["missing_urls"]))
        )
    result.left = misses_to_fetch(lines, tried, only).left
    result.missing = int(totals(lines)["missing_urls"])
    return result


async def check_the_rest(crawl_dir: Path, options: QaOptions) -> PatchResult | None:
    """``crawl --qa`` once the crawl completed: the pages it did not check while it ran (listed
    by an earlier run without ``--qa``, or whose lease ended in a browser failure) checked now,
    and what they lack patched. None when every page was checked during the crawl."""
    lines = crawl_dir / QA_LINES
    checked = done_pages(lines)
    rest = [page.url for page in read_pages(crawl_dir) if page.url not in checked]
    if not rest:
        return None
    await QaRun(crawl_dir, _only(options, rest)).run()
    return await patch_crawl(crawl_dir, options, only=set(rest))


async def _fetch(crawl_dir: Path, plan: PatchPlan) -> CrawlResult:
    settings = crawl_settings(crawl_dir)
    crawler = Crawler(settings, patch=tuple(plan.items), kept_requests=plan.kept)
    result = await crawler.run()
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
    atomicfile.write_text(lines, "".join(line + "\n" for line in kept))


__all__ = [
    "DEFAULT_ROUNDS",
    "PatchError",
    "PatchPlan",
    "PatchResult",
    "check_the_rest",
    "crawl_settings",
    "misses_to_fetch",
    "patch_crawl",
]
