"""What a page reports about itself (console errors, WebSockets, initiators), full-page
screenshots, and links followed in the page as a reader's click would follow them."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.navigate import LinkWalk
from archiver.browser.pool import BrowserConfig, BrowserPool
from tests.browser.conftest import SiteHandler
from tests.support.spa_site import SpaSite

HTML = [("Content-Type", "text/html")]
JS = [("Content-Type", "text/javascript")]


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_a_full_page_screenshot_shows_the_whole_page(
    pool: BrowserPool, spa: SpaSite, handler: SiteHandler
) -> None:
    config = pool.config
    top = await pool.load(spa.url("/"), handler, screenshot=True)
    assert top.screenshot is not None
    full = await pool.load(
        spa.url("/"), handler, options=replace(config.page_options(True), full_page=True)
    )
    assert full.screenshot is not None
    top_width, top_height = png_size(top.screenshot)
    assert top_width == config.window[0] and top_height <= config.window[1]  # the viewport
    width, height = png_size(full.screenshot)
    assert width == config.window[0]
    assert height > 4000  # the catalogue's spacer and lazy images: far below the fold


class Pages:
    """Answers from a dict of path -> (headers, body); logs every request."""

    def __init__(self, origin: str, pages: dict[str, tuple[list[tuple[str, str]], str]]) -> None:
        self.origin = origin
        self.pages = pages
        self.log: list[BrowserRequest] = []
        self.phase = ""
        self.phases: dict[str, str] = {}

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        self.log.append(request)
        path = request.url.removeprefix(self.origin)
        self.phases[path] = self.phase
        found = self.pages.get(path)
        if found is None:
            return BrowserResponse(404, [("Content-Type", "text/plain")], b"no")
        return BrowserResponse(200, found[0], found[1].encode())

    def paths(self) -> list[str]:
        return [request.url.removeprefix(self.origin) for request in self.log]


NOISY = """<!DOCTYPE html><title>noisy</title><body><p>noise</p>
<script src="/noisy.js"></script></body>"""
NOISY_JS = """console.error("the widget failed", 42);
fetch("/api/from-script.json");
new WebSocket("ws://" + location.host + "/live");
setTimeout(() => { throw new Error("a late failure"); }, 0);
"""


async def test_observe_reports_errors_sockets_and_initiators(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    origin = "http://noisy.test"
    answer = Pages(origin, {"/": (HTML, NOISY), "/noisy.js": (JS, NOISY_JS)})
    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        observed = replace(pool.config.page_options(), observe=True)
        result = await pool.load(origin + "/", answer, options=observed)
        plain = await pool.load(origin + "/", answer)
    texts = [(entry.kind, entry.text) for entry in result.console]
    assert ("console", "the widget failed 42") in texts, texts
    assert any(kind == "exception" and "a late failure" in text for kind, text in texts), texts
    assert result.sockets == ("ws://noisy.test/live",)
    by_path = {
        request.url.removeprefix(origin): result.initiators.get(request.network_id)
        for request in answer.log[:3]
    }
    assert by_path["/noisy.js"] == "parser http://noisy.test/:2"
    assert by_path["/api/from-script.json"] == "script http://noisy.test/noisy.js:2"
    assert plain.console == () and plain.sockets == () and plain.initiators == {}


ROUTER = """<!DOCTYPE html><title>router</title><body>
<nav><a href="/guide">Guide</a> <a href="/plain.html">Plain</a> <a href="#/faq">FAQ</a>
<a href="/guide">Guide again</a> <a href="/api" download>file</a></nav>
<main id="view">home</main>
<script>
const view = document.getElementById("view");
async function route() {
  if (location.hash === "#/faq") {
    view.textContent = await (await fetch("/data/faq.txt")).text();
  } else if (location.pathname === "/guide") {
    await import("/chunks/guide.js");
    view.textContent = (await (await fetch("/data/guide.json")).json()).text;
  }
}
document.addEventListener("click", (event) => {
  const link = event.target.closest("a");
  if (link && link.pathname === "/guide") {
    event.preventDefault();
    history.pushState(null, "", link.href);
    route();
  }
});
addEventListener("hashchange", route);
</script></body>"""


async def test_a_link_walk_clicks_links_the_page_routes_and_no_other(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    origin = "http://router.test"
    answer = Pages(
        origin,
        {
            "/": (HTML, ROUTER),
            "/chunks/guide.js": (JS, "export const guide = 1;"),
            "/data/guide.json": ([("Content-Type", "application/json")], '{"text": "the guide"}'),
            "/data/faq.txt": ([("Content-Type", "text/plain")], "the answers"),
            "/plain.html": (HTML, "<title>plain</title>"),
        },
    )
    walk = LinkWalk(limit=5, on_click=lambda link: setattr(answer, "phase", link))
    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        result = await pool.load(origin + "/", answer, explore=walk)
    assert result.text.strip().endswith("home")  # read before the walk
    assert [(n.link, n.landed) for n in walk.navigations] == [
        (origin + "/guide", origin + "/guide"),
        (origin + "/guide#/faq", origin + "/guide#/faq"),  # resolved against /guide
    ]
    assert walk.full_navigations == 1  # /plain.html: left to the browser, so prevented
    assert "/plain.html" not in answer.paths()
    assert answer.phases["/chunks/guide.js"] == origin + "/guide"
    assert answer.phases["/data/guide.json"] == origin + "/guide"
    assert answer.phases["/data/faq.txt"] == origin + "/guide#/faq"
    assert answer.phases["/"] == ""


async def test_a_walk_on_a_page_without_links_does_nothing(
    browser_config: Callable[..., BrowserConfig], tmp_path: Path
) -> None:
    origin = "http://empty.test"
    answer = Pages(origin, {"/": (HTML, "<title>alone</title><p>no links here</p>")})
    walk = LinkWalk(limit=3)
    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        result = await pool.load(origin + "/", answer, explore=walk)
    assert result.title == "alone"
    assert walk.navigations == [] and walk.full_navigations == 0
    assert set(answer.paths()) <= {"/", "/favicon.ico"}  # the browser's own icon request


#: A router that changes routes with a transition: the route's chunk is asked for a moment
#: after the click, once the old view has faded out.
FADING_ROUTER = """<!DOCTYPE html><title>fading</title><body>
<nav><a href="#/slow">Slow</a></nav><main id="view">home</main>
<script>
addEventListener("hashchange", () => setTimeout(async () => {
  const { text } = await import("/chunks/slow.js");
  document.getElementById("view").textContent = text;
}, 250));
</script></body>"""


async def test_a_route_that_loads_a_moment_after_the_click_is_waited_for(
    browser_config: Callable[..., BrowserConfig],
) -> None:
    """The network is quiet when the link is clicked (the page loaded long before): the walk
    waits for the quiet that follows the click, so the chunk the router asks for a quarter
    of a second later is seen, and counted as the click's."""
    origin = "http://fading.test"
    answer = Pages(
        origin,
        {"/": (HTML, FADING_ROUTER), "/chunks/slow.js": (JS, 'export const text = "slow";')},
    )
    walk = LinkWalk(limit=1, on_click=lambda link: setattr(answer, "phase", link))
    async with BrowserPool(browser_config(behaviors=("none",))) as pool:
        await pool.load(origin + "/", answer, explore=walk)
    assert [n.link for n in walk.navigations] == [origin + "/#/slow"]
    assert answer.phases.get("/chunks/slow.js") == origin + "/#/slow", answer.paths()
