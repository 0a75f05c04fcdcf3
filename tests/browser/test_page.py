"""Pages of the client-rendered site loaded in real Chromium, every request answered by a handler
that fetches it from the live site: what the page requests, what the handler sees, what the
browser makes of the answers, and what is read from the live DOM."""

from __future__ import annotations

import asyncio
import collections
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from archiver.browser.errors import NavigationError
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.extract.links import extract_html
from tests.browser.conftest import SiteHandler
from tests.support.spa_site import INDEX, ITEMS, LAZY_IMAGES, UPLOAD, SpaSite, item_paths


class Together:
    """Holds each page's document until ``count`` pages have asked for theirs."""

    def __init__(self, handler: SiteHandler, count: int) -> None:
        self.handler = handler
        self.count = count
        self.reset()

    def reset(self) -> None:
        self.asked = 0
        self.all_asked = asyncio.Event()

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.is_main_frame:
            self.asked += 1
            if self.asked == self.count:
                self.all_asked.set()
            await self.all_asked.wait()
        return await self.handler(request)


def origin_paths(site: SpaSite, urls: tuple[str, ...]) -> list[str]:
    return [url.removeprefix(site.url("")) for url in urls]


async def test_static_extraction_finds_no_item_page(spa: SpaSite) -> None:
    """The gap the browser closes: the index's HTML names no item page."""
    links = extract_html(INDEX.encode(), spa.url("/"))
    assert not set(item_paths()) & set(origin_paths(spa, links.pages))


async def test_every_request_reaches_the_handler_exactly_once(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    result = await pool.load(spa.url("/"), handler)
    server = spa.requested()
    assert sorted(handler.requested()) == sorted(server)
    duplicates = [line for line, count in collections.Counter(server).items() if count > 1]
    assert duplicates == []
    paths = {line.split(" ", 1)[1].split("?", 1)[0] for line in server}
    expected = {
        "/",
        "/static/app.css",
        "/static/app.js",
        "/static/archive-sans.woff2",  # the font the stylesheet declares and the text uses
        "/api/config.json",
        "/api/items",
        "/api/items.json",
        "/api/search",
        "/api/upload",
        *(f"/img/{n}.png" for n in range(1, LAZY_IMAGES + 1)),
    }
    assert expected <= paths
    assert result.requests == len(handler.log)
    cache_busted = [line for line in server if line.startswith("GET /api/config.json?_=")]
    assert len(cache_busted) == 1
    document = handler.log[0]
    assert (document.resource_type, document.is_navigation, document.is_main_frame) == (
        "Document",
        True,
        True,
    )


async def test_post_bodies_arrive_intact(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    result = await pool.load(spa.url("/"), handler)
    posts = {r.url.removeprefix(spa.url("")): r for r in handler.log if r.method == "POST"}
    assert posts["/api/upload"].body == UPLOAD  # every byte value, NUL and 0xFF included
    assert posts["/api/upload"].body_complete
    assert posts["/api/search"].body == b'{"query":"brass"}'
    server = {hit.path_qs: hit.body for hit in spa.log if hit.method == "POST"}
    assert server == {"/api/upload": UPLOAD, "/api/search": b'{"query":"brass"}'}
    assert "/api/search" in [line.split(" ")[1] for line in handler.requested()]
    assert result.refused == 0


async def test_live_dom_yields_the_item_pages_and_the_gzip_answers_were_decoded(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    """app.js and items.json are gzip-encoded: the page could only run and render the items if
    the browser got them decoded."""
    result = await pool.load(spa.url("/"), handler)
    assert origin_paths(spa, result.links.pages) == item_paths()
    assert result.title == "Catalogue"
    assert result.final_url == spa.url("/")
    assert result.load_event
    assert result.undelivered == ()


async def test_redirects_are_followed_by_the_browser(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    await pool.load(spa.url("/"), handler)
    hops = [(r.url.removeprefix(spa.url("")), r.redirected) for r in handler.log]
    first = hops.index(("/api/items", False))
    assert ("/api/items.json", True) in hops[first + 1 :]


async def test_lazy_images_load_only_when_scrolled_into_view(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite, handler: SiteHandler
) -> None:
    images = {f"GET /img/{n}.png" for n in range(1, LAZY_IMAGES + 1)}
    async with BrowserPool(browser_config(behaviors=("none",))) as still:
        await still.load(spa.url("/"), handler)
    assert not images & set(spa.requested())
    spa.log.clear()
    async with BrowserPool(browser_config(behaviors=("autoscroll",))) as scrolling:
        await scrolling.load(spa.url("/"), handler)
    assert images <= set(spa.requested())


async def test_item_pages_render_from_their_json(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    results = await asyncio.gather(*(pool.load(spa.url(path), handler) for path in item_paths()))
    for (number, name, _), result in zip(ITEMS, results, strict=True):
        assert result.title == name
        pages = origin_paths(spa, result.links.pages)
        assert "/" in pages
        if number < len(ITEMS):
            assert f"/item/{number + 1}" in pages
    requested = spa.requested()
    for number, _, _ in ITEMS:
        assert requested.count(f"GET /api/item/{number}.json") == 1


async def test_refused_requests_fail_in_the_browser_and_the_page_still_loads(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    handler.refuse = lambda request: "blocked" if "/blocked/" in request.url else None
    result = await pool.load(spa.url("/refusals.html"), handler)
    assert result.title == "beacon failed"
    assert result.refused == 2
    refused = sorted(r.url.removeprefix(spa.url("")) for r in handler.log if "/blocked/" in r.url)
    assert refused == ["/blocked/beacon", "/blocked/pixel.png"]
    assert not [line for line in spa.requested() if "/blocked/" in line]
    assert "GET /img/1.png" in spa.requested()


async def test_a_refused_document_is_a_navigation_error(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    handler.refuse = lambda request: "robots.txt" if request.is_main_frame else None
    with pytest.raises(NavigationError, match="ERR_BLOCKED_BY_CLIENT"):
        await pool.load(spa.url("/"), handler)
    assert spa.log == []


async def test_service_workers_are_blocked(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    result = await pool.load(spa.url("/sw.html"), handler)
    assert result.title == "refused: SecurityError"
    assert "GET /sw.js" not in spa.requested()
    assert pool.process is not None
    targets = await pool.process.connection.browser.send("Target.getTargets", timeout=30)
    assert [t for t in targets["targetInfos"] if t["type"] == "service_worker"] == []


async def test_a_handler_exception_stops_the_page_and_is_raised(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    class DiskFullError(Exception):
        pass

    async def failing(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url.endswith("/api/items.json"):
            raise DiskFullError("no space left")
        return await handler(request)

    with pytest.raises(DiskFullError):
        await pool.load(spa.url("/"), failing)
    result = await pool.load(spa.url("/item/1"), handler)  # the browser goes on
    assert result.title == "Astrolabe"


async def test_screenshot_is_a_png(pool: BrowserPool, spa: SpaSite, handler: SiteHandler) -> None:
    result = await pool.load(spa.url("/item/3"), handler, screenshot=True)
    assert result.screenshot is not None
    assert result.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    without = await pool.load(spa.url("/item/3"), handler)
    assert without.screenshot is None


# -- answers built by hand: what the browser makes of them --------------------------------------

PROBE = """<!DOCTYPE html><title>probe</title><script>
(async () => {
  const out = {};
  let r = await fetch("/gzip");
  out.gzip = [await r.text(), r.headers.get("content-encoding")];
  r = await fetch("/latin1");
  out.latin1 = r.headers.get("x-name");
  r = await fetch("/moved");
  out.moved = [r.url.split("/").pop(), await r.text()];
  r = await fetch("/big");
  out.big = (await r.arrayBuffer()).byteLength;
  out.toobig = await fetch("/too-big").then(() => "answered", () => "failed");
  out.brotli = await fetch("/brotli").then(() => "answered", () => "failed");
  document.title = JSON.stringify(out);
})();
</script>"""
BIG = 20 * 1024 * 1024


async def probe_handler(request: BrowserRequest) -> BrowserResponse | Refusal:
    path = "/" + request.url.split("/", 3)[3]
    plain = [("Content-Type", "text/plain")]
    if path == "/":
        return BrowserResponse(200, [("Content-Type", "text/html")], PROBE.encode())
    if path == "/gzip":
        headers = [*plain, ("Content-Encoding", "gzip"), ("Content-Length", "999")]
        return BrowserResponse(200, headers, gzip.compress(b"unzipped"))
    if path == "/latin1":
        return BrowserResponse(200, [*plain, ("X-Name", "caf\xe9")], b"")
    if path == "/moved":
        return BrowserResponse(301, [("Location", "/moved-here")], b"", "Moved Permanently")
    if path == "/moved-here":
        return BrowserResponse(200, plain, b"arrived")
    if path == "/big":
        return BrowserResponse(200, plain, b"x" * BIG)
    if path == "/too-big":
        return BrowserResponse(200, plain, b"x" * (BIG + 1))
    if path == "/brotli":
        return BrowserResponse(200, [*plain, ("Content-Encoding", "br")], b"\x0b\x02\x80hi\x03")
    return Refusal("not part of the probe")


async def test_answers_reach_the_page_as_the_server_meant_them(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite
) -> None:
    """Decoded content, raw header bytes, redirects, a 20 MiB body; a body over the limit and
    an undecodable coding fail in the page and are listed."""
    async with BrowserPool(browser_config(max_body=BIG, behaviors=("none",))) as probe:
        result = await probe.load(spa.url("/"), probe_handler)
    out = json.loads(result.title or "{}")
    assert out["gzip"] == ["unzipped", None]
    assert out["latin1"] == "caf\xe9"  # the byte 0xE9, read by the page as latin-1, as sent
    assert out["moved"] == ["moved-here", "arrived"]
    assert out["big"] == BIG
    assert out["toobig"] == "failed"
    assert out["brotli"] == "failed"
    reasons = dict((url.rsplit("/", 1)[1], reason) for url, reason in result.undelivered)
    assert reasons["too-big"] == f"a body over {BIG} bytes"
    assert "br" in reasons["brotli"]
    assert spa.log == []  # the handler answered everything itself


# -- frames, workers, dialogs, script navigation, several tabs ------------------------------------


async def test_requests_of_out_of_process_iframes_and_workers_reach_the_handler(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    """The iframe is cross-site (localhost vs 127.0.0.1): Chromium gives it its own process and
    target, auto-attached and intercepted like the page."""
    result = await pool.load(spa.url("/frames.html"), handler)
    assert result.title == "worker says hello from 127.0.0.1"
    frame = f"http://localhost:{spa.port}"
    asked = {(r.url, r.resource_type) for r in handler.log}
    assert {
        (f"{frame}/frame.html", "Document"),
        (f"{frame}/img/frame.png", "Image"),
        (f"{frame}/api/in-frame.json", "XHR"),
        (spa.url("/static/worker.js"), "Other"),
        (spa.url("/api/from-worker"), "XHR"),
    } <= asked
    frame_document = next(r for r in handler.log if r.url == f"{frame}/frame.html")
    assert (frame_document.is_navigation, frame_document.is_main_frame) == (True, False)
    assert sorted(handler.requested()) == sorted(spa.requested())
    assert result.links.requisites[:1] == (f"{frame}/frame.html",)


async def test_dialogs_do_not_block_the_page(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    result = await pool.load(spa.url("/dialogs.html"), handler)
    assert result.title == "dismissed"
    assert result.load_event


async def test_a_script_navigation_keeps_the_page_and_lists_where_it_went(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    """``location.replace("/item/2")`` in the page: the request for the next document is
    aborted (never handed to the handler), the page stays the document it was, and the URL
    is listed for the caller to follow."""
    result = await pool.load(spa.url("/jump.html"), handler)
    assert result.final_url == spa.url("/jump.html")
    assert result.title == "jump"
    assert result.navigations == (spa.url("/item/2"),)
    documents = [r.url for r in handler.log if r.is_main_frame]
    assert documents == [spa.url("/jump.html")]


async def test_tabs_load_at_once_and_each_one_renders(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite, handler: SiteHandler
) -> None:
    """Three tabs open at once (their documents are held until all three have asked), each
    scrolled: every tab renders and gets animation frames, so each one's lazy images load.

    Each tab has its own window because a background tab of a shared window is hidden and gets
    no frames (seen on Chromium 156 with three about:blank tabs). Through the pool that case
    would still pass here, as each background tab comes to the front when the tab before it
    closes: this test holds the property, not the window policy."""
    together = Together(handler, 3)
    async with BrowserPool(browser_config(tabs=3)) as three:
        results = await asyncio.gather(*(three.load(spa.url("/"), together) for _ in range(3)))
        together.reset()
        shown = await asyncio.gather(
            *(three.load(spa.url("/visible.html"), together) for _ in range(3))
        )
    assert [result.title for result in shown] == ["visible with frames"] * 3
    for result in results:
        assert origin_paths(spa, result.links.pages) == item_paths()
    requested = collections.Counter(spa.requested())
    for n in range(1, LAZY_IMAGES + 1):
        assert requested[f"GET /img/{n}.png"] == 3


async def test_a_download_is_answered_but_is_not_a_page(pool: BrowserPool, spa: SpaSite) -> None:
    """The handler captured it; the page is a NavigationError; the browser saves nothing."""
    name = f"report-{spa.port}.pdf"
    asked: list[str] = []

    async def attachment(request: BrowserRequest) -> BrowserResponse | Refusal:
        asked.append(request.url)
        headers = [
            ("Content-Type", "application/pdf"),
            ("Content-Disposition", f'attachment; filename="{name}"'),
        ]
        return BrowserResponse(200, headers, b"%PDF-1.4\n%%EOF\n")

    with pytest.raises(NavigationError):
        await pool.load(spa.url(f"/{name}"), attachment)
    assert asked == [spa.url(f"/{name}")]
    assert pool.process is not None
    assert list(pool.process.state_dir.rglob(name)) == []
    assert not (Path.home() / "Downloads" / name).exists()


async def test_a_page_that_never_finishes_loading_is_read_at_the_deadline(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite
) -> None:
    """An image that never comes holds the load event and the network: the page is read as it
    is when the waiting must stop (the page timeout is a setting of this test only)."""

    async def stalling(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url.endswith("/forever.png"):
            await asyncio.Event().wait()
        page = '<title>partial</title><a href="/next">next</a><img src="/forever.png">'
        return BrowserResponse(200, [("Content-Type", "text/html")], page.encode())

    async with BrowserPool(browser_config(page_timeout=8.0, behaviors=("none",))) as slow:
        result = await slow.load(spa.url("/partial"), stalling)
    assert (result.load_event, result.network_quiet) == (False, False)
    assert result.title == "partial"
    assert result.links.pages == (spa.url("/next"),)


async def test_aborted_requests_are_not_reported_and_invalid_answers_are(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite
) -> None:
    page = """<title>aborts</title><script>
const control = new AbortController();
fetch("/slow", {signal: control.signal}).catch(() => {});
fetch("/slow-started").then(() => { control.abort(); fetch("/aborted"); });
fetch("/weird").then((r) => { document.title = "weird " + r.status; },
                     () => { document.title = "weird failed"; });
</script>"""
    slow_asked = asyncio.Event()
    aborted = asyncio.Event()

    async def handler(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.url.endswith("/slow"):
            slow_asked.set()
            await aborted.wait()  # answered only once the page has given it up,
            await asyncio.sleep(1)  # and the browser has let the paused request go
            return BrowserResponse(200, [], b"late")
        if request.url.endswith("/slow-started"):
            await slow_asked.wait()
            return BrowserResponse(204, [], b"")
        if request.url.endswith("/aborted"):
            aborted.set()
            return BrowserResponse(204, [], b"")
        if request.url.endswith("/weird"):
            return BrowserResponse(999, [], b"?")
        if request.is_main_frame:
            return BrowserResponse(200, [("Content-Type", "text/html")], page.encode())
        return Refusal("not part of the test")

    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        result = await pool.load(spa.url("/"), handler)
    assert result.title == "weird failed"
    assert [url for url, _ in result.undelivered] == [spa.url("/weird")]
    assert "Invalid http status code" in result.undelivered[0][1]


async def test_the_browser_has_no_network_of_its_own(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler, http: aiohttp.ClientSession
) -> None:
    """WebSockets are not paused by the Fetch domain, and a target without interception (here a
    bare tab) pauses nothing: neither may reach the server past the handler (and past
    archiver's SSRF guard)."""
    async with http.ws_connect(spa.url("/socket")) as socket:  # the endpoint works
        assert (await socket.receive_str()) == "hello"
    spa.log.clear()
    result = await pool.load(spa.url("/socket.html"), handler)
    assert result.title == "socket failed"
    assert "GET /socket" not in spa.requested()
    assert sorted(spa.requested()) == sorted(handler.requested())  # all through the handler
    assert pool.process is not None
    browser = pool.process.connection.browser
    bare = await browser.send("Target.createTarget", {"url": "about:blank"}, timeout=30)
    attached = await browser.send(
        "Target.attachToTarget", {"targetId": bare["targetId"], "flatten": True}, timeout=30
    )
    tab = pool.process.connection.session(attached["sessionId"])
    ws_url = spa.url("/socket").replace("http:", "ws:")
    probe = f"""Promise.all([
      fetch("{spa.url("/direct")}").then(() => "fetched", () => "fetch failed"),
      new Promise((done) => {{
        const socket = new WebSocket("{ws_url}");
        socket.onmessage = () => done("socket open");
        socket.onerror = () => done("socket failed");
      }}),
    ]).then((outcomes) => outcomes.join(", "))"""
    reply = await tab.send(
        "Runtime.evaluate", {"expression": probe, "awaitPromise": True}, timeout=60
    )
    assert reply["result"]["value"] == "fetch failed, socket failed"
    assert not [line for line in spa.requested() if line in ("GET /direct", "GET /socket")]
    await browser.send("Target.closeTarget", {"targetId": bare["targetId"]}, timeout=30)


async def test_blob_form_and_large_request_bodies_arrive_whole(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite
) -> None:
    page = """<title>posting</title><script>
(async () => {
  await fetch("/blob", {method: "POST", body: new Blob([new Uint8Array([1, 2, 3, 0, 255])])});
  const form = new FormData();
  form.append("name", "x");
  form.append("file", new File(["hello file"], "a.txt"));
  await fetch("/form", {method: "POST", body: form});
  await fetch("/large", {method: "PUT", body: new Uint8Array(5 * 1024 * 1024).fill(66)});
  document.title = "posted";
})();
</script>"""
    bodies: dict[str, tuple[str, bytes | None, bool]] = {}

    async def handler(request: BrowserRequest) -> BrowserResponse | Refusal:
        if request.is_main_frame:
            return BrowserResponse(200, [("Content-Type", "text/html")], page.encode())
        path = request.url.rsplit("/", 1)[1]
        bodies[path] = (request.method, request.body, request.body_complete)
        return BrowserResponse(204, [], b"")

    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        result = await pool.load(spa.url("/"), handler)
    assert result.title == "posted"
    assert bodies["blob"] == ("POST", b"\x01\x02\x03\x00\xff", True)
    method, form, complete = bodies["form"]
    assert (method, complete) == ("POST", True)
    assert form is not None
    assert b'name="file"; filename="a.txt"' in form
    assert b"hello file" in form
    assert bodies["large"] == ("PUT", b"B" * (5 * 1024 * 1024), True)


async def test_data_and_blob_urls_are_not_requests(
    browser_config: Callable[..., BrowserConfig], spa: SpaSite
) -> None:
    page = """<title>inline</title>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="1" height="1">
<script>
const blob = URL.createObjectURL(new Blob(["from a blob"], {type: "text/plain"}));
fetch(blob).then((r) => r.text()).then((text) => {
  return fetch("data:text/plain,inline").then((r) => r.text()).then((d) => {
    document.title = text + " and " + d;
  });
});
</script>"""
    asked: list[str] = []

    async def handler(request: BrowserRequest) -> BrowserResponse | Refusal:
        asked.append(request.url)
        if request.is_main_frame:
            return BrowserResponse(200, [("Content-Type", "text/html")], page.encode())
        return Refusal("only the page")

    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        result = await pool.load(spa.url("/inline"), handler)
    assert result.title == "from a blob and inline"
    assert all(url.startswith("http://") for url in asked), asked
