"""``crawl --qa``: each page replayed from what the crawl has written so far right after its
capture, what it lacks captured in its own lease, checked again; on the site built to be hard
to replay (:mod:`tests.support.hard_site`) and on a documentation site rendered on the server
and hydrated in the browser (:mod:`tests.support.ssr_site`). Real Chromium, real crawls."""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from archiver.commands.status import serving
from archiver.qa.options import QaOptions
from archiver.qa.run import QaRun
from archiver.run.crawler import Crawler
from archiver.run.patch import check_the_rest
from tests.conftest import fast_settings, run_crawl
from tests.qa.test_qa_crawl import (
    archived,
    assert_rendered_as_live,
    normal,
    qa_lines,
    second_opinions,
)
from tests.support.hard_site import HardSite
from tests.support.ssr_site import PAGES, HydratedDocs, path_of

pytestmark = pytest.mark.usefixtures("chromium_installed")

#: What the hard site's pages ask for that a static capture (the page and what its HTML, its
#: stylesheet and its frame name) lacks: what scripts build, and what a click loads.
SCRIPTED = {
    "/": {
        "GET /img/dynamic.png",
        "GET /fonts/computed.woff2",
        "GET /img/card.png",
        "GET /api/news.json?_=T",
        "POST /api/search",
        "GET /api/frame.json",
    },
    "/app/": {"GET /app/data/start.json", "GET /app/chunks/guide.js", "GET /app/data/guide.json"},
    "/about.html": set(),
    "/live.html": set(),
}
#: ... and what a page loaded in the browser still lacks: what only a click loads.
CLICKED = {"/app/": {"GET /app/chunks/guide.js", "GET /app/data/guide.json"}}


def crawl_log(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]


def listed(out: Path) -> list[str]:
    """The pages of ``pages.jsonl``, in order."""
    text = (out / "state" / "pages.jsonl").read_text()
    return [json.loads(line)["url"] for line in text.splitlines()]


def on_site(site: HardSite, expected: set[str]) -> set[str]:
    return {f"{entry.split(' ')[0]} {site.url(entry.split(' ', 1)[1])}" for entry in expected}


def named(entries: list[dict[str, Any]]) -> set[str]:
    return {normal(entry["method"], entry["url"]) for entry in entries}


@pytest.mark.parametrize("browser", ["off", "auto", "all"])
async def test_each_page_is_checked_as_it_is_captured_and_the_crawl_ends_proven(
    tmp_path: Path, browser: str
) -> None:
    """Whatever ``--browser`` says, every page is checked by the crawl itself: what its checks
    found missing is exactly what the page's scripts and clicks ask for beyond what its capture
    held, each of it was captured in the page's lease (a POST with the body the page sent), and
    nothing is missing at the end; nothing was fetched twice. The static crawl, the one that
    lacked most, then replays in pywb and ReplayWeb.page as the live site shows: the end state
    ``archiver patch`` reaches, in one command."""
    out = tmp_path / browser
    async with HardSite() as site:
        extra: dict[str, Any] = {} if browser == "off" else {"browser": browser}
        result = await run_crawl(
            out, site.url("/"), qa=True, browser_tabs=2, wacz=browser == "off", **extra
        )
        assert result.status == "completed", result.reason
        hits = collections.Counter((hit.method, hit.path_qs) for hit in site.log)
        searches = [hit for hit in site.log if hit.path_qs == "/api/search"]
        lines = qa_lines(out)
        summary = json.loads((out / "summary.json").read_text())["qa"]
        rest = await check_the_rest(out, QaOptions())
        opinions = await second_opinions(out) if browser == "off" else None
    assert [hit for hit, count in hits.items() if count > 1] == []
    assert sorted(lines) == sorted(site.url(path) for path in SCRIPTED)
    expected = SCRIPTED if browser == "off" else CLICKED
    for path in SCRIPTED:
        line = lines[site.url(path)]
        assert line["checked"] == "crawl", path
        assert named(line["found"]) == on_site(site, expected.get(path, set())), path
        assert named(line["patched"]) == named(line["found"]), path
        assert line["misses"] == [] and line["not_patched"] == [] and line["queued"] == []
        assert line["rounds"] == (2 if line["found"] else 1), path
    assert lines[site.url("/live.html")]["status"] == "unreplayable"
    assert {lines[site.url(path)]["status"] for path in ("/", "/app/", "/about.html")} == {
        "complete"
    }
    if browser == "off":  # the search was made again with the body the page sent in replay
        (search,) = searches
        assert search.method == "POST" and json.loads(search.body)["query"] == "astrolabe"
    have = archived(out)
    assert on_site(site, set().union(*expected.values())) <= have
    # each capture a check made is in the crawl log as one of its page's, marked as the check's
    made = [e for e in crawl_log(out) if e.get("event") == "fetch" and e.get("qa") is True]
    patched = {m["url"] for line in lines.values() for m in line["patched"]}
    assert {e["url"] for e in made} >= patched
    found = sum(len(line["found"]) for line in lines.values())
    assert summary["pages"] == 4 and summary["missing_urls"] == 0
    assert summary["misses_found"] == summary["misses_patched"] == found > 0
    assert rest is None  # nothing left for after the crawl
    if opinions is not None:
        assert_rendered_as_live(site, *opinions)


async def test_pages_kept_static_go_to_the_browser_on_their_replays_evidence(
    tmp_path: Path,
) -> None:
    """Pages rendered on the server and hydrated in the browser pass the static rule of
    ``--browser auto``: a static crawl and an ``auto`` crawl alike lack the chunk and the data
    each page's script loads, and their replays show a "page not found" view. With ``--qa``,
    each page's replay right after its static capture lacks those URLs and shows a fraction of
    its HTML's text: the page is loaded in the browser, which captures them, and the crawl log
    and the page's line say so and why; the pages end complete, with the text they show live."""
    async with HydratedDocs() as site:
        for mode in ("off", "auto"):
            out = tmp_path / mode
            done = await run_crawl(out, site.url("/"), browser=mode)
            assert done.status == "completed", done.reason
            await QaRun(out, QaOptions(follow_links=0, page_timeout=120)).run()
            lines = qa_lines(out)
            for page in PAGES:
                line = lines[site.url(path_of(page))]
                assert line["status"] == "incomplete", (mode, page)
                assert {m["url"] for m in line["misses"]} == site.hydration(page), (mode, page)
            assert not [e for e in crawl_log(out) if e.get("event") == "browser-page"], mode
        out = tmp_path / "auto-qa"
        before = len(site.log)
        done = await run_crawl(out, site.url("/"), browser="auto", qa=True, browser_tabs=2)
        assert done.status == "completed", done.reason
        asked = collections.Counter(hit.path for hit in site.log[before:])
    assert max(asked.values()) == 1, asked  # the browser's load recalled what was captured
    lines = qa_lines(out)
    loaded = {e["url"]: e["why"] for e in crawl_log(out) if e.get("event") == "browser-page"}
    for page in PAGES:
        url = site.url(path_of(page))
        line = lines[url]
        assert line["status"] == "complete" and line["misses"] == [], page
        assert line["capture"] == "browser"
        why = line["browser_why"]
        assert why.startswith("replay evidence: its replay lacked 2 URL(s): "), why
        assert all(hydration in why for hydration in site.hydration(page))
        assert "its replay showed 18 of the " in why  # "404 PAGE NOT FOUND"
        assert loaded[url] == why
        assert {m["url"] for m in line["found"]} == site.hydration(page)
        assert line["patched"] == []  # the browser's load captured them, not a patch
        assert line["text_similarity"] == 1.0  # the text the page shows live
        assert site.hydration(page) <= {url.split(" ", 1)[1] for url in archived(out)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["browser"]["why"] == {"replay evidence": len(PAGES)}
    assert summary["qa"]["complete"] == len(PAGES) and summary["qa"]["missing_urls"] == 0
    listed = [
        json.loads(line)["url"] for line in (out / "state/pages.jsonl").read_text().splitlines()
    ]
    assert sorted(listed) == sorted(site.url(path_of(page)) for page in PAGES)  # each once


def scrape(text: str) -> dict[str, float]:
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_the_checks_counters_are_the_summarys_totals_at_the_end(tmp_path: Path) -> None:
    """``/metrics`` counts the checks as they are made; once the crawl ends, its counters are
    summary.json's ``qa`` totals (pages checked, complete, incomplete, misses found and
    patched)."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        crawler = Crawler(fast_settings(out, site.url("/"), qa=True, browser_tabs=2))
        async with serving(crawler, "127.0.0.1", 0, stall_after=300.0) as server:
            assert server is not None
            result = await crawler.run()
            assert result.status == "completed", result.reason
            async with (
                aiohttp.ClientSession() as http,
                http.get(server.url + "metrics") as response,
            ):
                final = scrape(await response.text())
    totals = json.loads((out / "summary.json").read_text())["qa"]
    assert totals["pages"] == 4 and totals["misses_found"] > 0
    for name, total in (
        ("pages_checked", "pages"),
        ("pages_complete", "complete"),
        ("pages_incomplete", "incomplete"),
        ("misses_found", "misses_found"),
        ("misses_patched", "misses_patched"),
    ):
        assert final[f"archiver_qa_{name}_total"] == totals[total], name
    assert crawler.snapshot().qa is not None
    assert crawler.snapshot().qa.checked == totals["pages"]  # type: ignore[union-attr]


async def until(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110 - a file the crawl writes, no event to wait on
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("immediate", [False, True])
async def test_a_stopped_crawl_resumed_checks_every_page_once(
    tmp_path: Path, immediate: bool
) -> None:
    """Stopped once its first page is checked, then resumed: a stop that lets the leases in
    flight finish commits their checks with them, and the resumed run checks only the other
    pages (one line each); a stop at once cuts a lease in its check, which the resumed run
    processes again, its page checked again (its last line counts). Either way the crawl ends
    with every page checked and nothing missing.

    The stop at once runs without in-crawl dedup: the resume repair cuts the uncommitted
    captures from their WARC file but not their payload digests from the crawl's digest index,
    so a later identical payload is written as a revisit of a record no longer there (a dedup
    defect of its own, which the check would rightly report as a miss)."""
    out = tmp_path / "crawl"
    lines = out / "qa.jsonl"
    settings: dict[str, Any] = {
        "qa": True, "frontier": "sqlite", "browser_tabs": 2, "grace_period": 600.0,
        "dedup": not immediate,
    }  # fmt: skip
    async with HardSite() as site:
        crawler = Crawler(fast_settings(out, site.url("/"), **settings))
        run = asyncio.create_task(crawler.run())
        await until(lambda: (lines.exists() and lines.stat().st_size > 0) or run.done())
        crawler.request_stop(immediate=immediate)
        stopped = await run
        assert stopped.status == "interrupted", stopped.reason
        first = [json.loads(line)["url"] for line in lines.read_text().splitlines()]
        resumed = await run_crawl(out, site.url("/"), **settings)
        assert resumed.status == "completed", resumed.reason
    every = [json.loads(line)["url"] for line in lines.read_text().splitlines()]
    assert set(every) == {site.url(path) for path in SCRIPTED}
    if not immediate:
        assert sorted(every) == sorted(set(every)), every  # none checked twice
        assert every[: len(first)] == first
    totals = json.loads((out / "summary.json").read_text())["qa"]
    assert totals["pages"] == len(SCRIPTED) and totals["missing_urls"] == 0
    assert [m for line in qa_lines(out).values() for m in line["misses"]] == []


async def test_pages_listed_before_qa_was_asked_for_are_checked_once_the_crawl_completes(
    tmp_path: Path,
) -> None:
    """A crawl stopped at ``--max-pages 2`` without ``--qa``, resumed with it: the pages the
    resumed run captures are checked as they are, the two listed before are checked (and what
    they lack fetched) once the crawl completes, in the same command."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        first = await run_crawl(out, site.url("/"), frontier="sqlite", max_pages=2, workers=1)
        assert first.status == "limit", first.reason
        before = listed(out)
        assert len(before) == 2
        argv = [
            sys.executable, "-m", "archiver", "crawl", site.url("/"), "--output", str(out),
            "--qa", "--frontier", "sqlite", "--robots", "ignore", "--per-host-delay", "0",
            "--progress", "off", "--quiet", "--browser-tabs", "2",
        ]  # fmt: skip
        process = await asyncio.create_subprocess_exec(*argv, stderr=subprocess.PIPE)
        _, err = await asyncio.wait_for(process.communicate(), timeout=600)
        assert process.returncode == 0, err.decode()[-3000:]
        assert "archiver patch: " in err.decode()  # the pages checked after the crawl
    lines = qa_lines(out)
    assert sorted(lines) == sorted(listed(out)) and len(lines) > 2  # (a page the budget
    for url, line in lines.items():  # refused, /app/, is not fetched again on resume)
        assert ("checked" not in line) == (url in before), url  # checked after, or during
        assert line["misses"] == [], url
    assert json.loads((out / "summary.json").read_text())["qa"]["missing_urls"] == 0


async def test_every_process_of_processes_2_checks_its_own_pages(tmp_path: Path) -> None:
    """``--processes 2 --qa``: each process checks the pages it captures, over what every
    process has journaled, and captures what they lack in their leases; the crawl's summary
    adds up the processes' checks and nothing is missing."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        argv = [
            sys.executable, "-m", "archiver", "crawl", site.url("/"), "--output", str(out),
            "--processes", "2", "--qa", "--robots", "ignore", "--per-host-delay", "0",
            "--progress", "off", "--browser-tabs", "1", "--workers", "2",
        ]  # fmt: skip
        process = await asyncio.create_subprocess_exec(*argv, stderr=subprocess.PIPE)
        _, err = await asyncio.wait_for(process.communicate(), timeout=600)
        assert process.returncode == 0, err.decode()[-3000:]
        hits = collections.Counter((hit.method, hit.path_qs) for hit in site.log)
    lines = qa_lines(out)
    assert set(lines) == {site.url(path) for path in SCRIPTED}
    assert {line["checked"] for line in lines.values()} == {"crawl"}
    for path, expected in SCRIPTED.items():
        line = lines[site.url(path)]
        assert line["misses"] == [], path
        assert named(line["found"]) == on_site(site, expected), path
    assert max(hits.values()) <= 2, hits  # a URL two processes asked for at one moment
    crawl = json.loads((out / "summary.json").read_text())["qa"]
    assert crawl["pages"] == len(SCRIPTED) and crawl["missing_urls"] == 0
    parts = [
        json.loads(path.read_text()).get("qa") or {}
        for path in (out / "state").glob("*/summary.json")
    ]
    assert len(parts) == 2
    for name in ("pages", "misses_found", "misses_patched"):
        assert sum(part.get(name, 0) for part in parts) == crawl[name], name
