"""A client-rendered test website: a single-page application whose content only scripts build.

aiohttp on 127.0.0.1, port 0 (socket kept), logging every request with its method, path and
query, and body. What it serves:

- ``/``: an empty ``<div id="root">`` and ``/static/app.js``, which fetches
  ``/api/config.json?_=<time>`` (a cache-busting query), then ``/api/items`` (a 302 to
  ``/api/items.json``), renders the items as links to ``/item/N``, searches with
  ``fetch("/api/search", {method: "POST"})`` (a JSON body), uploads 256 bytes 0x00..0xFF to
  ``/api/upload`` (a binary POST body), and places :data:`LAZY_IMAGES` images far below the
  fold that load only when scrolled into view (IntersectionObserver);
- ``/static/app.css`` loads a web font (``/static/archive-sans.woff2``) that the page's text uses;
- ``/item/N``: an empty ``<div id="app">`` and ``/static/item.js``, which renders the item from
  ``/api/item/N.json`` with a link to the next item and back home;
- ``/sw.html``: a page that tries to register ``/sw.js`` as a service worker and shows the
  outcome in its title;
- ``/refusals.html``: a page that requests ``/blocked/...`` URLs (for handlers that refuse
  them) beside an allowed image, then sets its title;
- ``/frames.html``: an iframe from another site (``localhost`` rather than ``127.0.0.1``, so
  Chromium runs it in its own process) that loads an image and fetches JSON, and a dedicated
  worker (``/static/worker.js``) that fetches ``/api/from-worker``;
- ``/dialogs.html``: a page that opens ``alert()`` and ``confirm()`` before it sets its title;
- ``/jump.html``: a page whose script replaces it with ``/item/2`` (as it loads);
- ``/socket.html``: a page that opens a WebSocket to ``/socket`` (a working endpoint that sends
  ``hello``) and shows the outcome in its title;
- ``/visible.html``: a page whose title says whether it is visible and gets animation frames;
- ``/hang.html``: a page whose script never ends (its renderer hangs), linking ``/item/1``;
- ``/guard.html?other=ORIGIN``: a page that fetches ``ORIGIN/api/secret`` and shows the outcome
  in its title (``/api/secret`` answers ``the secret``).

``app.js``, ``item.js`` and ``/api/items.json`` are sent gzip-encoded whatever the request
accepts. Static link extraction finds no item page in any of this HTML: only the scripts do.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from archiver.commands.sample import png

ITEMS = (
    (1, "Astrolabe", "A brass astrolabe from 1560, engraved with the stars of the northern sky."),
    (2, "Sextant", "A sextant used on the survey ship that charted the southern coast in 1820."),
    (3, "Orrery", "A clockwork orrery showing six planets, their moons driven by one crank."),
    (4, "Armillary", "An armillary sphere of rings, the ecliptic marked in gilded letters."),
    (5, "Theodolite", "A surveyor's theodolite with a telescope and two graduated circles."),
)
LAZY_IMAGES = 4
UPLOAD = bytes(range(256))

INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Catalogue</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div></body></html>
"""

APP_JS = """(async () => {
  const root = document.getElementById("root");
  const config = await (await fetch("/api/config.json?_=" + Date.now())).json();
  const items = await (await fetch("/api/items")).json();
  const title = document.createElement("h1");
  title.textContent = config.title;
  const list = document.createElement("ul");
  for (const item of items) {
    const entry = document.createElement("li");
    const link = document.createElement("a");
    link.href = "/item/" + item.id;
    link.textContent = item.name;
    entry.append(link);
    list.append(entry);
  }
  root.append(title, list);
  const search = await fetch("/api/search", {
    method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({query: "brass"})});
  const found = document.createElement("p");
  found.id = "search";
  found.textContent = (await search.json()).count + " found";
  root.append(found);
  const bytes = new Uint8Array(256);
  for (let i = 0; i < 256; i++) bytes[i] = i;
  const upload = await fetch("/api/upload", {
    method: "POST", headers: {"Content-Type": "application/octet-stream"}, body: bytes});
  const stored = document.createElement("p");
  stored.id = "upload";
  stored.textContent = await upload.text();
  root.append(stored);
  const spacer = document.createElement("div");
  spacer.style.height = "4000px";
  root.append(spacer);
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) {
        entry.target.src = entry.target.dataset.src;
        observer.unobserve(entry.target);
      }
    }
  });
  for (let n = 1; n <= LAZY_IMAGES; n++) {
    const image = document.createElement("img");
    image.dataset.src = "/img/" + n + ".png";
    image.width = 64;
    image.height = 64;
    image.style.display = "block";
    image.style.marginBottom = "600px";
    root.append(image);
    observer.observe(image);
  }
  document.body.dataset.ready = "yes";
})();
""".replace("LAZY_IMAGES", str(LAZY_IMAGES))

APP_CSS = """@font-face {
  font-family: "Archive Sans";
  src: url("/static/archive-sans.woff2") format("woff2");
}
body { font-family: "Archive Sans", sans-serif; margin: 2em; }
"""

ITEM_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Item</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/item.js" defer></script></head>
<body><div id="app"></div></body></html>
"""

ITEM_JS = """(async () => {
  const id = Number(location.pathname.split("/").pop());
  const item = await (await fetch("/api/item/" + id + ".json")).json();
  document.title = item.name;
  const app = document.getElementById("app");
  const heading = document.createElement("h1");
  heading.textContent = item.name;
  const text = document.createElement("p");
  text.className = "text";
  text.textContent = item.text;
  const home = document.createElement("a");
  home.href = "/";
  home.textContent = "All items";
  app.append(heading, text, home);
  if (item.next) {
    const next = document.createElement("a");
    next.href = "/item/" + item.next;
    next.textContent = "Next";
    app.append(next);
  }
})();
"""

SW_PAGE = """<!DOCTYPE html>
<html><head><title>service worker</title></head><body><p>Offline-ready page.</p><script>
navigator.serviceWorker.register("/sw.js").then(
  () => { document.title = "registered"; },
  (error) => { document.title = "refused: " + error.name; });
</script></body></html>
"""

SW_JS = "self.addEventListener('fetch', (event) => event.respondWith(fetch(event.request)));"

REFUSALS_PAGE = """<!DOCTYPE html>
<html><head><title>refusals</title></head><body>
<img src="/blocked/pixel.png" width="1" height="1"><img src="/img/1.png" width="64" height="64">
<script>
fetch("/blocked/beacon").then(() => "answered", () => "failed").then((outcome) => {
  document.title = "beacon " + outcome;
});
</script></body></html>
"""


FRAMES_PAGE = """<!DOCTYPE html>
<html><head><title>frames</title></head><body>
<iframe src="http://localhost:PORT/frame.html" width="300" height="200"></iframe>
<script>
const worker = new Worker("/static/worker.js");
worker.onmessage = (event) => { document.title = "worker says " + event.data; };
</script></body></html>
"""

FRAME = """<!DOCTYPE html>
<html><body><img src="/img/frame.png" width="32" height="32">
<script>fetch("/api/in-frame.json").then((r) => r.json()).then((v) => {
  document.body.dataset.answer = v.answer;
});</script></body></html>
"""

WORKER_JS = "fetch('/api/from-worker').then((r) => r.text()).then((t) => postMessage(t));"

DIALOGS_PAGE = """<!DOCTYPE html>
<html><head><title>dialogs</title></head><body><script>
alert("Welcome!");
document.title = confirm("Leave this page?") ? "confirmed" : "dismissed";
</script></body></html>
"""

JUMP_PAGE = """<!DOCTYPE html>
<html><head><title>jump</title><script>location.replace("/item/2");</script></head></html>
"""


SOCKET_PAGE = """<!DOCTYPE html>
<html><head><title>socket</title></head><body><script>
const socket = new WebSocket("ws://127.0.0.1:PORT/socket");
socket.onmessage = (event) => { document.title = "socket said " + event.data; };
socket.onerror = () => { document.title = "socket failed"; };
</script></body></html>
"""


VISIBLE_PAGE = """<!DOCTYPE html>
<html><head><title>visible?</title></head><body><p>Am I rendered?</p><script>
requestAnimationFrame(() => { document.title = document.visibilityState + " with frames"; });
</script></body></html>
"""


@dataclass(frozen=True)
class Logged:
    method: str
    path_qs: str
    body: bytes


HANG_PAGE = """<!DOCTYPE html>
<html><head><title>hang</title></head><body><p>This page never lets its renderer go.</p>
<a href="/item/1">an item</a><script>for (;;) {}</script></body></html>
"""

GUARD_PAGE = """<!DOCTYPE html>
<html><head><title>guard</title></head><body><script>
const other = new URLSearchParams(location.search).get("other");
fetch(other + "/api/secret").then(() => "answered", () => "failed").then((outcome) => {
  document.title = "secret " + outcome;
});
</script></body></html>
"""


@dataclass
class SpaSite:
    """The client-rendered site; use ``async with SpaSite() as site``.

    ``robots`` is served as /robots.txt when set (404 otherwise); ``on_request`` is called with
    every request as it arrives, before it is answered (tests kill things at a given request).
    """

    log: list[Logged] = field(default_factory=list)
    port: int = 0
    robots: str | None = None
    on_request: Callable[[Logged], None] | None = None
    _runner: web.AppRunner | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def requested(self) -> list[str]:
        """``METHOD path?query`` of every request, in order."""
        return [f"{hit.method} {hit.path_qs}" for hit in self.log]

    async def __aenter__(self) -> SpaSite:
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
        hit = Logged(request.method, request.path_qs, body)
        self.log.append(hit)
        if self.on_request is not None:
            self.on_request(hit)
        if request.path == "/socket":
            socket = web.WebSocketResponse()
            await socket.prepare(request)
            await socket.send_str("hello")
            await socket.close()
            return socket
        return self._respond(request, body)

    def _respond(self, request: web.Request, body: bytes) -> web.StreamResponse:
        path = request.path
        if path == "/":
            return _text(INDEX, "text/html")
        if path == "/static/app.js":
            return _gzip(APP_JS.encode(), "text/javascript")
        if path == "/static/app.css":
            return _text(APP_CSS, "text/css")
        if path == "/static/archive-sans.woff2":
            return web.Response(body=b"wOF2" + bytes(60), content_type="font/woff2")
        if path == "/static/item.js":
            return _gzip(ITEM_JS.encode(), "text/javascript")
        if path == "/api/config.json" and "_" in request.query:
            return _json({"title": "Catalogue"})
        if path == "/api/items":
            return web.Response(status=302, headers={"Location": "/api/items.json"})
        if path == "/api/items.json":
            items = [{"id": n, "name": name} for n, name, _ in ITEMS]
            return _gzip(json.dumps(items).encode(), "application/json")
        if path == "/api/search" and request.method == "POST":
            query = json.loads(body)["query"]
            found = [name for _, name, text in ITEMS if query in text]
            return _json({"query": query, "count": len(found), "items": found})
        if path == "/api/upload" and request.method == "POST":
            return _text(f"stored {len(body)} bytes", "text/plain")
        if path.startswith("/api/item/") and path.endswith(".json"):
            return self._item(path)
        if path.startswith("/item/"):
            return _text(ITEM_PAGE, "text/html")
        if path.startswith("/img/") and path.endswith(".png"):
            return web.Response(
                body=png(8, 8, lambda x, y: (x * 30, y * 30, 90)), content_type="image/png"
            )
        if path == "/sw.html":
            return _text(SW_PAGE, "text/html")
        if path == "/sw.js":
            return _text(SW_JS, "text/javascript")
        if path == "/refusals.html":
            return _text(REFUSALS_PAGE, "text/html")
        return self._more(request, path)

    def _more(self, request: web.Request, path: str) -> web.StreamResponse:
        if path == "/robots.txt" and self.robots is not None:
            return _text(self.robots, "text/plain")
        if path == "/hang.html":
            return _text(HANG_PAGE, "text/html")
        if path == "/guard.html":
            return _text(GUARD_PAGE, "text/html")
        if path == "/api/secret":
            return _text("the secret", "text/plain")
        if path == "/frames.html":
            return _text(FRAMES_PAGE.replace("PORT", str(self.port)), "text/html")
        if path == "/frame.html":
            return _text(FRAME, "text/html")
        if path == "/api/in-frame.json":
            return _json({"answer": 42})
        if path == "/static/worker.js":
            return _text(WORKER_JS, "text/javascript")
        if path == "/api/from-worker":
            return _text("hello from " + request.host.split(":")[0], "text/plain")
        if path == "/dialogs.html":
            return _text(DIALOGS_PAGE, "text/html")
        if path == "/jump.html":
            return _text(JUMP_PAGE, "text/html")
        if path == "/visible.html":
            return _text(VISIBLE_PAGE, "text/html")
        if path == "/socket.html":
            return _text(SOCKET_PAGE.replace("PORT", str(self.port)), "text/html")
        return web.Response(status=404, text="not found")

    def _item(self, path: str) -> web.StreamResponse:
        number = path.removeprefix("/api/item/").removesuffix(".json")
        for n, name, text in ITEMS:
            if str(n) == number:
                after = n + 1 if n < len(ITEMS) else None
                return _json({"id": n, "name": name, "text": text, "next": after})
        return web.Response(status=404, text="no such item")


def item_paths() -> list[str]:
    return [f"/item/{n}" for n, _, _ in ITEMS]


def _text(text: str, content_type: str) -> web.Response:
    return web.Response(text=text, content_type=content_type)


def _json(value: object) -> web.Response:
    return web.Response(text=json.dumps(value), content_type="application/json")


def _gzip(body: bytes, content_type: str) -> web.Response:
    response = web.Response(body=gzip.compress(body, mtime=0), headers={"Content-Encoding": "gzip"})
    response.content_type = content_type
    return response
