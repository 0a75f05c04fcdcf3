"""End to end: a crawl of the site of pages that need a reader's hands
(:mod:`tests.support.behave_site`) with every behaviour, a user behaviour and hash routes, in
``--browser auto`` and ``all``; then its replay in pywb and in ReplayWeb.page, where the same
clicks reveal the same content, the routes render their own content and the video's source is
served; and the bounds: an endless "load more", a page that keeps leaving and opening windows,
a route crawl stopped and resumed, shared by two processes.

The server's log is the judge of "captured exactly once": every request the pages make reaches
it once, and every capture is one record.
"""

from __future__ import annotations

import asyncio
import collections
import json
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.commands import verify
from archiver.commands.report import write_report
from tests.browser.test_behaviors import tried_in_order
from tests.browser.test_browser_crawl import (
    assert_no_chromium_anywhere,
    events,
    pages,
    post_append_cdxj,
)
from tests.conftest import run_crawl
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.support.behave_site import (
    CUSTOM_BEHAVIOR,
    FEED_PAGES,
    MEDIA,
    OVERLAY_RGB,
    PANELS,
    ROUTES,
    TABS,
    BehaveSite,
    Hit,
    feed_item_paths,
    route_fragment,
    route_text,
)
from tests.support.images import decode_png
from tests.support.pywb import PywbReplay
from tests.support.replaywebpage import ReplayWebPage
from tests.support.warcs import read_records

pytestmark = pytest.mark.usefixtures("chromium_installed")

EVERY_BEHAVIOR = ("consent", "autoscroll", "autoclick", "autoplay", "search")

#: What the pages make the browser request once behaviours ran, each exactly once.
REVEALED = [
    *(f"GET /api/feed?page={n}" for n in range(1, FEED_PAGES + 1)),
    *(f"GET /api/tab/{name}.json" for name in TABS),
    *(f"GET /api/panel/{n}.html" for n in range(1, PANELS + 1)),
    "GET /img/in-details.png",
    "GET /media/lazy.mp4",
    "GET /media/clip.mp4",
    "GET /media/tone.wav",
    "POST /api/consent",
    "GET /search-index.json",
    "GET /app/vendor/router.js",
    *(f"GET /app/content/route-{n}.md" for n in range(1, ROUTES + 1)),
    "GET /api/secret/1.json",
    "GET /api/secret/2.json",
]
#: Pages only behaviours lead to: clicks, search results, a user behaviour's link, and the
#: targets of the navigations the guard and the tab stopped (queued as links).
REACHED = [
    *feed_item_paths(),
    "/related.html",
    "/from-panel.html",
    "/guarded.html",
    "/new-window.html",
    "/scripted.html",
    "/docs/alpha.html",
    "/docs/beta.html",
    "/custom-added.html",
]


@pytest.fixture
async def site() -> Any:
    async with BehaveSite() as behave:
        yield behave


def behaviour_script(tmp_path: Path) -> Path:
    path = tmp_path / "reveal-secrets.js"
    path.write_text(CUSTOM_BEHAVIOR)
    return path


async def crawl_every_behaviour(out: Path, site: BehaveSite, mode: str, script: Path) -> Any:
    result = await run_crawl(
        out,
        site.url("/"),
        browser=mode,
        workers=4,
        browser_tabs=2,
        behaviors=EVERY_BEHAVIOR,
        behavior_script=(script,),
        screenshots=("view", "thumbnail"),
        wacz=True,
    )
    assert result.status == "completed", result.reason
    return result


async def test_what_behaviours_reveal_is_captured_exactly_once(
    tmp_path: Path, site: BehaveSite
) -> None:
    """``--browser auto``: the pages that need a reader's hands go to the browser."""
    out = tmp_path / "auto"
    result = await crawl_every_behaviour(out, site, "auto", behaviour_script(tmp_path))
    assert_captured_exactly_once(out, site, result)


async def test_every_page_in_the_browser_captures_it_once_and_both_replay_tools_replay_it(
    tmp_path: Path, site: BehaveSite
) -> None:
    """``--browser all``: what the behaviours revealed is captured once (as under ``auto``),
    and the same crawl replays in pywb and in ReplayWeb.page, where the same clicks reveal the
    same content, each route renders its own and the video's source is served, without a
    request reaching the live site."""
    out = tmp_path / "all"
    result = await crawl_every_behaviour(out, site, "all", behaviour_script(tmp_path))
    assert_captured_exactly_once(out, site, result)
    live_requests = len(site.log)
    await assert_pywb_replays(out, site, tmp_path)
    await assert_replaywebpage_replays(out, site, tmp_path)
    assert len(site.log) == live_requests, "a replay reached the live site"


def assert_captured_exactly_once(out: Path, site: BehaveSite, result: Any) -> None:
    """Every request the pages made reached the server once, each capture is one record, each
    route a page of its own, and each behaviour's work is in the log, summary and report."""
    requested = collections.Counter(site.requested())
    assert {r: n for r, n in requested.items() if n > 1} == {}, "requested more than once"
    for expected in [*REVEALED, *(f"GET {path}" for path in REACHED)]:
        assert requested[expected] == 1, f"{expected} was not requested: {sorted(requested)}"

    # one record per capture, no fragment in any target, the index as cdxj-indexer makes it
    records = read_records(out / "warcs")
    assert not [r.uri for r in records if "#" in (r.uri or "")], "a target with a fragment"
    targets = collections.Counter(
        r.uri for r in records if r.type in ("response", "revisit", "request")
    )
    assert {uri: n for uri, n in targets.items() if n != 2} == {}  # a request and a response
    assert (out / "index.cdxj").read_text().splitlines() == post_append_cdxj(out / "warcs")
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)

    # each route is a page of its own: listed with its title and its text, in the WACZ too
    listed = {
        entry["url"]: entry
        for entry in map(json.loads, (out / "state" / "pages.jsonl").read_text().splitlines())
    }
    with zipfile.ZipFile(next(out.glob("*.wacz"))) as wacz:
        packaged = {
            entry["url"]: entry
            for entry in map(json.loads, wacz.read("pages/pages.jsonl").decode().splitlines()[1:])
        }
    for n in range(1, ROUTES + 1):
        url = site.url("/app/" + route_fragment(n))
        assert listed[url]["title"] == f"Guide: Route {n}"
        assert route_text(n) in listed[url]["text"]
        assert packaged[url]["title"] == f"Guide: Route {n}"
    assert site.url("/app/#section") not in listed  # a place in the page, not a route
    assert pages(out)[site.url("/tabs.html")] == "Tabs"  # read where it was, not where it went

    # the consent overlay is in no screenshot of the page
    shots = {r.uri: r for r in records if r.type == "resource"}
    consent = shots["urn:screenshot:" + site.url("/consent.html")]
    _, _, pixels = decode_png(consent.block)
    assert OVERLAY_RGB not in pixels
    assert "urn:screenshot:" + site.url("/app/%23/route-3") in shots  # the # escaped

    # each behaviour's work, per page in the log and in total in the summary
    loaded = {event["url"]: event for event in events(out, "browser-page")}
    tabs = loaded[site.url("/tabs.html")]["behaviors"]["autoclick"]
    assert tabs["clicks"] >= len(TABS) + PANELS and tabs["navigations_blocked"] == 3
    assert loaded[site.url("/feed.html")]["behaviors"]["autoclick"]["links"] == len(
        feed_item_paths()
    )
    assert loaded[site.url("/media.html")]["behaviors"]["autoplay"]["plays"] == 3
    assert loaded[site.url("/consent.html")]["behaviors"]["consent"]["ran"] == "OneTrust"
    assert loaded[site.url("/search.html")]["behaviors"]["search"]["typed"] == 1
    custom = loaded[site.url("/custom.html")]["behaviors"]["script"]
    assert custom["ran"] == "Reveal secrets" and custom["links"] == 1
    browser = result.summary["browser"]
    assert browser["routes"] == ROUTES
    assert browser["plays"] >= 3 and browser["typed"] >= 1
    assert browser["navigations_blocked"] >= 3
    assert browser["behavior_links"]["autoclick"] >= len(feed_item_paths()) + 5
    assert browser["behavior_links"]["search"] >= 2
    assert browser["behavior_bounds"] == {}
    assert set(browser["behaviors"]) == {*EVERY_BEHAVIOR, "script"}
    assert browser["failed"] == 0
    html = write_report(out, out / "report.html").read_text()
    for row in ("pages each behaviour ran on", "URLs the behaviours found", "hash routes"):
        assert row in html, row


async def test_an_endless_list_and_a_page_that_keeps_leaving_end_at_their_bounds(
    tmp_path: Path, site: BehaveSite
) -> None:
    """The endless "load more" stops at its behaviour's time, logged as such; the page that
    keeps navigating away and opening windows is held, each attempt counted and its target
    crawled as a link; the crawl goes on and completes."""
    out = tmp_path / "out"
    result = await run_crawl(
        out,
        site.url("/endless.html"),
        site.url("/leave.html"),
        browser="all",
        workers=2,
        browser_tabs=2,
        behaviors=("autoclick",),
        page_timeout=10.0,
    )
    assert result.status == "completed", result.reason
    bounds = [e for e in events(out, "behavior-bounds") if e["url"] == site.url("/endless.html")]
    assert [(e["behavior"], e["stopped"], e["level"]) for e in bounds] == [
        ("autoclick", "time", "warning")
    ]
    assert result.summary["browser"]["behavior_bounds"] == {"autoclick": 1}
    loaded = {event["url"]: event for event in events(out, "browser-page")}
    leave = loaded[site.url("/leave.html")]
    assert leave["final_url"] == site.url("/leave.html")
    # the tries the browser made (a try replaced while starting never is: see
    # test_a_page_that_keeps_leaving_and_opening_windows_stays), each held and counted
    tries = [site.url(f"/away-{n}.html") for n in range(1, 6)]
    assert tried_in_order(leave["navigations"], tries), leave["navigations"]
    held = len(leave["navigations"])
    assert (leave["navigations_blocked"], leave["popups_blocked"]) == (held, 5)
    assert result.summary["browser"]["navigations_blocked"] == held
    assert result.summary["browser"]["popups_blocked"] == 5
    requested = collections.Counter(site.requested())
    for n in range(1, 6):  # where it went: each crawled once, as a link of the page
        assert requested[f"GET /away-{n}.html"] == (tries[n - 1] in leave["navigations"])
        assert requested[f"GET /popup-{n}.html"] == 1
    assert requested["GET /item-after-leave.html"] == 1
    assert pages(out)[site.url("/leave.html")] == "Stayed"
    assert result.summary["failures"] == {}


async def test_a_static_crawl_keeps_dropping_fragments(tmp_path: Path, site: BehaveSite) -> None:
    """Without a browser nothing renders a route: the routes stay collapsed into their
    document, as before, and no URL with a fragment is queued."""
    out = tmp_path / "out"
    result = await run_crawl(out, site.url("/app/"))
    assert result.status == "completed", result.reason
    assert [url for url in pages(out) if "#" in url] == []
    assert not [r for r in site.requested() if "/content/route-" in r]
    assert "browser" not in result.summary


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--browser", "auto", "--behavior-script", "missing.js"], "--behavior-script"),
        (["--behavior-script", "reveal.js"], "--behavior-script: works only with --browser"),
        (["--browser", "all", "--click-selector", ".more"], "works only with autoclick"),
        (["--browser", "all", "--behaviors", "autoclick,dance"], "--behaviors"),
        (["--browser", "all", "--screenshots", "view,panorama"], "--screenshots"),
    ],
    ids=["missing-script", "script-without-browser", "selector-without-autoclick",
         "unknown-behaviour", "unknown-screenshot"],
)  # fmt: skip
def test_behaviour_options_that_cannot_work_are_one_line_usage_errors(
    tmp_path: Path, options: list[str], message: str
) -> None:
    (tmp_path / "reveal.js").write_text(CUSTOM_BEHAVIOR)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "crawl", "http://127.0.0.1:9/", "--output", str(out),
         *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert not out.exists()


class Forwarder:
    """Answers the replaying browser from pywb alone, and notes every answer."""

    def __init__(self, http: aiohttp.ClientSession, origin: str) -> None:
        self.http = http
        self.origin = origin
        self.answers: list[tuple[str, int, bytes]] = []
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
            self.answers.append((request.url, response.status, body))
            return BrowserResponse(response.status, headers, body, response.reason or "")


async def assert_pywb_replays(out: Path, site: BehaveSite, tmp_path: Path) -> None:
    """pywb, in Chromium answered only by pywb: the clicks, the routes and the media."""
    timestamp = (out / "index.cdxj").read_text().split(" ", 2)[1]
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    async with (
        PywbReplay(
            tmp_path / "pywb", warcs, cdxj=out / "index.cdxj", warc_root=out / "warcs"
        ) as replay,
        aiohttp.ClientSession(auto_decompress=False) as http,
    ):
        forward = Forwarder(http, replay.base_url)
        base = f"{replay.base_url}/{replay.collection}/{timestamp}/"

        async def replayed(path: str, behaviors: tuple[str, ...]) -> Any:
            config = BrowserConfig(
                state_dir=tmp_path / "replay-browser", tabs=1, behaviors=behaviors
            )
            async with BrowserPool(config) as pool:
                return await pool.load(base + site.url(path), forward)

        # the same clicks reveal the same content
        tabs = await replayed("/tabs.html", ("autoclick",))
        for text in ("The history tab's own text.", "Answer 2.", "Answer 3.", "Related reading"):
            assert text in tabs.text, tabs.text
        feed = await replayed("/feed.html", ("autoclick",))
        assert all(f"Feed item {n}" in feed.text for n in range(1, len(feed_item_paths()) + 1))
        # each route renders its own content
        for n in (1, ROUTES - 1, ROUTES):
            route = await replayed("/app/" + route_fragment(n), ("none",))
            assert route.title == f"Guide: Route {n}", route.title
            assert route_text(n) in route.text
        # the video's source, set on play, is served
        await replayed("/media.html", ("autoplay",))
        for path in ("/media/lazy.mp4", "/media/clip.mp4"):
            served = [(s, b) for url, s, b in forward.answers if url.endswith(site.url(path))]
            assert served, f"the replay never asked for {path}"
            status, body = served[-1]
            assert status in (200, 206) and body == MEDIA[path][0], (path, status)
    assert forward.elsewhere == [], "the replay reached past pywb"


#: In the replayed tabs page: the clicks a reader makes, and the text once they showed.
CLICK_IN_REPLAY = """(async () => {
  document.querySelector('[data-tab="history"]').click();
  document.querySelector('[data-panel="2"]').click();
  for (let i = 0; i < 300; i++) {
    const text = document.body.innerText;
    if (text.includes("history tab's own text") && text.includes("Answer 2.")) return text;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return document.body.innerText;
})()"""

#: In the replayed media page: the lazy video played, and how its request was answered.
PLAY_IN_REPLAY = """(async () => {
  const video = document.getElementById("lazy");
  video.muted = true;
  video.play().catch(() => {});
  for (let i = 0; i < 300; i++) {
    const seen = performance.getEntriesByType("resource").filter(
      (entry) => entry.name.endsWith("/media/lazy.mp4") && entry.responseEnd > 0);
    if (seen.length) return {status: seen[0].responseStatus, size: seen[0].decodedBodySize,
                             initiator: seen[0].initiatorType};
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return null;
})()"""


async def assert_replaywebpage_replays(out: Path, site: BehaveSite, tmp_path: Path) -> None:
    """ReplayWeb.page, from the WACZ: the clicks, the routes and the media."""
    (wacz,) = out.glob("*.wacz")
    async with ReplayWebPage(wacz, tmp_path / "rwp-browser") as replay:
        clicked = await replay.run_in(
            site.url("/tabs.html"), lambda text: "Question 2" in text, CLICK_IN_REPLAY
        )
        assert "The history tab's own text." in clicked and "Answer 2." in clicked, clicked
        for n in (1, ROUTES - 1, ROUTES):
            url = site.url("/app/" + route_fragment(n))
            shown = await replay.text_of(url, showing(route_text(n)))
            assert f"Route {n}" in shown
        played = await replay.run_in(site.url("/media.html"), lambda _: True, PLAY_IN_REPLAY)
        assert played is not None, "the replayed video never asked for its source"
        assert played["initiator"] == "video"
        assert played["status"] in (200, 206)
        assert played["size"] == len(MEDIA["/media/lazy.mp4"][0])


def showing(expected: str) -> Callable[[str], bool]:
    return lambda shown: expected in shown


def crawl_command(out: Path, seed: str, *extra: str) -> list[str]:
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
        "--behaviors",
        "none",
        "--per-host-delay",
        "0",
        "--robots",
        "ignore",
        "--progress",
        "off",
        "--quiet",
        *extra,
    ]


def route_pages(out: Path) -> dict[str, str | None]:
    titles: dict[str, str | None] = {}
    for path in [out / "state" / "pages.jsonl", *out.glob("state/*/pages.jsonl")]:
        if path.is_file():
            for entry in map(json.loads, path.read_text().splitlines()):
                if "#" in entry["url"]:
                    titles[entry["url"]] = entry["title"]
    return titles


def expected_routes(site: BehaveSite) -> dict[str, str | None]:
    return {site.url("/app/" + route_fragment(n)): f"Guide: Route {n}" for n in range(1, 11)}


async def test_a_route_crawl_stopped_and_resumed_renders_each_route_once(
    tmp_path: Path, site: BehaveSite
) -> None:
    """Ctrl-C while the routes are being rendered; the same command resumes: the routes queued
    with their fragment are leased again, each route's content fetched once in all, and every
    route listed."""
    out = tmp_path / "out"
    command = crawl_command(out, site.url("/app/"))
    process = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)

    def interrupt(hit: Hit) -> None:
        if hit.path_qs == "/app/content/route-4.md" and process.returncode is None:
            process.send_signal(signal.SIGINT)
            site.on_request = None

    site.on_request = interrupt
    _, err = await asyncio.wait_for(process.communicate(), timeout=240)
    assert process.returncode == 3, err.decode()[-2000:]
    assert len(route_pages(out)) < ROUTES, "the first run was not stopped mid-way"
    again = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(again.communicate(), timeout=240)
    assert again.returncode == 0, err.decode()[-2000:]
    assert route_pages(out) == expected_routes(site)
    requested = collections.Counter(site.requested())
    assert {r: n for r, n in requested.items() if n > 1} == {}, requested
    assert requested["GET /app/"] == 1  # the document: recalled for every route
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert_no_chromium_anywhere(out)


async def test_two_processes_render_the_routes_of_one_crawl(
    tmp_path: Path, site: BehaveSite
) -> None:
    """``--processes 2``: the routes queued in the shared frontier with their fragment are
    rendered by either process, the document read from the other's records when it captured
    it; one index, one WACZ listing every route."""
    out = tmp_path / "out"
    command = crawl_command(out, site.url("/app/"), "--processes", "2", "--wacz")
    process = await asyncio.create_subprocess_exec(*command, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode == 0, err.decode()[-3000:]
    assert route_pages(out) == expected_routes(site)
    requested = collections.Counter(site.requested())
    assert requested["GET /app/"] == 1
    for n in range(1, ROUTES + 1):
        assert requested[f"GET /app/content/route-{n}.md"] == 1, requested
    summary = json.loads((out / "summary.json").read_text())
    assert summary["browser"]["routes"] == ROUTES
    with zipfile.ZipFile(out / "out.wacz") as wacz:
        listed = wacz.read("pages/pages.jsonl").decode().splitlines()[1:]
    assert {json.loads(line)["url"] for line in listed} >= set(expected_routes(site))
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert_no_chromium_anywhere(out)


# -- the README's command lines, as written --------------------------------------------------

EVERY_BEHAVIOUR_LINE = (
    ".venv/bin/archiver crawl https://example.org/ --browser all --behaviors "
    "consent,autoscroll,autoclick,autoplay,search --click-selector '.read-more' "
    "--screenshots view,full,thumbnail"
)
SCRIPTS_LINE = (
    ".venv/bin/archiver crawl https://example.org/ --browser auto --behavior-script "
    "~/behaviors/behaviors.js --behavior-script ~/behaviors/my-site.js"
)


async def run_documented(doc: DocShell, text: str, cwd: Path, replace: dict[str, str]) -> Path:
    """Run a documented crawl line against the site (served by this test's loop, so the
    command is waited for in a thread); the crawl directory it made."""
    process = doc.start(text, cwd=workdir(cwd), replace=replace)
    _, err = await asyncio.wait_for(asyncio.to_thread(process.communicate), timeout=600)
    assert process.returncode == 0, err[-3000:]
    (out,) = (cwd / "crawls").iterdir()
    return out


@documents(EVERY_BEHAVIOUR_LINE)
async def test_the_readme_line_with_every_behaviour(
    doc: DocShell, tmp_path: Path, site: BehaveSite
) -> None:
    out = await run_documented(
        doc, EVERY_BEHAVIOUR_LINE, tmp_path / "run", {"https://example.org/": site.url("/")}
    )
    requested = collections.Counter(site.requested())
    assert {r: n for r, n in requested.items() if n > 1} == {}
    for expected in ["GET /api/read-more.json", *REVEALED[:-2]]:  # no user behaviour here
        assert requested[expected] == 1, expected
    browser = json.loads((out / "summary.json").read_text())["browser"]
    assert browser["routes"] == ROUTES and browser["typed"] == 1
    assert set(browser["behaviors"]) == set(EVERY_BEHAVIOR)
    kinds = collections.Counter(
        str(r.uri).split(":", 2)[1] for r in read_records(out / "warcs") if r.type == "resource"
    )
    assert kinds["screenshot"] == kinds["screenshot-full"] == kinds["thumbnail"] > ROUTES


@documents(SCRIPTS_LINE)
async def test_the_readme_line_with_a_bundle_and_a_behaviour(
    doc: DocShell, tmp_path: Path, site: BehaveSite, browsertrix_bundle: Path
) -> None:
    """The real Browsertrix Behaviors bundle (fetched as the README says) and the class run as
    ``--behavior-script`` files in that order: the class loaded into the bundle's manager and
    run by it on the page it matches; what it reveals fetched once, the link it adds crawled."""
    behaviours = tmp_path / "behaviors"
    behaviours.mkdir()
    shutil.copyfile(browsertrix_bundle, behaviours / "behaviors.js")
    (behaviours / "my-site.js").write_text(CUSTOM_BEHAVIOR)
    replace = {
        "https://example.org/": site.url("/"),
        "~/behaviors/behaviors.js": str(behaviours / "behaviors.js"),
        "~/behaviors/my-site.js": str(behaviours / "my-site.js"),
    }
    out = await run_documented(doc, SCRIPTS_LINE, tmp_path / "run", replace)
    loaded = {event["url"]: event for event in events(out, "browser-page")}
    ran = loaded[site.url("/custom.html")]["behaviors"]["script"]
    assert "Using Site-Specific Behavior: Reveal secrets" in ran["notes"], ran
    assert '{"msg":"done!","behavior":"Reveal secrets"}' in ran["notes"], ran
    requested = collections.Counter(site.requested())
    for path in ("/api/secret/1.json", "/api/secret/2.json", "/custom-added.html"):
        assert requested[f"GET {path}"] == 1, path
