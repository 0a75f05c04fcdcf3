"""End to end: a client-rendered site crawled with ``--browser all|auto``.

The site (:mod:`tests.support.spa_site`) builds everything a reader sees with scripts: item pages
linked only from JSON, lazy images, a POST search, a binary upload, a web font, a cache-busting
query. A static crawl misses it all; a browser crawl captures every request the pages make,
each exactly once (the server's log is the judge), through archiver's own fetcher and writer,
and pywb replays it in Chromium. A static site crawled with ``--browser auto`` sends no page to
the browser. Chromium crashing, Ctrl-C and kill -9 cost a page at most and leave no Chromium.
"""

from __future__ import annotations

import asyncio
import collections
import io
import json
import os
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cdxj_indexer.main import CDXJIndexer

from archiver.browser.chromium import profile_users
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.commands import verify
from archiver.commands.report import write_report
from archiver.index.cdxj import scan_warc
from tests.conftest import run_crawl
from tests.support.pywb import PywbReplay
from tests.support.redis_server import RedisServer
from tests.support.replaywebpage import ReplayWebPage
from tests.support.site import SiteServer
from tests.support.spa_site import ITEMS, LAZY_IMAGES, UPLOAD, Logged, SpaSite, item_paths
from tests.support.tools import reference_cdxj
from tests.support.warcs import read_records

pytestmark = pytest.mark.usefixtures("chromium_installed")

#: What the pages' scripts ask for, besides the documents (each exactly once in a crawl).
SCRIPTED = [
    "GET /static/app.js",
    "GET /static/app.css",
    "GET /static/archive-sans.woff2",
    "GET /api/items",
    "GET /api/items.json",
    "POST /api/search",
    "POST /api/upload",
    "GET /static/item.js",
    *(f"GET /img/{n}.png" for n in range(1, LAZY_IMAGES + 1)),
    *(f"GET /api/item/{n}.json" for n, _, _ in ITEMS),
]


def browser_settings(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"browser": "all", "workers": 4, "browser_tabs": 2}
    values.update(overrides)
    return values


def profile(out: Path) -> Path:
    return out / "state" / "browser" / "profile"


def index_entries(out: Path) -> list[tuple[str, dict[str, Any]]]:
    entries = []
    for line in (out / "index.cdxj").read_text().splitlines():
        key, _, data = line.split(" ", 2)
        entries.append((key, json.loads(data)))
    return entries


def post_append_cdxj(warcs: Path) -> list[str]:
    """cdxj-indexer --post-append (what ``wb-manager add`` runs), sorted bytewise."""
    out = io.StringIO()
    paths = [str(p) for p in sorted(warcs.rglob("*.warc.gz"))]
    CDXJIndexer(out, paths, dir_root=str(warcs), post_append=True).process_all()
    return sorted(out.getvalue().splitlines(), key=lambda line: line.encode())


def events(out: Path, name: str) -> list[dict[str, Any]]:
    found = []
    for line in (out / "crawl.log.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == name:
            found.append(event)
    return found


def pages(out: Path) -> dict[str, str | None]:
    lines = (out / "state" / "pages.jsonl").read_text().splitlines()
    return {entry["url"]: entry["title"] for entry in map(json.loads, lines)}


def assert_nothing_twice(site: SpaSite) -> None:
    counts = collections.Counter(site.requested())
    twice = {request: n for request, n in counts.items() if n > 1}
    assert not twice, f"requested more than once: {twice}"


def assert_no_chromium(out: Path) -> None:
    left = profile_users(profile(out))
    assert not left, f"Chromium processes outlived the crawl: {left}"


async def test_a_static_crawl_misses_what_scripts_build(tmp_path: Path, spa: SpaSite) -> None:
    out = tmp_path / "static"
    result = await run_crawl(out, spa.url("/"))
    assert result.status == "completed"
    captured = {entry["url"] for _, entry in index_entries(out)}
    assert spa.url("/") in captured
    # the URL strings of its scripts are followed (js-string), never the URLs a script builds
    # from pieces: the item pages and their JSON, the cache-busted config
    assert not [url for url in captured if "/item/" in url or "config.json" in url], captured
    assert "browser" not in result.summary


@pytest.mark.parametrize("mode", ["all", "auto"])
async def test_the_browser_captures_every_request_exactly_once(
    tmp_path: Path, spa: SpaSite, mode: str
) -> None:
    out = tmp_path / mode
    result = await run_crawl(out, spa.url("/"), **browser_settings(browser=mode))
    assert result.status == "completed", result.reason
    assert_nothing_twice(spa)
    requested = spa.requested()
    for expected in ["GET /", *(f"GET {path}" for path in item_paths()), *SCRIPTED]:
        assert expected in requested, f"{expected} was never requested: {requested}"
    assert [r for r in requested if r.startswith("GET /api/config.json?_=")], requested

    # every request the server answered became one capture, with the method it came with
    records = read_records(out / "warcs")
    answered = {f"{hit.method} {hit.path_qs}" for hit in spa.log}
    request_lines = [r.block.split(b"\r\n", 1)[0].decode() for r in records if r.type == "request"]
    sent = collections.Counter(" ".join(line.split(" ")[:2]) for line in request_lines)
    assert set(sent) == answered, set(sent) ^ answered
    assert max(sent.values()) == 1, sent
    search = next(r for r in records if r.type == "request" and b"POST /api/search" in r.block)
    assert search.block.endswith(b'{"query":"brass"}'), search.block
    upload = next(r for r in records if r.type == "request" and b"POST /api/upload" in r.block)
    assert upload.block.endswith(UPLOAD)
    assert b"\r\nCookie:" not in upload.block  # the site set none: no second jar leaked in
    for record in (r for r in records if r.type == "request"):
        head = record.block.split(b"\r\n\r\n", 1)[0].lower()
        for field in (b"accept", b"user-agent", b"accept-encoding", b"host"):
            assert head.count(b"\r\n" + field + b":") == 1, (field, record.block[:400])

    # the pages are listed with the titles their scripts gave them
    titles = pages(out)
    assert titles[spa.url("/")] == "Catalogue"
    for (number, name, _), path in zip(ITEMS, item_paths(), strict=True):
        assert titles[spa.url(path)] == name, (number, titles)

    browser = result.summary["browser"]
    assert browser["pages"] == 1 + len(ITEMS)
    assert browser["failed"] == 0
    # the item pages share their script and stylesheet: answered from records
    assert browser["from_records"] >= 2 * (len(ITEMS) - 1)
    assert browser["requests"] == (
        browser["from_records"] + browser["fetched"] + sum(browser["refused"].values())
    )
    if mode == "auto":
        assert set(browser["why"]) == {"empty application root"}, browser["why"]

    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    lines = (out / "index.cdxj").read_text().splitlines()
    assert lines == post_append_cdxj(out / "warcs")
    keys = [key for key, entry in index_entries(out) if entry.get("method") == "POST"]
    assert any("__wb_method=post&query=brass" in key for key in keys), keys
    # read from the WARC files alone (archiver index, a dead process's files): the same lines
    scanned = [
        line for warc in sorted((out / "warcs").glob("*.warc.gz")) for line in scan_warc(warc)
    ]
    assert sorted(scanned, key=lambda line: line.encode()) == lines


async def test_pywb_replays_the_browser_capture_in_chromium(tmp_path: Path, spa: SpaSite) -> None:
    out = tmp_path / "crawl"
    result = await run_crawl(out, spa.url("/"), **browser_settings(browser="auto"))
    assert result.status == "completed", result.reason
    timestamp = (out / "index.cdxj").read_text().split(" ", 2)[1]
    live_requests = len(spa.log)
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    async with (
        PywbReplay(
            tmp_path / "pywb", warcs, cdxj=out / "index.cdxj", warc_root=out / "warcs"
        ) as replay,
        aiohttp.ClientSession(auto_decompress=False) as http,
        BrowserPool(BrowserConfig(state_dir=tmp_path / "replay-browser", tabs=2)) as pool,
    ):
        forward = Forwarder(http, replay.base_url)
        base = f"{replay.base_url}/{replay.collection}/{timestamp}/"
        home = await pool.load(base + spa.url("/"), forward)
        assert "1 found" in home.text, home.text
        assert "stored 256 bytes" in home.text, home.text
        for (_, name, text), path in zip(ITEMS, item_paths(), strict=True):
            page = await pool.load(base + spa.url(path), forward)
            assert page.title == name
            assert text in page.text, (path, page.text)
    assert forward.elsewhere == [], "the replay reached past pywb"
    assert len(spa.log) == live_requests, "the replay reached the live site"


async def test_replaywebpage_replays_the_wacz_offline(tmp_path: Path, spa: SpaSite) -> None:
    """ReplayWeb.page, served from 127.0.0.1 with nothing else reachable, opens the crawl's
    WACZ in Chromium: the item pages show the text their scripts fetched, and the catalogue the
    answers of its POST search and upload."""
    out = tmp_path / "crawl"
    result = await run_crawl(out, spa.url("/"), **browser_settings(browser="auto", wacz=True))
    assert result.status == "completed", result.reason
    (wacz,) = out.glob("*.wacz")
    live_requests = len(spa.log)
    async with ReplayWebPage(wacz, tmp_path / "rwp-browser") as replay:
        # each text is waited for until all of them show: the scripts fill the page in turn
        home = await replay.text_of(spa.url("/"), showing("1 found", "stored 256 bytes"))
        assert "1 found" in home and "stored 256 bytes" in home, home
        for (_, name, text), path in zip(ITEMS, item_paths(), strict=True):
            page = await replay.text_of(spa.url(path), showing(text, name))
            assert text in page and name in page, page
    assert len(spa.log) == live_requests, "the replay reached the live site"


def showing(*expected: str) -> Callable[[str], bool]:
    """A test of the replayed text: it holds every one of ``expected``."""
    return lambda shown: all(text in shown for text in expected)


class Forwarder:
    """Answers the replaying browser from pywb (and from nothing else)."""

    def __init__(self, http: aiohttp.ClientSession, origin: str) -> None:
        self.http = http
        self.origin = origin
        self.elsewhere: list[str] = []

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        if not request.url.startswith(self.origin + "/"):
            self.elsewhere.append(request.url)
            return Refusal("not pywb")
        async with self.http.request(
            request.method,
            request.url,
            headers=list(request.headers),
            data=request.body,
            allow_redirects=False,
        ) as response:
            body = await response.read()
            headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers]
            return BrowserResponse(response.status, headers, body, response.reason or "")


async def test_auto_sends_no_ordinary_page_to_the_browser(tmp_path: Path) -> None:
    async with SiteServer() as site:
        analytics = (
            "<script async src='https://www.googletagmanager.com/gtag/js?id=G-1'></script>"
            "<script>window.dataLayer = window.dataLayer || []; gtag('js', new Date());</script>"
        )
        prose = "<p>" + "An ordinary paragraph of an ordinary page. " * 30 + "</p>"
        site.add_page(
            "/",
            f"<html><head><title>Home</title>{analytics}</head><body>{prose}"
            "<noscript>Please enable JavaScript for the comments.</noscript>"
            '<a href="/a.html">A</a><img src="/img/x.png"></body></html>',
        )
        site.add_page("/a.html", f"<html><body><h1>A</h1>{prose}<a href='/'>home</a></body></html>")
        site.add_file("/img/x.png", b"\x89PNG\r\n\x1a\n" + bytes(32), "image/png")
        out = tmp_path / "out"
        result = await run_crawl(out, site.url("/"), **browser_settings(browser="auto"))
    assert result.status == "completed", result.reason
    assert result.summary["browser"]["pages"] == 0
    assert result.summary["browser"]["requests"] == 0
    assert events(out, "browser-page") == []
    assert not profile(out).exists() or not profile_users(profile(out))
    # a crawl of GET requests only: the index is plain cdxj-indexer's
    lines = (out / "index.cdxj").read_text().splitlines()
    assert lines == reference_cdxj(out / "warcs") == post_append_cdxj(out / "warcs")


async def test_a_page_that_navigates_itself_is_kept_as_it_was(tmp_path: Path) -> None:
    """Pages that send their tab elsewhere once loaded (a script setting ``location.href``
    later or at once, a meta refresh; in scope or not) are read and listed as they were before
    the navigation: their own title, their own DOM (a link a script added to it is followed),
    never the next document nor Chromium's error page (``chrome-error://``), which is what
    they were recorded as. Where they went is queued as a link of the page, and the scope
    judges it."""
    made = (
        "const a = document.createElement('a'); a.href = '/made-by-script-{n}';"
        "a.textContent = 'made'; document.body.append(a);"
    )
    async with SiteServer() as site:
        site.add_page(
            "/later",
            "<html><head><title>Before later</title></head><body><script>"
            + made.format(n=1)
            + "setTimeout(() => { location.href = '/next'; }, 50);</script></body></html>",
        )
        site.add_page(
            "/at-once",
            "<html><head><title>Before at once</title></head><body><script>"
            + made.format(n=2)
            + "location.href = 'http://outside.invalid/x';</script></body></html>",
        )
        site.add_page(
            "/refresh",
            "<html><head><title>Before refresh</title>"
            "<meta http-equiv='refresh' content='0; url=/refreshed'></head><body>r</body></html>",
        )
        for path in ("/next", "/refreshed", "/made-by-script-1", "/made-by-script-2"):
            site.add_page(path, f"<html><head><title>{path}</title></head><body>p</body></html>")
        out = tmp_path / "out"
        seeds = [site.url(path) for path in ("/later", "/at-once", "/refresh")]
        result = await run_crawl(out, *seeds, **browser_settings())
    assert result.status == "completed", result.reason
    titles = pages(out)
    assert titles[site.url("/later")] == "Before later"
    assert titles[site.url("/at-once")] == "Before at once"
    assert titles[site.url("/refresh")] == "Before refresh"
    loaded = {e["url"]: e for e in events(out, "browser-page")}
    for seed in seeds:
        assert loaded[seed]["final_url"] == seed
    assert loaded[site.url("/later")]["navigations"] == [site.url("/next")]
    assert loaded[site.url("/at-once")]["navigations"] == ["http://outside.invalid/x"]
    skipped = {(e["url"], e["reason"]) for e in events(out, "skip")}
    assert ("http://outside.invalid/x", "scope") in skipped
    for path in ("/next", "/refreshed", "/made-by-script-1", "/made-by-script-2"):
        assert titles[site.url(path)] == path  # followed, each loaded in a tab of its own
    assert not any(str(title).startswith("chrome-error") for title in titles.values())
    assert collections.Counter(hit.path for hit in site.counters.hits)["/next"] == 1
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    captured = collections.Counter(
        r.uri for r in read_records(out / "warcs") if r.type in ("response", "revisit")
    )
    assert {url: n for url, n in captured.items() if n > 1} == {}


async def test_refused_requests_fail_in_the_page_and_are_logged(tmp_path: Path) -> None:
    async with SpaSite() as spa, SpaSite() as other:
        spa.robots = "User-agent: *\nDisallow: /blocked/\n"
        out = tmp_path / "out"
        seeds = (spa.url("/refusals.html"), spa.url(f"/guard.html?other={other.url('')}"))
        result = await run_crawl(
            out, *seeds, **browser_settings(robots="obey", allow_private=False)
        )
    assert result.status == "completed", result.reason
    assert not [hit for hit in spa.log if hit.path_qs.startswith("/blocked/")]
    assert other.log == [], "the SSRF guard let the page reach another local server"
    refused = {(e["url"], e["reason"]) for e in events(out, "browser-refused")}
    assert (spa.url("/blocked/pixel.png"), "robots") in refused
    assert (spa.url("/blocked/beacon"), "robots") in refused
    assert (other.url("/api/secret"), "blocked-address") in refused
    titles = pages(out)
    assert titles[seeds[0]] == "beacon failed"
    assert titles[seeds[1]] == "secret failed"
    assert result.summary["browser"]["refused"] == {"robots": 2, "blocked-address": 1}
    assert spa.url("/img/1.png") in {entry["url"] for _, entry in index_entries(out)}


async def test_the_ignores_refuse_a_pages_requests_as_they_skip_its_links(
    tmp_path: Path,
) -> None:
    """A page's requests are admitted by the code that admits the crawl's own URLs: the crawl
    directory's ``ignores`` keep them from the server as they keep a link."""
    async with SpaSite() as spa:
        out = tmp_path / "out"
        out.mkdir()
        (out / "ignores").write_text("/blocked/\n")
        seed = spa.url("/refusals.html")
        result = await run_crawl(out, seed, **browser_settings())
    assert result.status == "completed", result.reason
    assert not [hit for hit in spa.log if hit.path_qs.startswith("/blocked/")]
    refused = {(e["url"], e["reason"]) for e in events(out, "browser-refused")}
    assert refused == {
        (spa.url("/blocked/pixel.png"), "ignored"),
        (spa.url("/blocked/beacon"), "ignored"),
    }
    assert pages(out)[seed] == "beacon failed"
    assert result.summary["browser"]["refused"] == {"ignored": 2}


async def test_screenshots_are_resource_records_listed_in_the_report(
    tmp_path: Path, spa: SpaSite
) -> None:
    out = tmp_path / "out"
    result = await run_crawl(
        out, spa.url("/"), **browser_settings(screenshots=True, behaviors=("none",))
    )
    assert result.status == "completed", result.reason
    shots = [r for r in read_records(out / "warcs") if r.type == "resource"]
    expected = {"urn:screenshot:" + spa.url(path) for path in ["/", *item_paths()]}
    assert {r.uri for r in shots} == expected
    for shot in shots:
        assert shot.get("Content-Type") == "image/png"
        assert shot.block.startswith(b"\x89PNG\r\n\x1a\n")
        width = int.from_bytes(shot.block[16:20], "big")
        assert width == 1280
    assert result.summary["browser"]["screenshots"] == len(expected)
    lines = (out / "index.cdxj").read_text().splitlines()
    assert lines == post_append_cdxj(out / "warcs")
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    html = write_report(out, out / "report.html").read_text()
    for uri in expected:
        assert uri in html


async def test_a_killed_chromium_costs_one_try_of_a_page(tmp_path: Path, spa: SpaSite) -> None:
    out = tmp_path / "out"
    killed: list[int] = []

    def kill_chromium(hit: Logged) -> None:
        if hit.path_qs == "/api/item/2.json" and not killed:
            for proc in profile_users(profile(out)):
                if proc.pgid not in killed:
                    killed.append(proc.pgid)
                    os.killpg(proc.pgid, signal.SIGKILL)

    spa.on_request = kill_chromium
    result = await run_crawl(out, spa.url("/"), **browser_settings(browser_tabs=1, workers=2))
    assert killed, "Chromium was never killed"
    assert result.status == "completed", result.reason
    browser = result.summary["browser"]
    assert browser["retried"] >= 1
    assert browser["failed"] == 0
    assert browser["pages"] == 1 + len(ITEMS)
    assert_nothing_twice(spa)  # the retried page's document and JSON came from the records
    assert pages(out)[spa.url("/item/2")] == "Sextant"
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert_no_chromium(out)


async def test_a_page_that_hangs_the_browser_fails_alone(tmp_path: Path, spa: SpaSite) -> None:
    """Every try of the hanging page ends at the page timeout and costs that Chromium; after
    --max-tries the page fails with reason ``browser``, keeping its static capture and links,
    and the rest of the crawl is captured by the browsers started after it."""
    out = tmp_path / "out"
    result = await run_crawl(
        out,
        spa.url("/hang.html"),
        **browser_settings(page_timeout=4.0, max_tries=2, behaviors=("none",)),
    )
    assert result.status == "completed", result.reason
    assert result.summary["failures"] == {"browser": 1}
    browser = result.summary["browser"]
    assert (browser["failed"], browser["retried"]) == (1, 1)
    assert pages(out)[spa.url("/item/1")] == "Astrolabe"  # found in the static HTML
    captured = collections.Counter(entry["url"] for _, entry in index_entries(out))
    assert captured[spa.url("/hang.html")] == 1  # captured once, recalled for the retry
    failed = [e for e in events(out, "fetch") if e.get("reason") == "browser"]
    assert [e["outcome"] for e in failed] == ["retry", "failed"]
    assert_nothing_twice(spa)
    assert_no_chromium(out)


def crawl_command(out: Path, seed: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        seed,
        "--output",
        str(out),
        "--browser",
        "all",
        "--browser-tabs",
        "1",
        "--workers",
        "2",
        "--per-host-delay",
        "0",
        "--robots",
        "ignore",
        "--progress",
        "off",
        "--quiet",
    ]


async def run_until(
    command: list[str], spa: SpaSite, trigger: Callable[[Logged], bool], sig: int
) -> int:
    """Run the crawl; send ``sig`` when the server sees the request ``trigger`` picks."""
    process = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)

    def on_request(hit: Logged) -> None:
        if trigger(hit) and process.returncode is None:
            process.send_signal(sig)
            spa.on_request = None

    spa.on_request = on_request
    try:
        await asyncio.wait_for(process.wait(), timeout=240)
    finally:
        spa.on_request = None
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode if process.returncode is not None else -1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
async def test_a_stopped_browser_crawl_resumes_and_leaves_no_chromium(
    tmp_path: Path, spa: SpaSite, sig: int
) -> None:
    out = tmp_path / "out"
    command = crawl_command(out, spa.url("/"))
    code = await run_until(command, spa, lambda hit: hit.path_qs == "/api/item/3.json", sig)
    if sig == signal.SIGINT:
        assert code == 3
        assert_no_chromium(out)  # a graceful stop closes the browser
    else:
        assert code == -signal.SIGKILL
        # its Chromium notices the closed DevTools pipe and quits (else the resume reaps it)
        await wait_for_no_chromium(out)
    seen_before = len(spa.log)
    process = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), timeout=240)
    assert process.returncode == 0, err.decode()
    assert_no_chromium(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    titles = pages(out)
    for (_, name, _), path in zip(ITEMS, item_paths(), strict=True):
        assert titles[spa.url(path)] == name
    after = collections.Counter(spa.requested()[seen_before:])
    # what the first run captured and committed is answered from its records, not asked again
    if sig == signal.SIGINT:
        assert "GET /static/item.js" not in after, after
        assert_nothing_twice(spa)
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


async def test_two_processes_of_a_redis_crawl_share_what_they_captured(
    tmp_path: Path, spa: SpaSite
) -> None:
    """Each process has its browser; the captured URLs are in Redis, so a process answers its
    pages' requests from another process's records. Two processes may fetch a shared file at
    the same moment (the claim is per process): at most once each."""
    out = tmp_path / "out"
    with RedisServer(tcp=True) as server:
        command = [
            *crawl_command(out, spa.url("/")),
            "--frontier",
            server.url,
            "--crawl-id",
            "browser-shared",
            "--lease-timeout",
            "120",
        ]
        processes = [
            await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE) for _ in range(2)
        ]
        results = await asyncio.wait_for(
            asyncio.gather(*(p.communicate() for p in processes)), timeout=300
        )
        codes = [p.returncode for p in processes]
        assert codes == [0, 0], [err.decode()[-2000:] for _, err in results]
    counts = collections.Counter(spa.requested())
    documents = ["GET /", *(f"GET {path}" for path in item_paths())]
    assert all(counts[doc] == 1 for doc in documents), counts
    assert max(counts.values()) <= 2, counts
    assert len(list((out / "state").glob("*/crawl.json"))) == 2  # two processes took part
    titles = pages_of_every_process(out)
    for (_, name, _), path in zip(ITEMS, item_paths(), strict=True):
        assert titles[spa.url(path)] == name
    assert_no_chromium_anywhere(out)
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert (out / "index.cdxj").read_text().splitlines() == post_append_cdxj(out / "warcs")


async def test_every_process_of_processes_2_has_its_own_browser(
    tmp_path: Path, spa: SpaSite
) -> None:
    """``--processes 2 --browser all``: each crawler process drives its own Chromium; the crawl
    is one (one index, one summary, one WACZ listing the pages of both), and no Chromium is
    left when it ends."""
    out = tmp_path / "out"
    command = [*crawl_command(out, spa.url("/")), "--processes", "2", "--wacz"]
    process = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode == 0, err.decode()[-3000:]
    counts = collections.Counter(spa.requested())
    documents = ["GET /", *(f"GET {path}" for path in item_paths())]
    assert all(counts[doc] == 1 for doc in documents), counts
    assert max(counts.values()) <= 2, counts  # a shared file, fetched by both at one moment
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert summary["browser"]["pages"] == len(documents)
    assert_no_chromium_anywhere(out)
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert (out / "index.cdxj").read_text().splitlines() == post_append_cdxj(out / "warcs")
    with zipfile.ZipFile(out / "out.wacz") as wacz:
        listed = wacz.read("pages/pages.jsonl").decode().splitlines()[1:]
    titles = {entry["url"]: entry.get("title") for entry in map(json.loads, listed)}
    for (_, name, _), path in zip(ITEMS, item_paths(), strict=True):
        assert titles[spa.url(path)] == name


def pages_of_every_process(out: Path) -> dict[str, str | None]:
    titles: dict[str, str | None] = {}
    for path in (out / "state").glob("*/pages.jsonl"):
        for entry in map(json.loads, path.read_text().splitlines()):
            titles[entry["url"]] = entry["title"]
    return titles


def assert_no_chromium_anywhere(out: Path) -> None:
    left = [proc for path in out.rglob("profile") for proc in profile_users(path)]
    assert not left, f"Chromium processes outlived the crawl: {left}"


async def wait_for_no_chromium(out: Path, limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while profile_users(profile(out)):
        assert loop.time() < end, (
            f"Chromium outlived its killed owner: {profile_users(profile(out))}"
        )
        await asyncio.sleep(0.1)


def test_a_missing_chromium_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    crawl = [sys.executable, "-m", "archiver", "crawl", "http://127.0.0.1:9/", "--output", str(out)]
    proc = subprocess.run(
        [*crawl, "--browser", "auto"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "apt-get install chromium" in lines[0]
    assert not out.exists()
    named = subprocess.run(
        [*crawl, "--browser", "all", "--chromium", str(tmp_path / "no-such-chromium")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert named.returncode == 2
    assert "--chromium" in named.stderr and "no-such-chromium" in named.stderr
    assert not out.exists()
