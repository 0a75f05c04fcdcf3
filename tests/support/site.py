"""A local test website: aiohttp on 127.0.0.1, port 0, socket kept (no racy free-port grabbing).

Modelled on the 500-lines crawler's test server (``add_page`` / ``add_redirect``) and Scrapy's
mock server: pages, files, redirects and arbitrary handlers, plus counters the tests assert on
(requests per path, the most requests in flight at once, overall and per host).

Use it in async tests::

    async with SiteServer() as site:
        site.add_page("/", '<a href="/a">a</a>')
        url = site.url("/")

or, for tests that run the crawler in a subprocess, in a background thread::

    with SiteServer().running_in_thread() as site: ...
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Hit:
    path: str
    query: str
    headers: dict[str, str]
    started: float


@dataclass
class Counters:
    hits: list[Hit] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    in_flight_by_host: collections.Counter[str] = field(default_factory=collections.Counter)
    max_in_flight_by_host: collections.Counter[str] = field(default_factory=collections.Counter)

    def count(self, path: str) -> int:
        return sum(1 for hit in self.hits if hit.path == path)


class SiteServer:
    """A small website with pages, files, redirects and custom handlers."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.routes: dict[str, Handler] = {}
        self.counters = Counters()
        self._runner: web.AppRunner | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.delay = 0.0  #: seconds every response waits (to observe concurrency)

    # -- content -------------------------------------------------------------------------

    def add_page(
        self, path: str, html: str, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        body = html.encode("utf-8")

        async def handler(_: web.Request) -> web.StreamResponse:
            return web.Response(
                body=body, status=status, content_type="text/html", charset="utf-8", headers=headers
            )

        self.routes[path] = handler

    def add_file(
        self,
        path: str,
        body: bytes,
        content_type: str,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        async def handler(_: web.Request) -> web.StreamResponse:
            response = web.Response(body=body, status=status, headers=headers)
            response.content_type = content_type
            return response

        self.routes[path] = handler

    def add_redirect(self, path: str, location: str, status: int = 301) -> None:
        async def handler(_: web.Request) -> web.StreamResponse:
            return web.Response(status=status, headers={"Location": location})

        self.routes[path] = handler

    def add_handler(self, path: str, handler: Handler) -> None:
        self.routes[path] = handler

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- serving -------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        key = request.path_qs if request.path_qs in self.routes else request.path
        loop = asyncio.get_running_loop()
        counters = self.counters
        counters.hits.append(
            Hit(request.path, request.query_string, dict(request.headers), loop.time())
        )
        host = request.host
        counters.in_flight += 1
        counters.in_flight_by_host[host] += 1
        counters.max_in_flight = max(counters.max_in_flight, counters.in_flight)
        counters.max_in_flight_by_host[host] = max(
            counters.max_in_flight_by_host[host], counters.in_flight_by_host[host]
        )
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            handler = self.routes.get(key)
            if handler is None:
                return web.Response(status=404, text="not found")
            return await handler(request)
        finally:
            counters.in_flight -= 1
            counters.in_flight_by_host[host] -= 1

    async def start(self) -> SiteServer:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]  # the port the kernel picked
        self.loop = asyncio.get_running_loop()
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SiteServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @contextlib.contextmanager
    def running_in_thread(self) -> Iterator[SiteServer]:
        """Serve from a background thread with its own event loop (for subprocess crawls)."""
        ready = threading.Event()
        stop: asyncio.Event | None = None
        loop = asyncio.new_event_loop()
        errors: list[BaseException] = []

        async def main() -> None:
            nonlocal stop
            stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:  # surface start-up failures to the caller
                errors.append(exc)
                ready.set()
                return
            ready.set()
            await stop.wait()
            await self.stop()

        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
        thread.start()
        ready.wait(30)
        if errors:
            raise errors[0]
        try:
            yield self
        finally:
            if stop is not None:
                loop.call_soon_threadsafe(stop.set)
            thread.join(30)
            loop.close()


def generated_site(
    site: SiteServer, pages: int, *, links: int = 8, image_every: int = 5
) -> list[str]:
    """A deterministic site of ``pages`` HTML pages (``/p/N.html``) linked in a mesh, with a
    stylesheet and some images; returns every path a complete crawl must capture."""
    paths = ["/", "/style.css"]
    site.add_file("/style.css", b"body { background: url(/img/bg.png) }", "text/css")
    site.add_file("/img/bg.png", b"\x89PNG\r\n\x1a\n" + b"bg" * 600, "image/png")
    paths.append("/img/bg.png")
    home_links = "".join(f'<a href="/p/{i}.html">page {i}</a>' for i in range(min(pages, 50)))
    site.add_page(
        "/",
        '<html><head><title>Home</title><link rel="stylesheet" href="/style.css"></head>'
        f"<body>{home_links}</body></html>",
    )
    for i in range(pages):
        targets = sorted({(i * 7 + k * 13 + 1) % pages for k in range(links)} | {(i + 1) % pages})
        body = "".join(f'<a href="/p/{t}.html">p{t}</a> ' for t in targets)
        if i % image_every == 0:
            image = f"/img/{i}.png"
            site.add_file(image, b"\x89PNG\r\n\x1a\n" + str(i).encode() * 200, "image/png")
            body += f'<img src="{image}">'
            paths.append(image)
        site.add_page(
            f"/p/{i}.html",
            f'<html><head><title>Page {i}</title><link rel="stylesheet" href="/style.css"></head>'
            f"<body><h1>Page {i}</h1>{body}</body></html>",
        )
        paths.append(f"/p/{i}.html")
    return paths
