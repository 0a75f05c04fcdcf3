"""``archiver serve-sample``: a small website on 127.0.0.1 that shows what a crawl does.

About twenty pages with titles, and the things an archiving crawler must get right, each one
visible in the summary, the report and replay:

- a stylesheet that ``@import``\\ s another, both with ``url()`` images;
- PNG images (made here, no files shipped), one with a ``srcset`` of 2x/3x variants;
- the same photo at two URLs, the copy two links deeper (so it is fetched later): its
  capture becomes a revisit record (dedup);
- a redirect chain (301 then 302) and a redirect to a page;
- a link to a page that does not exist (404);
- a page served gzip-encoded (archived as sent, decoded only to find its links);
- ``robots.txt`` that disallows ``/private/`` and names ``sitemap.xml``, which lists a page
  no other page links to.

:func:`create_app` returns the ``aiohttp.web.Application`` so tests serve it in-process;
:func:`serve` runs it in the foreground until Ctrl-C. The site is built per application: no
module-level state.
"""

from __future__ import annotations

import asyncio
import gzip
import signal
import struct
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from aiohttp import web

Pixel = Callable[[int, int], tuple[int, int, int]]

HOST = "127.0.0.1"


def png(width: int, height: int, pixel: Pixel) -> bytes:
    """A valid 8-bit RGB PNG (PNG spec sections 5 and 11: signature, IHDR, IDAT, IEND)."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        body = tag + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = bytearray()
    for y in range(height):
        rows.append(0)  # filter type None
        for x in range(width):
            rows.extend(pixel(x, y))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
        + chunk(b"IEND", b"")
    )


def _gradient(a: tuple[int, int, int], b: tuple[int, int, int], size: int) -> Pixel:
    def pixel(x: int, y: int) -> tuple[int, int, int]:
        t = (x + y) / max(2 * size - 2, 1)
        return (
            round(a[0] + (b[0] - a[0]) * t),
            round(a[1] + (b[1] - a[1]) * t),
            round(a[2] + (b[2] - a[2]) * t),
        )

    return pixel


def _noise(seed: int) -> Pixel:
    """Deterministic noise: it does not compress, so the photo is well over the dedup minimum
    (1 KB by default) and its second copy becomes a revisit."""

    def pixel(x: int, y: int) -> tuple[int, int, int]:
        n = (x * 73856093 ^ y * 19349663 ^ seed * 83492791) & 0xFFFFFFFF
        n = (n * 1103515245 + 12345) & 0xFFFFFFFF
        return (n >> 24 & 0xFF, n >> 16 & 0xFF, (n >> 8 & 0x7F) + 100)

    return pixel


def _circle(fg: tuple[int, int, int], bg: tuple[int, int, int], size: int) -> Pixel:
    def pixel(x: int, y: int) -> tuple[int, int, int]:
        r = size / 2
        return fg if (x - r + 0.5) ** 2 + (y - r + 0.5) ** 2 <= (r - 2) ** 2 else bg

    return pixel


@dataclass(frozen=True, slots=True)
class Resource:
    body: bytes
    content_type: str
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


SITE_CSS = b"""@import url("theme.css");
body { font-family: Georgia, serif; margin: 0; background: #fdfbf7 url(../img/bg.png); }
header { background: #2d4059 url("/img/header.png") repeat-x; color: #fff; padding: 1em 2em; }
header a { color: #ffd460; margin-right: 1em; }
main { max-width: 48em; margin: 2em auto; padding: 0 1em; }
footer { color: #777; text-align: center; padding: 2em; }
"""
THEME_CSS = b"""h1 { color: #2d4059; border-bottom: 3px solid #ea5455; }
.logo { background: url('/img/logo.png') no-repeat; padding-left: 72px; min-height: 64px; }
.gallery img { border: 4px solid #fff; box-shadow: 0 1px 4px #999; margin: 0.5em; }
"""

NAV = (
    ("/", "Home"),
    ("/about.html", "About"),
    ("/blog/", "Blog"),
    ("/gallery.html", "Gallery"),
    ("/docs/", "Docs"),
    ("/news.html", "News"),
    ("/contact.html", "Contact"),
)

POSTS = (
    ("Why we archive", "Websites change and vanish; a WARC file keeps them as they were."),
    ("Byte-exact capture", "The response record holds exactly the bytes the server sent."),
    ("Politeness", "One host, a few connections, a pause between requests."),
    ("Revisit records", "An identical payload is stored once and referred to afterwards."),
    ("Replay", "pywb reads the index and the WARC files and serves the site again."),
    ("Crawl traps", "Calendars and session ids make endless URLs; budgets stop them."),
)


def _page(title: str, body: str) -> Resource:
    nav = " ".join(f'<a href="{href}">{label}</a>' for href, label in NAV)
    html = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} · Sample site</title>
<link rel="stylesheet" href="/css/site.css"><link rel="icon" href="/img/favicon.png"></head>
<body><header><div class="logo"><strong>Sample site</strong><br>{nav}</div></header>
<main><h1>{title}</h1>
{body}
</main><footer>Served by <code>archiver serve-sample</code> on 127.0.0.1</footer></body></html>
"""
    return Resource(html.encode("utf-8"), "text/html; charset=utf-8")


def _pages() -> dict[str, Resource]:
    pages: dict[str, Resource] = {}
    post_links = "".join(
        f'<li><a href="/blog/post-{n}.html">{title}</a></li>'
        for n, (title, _) in enumerate(POSTS, 1)
    )
    pages["/"] = _page(
        "Welcome",
        "<p>A small site to try <b>archiver</b> on.</p>"
        '<img src="/img/photo.png" alt="photo" width="48" height="48">'
        '<img src="/img/hero.png" srcset="/img/hero-2x.png 2x, /img/hero-3x.png 3x" '
        'alt="hero" width="120" height="60">'
        f"<h2>Latest posts</h2><ul>{post_links}</ul>"
        '<p><a href="/old-blog">The old blog address</a> (redirects twice) · '
        '<a href="/latest">the latest post</a> (redirects) · '
        '<a href="/archive/2024.html">this year</a></p>',
    )
    pages["/about.html"] = _page(
        "About",
        "<p>This site exists to be crawled. Some of it is off limits: "
        '<a href="/private/drafts.html">drafts</a> are disallowed by robots.txt.</p>',
    )
    pages["/blog/"] = _page("Blog", f"<ul>{post_links}</ul>")
    for n, (title, text) in enumerate(POSTS, 1):
        prev = f'<a href="/blog/post-{n - 1}.html">previous</a>' if n > 1 else ""
        nxt = f'<a href="/blog/post-{n + 1}.html">next</a>' if n < len(POSTS) else ""
        pages[f"/blog/post-{n}.html"] = _page(
            title, f"<p>{text}</p><p>{prev} {nxt} <a href='/blog/'>all posts</a></p>"
        )
    pages["/gallery.html"] = _page(
        "Gallery",
        '<div class="gallery"><img src="/img/photo.png" alt="photo" width="48" height="48">'
        '<img src="/img/logo.png" alt="logo" width="64" height="64"></div>'
        '<p>The <a href="/docs/faq.html">FAQ</a> shows this photo again, from another URL.</p>',
    )
    pages["/docs/"] = _page(
        "Documentation",
        '<ul><li><a href="getting-started.html">Getting started</a></li>'
        '<li><a href="configuration.html">Configuration</a></li>'
        '<li><a href="faq.html">FAQ</a></li></ul>',
    )
    pages["/docs/getting-started.html"] = _page(
        "Getting started",
        "<pre>archiver serve-sample\narchiver crawl http://127.0.0.1:8000/ -o crawls/sample\n"
        "archiver report crawls/sample\narchiver replay crawls/sample</pre>",
    )
    pages["/docs/configuration.html"] = _page(
        "Configuration",
        "<p>Every option can be set in a TOML file: <code>--config crawl.toml</code>.</p>",
    )
    pages["/docs/faq.html"] = _page(
        "FAQ",
        '<p>Where is the <a href="/docs/missing.html">missing page</a>? It does not exist '
        "(a 404, archived like any other response).</p>"
        "<p>The home page's photo again, at another URL: "
        '<img src="/gallery/photo-copy.png" alt="the same photo" width="48" height="48"> '
        "archiver stores the bytes once and writes a revisit record for the copy.</p>",
    )
    pages["/contact.html"] = _page(
        "Contact", "<p>Write to <a href='mailto:nobody@example.invalid'>nobody</a>.</p>"
    )
    pages["/archive/2023.html"] = _page("Archive 2023", "<p>Nothing happened in 2023.</p>")
    pages["/archive/2024.html"] = _page("Archive 2024", "<p>Or in 2024.</p>")
    pages["/sitemap-only.html"] = _page(
        "Found through the sitemap", "<p>No page links here: only sitemap.xml lists it.</p>"
    )
    pages["/private/drafts.html"] = _page("Drafts", "<p>robots.txt asks crawlers to stay out.</p>")
    news = _page(
        "News (gzip)",
        "<p>This page is sent with <code>Content-Encoding: gzip</code>; the WARC keeps the "
        'compressed bytes. <a href="/archive/2023.html">Last year</a> is linked from '
        "here only: archiver found it by decoding this page.</p>",
    )
    pages["/news.html"] = Resource(
        gzip.compress(news.body, mtime=0),
        news.content_type,
        headers=(("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")),
    )
    return pages


def _images() -> dict[str, Resource]:
    photo = png(48, 48, _noise(7))
    images = {
        "/img/logo.png": png(64, 64, _circle((234, 84, 85), (253, 251, 247), 64)),
        "/img/bg.png": png(16, 16, _gradient((253, 251, 247), (240, 236, 226), 16)),
        "/img/header.png": png(4, 48, _gradient((45, 64, 89), (35, 50, 70), 48)),
        "/img/favicon.png": png(16, 16, _circle((255, 212, 96), (45, 64, 89), 16)),
        "/img/hero.png": png(120, 60, _gradient((45, 64, 89), (234, 84, 85), 90)),
        "/img/hero-2x.png": png(240, 120, _gradient((45, 64, 89), (234, 84, 85), 180)),
        "/img/hero-3x.png": png(360, 180, _gradient((45, 64, 89), (234, 84, 85), 270)),
        "/img/photo.png": photo,
        "/gallery/photo-copy.png": photo,
    }
    return {path: Resource(body, "image/png") for path, body in images.items()}


def site_resources() -> dict[str, Resource]:
    """Every static resource of the sample site by path (robots.txt and sitemap.xml are
    generated per request, since they name the host and port)."""
    resources = _pages()
    resources.update(_images())
    resources["/css/site.css"] = Resource(SITE_CSS, "text/css")
    resources["/css/theme.css"] = Resource(THEME_CSS, "text/css")
    return resources


#: Redirects: the old blog address goes through two hops, /latest through one.
REDIRECTS = {
    "/old-blog": (301, "/blog-moved"),
    "/blog-moved": (302, "/blog/"),
    "/latest": (302, "/blog/post-6.html"),
}


def _origin(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def create_app() -> web.Application:
    """The sample site as an aiohttp application (serve it with any aiohttp runner)."""
    resources = site_resources()
    not_found = _page("Not found", "<p>There is no such page.</p>")
    not_found = Resource(not_found.body, not_found.content_type, status=404)
    sitemap_paths = sorted(
        p
        for p, r in resources.items()
        if r.content_type.startswith("text/html") and not p.startswith("/private/")
    )

    async def robots(request: web.Request) -> web.StreamResponse:
        text = (
            "# The sample site's robots.txt (RFC 9309)\n"
            "User-agent: *\n"
            "Disallow: /private/\n\n"
            f"Sitemap: {_origin(request)}/sitemap.xml\n"
        )
        return web.Response(text=text, content_type="text/plain")

    async def sitemap(request: web.Request) -> web.StreamResponse:
        origin = _origin(request)
        entries = "".join(f"<url><loc>{origin}{path}</loc></url>\n" for path in sitemap_paths)
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{entries}</urlset>\n"
        )
        return web.Response(text=xml, content_type="application/xml")

    async def dispatch(request: web.Request) -> web.StreamResponse:
        path = request.path
        if path in REDIRECTS:
            status, location = REDIRECTS[path]
            return web.Response(status=status, headers={"Location": location})
        resource = resources.get(path)
        if resource is None:
            resource = not_found
        headers = {"Content-Type": resource.content_type, **dict(resource.headers)}
        return web.Response(body=resource.body, status=resource.status, headers=headers)

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/sitemap.xml", sitemap)
    app.router.add_route("*", "/{tail:.*}", dispatch)
    return app


async def _serve(port: int, out: IO[str]) -> int:
    runner = web.AppRunner(create_app(), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, HOST, port)
        await site.start()
        bound = runner.addresses[0][1]
        url = f"http://{HOST}:{bound}/"
        out.write(
            f"archiver: sample site at {url} (Ctrl-C to stop)\n"
            f"  try: archiver crawl {url} -o crawls/sample\n"
        )
        out.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    finally:
        await runner.cleanup()
    return 0


def serve(port: int, *, out: IO[str] | None = None) -> int:
    """Serve the sample site on 127.0.0.1:``port`` (0: any free port, printed) until Ctrl-C."""
    return asyncio.run(_serve(port, out or sys.stdout))
