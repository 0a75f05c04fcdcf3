"""A local website built to be hard to replay: what its pages load is computed by scripts, chosen
by the viewport, hidden in CSS, varied by the clock, or loaded only when a reader clicks. The
scripts build their URLs from parts, so that no static extractor (the URL strings read from
scripts included) finds them: they are what only running the page asks for.

aiohttp on 127.0.0.1, port 0 (socket kept); every request is logged (method, path and query,
body). Pages:

- ``/``: text, links, and
  - an ``<img srcset>`` whose candidate the browser chooses by viewport width (``sizes=100vw``);
  - ``/css/site.css``: a CSS ``image-set()`` (1x, 2x) and a custom property holding a ``url()``;
  - ``/js/main.js``, which computes an image URL and a web font URL from parts, clones a
    ``<template>`` whose image only exists once cloned, fetches ``/api/news.json?_=<Date.now()>``
    (a cache-busting timestamp), and POSTs a search whose JSON body holds the time (a body that
    differs at every load); each independently of the others, so that every request is made in
    a replay that lacks some of them;
  - an ``<iframe src=/frame.html>`` that loads an image and fetches JSON;
- ``/app/``: an empty application root (a single-page application shell) whose script renders
  the start route and links; clicking ``#/guide`` in the page makes its router import
  ``/app/chunks/guide.js`` (a chunk loaded only on client-side navigation: no page load, static
  or in a browser, asks for it) and fetch ``/app/data/guide.json``;
- ``/about.html``: a plain page with an image (nothing hard);
- ``/live.html``: text, and a script that opens a WebSocket (``/socket``, a working endpoint):
  a page no archive can replay whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from aiohttp import web

from archiver.commands.sample import png

HOME = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Instruments</title>
<link rel="stylesheet" href="/css/site.css"></head>
<body><h1>The instrument collection</h1>
<p>Brass, glass and wood: the instruments that measured the sky and the sea.</p>
<nav><a href="/about.html">About</a> <a href="/app/">Catalogue</a>
<a href="/live.html">Live</a></nav>
<div class="hero">hero</div>
<img id="chosen" srcset="/img/small.png 400w, /img/large.png 1600w" sizes="100vw"
     src="/img/fallback.png" width="200" height="100" alt="">
<ul id="news"></ul><p id="found"></p>
<template id="card"><figure><img src="/img/card.png" width="32" height="32" alt="">
<figcaption>a card</figcaption></figure></template>
<div id="cards"></div>
<iframe src="/frame.html" width="300" height="120"></iframe>
<script src="/js/main.js"></script>
</body></html>
"""

SITE_CSS = """:root { --texture: url("/img/texture.png"); }
body { background-image: var(--texture); font-family: "Computed", sans-serif; }
.hero { height: 60px; background-image: image-set(url("/img/hero-1x.png") 1x,
                                                  url("/img/hero-2x.png") 2x); }
"""

MAIN_JS = """// each part runs on its own: one that fails in a replay does not hide the others
const parts = ["dyn", "amic"];
const image = new Image(16, 16);
image.src = "/img/" + parts.join("") + ".png";
document.body.append(image);
const font = new FontFace("Computed", "url(/fonts/" + ["com", "puted"].join("") + ".woff2)");
font.load().catch(() => {});
const card = document.getElementById("card").content.cloneNode(true);
document.getElementById("cards").append(card);
const news = ["", "api", "news"].join("/") + ".json?_=" + Date.now();
fetch(news).then((r) => r.json()).then((news) => {
  const list = document.getElementById("news");
  for (const title of news.items) {
    const item = document.createElement("li");
    item.textContent = title;
    list.append(item);
  }
}).catch(() => {});
fetch(["", "api", "search"].join("/"), {
  method: "POST", headers: {"Content-Type": "application/json"},
  body: JSON.stringify({query: "astrolabe", sent: Date.now()})
}).then((r) => r.json()).then((found) => {
  document.getElementById("found").textContent = found.count + " found";
}).catch(() => {});
"""

FRAME = """<!DOCTYPE html><html><body><img src="/img/in-frame.png" width="16" height="16" alt="">
<p id="answer"></p><script>
fetch(["", "api", "frame"].join("/") + ".json").then((r) => r.json()).then((v) => {
  document.getElementById("answer").textContent = "the frame says " + v.answer;
});
</script></body></html>
"""

APP = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Catalogue</title>
<script type="module" src="/app/main.js"></script></head>
<body><div id="app"></div></body></html>
"""

APP_JS = """const app = document.getElementById("app");
app.innerHTML = '<h1>Catalogue</h1><nav><a href="#/start">Start</a> ' +
  '<a href="#/guide">Guide</a></nav><main id="view"></main>';
const view = document.getElementById("view");
const under = (folder, name, suffix) => ["", "app", folder, name + suffix].join("/");
async function route() {
  if (location.hash === "#/guide") {  // the route's code and data, loaded side by side
    const [chunk, data] = await Promise.all([
      import(under("chunks", "guide", ".js")),
      fetch(under("data", "guide", ".json")).then((r) => r.json())]);
    view.textContent = chunk.render(data);
  } else {
    view.textContent = (await (await fetch(under("data", "start", ".json"))).json()).text;
  }
}
addEventListener("hashchange", route);
route();
"""

GUIDE_CHUNK = """export function render(data) {
  return "Guide: " + data.text;
}
"""

ABOUT = """<!DOCTYPE html><html><head><title>About</title></head><body>
<h1>About the collection</h1><p>Gathered over two centuries by the observatory.</p>
<img src="/img/about.png" width="16" height="16" alt=""><a href="/">Home</a></body></html>
"""

LIVE = """<!DOCTYPE html><html><head><title>Live</title></head><body>
<h1>Live readings</h1><p id="reading">Waiting for the telescope.</p><script>
const socket = new WebSocket("ws://" + location.host + "/socket");
socket.onmessage = (event) => { document.getElementById("reading").textContent = event.data; };
</script></body></html>
"""

PAGES = {
    "/": HOME,
    "/frame.html": FRAME,
    "/app/": APP,
    "/about.html": ABOUT,
    "/live.html": LIVE,
}
SCRIPTS = {"/js/main.js": MAIN_JS, "/app/main.js": APP_JS, "/app/chunks/guide.js": GUIDE_CHUNK}
IMAGES = (
    "small",
    "large",
    "fallback",
    "texture",
    "hero-1x",
    "hero-2x",
    "dynamic",
    "card",
    "in-frame",
    "about",
)
JSON = {
    "/api/frame.json": {"answer": 42},
    "/app/data/start.json": {"text": "Five instruments, one for each century."},
    "/app/data/guide.json": {"text": "How to read a vernier scale, step by step."},
}


@dataclass(frozen=True)
class Hit:
    method: str
    path_qs: str
    body: bytes


@dataclass
class HardSite:
    """``async with HardSite() as site``; ``site.url(path)``; ``site.log`` has every request."""

    log: list[Hit] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def __aenter__(self) -> HardSite:
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
        self.log.append(Hit(request.method, request.path_qs, body))
        path = request.path
        if path == "/socket":
            socket = web.WebSocketResponse()
            await socket.prepare(request)
            await socket.send_str("a live reading")
            await socket.close()
            return socket
        if path in PAGES:
            return web.Response(text=PAGES[path], content_type="text/html")
        if path in SCRIPTS:
            return web.Response(text=SCRIPTS[path], content_type="text/javascript")
        if path == "/css/site.css":
            return web.Response(text=SITE_CSS, content_type="text/css")
        if path == "/fonts/computed.woff2":
            return web.Response(body=b"wOF2" + bytes(60), content_type="font/woff2")
        if path.startswith("/img/") and path.removeprefix("/img/").removesuffix(".png") in IMAGES:
            shade = sum(path.encode()) % 200
            image = png(16, 16, lambda x, y: (shade, x * 12, y * 12))
            return web.Response(body=image, content_type="image/png")
        if path == "/api/news.json" and "_" in request.query:
            return _json({"items": ["A new sextant", "The orrery restored"]})
        if path == "/api/search" and request.method == "POST":
            query = json.loads(body)["query"]
            return _json({"query": query, "count": 1 if query == "astrolabe" else 0})
        if path in JSON:
            return _json(JSON[path])
        return web.Response(status=404, text="not found")


def _json(value: object) -> web.Response:
    return web.Response(text=json.dumps(value), content_type="application/json")


__all__ = ["HardSite", "Hit"]
