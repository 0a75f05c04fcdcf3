"""The live page, for comparison: a page of a static crawl has no record of what the browser
showed when it was captured, so ``archiver qa --live`` loads it from the site again.

:class:`LiveAnswers` answers the page's requests with archiver's own fetcher (the SSRF guard
included: a page may only reach what the crawl could reach) and records nothing: it is a
reference, not a capture. The URLs it fetched are kept, so that a report can set what the live
page loaded beside what the archive lacked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from archiver.browser.errors import BrowserError, NavigationError
from archiver.browser.exchange import MAX_FULFILL_BODY, BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserPool
from archiver.config.assemble import address_policy
from archiver.config.settings import Settings
from archiver.dedup.captured import response_parts
from archiver.errors import FetchError
from archiver.fetch.fetcher import FetchConfig, Fetcher, relayed_fields
from archiver.models import Exchange
from archiver.qa.options import QaOptions, Reference, browser_config, page_options


@dataclass
class LiveAnswers:
    """Answers a page's requests from the live site (see the module docstring)."""

    fetcher: Fetcher
    max_body: int
    fetched: list[str] = field(default_factory=list)

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        headers = relayed_fields(request.headers)
        try:
            ex = await self.fetcher.fetch(
                request.url, headers, method=request.method, body=request.body
            )
        except FetchError as exc:
            return Refusal(exc.reason.value)
        try:
            answer = await asyncio.to_thread(_answer, ex, self.max_body)
        finally:
            ex.response.close()
        self.fetched.append(f"{request.method} {request.url}")
        return answer if answer is not None else Refusal("too large for the browser")


def _answer(ex: Exchange, max_body: int) -> BrowserResponse | None:
    if ex.payload_length > max_body:
        return None
    body = ex.body
    reason = ""
    if body is None or len(body) != ex.payload_length:
        with ex.response.open() as reader:
            parts = response_parts(reader.read())
        if parts is None:
            return None
        body = parts[3]
        reason = parts[1]
    return BrowserResponse(ex.status, ex.headers, body, reason)


@dataclass
class LivePages:
    """Loads pages from the live site in a browser of their own (``--live``)."""

    pool: BrowserPool
    fetcher: Fetcher
    options: QaOptions

    async def load(self, url: str) -> Reference:
        answers = LiveAnswers(self.fetcher, MAX_FULFILL_BODY)
        options = page_options(self.options)
        try:
            result = await self.pool.load(url, answers, options=options)
        except (BrowserError, NavigationError):
            return Reference(None, None, None)
        return Reference(result.text, result.screenshot, "live")


def crawl_seeds(crawl_dir: Path) -> tuple[str, ...]:
    """The seeds ``summary.json`` names: their addresses are the ones the live load may reach
    besides public ones (the crawl's own SSRF rule)."""
    try:
        summary = json.loads((crawl_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    seeds = summary.get("seeds", []) if isinstance(summary, dict) else []
    return tuple(seed for seed in seeds if isinstance(seed, str))


@contextlib.asynccontextmanager
async def open_live(crawl_dir: Path, options: QaOptions) -> AsyncIterator[LivePages]:
    seeds = crawl_seeds(crawl_dir)
    policy = await address_policy(Settings(seeds=seeds, output=crawl_dir), seeds)
    async with (
        Fetcher(FetchConfig(), policy) as fetcher,
        BrowserPool(browser_config(crawl_dir, options, "live")) as pool,
    ):
        yield LivePages(pool, fetcher, options)


__all__ = ["LiveAnswers", "LivePages", "open_live"]
