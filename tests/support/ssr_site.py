"""A local documentation site rendered on the server and hydrated in the browser, the way
VitePress (and Docusaurus) build one: what ``--browser auto``'s static rule cannot tell apart
from a plain page.

aiohttp on 127.0.0.1, port 0 (socket kept); every request is logged. Each page (``/``,
``/guide/``, ``/reference/``, ``/about/``, ``/changelog/``) is whole HTML: a ``<div id="app">``
holding the rendered navigation (five links) and several hundred characters of text, a
stylesheet, one module script, and an inline ``window.__VP_HASH_MAP__`` (page -> content hash:
VitePress's own global, which no marker of the static rule names). Once loaded, the module
script "hydrates" the page: it imports the page's chunk ``/assets/chunks/PAGE.HASH.js`` and
fetches its data ``/assets/data/PAGE.HASH.json``, URLs built from the location and the hash map
(no static link names them), and renders the page from them (the same text). When either
cannot be loaded, it does what VitePress's router does: it replaces the page with its "page
not found" view. So a replay that lacks them shows a few words instead of the page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from aiohttp import web

PAGES = {
    "index": "Field notes",
    "guide": "Guide",
    "reference": "Reference",
    "about": "About",
    "changelog": "Changelog",
}
HASHES = {page: f"{n * 7919 + 4099:x}{page[:2]}" for n, page in enumerate(PAGES)}

NAV = (
    '<nav><a href="/">Home</a> <a href="/guide/">Guide</a> '
    '<a href="/reference/">Reference</a> <a href="/about/">About</a> '
    '<a href="/changelog/">Changelog</a></nav>'
)

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} | Field notes</title>
<link rel="stylesheet" href="/assets/style.css">
<script type="module" src="/assets/app.js"></script></head>
<body><div id="app"><div class="layout">{nav}<main>{content}</main></div></div>
<script>window.__VP_HASH_MAP__ = JSON.parse({hashes});</script>
</body></html>
"""

APP_JS = """const page = location.pathname.replace(/^\\/|\\/$/g, "") || "index";
const hash = window.__VP_HASH_MAP__[page];
const main = document.querySelector("main");
try {
  const [chunk, data] = await Promise.all([
    import(`/assets/chunks/${page}.${hash}.js`),
    fetch(`/assets/data/${page}.${hash}.json`).then((response) => {
      if (!response.ok) throw new Error(`data: ${response.status}`);
      return response.json();
    }),
  ]);
  main.innerHTML = chunk.render(data);
} catch (error) {
  document.getElementById("app").innerHTML = "<h1>404</h1><p>PAGE NOT FOUND</p>";
}
"""

CHUNK = """export function render(data) {
  return `<h1>${data.title}</h1>` + data.paragraphs.map((p) => `<p>${p}</p>`).join("");
}
"""

STYLE = "main { max-width: 40em; } nav a { margin-right: 1em; }\n"


def paragraphs(title: str) -> list[str]:
    return [
        f"{title}: the field notes of the survey, kept as the surveyors wrote them.",
        "Each station was visited twice, at dawn and at dusk, and the readings were compared "
        "before anything was drawn on the sheet.",
        "The chain was checked against the standard every morning; a link worn by the stones "
        "of the river bed was replaced at the first village with a smithy.",
        "Where the notes disagree, both readings are kept, with the name of the one who took "
        "each, so that a later survey can decide between them.",
    ]


def html_page(page: str) -> str:
    title = PAGES[page]
    content = f"<h1>{title}</h1>" + "".join(f"<p>{p}</p>" for p in paragraphs(title))
    hashes = json.dumps(json.dumps(HASHES))
    return TEMPLATE.format(title=title, nav=NAV, content=content, hashes=hashes)


def path_of(page: str) -> str:
    return "/" if page == "index" else f"/{page}/"


@dataclass(frozen=True)
class Hit:
    method: str
    path: str


@dataclass
class HydratedDocs:
    """``async with HydratedDocs() as site``; ``site.url(path)``; ``site.log`` has every
    request; ``site.hydration(page)`` the two URLs a page's script loads."""

    log: list[Hit] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hydration(self, page: str) -> set[str]:
        hashed = f"{page}.{HASHES[page]}"
        return {self.url(f"/assets/chunks/{hashed}.js"), self.url(f"/assets/data/{hashed}.json")}

    async def __aenter__(self) -> HydratedDocs:
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
        self.log.append(Hit(request.method, request.path_qs))
        path = request.path
        for page, title in PAGES.items():
            hashed = f"{page}.{HASHES[page]}"
            if path == path_of(page):
                return web.Response(text=html_page(page), content_type="text/html")
            if path == f"/assets/chunks/{hashed}.js":
                return web.Response(text=CHUNK, content_type="text/javascript")
            if path == f"/assets/data/{hashed}.json":
                data = {"title": title, "paragraphs": paragraphs(title)}
                return web.Response(text=json.dumps(data), content_type="application/json")
        if path == "/assets/app.js":
            return web.Response(text=APP_JS, content_type="text/javascript")
        if path == "/assets/style.css":
            return web.Response(text=STYLE, content_type="text/css")
        return web.Response(status=404, text="not found")


__all__ = ["PAGES", "Hit", "HydratedDocs", "path_of"]
