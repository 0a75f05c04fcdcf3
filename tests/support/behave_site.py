"""A test website of pages that need a reader's hands: what is captured only if someone clicks,
plays, types, accepts or follows an in-page route.

aiohttp on 127.0.0.1, port 0 (socket kept), logging every request (method, path and query,
body). What it serves:

- ``/``: links to every page below (and nothing else);
- ``/feed.html``: a list filled by a "Load more" button, each click fetching
  ``/api/feed?page=N`` (JSON) until the last of :data:`FEED_PAGES` pages, whose items link to
  ``/feed/item/K`` (:data:`FEED_ITEMS` item pages, each linked from nowhere else);
- ``/endless.html``: a "Load more" button whose ``/api/endless?page=N`` always has more (plain
  text items, no links);
- ``/tabs.html``: tabs (``role="tab"``) whose panels fetch ``/api/tab/NAME.json``; an accordion
  (``aria-expanded``) whose panels fetch ``/api/panel/N.html`` (panel 2 links to
  ``/from-panel.html``); a closed ``<details>`` holding a lazy image ``/img/in-details.png``; a
  button that inserts a link to ``/related.html``; a button whose handler clicks a link to
  ``/guarded.html`` (a navigation the page's guard must stop and queue), another one a link to
  ``/new-window.html`` in a new window (``target="_blank"``); a ``role="button"``
  whose handler sets ``location.href`` to ``/scripted.html`` (a script navigation the tab must
  not follow); a ``<span class="read-more">`` (no role: only ``--click-selector`` clicks it)
  that fetches ``/api/read-more.json``;
- ``/media.html``: a video whose ``src`` is set only when it plays (``/media/lazy.mp4``), a
  video with a ``<source>`` list the browser picks ``/media/clip.mp4`` from (the other source's
  type is unplayable: ``/media/clip.unplayable`` is never asked for), and an audio element
  (``/media/tone.wav``, a valid WAV made here), all ``preload="none"``;
- ``/consent.html``: an article under a consent overlay (OneTrust's markup, drawn in
  :data:`OVERLAY_RGB`) inserted by ``/static/cmp.js``; its accept button removes it and posts
  ``/api/consent``;
- ``/search.html``: a search button (DocSearch's class) that opens a search box; opening it
  loads ``/search-index.json``; typing shows results linking to ``/docs/*.html`` pages linked
  from nowhere else;
- ``/app/``: a hash-routed application (``vendor/router.js``, relative) with :data:`ROUTES`
  routes: ``#/route-N`` and, for the last two, ``#!/route-N``; each route's content comes from
  ``/app/content/route-N.md``; route 9's content links to route 10, which nothing else links
  to; a plain anchor ``#section`` is not a route;
- ``/custom.html``: buttons that reveal secrets (``/api/secret/N.json``) for the user behaviour
  :data:`CUSTOM_BEHAVIOR`, which also adds ``/custom-added.html`` as a link;
- ``/leave.html``: a page that tries to leave (``location.href`` set again and again to
  ``/away-N.html``) and to open windows (``window.open('/popup-N.html')``), linking to
  ``/item-after-leave.html``; its request to ``/api/until-left`` is answered once it says it is
  done trying (``/api/left``), so that its network is busy until then;
- every other ``*.html`` path: a small page titled after its path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from archiver.commands.sample import png

FEED_PAGES = 3
FEED_PER_PAGE = 4
FEED_ITEMS = FEED_PAGES * FEED_PER_PAGE
TABS = ("overview", "specs", "history")
PANELS = 3
ROUTES = 10
SECRETS = 2
#: The overlay's colour: no pixel of the page itself has it.
OVERLAY_RGB = (255, 0, 255)

INDEX = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Behaviours</title></head><body>
<a href="/feed.html">feed</a> <a href="/tabs.html">tabs</a> <a href="/media.html">media</a>
<a href="/consent.html">consent</a> <a href="/search.html">search</a> <a href="/app/">app</a>
<a href="/custom.html">custom</a>
</body></html>
"""

LOAD_MORE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>TITLE</title></head><body>
<h1>TITLE</h1><ul id="list"></ul><button id="more" type="button">Load more</button>
<script>
let page = 1;
const more = document.getElementById("more");
more.addEventListener("click", async () => {
  const data = await (await fetch("API?page=" + page)).json();
  const list = document.getElementById("list");
  for (const item of data.items) {
    const entry = document.createElement("li");
    if (item.url) {
      const link = document.createElement("a");
      link.href = item.url;
      link.textContent = item.name;
      entry.append(link);
    } else {
      entry.textContent = item.name;
    }
    list.append(entry);
  }
  page += 1;
  if (!data.more) more.remove();
});
</script></body></html>
"""

TABS_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Tabs</title></head><body>
<div role="tablist">
  <button role="tab" aria-selected="true" data-tab="overview">Overview</button>
  <button role="tab" aria-selected="false" data-tab="specs">Specs</button>
  <button role="tab" aria-selected="false" data-tab="history">History</button>
</div>
<div id="tabpanel" role="tabpanel">The overview is shown first.</div>
<h2>Questions</h2>
<button aria-expanded="false" data-panel="1">Question 1</button><div id="panel-1" hidden></div>
<button aria-expanded="false" data-panel="2">Question 2</button><div id="panel-2" hidden></div>
<button aria-expanded="false" data-panel="3">Question 3</button><div id="panel-3" hidden></div>
<details><summary>Photo</summary><img src="/img/in-details.png" loading="lazy" width="64"
height="64" alt="a photo"></details>
<p><button type="button" id="related">Show related</button></p>
<p><button type="button" id="open-link">Open the guide</button></p>
<p><button type="button" id="open-window">Open the map in a new window</button></p>
<p><span role="button" tabindex="0" id="continue">Continue</span></p>
<p><span class="read-more" data-more="/api/read-more.json">Read on</span></p>
<script>
const panel = document.getElementById("tabpanel");
for (const tab of document.querySelectorAll('[role="tab"]')) {
  tab.addEventListener("click", async () => {
    for (const other of document.querySelectorAll('[role="tab"]')) {
      other.setAttribute("aria-selected", String(other === tab));
    }
    const data = await (await fetch("/api/tab/" + tab.dataset.tab + ".json")).json();
    panel.textContent = data.text;
  });
}
for (const button of document.querySelectorAll("[data-panel]")) {
  button.addEventListener("click", async () => {
    const body = document.getElementById("panel-" + button.dataset.panel);
    const open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", String(!open));
    body.hidden = open;
    if (!open && !body.dataset.loaded) {
      body.innerHTML = await (await fetch("/api/panel/" + button.dataset.panel + ".html")).text();
      body.dataset.loaded = "yes";
    }
  });
}
document.getElementById("related").addEventListener("click", () => {
  const link = document.createElement("a");
  link.href = "/related.html";
  link.textContent = "Related reading";
  document.getElementById("related").after(link);
});
document.getElementById("open-link").addEventListener("click", () => {
  const link = document.createElement("a");
  link.href = "/guarded.html";
  document.body.append(link);
  link.click();
  link.remove();
});
document.getElementById("open-window").addEventListener("click", () => {
  const link = document.createElement("a");
  link.href = "/new-window.html";
  link.target = "_blank";
  document.body.append(link);
  link.click();
  link.remove();
});
document.querySelector(".read-more").addEventListener("click", async (event) => {
  const data = await (await fetch(event.target.dataset.more)).json();
  event.target.textContent = data.text;
});
document.getElementById("continue").addEventListener("click", () => {
  location.href = "/scripted.html";
});
</script></body></html>
"""

MEDIA_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Media</title></head><body>
<video id="lazy" preload="none" data-src="/media/lazy.mp4" width="320" height="180"></video>
<video id="listed" preload="none" width="320" height="180">
  <source src="/media/clip.unplayable" type="video/x-archiver-unplayable">
  <source src="/media/clip.mp4" type="video/mp4">
</video>
<audio id="tone" preload="none" src="/media/tone.wav"></audio>
<script>
const lazy = document.getElementById("lazy");
lazy.addEventListener("play", () => {
  if (!lazy.getAttribute("src")) {
    lazy.src = lazy.dataset.src;
    lazy.play().catch(() => {});
  }
});
</script></body></html>
"""

CONSENT_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Article</title>
<script src="/static/cmp.js" defer></script></head>
<body style="margin:0;background:#fff"><h1>The article</h1>
<p>What the reader came for: the article's text, shown once consent is given.</p>
</body></html>
"""

CMP_JS = """(() => {
  const root = document.createElement("div");
  root.id = "onetrust-consent-sdk";
  root.innerHTML = '<div id="onetrust-banner-sdk" style="position:fixed;left:0;top:0;' +
    'width:100vw;height:100vh;background:rgb(RGB);z-index:1000">' +
    '<p>We use cookies.</p><button id="onetrust-accept-btn-handler">Accept all</button></div>';
  document.body.append(root);
  document.getElementById("onetrust-accept-btn-handler").addEventListener("click", () => {
    root.remove();
    fetch("/api/consent", {method: "POST", body: "accepted"});
  });
})();
"""

SEARCH_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Docs</title></head><body>
<header><button class="DocSearch-Button" aria-label="Search">Search</button></header>
<div id="dialog" hidden><input id="box" type="search" placeholder="Search the docs">
<ul id="results"></ul></div>
<main><p>Documentation home.</p></main>
<script>
let index = null;
const dialog = document.getElementById("dialog");
const box = document.getElementById("box");
document.querySelector(".DocSearch-Button").addEventListener("click", async () => {
  dialog.hidden = false;
  box.focus();
  if (!index) index = await (await fetch("/search-index.json")).json();
});
box.addEventListener("input", () => {
  const results = document.getElementById("results");
  results.textContent = "";
  for (const entry of index || []) {
    if (!entry.title.toLowerCase().includes(box.value.toLowerCase())) continue;
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = entry.url;
    link.textContent = entry.title;
    item.append(link);
    results.append(item);
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") dialog.hidden = true;
});
</script></body></html>
"""
SEARCH_INDEX = (
    {"title": "Alpha manual", "url": "/docs/alpha.html"},
    {"title": "Beta release notes", "url": "/docs/beta.html"},
)

APP_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Guide</title>
<script src="vendor/router.js" defer></script></head><body>
<nav>NAV<a href="#section">Skip to the section</a></nav>
<main id="content"></main><h2 id="section">Section</h2></body></html>
"""

ROUTER_JS = """(() => {
  const render = async () => {
    const route = location.hash.replace(/^#!?\\/?/, "") || "home";
    if (!/^(home|route-\\d+)$/.test(route)) return;
    const text = await (await fetch("content/" + route + ".md")).text();
    const lines = text.split("\\n");
    const main = document.getElementById("content");
    main.textContent = "";
    const heading = document.createElement("h1");
    heading.textContent = lines[0].replace(/^# /, "");
    main.append(heading);
    for (const line of lines.slice(1)) {
      const link = line.match(/^\\[(.+)\\]\\((.+)\\)$/);
      const node = document.createElement(link ? "a" : "p");
      if (link) { node.href = link[2]; node.textContent = link[1]; } else node.textContent = line;
      main.append(node);
    }
    document.title = "Guide: " + heading.textContent;
    document.body.dataset.route = route;
  };
  addEventListener("hashchange", render);
  render();
})();
"""

CUSTOM_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Secrets</title></head><body>
<button data-secret="1">Reveal the first secret</button><p id="secret-1"></p>
<button data-secret="2">Reveal the second secret</button><p id="secret-2"></p>
<script>
for (const button of document.querySelectorAll("[data-secret]")) {
  button.addEventListener("click", async () => {
    const data = await (await fetch("/api/secret/" + button.dataset.secret + ".json")).json();
    document.getElementById("secret-" + button.dataset.secret).textContent = data.text;
  });
}
</script></body></html>
"""

#: A user behaviour written against the Browsertrix Behaviors API, for ``--behavior-script``.
CUSTOM_BEHAVIOR = """// reveals the secrets of /custom.html, then adds a link
class RevealSecrets {
  static id = "Reveal secrets";

  static isMatch() {
    return window.location.pathname === "/custom.html";
  }

  static init() {
    return {state: {}};
  }

  async* run(ctx) {
    const {Lib} = ctx;
    // the nodes first: the bundle's xpathNodes iterates a live result, which a click ends
    const buttons = Array.from(Lib.xpathNodes("//button[@data-secret]"));
    for (const button of buttons) {
      const shown = document.getElementById("secret-" + button.dataset.secret);
      await Lib.scrollAndClick(button, 10);
      await Lib.waitUntil(() => shown.textContent.length > 0, 50);
      yield Lib.getState(ctx, "revealed " + shown.textContent, "secrets");
    }
    await Lib.addLink("/custom-added.html");
    yield Lib.getState(ctx, "added a link", "links");
  }
}
"""

LEAVE_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Stay</title></head><body>
<p>This page keeps trying to leave.</p><a href="/item-after-leave.html">the next page</a>
<script>
fetch("/api/until-left");
let tries = 0;
const leave = () => {
  tries += 1;
  window.open("/popup-" + tries + ".html");
  location.href = "/away-" + tries + ".html";
  if (tries < 5) {
    setTimeout(leave, 150);
  } else {
    document.title = "Stayed";
    fetch("/api/left");
  }
};
setTimeout(leave, 50);
</script></body></html>
"""


def wav(seconds: float = 0.5, rate: int = 8000) -> bytes:
    """A valid PCM WAV file of silence (RIFF/WAVE, 8-bit mono), so that the browser plays it."""
    frames = int(seconds * rate)
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + frames,
        b"WAVE",
        b"fmt ",
        16,
        1,
        1,
        rate,
        rate,
        1,
        8,
        b"data",
        frames,
    )
    return header + bytes([128]) * frames


#: Media bodies: the video bodies are not decodable video (the behaviour's work is to have them
#: requested); the audio is a real WAV.
MEDIA = {
    "/media/lazy.mp4": (b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 8, "video/mp4"),
    "/media/clip.mp4": (b"\x00\x00\x00\x18ftypisom" + bytes(range(256)) * 8, "video/mp4"),
    "/media/clip.unplayable": (b"never asked for", "video/x-archiver-unplayable"),
    "/media/tone.wav": (wav(), "audio/wav"),
}


@dataclass(frozen=True)
class Hit:
    method: str
    path_qs: str
    body: bytes


def feed_item_paths() -> list[str]:
    return [f"/feed/item/{n}" for n in range(1, FEED_ITEMS + 1)]


def route_fragment(n: int) -> str:
    """The fragment of route ``n``: ``#/route-N``, or ``#!/route-N`` for the last two."""
    return f"#!/route-{n}" if n > ROUTES - 2 else f"#/route-{n}"


def route_text(n: int) -> str:
    return f"Route {n} has its own text, fetched from route-{n}.md."


@dataclass
class BehaveSite:
    """``async with BehaveSite() as site``; ``site.log`` holds every request."""

    log: list[Hit] = field(default_factory=list)
    port: int = 0
    on_request: Callable[[Hit], None] | None = None
    _runner: web.AppRunner | None = None
    _left: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requested(self) -> list[str]:
        """``METHOD path?query`` of every request, in order."""
        return [f"{hit.method} {hit.path_qs}" for hit in self.log]

    def count(self, path_qs: str, method: str = "GET") -> int:
        return sum(1 for hit in self.log if hit.path_qs == path_qs and hit.method == method)

    async def __aenter__(self) -> BehaveSite:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        hit = Hit(request.method, request.path_qs, body)
        self.log.append(hit)
        if self.on_request is not None:
            self.on_request(hit)
        if request.path == "/api/left":
            self._left.set()
        elif request.path == "/api/until-left":
            with contextlib.suppress(TimeoutError):  # a hang guard: the page's fetch sets it
                await asyncio.wait_for(self._left.wait(), timeout=60)
            self._left.clear()
        return self._respond(request)

    def _respond(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        pages = {
            "/": INDEX,
            "/feed.html": LOAD_MORE.replace("TITLE", "Feed").replace("API", "/api/feed"),
            "/endless.html": LOAD_MORE.replace("TITLE", "Endless").replace("API", "/api/endless"),
            "/tabs.html": TABS_PAGE,
            "/media.html": MEDIA_PAGE,
            "/consent.html": CONSENT_PAGE,
            "/search.html": SEARCH_PAGE,
            "/app/": APP_PAGE.replace("NAV", _route_links()),
            "/custom.html": CUSTOM_PAGE,
            "/leave.html": LEAVE_PAGE,
        }
        if path in pages:
            return _text(pages[path], "text/html")
        if path == "/api/feed":
            return _json(_feed_page(int(request.query.get("page", "1"))))
        if path == "/api/endless":
            page = int(request.query.get("page", "1"))
            items = [{"name": f"Endless item {page}.{k}"} for k in range(1, 4)]
            return _json({"items": items, "more": True})
        if path.startswith("/api/tab/") and path.endswith(".json"):
            name = path.removeprefix("/api/tab/").removesuffix(".json")
            return _json({"text": f"The {name} tab's own text."})
        if path.startswith("/api/panel/") and path.endswith(".html"):
            panel = path.removeprefix("/api/panel/").removesuffix(".html")
            extra = ' <a href="/from-panel.html">a page named in the panel</a>'
            return _text(f"<p>Answer {panel}.{extra if panel == '2' else ''}</p>", "text/html")
        if path.startswith("/api/secret/") and path.endswith(".json"):
            secret = path.removeprefix("/api/secret/").removesuffix(".json")
            return _json({"text": f"secret number {secret}"})
        if path == "/api/read-more.json":
            return _json({"text": "The rest of the story, for those who read on."})
        if path in ("/api/left", "/api/until-left"):
            return _json({"left": path == "/api/left"})
        if path == "/api/consent" and request.method == "POST":
            return _json({"stored": True})
        if path == "/static/cmp.js":
            rgb = ",".join(map(str, OVERLAY_RGB))
            return _text(CMP_JS.replace("RGB", rgb), "text/javascript")
        if path == "/search-index.json":
            return _json(list(SEARCH_INDEX))
        if path == "/app/vendor/router.js":
            return _text(ROUTER_JS, "text/javascript")
        if path.startswith("/app/content/") and path.endswith(".md"):
            return self._route_content(path.removeprefix("/app/content/").removesuffix(".md"))
        if path in MEDIA:
            content, kind = MEDIA[path]
            return web.Response(body=content, content_type=kind)
        if path.endswith(".png"):
            image = png(8, 8, lambda x, y: (x * 30, y * 30, 90))
            return web.Response(body=image, content_type="image/png")
        if path.endswith(".html") or path.startswith("/feed/item/"):
            title = path.strip("/").replace("/", " ")
            return _text(f"<html><head><title>{title}</title></head><body>{title}</body></html>",
                         "text/html")  # fmt: skip
        return web.Response(status=404, text="not found")

    @staticmethod
    def _route_content(route: str) -> web.StreamResponse:
        if route == "home":
            return _text("# Home\nThe guide's home.", "text/markdown")
        number = int(route.removeprefix("route-")) if route.startswith("route-") else 0
        if not 1 <= number <= ROUTES:
            return web.Response(status=404, text="no such route")
        text = f"# Route {number}\n{route_text(number)}"
        if number == ROUTES - 1:
            text += f"\n[the last route]({route_fragment(ROUTES)})"
        return _text(text, "text/markdown")


def _route_links() -> str:
    """Links to every route but the last (linked only from the one before it)."""
    return (
        "".join(f'<a href="{route_fragment(n)}">Route {n}</a> ' for n in range(1, ROUTES))
        + '<a href="#/">Home</a> '
    )


def _feed_page(number: int) -> dict[str, object]:
    first = (number - 1) * FEED_PER_PAGE + 1
    items = [
        {"name": f"Feed item {n}", "url": f"/feed/item/{n}"}
        for n in range(first, first + FEED_PER_PAGE)
    ]
    return {"items": items if 1 <= number <= FEED_PAGES else [], "more": number < FEED_PAGES}


def _text(text: str, content_type: str) -> web.Response:
    return web.Response(text=text, content_type=content_type)


def _json(value: object) -> web.Response:
    return web.Response(text=json.dumps(value), content_type="application/json")
