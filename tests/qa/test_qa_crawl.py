"""``archiver qa`` on crawls of a site built to be hard to replay (:mod:`tests.support.hard_site`).

The judge is a live load: each page loaded from the site itself in Chromium, scrolled and its
links followed in the page exactly as the check does, every request it made listed. What the
check names as missing must be exactly what that live load asked for and the crawl's index does
not hold (no false miss, none left out); a cache-busting timestamp compares without its value,
since every load makes a new one.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archiver.browser.navigate import LinkWalk
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.commands.cli import main
from archiver.qa.check import browser_own
from archiver.qa.options import QaOptions
from archiver.qa.run import QaRun
from tests.browser.conftest import SiteHandler
from tests.conftest import run_crawl
from tests.support.hard_site import HardSite
from tests.support.tools import tools_venv

pytestmark = pytest.mark.usefixtures("chromium_installed")

FOLLOW = 3
TIMEOUT = 120.0
RWP_PACKAGE = Path(__file__).resolve().parents[2] / ".venv-tools/replaywebpage-2.5.3/package"
_CACHE_BUST = re.compile(r"([?&])_=\d+")


def normal(method: str, url: str) -> str:
    return method + " " + _CACHE_BUST.sub(r"\1_=T", url)


def archived(out: Path) -> set[str]:
    found = set()
    for line in (out / "index.cdxj").read_text().splitlines():
        fields = json.loads(line.split(" ", 2)[2])
        if fields["url"].startswith("http"):
            found.add(normal(fields.get("method", "GET"), fields["url"]))
    return found


def qa_lines(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "qa.jsonl").read_text().splitlines()
    return {line["url"]: line for line in map(json.loads, lines)}


async def live_loads(pages: list[str], state: Path) -> dict[str, set[str]]:
    """What each page asks for when loaded from the live site, its links followed in the page."""
    asked: dict[str, set[str]] = {}
    async with (
        aiohttp.ClientSession(auto_decompress=False) as http,
        BrowserPool(BrowserConfig(state_dir=state, tabs=1, page_timeout=TIMEOUT)) as pool,
    ):
        for page in pages:
            handler = SiteHandler(http)
            await pool.load(page, handler, explore=LinkWalk(FOLLOW))
            asked[page] = {
                normal(request.method, request.url)
                for request in handler.log
                if not browser_own(request)
            }
    return asked


async def check(out: Path, follow: int = FOLLOW) -> dict[str, dict[str, Any]]:
    # a long page timeout: on a busy machine the clicks must not be cut short
    options = QaOptions(tabs=2, follow_links=follow, page_timeout=TIMEOUT)
    result = await QaRun(out, options).run()
    assert result.totals["pages"] == len(qa_lines(out))
    return qa_lines(out)


async def assert_names_exactly_what_is_lacking(out: Path, tmp_path: Path) -> dict[str, Any]:
    lines = await check(out)
    live = await live_loads(sorted(lines), tmp_path / "live-browser")
    have = archived(out)
    for url, line in lines.items():
        assert not line["navigations_cut_short"], url
        named = {normal(miss["method"], miss["url"]) for miss in line["misses"]}
        assert named == live[url] - have, (url, named ^ (live[url] - have))
    return lines


async def test_a_static_crawl_lacks_what_scripts_ask_for_and_qa_names_it(tmp_path: Path) -> None:
    """``archiver qa`` names exactly what a live load asks for and the static crawl lacks; and
    ReplayWeb.page, replaying the crawl's WACZ, names the same for each page loaded (its own
    requests, the address bar's icon, are not the page's)."""
    out = tmp_path / "static"
    async with HardSite() as site:
        result = await run_crawl(out, site.url("/"), wacz=True)
        assert result.status == "completed", result.reason
        lines = await assert_names_exactly_what_is_lacking(out, tmp_path)
        summary = json.loads((out / "summary.json").read_text())
        rwp_args = ["qa", str(out), "--replayer", "rwp", "--replaywebpage", str(RWP_PACKAGE)]
        assert await asyncio.to_thread(main, [*rwp_args, "--fresh", "--follow-links", "0"]) == 0
        rwp = qa_lines(out)
    loaded = {
        url: {normal(m["method"], m["url"]) for m in line["misses"] if not m.get("navigation")}
        for url, line in lines.items()
    }
    assert {
        url: {normal(m["method"], m["url"]) for m in line["misses"]} for url, line in rwp.items()
    } == loaded
    assert [m for line in rwp.values() for m in line["replayer_misses"]] == []
    home = {normal(m["method"], m["url"]) for m in lines[site.url("/")]["misses"]}
    for computed in (
        "GET " + site.url("/img/dynamic.png"),  # a URL the script builds
        "GET " + site.url("/fonts/computed.woff2"),
        "GET " + site.url("/img/card.png"),  # in a <template>, cloned later
        "GET " + site.url("/api/news.json?_=T"),  # a cache-busting timestamp
        "POST " + site.url("/api/search"),
        "GET " + site.url("/api/frame.json"),  # in the iframe
    ):
        assert computed in home, (computed, home)
    app = lines[site.url("/app/")]
    chunk = [m for m in app["misses"] if m["url"] == site.url("/app/chunks/guide.js")]
    assert chunk and chunk[0]["navigation"] == site.url("/app/#/guide")
    assert chunk[0]["initiator"].startswith("script " + site.url("/app/main.js"))
    live_page = lines[site.url("/live.html")]
    assert live_page["status"] == "unreplayable"
    assert live_page["unfixable"][0]["url"] == site.url("/socket").replace("http", "ws")
    assert lines[site.url("/about.html")]["status"] == "complete"
    assert summary["qa"]["pages"] == 4 and summary["qa"]["complete"] == 1
    assert summary["captures"] > 0  # the crawl's own summary is kept


async def test_an_auto_crawl_lacks_the_chunk_a_click_loads_and_qa_names_it(
    tmp_path: Path,
) -> None:
    """``--browser auto`` loads the application shell in the browser: what its first route
    asks for is captured, the chunk and the data its router loads on a click are not."""
    out = tmp_path / "auto"
    async with HardSite() as site:
        result = await run_crawl(out, site.url("/"), browser="auto", browser_tabs=2)
        assert result.status == "completed", result.reason
        lines = await assert_names_exactly_what_is_lacking(out, tmp_path)
        app = lines[site.url("/app/")]
        assert sorted(m["url"] for m in app["misses"]) == [
            site.url("/app/chunks/guide.js"),
            site.url("/app/data/guide.json"),
        ]
        assert {m["navigation"] for m in app["misses"]} == {site.url("/app/#/guide")}
        assert [step["link"] for step in app["navigations"]] == [
            site.url("/app/#/start"),
            site.url("/app/#/guide"),
        ]


async def test_varying_requests_are_served_by_fuzzy_matching_and_reported_apart(
    tmp_path: Path,
) -> None:
    """With every page loaded in the crawl's browser, the JSON fetched with a cache-busting
    timestamp and the POST whose body holds the time are in the archive under keys no later
    load asks for: pywb's fuzzy rule serves them, and the check says so, with the reason."""
    out = tmp_path / "all"
    async with HardSite() as site:
        result = await run_crawl(out, site.url("/"), browser="all", browser_tabs=2)
        assert result.status == "completed", result.reason
        lines = await assert_names_exactly_what_is_lacking(out, tmp_path)
        home = lines[site.url("/")]
        assert home["misses"] == []
        fuzzy = {answer["url"].split("?")[0]: answer for answer in home["fuzzy"]}
        news = fuzzy[site.url("/api/news.json")]
        assert news["served"].startswith(site.url("/api/news.json?_="))
        assert news["served"] != news["url"]
        assert news["reason"] == "the same file (.json) under another query"
        assert (
            fuzzy[site.url("/api/search")]["reason"] == "a POST to the same URL with another body"
        )
        assert home["status"] == "complete"
        assert "1 found" in (out / "qa.jsonl").read_text() or home["title"] == "Instruments"


async def test_a_check_resumes_and_the_cli_fails_on_misses_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "crawl"
    async with HardSite() as site:
        assert (await run_crawl(out, site.url("/"))).status == "completed"
        first = await asyncio.to_thread(
            main, ["qa", str(out), "--url", site.url("/about.html"), "--follow-links", "0"]
        )
        assert first == 0
        assert list(qa_lines(out)) == [site.url("/about.html")]
        strict = await asyncio.to_thread(main, ["qa", str(out), "--fail-on-miss"])
        assert strict == 1  # the home page stays incomplete
        lines = qa_lines(out)
        assert len(lines) == 4  # the about page was not checked again
        assert (out / "qa.jsonl").read_text().count(site.url("/about.html") + '"') == 1
        assert main(["report", str(out)]) == 0
        report = (out / "report.html").read_text()
        section = report[report.index("Replay check (archiver qa)") :]
        # the worst pages first (most URLs missing), the complete one last
        order = [section.index(f">{site.url(path)}<") for path in ("/", "/app/", "/about.html")]
        assert order == sorted(order), order
        assert f">{site.url('/img/dynamic.png')}<" in section  # a missing URL, named
        assert section.count('<img alt="" src="data:image/png;base64,') >= 4  # replays shown
        assert "<script" not in report.lower()
    printed = capsys.readouterr().out
    assert "4 pages: 1 complete, 2 incomplete, 1 unreplayable, 0 differ" in printed


async def test_pywb_as_a_second_opinion_lacks_what_the_archive_lacks(tmp_path: Path) -> None:
    """The same pages replayed through pywb (unframed, wombat rewriting the scripts): the URLs
    pywb could not serve and the archive lacks are the archive's misses; pywb is started for
    the check and stopped after it."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        assert (await run_crawl(out, site.url("/"))).status == "completed"
        own = await check(out)
        args = ["qa", str(out), "--replayer", "pywb", "--pywb-venv", str(tools_venv()), "--fresh"]
        assert await asyncio.to_thread(main, args) == 0
        pywb = qa_lines(out)
    assert {line["replayer"] for line in pywb.values()} == {"pywb"}
    home = site.url("/")

    def named(line: dict[str, Any]) -> set[str]:
        return {normal(miss["method"], miss["url"]) for miss in line["misses"]}

    # what pywb asked for is what the page's scripts asked for, through wombat's rewriting
    assert named(pywb[home]) <= named(own[home])
    assert "GET " + site.url("/img/dynamic.png") in named(pywb[home])
    assert "GET " + site.url("/api/news.json?_=T") in named(pywb[home])
    assert pywb[home]["replayer_misses"] == []
    assert list(tmp_path.glob("**/pywb.log"))  # it ran


def test_qa_of_a_directory_without_a_crawl_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["qa", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("archiver qa: error: no index.cdxj in") and err.count("\n") == 1


async def test_revisits_replay_from_their_originals_in_the_crawl_depended_on(
    tmp_path: Path,
) -> None:
    """A second crawl deduplicated against the first holds revisits for everything unchanged:
    replayed, they are answered with the first crawl's payloads (``depends_on``), so the second
    crawl lacks exactly what the first lacks."""
    first, second = tmp_path / "first", tmp_path / "second"
    async with HardSite() as site:
        assert (await run_crawl(first, site.url("/"))).status == "completed"
        again = await run_crawl(second, site.url("/"), dedup_from=(first,))
        assert again.status == "completed", again.reason
    revisited = {
        json.loads(line.split(" ", 2)[2])["url"]
        for line in (second / "index.cdxj").read_text().splitlines()
        if '"warc/revisit"' in line
    }
    assert revisited  # payloads too small are stored again, the larger ones are revisits
    assert json.loads((second / "summary.json").read_text())["depends_on"]
    one, two = await check(first, follow=0), await check(second, follow=0)
    assert {url: line["status"] for url, line in two.items()} == {
        url: line["status"] for url, line in one.items()
    }
    for url, line in two.items():
        assert {normal(m["method"], m["url"]) for m in line["misses"]} == {
            normal(m["method"], m["url"]) for m in one[url]["misses"]
        }, (url, line["navigations"], one[url]["navigations"], line["duration"])
    assert two[site.url("/about.html")]["status"] == "complete"
    missed = {m["url"] for line in two.values() for m in line["misses"]}
    assert not revisited & missed


async def test_live_comparison_scores_what_the_replay_lost(tmp_path: Path) -> None:
    """``--live``: a static page replays as it shows live (text and screenshot alike); the
    home page, whose scripts' JSON and search answer the static crawl lacks, reads less."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        assert (await run_crawl(out, site.url("/"))).status == "completed"
        pages = (site.url("/about.html"), site.url("/"))
        options = QaOptions(tabs=2, follow_links=0, live=True, urls=pages)
        await QaRun(out, options).run()
        lines = qa_lines(out)
    about, home = lines[site.url("/about.html")], lines[site.url("/")]
    assert about["reference"] == home["reference"] == "live"
    assert about["text_similarity"] == 1.0
    assert about["screenshot_similarity"] > 0.99
    assert home["text_similarity"] < 0.95  # the news items and the search answer are gone
    assert (out / home["reference_screenshot"]).read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("browser", ["off", "auto"])
async def test_patch_fetches_what_the_check_found_missing(tmp_path: Path, browser: str) -> None:
    """``archiver patch``: the misses become requisites of their pages, fetched by the crawl
    resumed under its own settings (new WARC files, the index merged, the WACZ packaged again),
    and the pages checked again lack nothing: in the static crawl the search the home page
    POSTs is requested with the body the page sent in the replay (kept by the check), so pywb's
    fuzzy rule serves the next load's; under ``auto`` the home page (little text beside its
    scripts) went through the browser, which captured the POST.

    After the patch, pywb and ReplayWeb.page, each in Chromium, serve every URL the pages ask
    for and show the text the live pages show (:func:`assert_rendered_as_live`)."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        extra: dict[str, Any] = {"browser": browser} if browser != "off" else {}
        crawled = await run_crawl(out, site.url("/"), frontier="sqlite", wacz=True, **extra)
        assert crawled.status == "completed", crawled.reason
        warcs_before = sorted(p.name for p in (out / "warcs").iterdir())
        (wacz,) = out.glob("*.wacz")
        packaged = wacz.stat().st_mtime_ns
        hits_before = len(site.log)
        code = await asyncio.to_thread(main, ["patch", str(out), "--page-timeout", "120"])
        assert code == 0
        hits = site.log[hits_before:]
        fetched = [hit.path_qs for hit in hits]
        lines = qa_lines(out)
        pywb, rwp = await second_opinions(out)
    assert_rendered_as_live(site, pywb, rwp)
    left = {(m["method"], m["url"]) for line in lines.values() for m in line["misses"]}
    assert left == set(), left
    assert all(not line["navigations_cut_short"] for line in lines.values())
    assert [url for url, line in lines.items() if line["status"] == "complete"] != []
    have = archived(out)
    for path in ("/img/dynamic.png", "/fonts/computed.woff2", "/img/card.png",
                 "/api/frame.json", "/app/chunks/guide.js", "/app/data/guide.json"):  # fmt: skip
        assert "GET " + site.url(path) in have, path
        if browser == "off":  # the static crawl lacked them all: the patch fetched them
            assert path in fetched, (path, fetched)
    assert "POST " + site.url("/api/search") in have
    if browser == "off":
        (search,) = [hit for hit in hits if hit.path_qs == "/api/search"]
        assert search.method == "POST" and json.loads(search.body)["query"] == "astrolabe"
    assert fetched and len(fetched) == len(set(fetched)), fetched  # each once
    assert "GET " + site.url("/api/news.json?_=T") in have
    assert sorted(p.name for p in (out / "warcs").iterdir()) != warcs_before  # new files
    assert set(warcs_before) <= {p.name for p in (out / "warcs").iterdir()}  # none touched
    assert wacz.stat().st_mtime_ns > packaged
    state = json.loads((out / "state" / "crawl.json").read_text())
    assert state["status"] == "completed" and len(state["runs"]) >= 2


async def test_a_browser_crawl_with_qa_keeps_what_each_page_showed(tmp_path: Path) -> None:
    """With ``--qa`` the crawl stores each browser page's text and full-page screenshot as
    resource records; the check compares the replay with them, no live site needed."""
    out = tmp_path / "crawl"
    async with HardSite() as site:
        done = await run_crawl(out, site.url("/"), browser="all", browser_tabs=2, qa=True)
        assert done.status == "completed", done.reason
    index = (out / "index.cdxj").read_text()
    for page in (site.url("/"), site.url("/about.html")):
        assert f'"url": "urn:text:{page}"' in index
        assert f'"url": "urn:screenshot-full:{page}"' in index
    lines = await check(out, follow=0)
    for url, line in lines.items():
        assert line["reference"] == "crawl", url
        assert line["text_similarity"] == 1.0, url
        assert line["screenshot_similarity"] > 0.95, url


async def second_opinions(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``archiver qa`` through pywb, then through ReplayWeb.page (from the crawl's WACZ), each
    compared with the live site: the lines of each."""
    second = ["--fresh", "--live", "--follow-links", "0"]
    pywb_args = ["qa", str(out), "--replayer", "pywb", "--pywb-venv", str(tools_venv())]
    assert await asyncio.to_thread(main, [*pywb_args, *second]) == 0
    pywb = qa_lines(out)
    rwp_args = ["qa", str(out), "--replayer", "rwp", "--replaywebpage", str(RWP_PACKAGE)]
    assert await asyncio.to_thread(main, [*rwp_args, *second]) == 0
    return pywb, qa_lines(out)


def assert_rendered_as_live(site: HardSite, pywb: dict[str, Any], rwp: dict[str, Any]) -> None:
    """Every page served whole by both tools, with the live page's text. pywb's rewriting of
    the application's module script fails in the page (a syntax error in its own rewritten
    copy, ``js_``): nothing is missing there, and the check says the page differs, why, and
    where; ReplayWeb.page, which does not rewrite scripts, renders it."""
    for tool in (pywb, rwp):
        assert len(tool) == 4
        for url, line in tool.items():
            assert line["misses"] == [] and line["replayer_misses"] == [], url
    assert {url: line["text_similarity"] for url, line in rwp.items()} == dict.fromkeys(rwp, 1.0)
    app = site.url("/app/")
    assert {url: line["text_similarity"] for url, line in pywb.items() if url != app} == {
        url: 1.0 for url in pywb if url != app
    }
    assert pywb[app]["status"] == "differs"
    errors = [entry for entry in pywb[app]["console"] if "SyntaxError" in entry["text"]]
    assert errors and "js_/" + site.url("/app/main.js") in errors[0]["url"]
