"""ReplayWeb.page served on 127.0.0.1 for ``archiver qa --replayer rwp``.

ReplayWeb.page (webrecorder's serverless replay, the npm package ``replaywebpage``) is a web
component (``ui.js``) and a service worker (``sw.js``) that read a WACZ in the browser. It is
not a Python package and archiver does not ship it: get it once with ``npm pack
replaywebpage@2.5.3 && tar xzf replaywebpage-2.5.3.tgz`` (the ``package/`` folder) and name that
folder with ``--replaywebpage DIR`` or ``$ARCHIVER_REPLAYWEBPAGE``.

The server serves, on an address of its own: ``/`` an embedding page (the documented way to
embed it: ``<replay-web-page source=… url=… ts=… replayBase="/replay/">``), ``/ui.js``,
``/replay/sw.js``, and ``/archive.wacz`` (with Range requests: the service worker reads the WACZ
as a ZIP, part by part). The WACZ is the crawl's own when it is newer than its index, else a
fresh one is packaged into ``state/qa/rwp/``. aiohttp.web serves it (a contract exception in
``pyproject.toml`` says why).
"""

from __future__ import annotations

import contextlib
import html
import os
from collections.abc import AsyncIterator
from pathlib import Path

from aiohttp import web

from archiver.errors import ArchiverError
from archiver.qa.tools import ReplayTool
from archiver.run.finish import package_crawl

VERSION = "2.5.3"
INSTALL_HINT = (
    f"get it with npm pack replaywebpage@{VERSION} && tar xzf replaywebpage-{VERSION}.tgz, "
    "then pass the package/ folder with --replaywebpage (or set ARCHIVER_REPLAYWEBPAGE)"
)
#: The host name the replaying browser reaches the server by: the only one it may resolve.
HOST = "localhost"

EMBED = """<!doctype html><html><head><meta charset="utf-8"><script src="/ui.js"></script>
</head><body style="margin:0"><replay-web-page source="/archive.wacz" url="{url}" ts="{ts}"
replayBase="/replay/" embed="replayonly" style="display:block;width:100vw;height:100vh">
</replay-web-page></body></html>
"""


def find_package(given: str | None) -> Path:
    """ReplayWeb.page's ``package/`` folder (``ui.js`` and ``sw.js`` in it)."""
    if not given:
        raise ArchiverError(f"--replayer rwp needs ReplayWeb.page: {INSTALL_HINT}")
    path = Path(given).expanduser()
    if (path / "package" / "ui.js").is_file():
        path = path / "package"
    if not (path / "ui.js").is_file() or not (path / "sw.js").is_file():
        raise ArchiverError(f"{given}: no ui.js and sw.js of ReplayWeb.page there; {INSTALL_HINT}")
    return path


def crawl_wacz(crawl_dir: Path) -> Path:
    """The crawl's WACZ if it is newer than its index, else a fresh one in ``state/qa/rwp/``."""
    index = crawl_dir / "index.cdxj"
    for path in sorted(crawl_dir.glob("*.wacz")):
        if path.stat().st_mtime >= index.stat().st_mtime:
            return path
    target = crawl_dir / "state" / "qa" / "rwp" / "crawl.wacz"
    target.parent.mkdir(parents=True, exist_ok=True)
    return package_crawl(crawl_dir, target)


@contextlib.asynccontextmanager
async def serving(crawl_dir: Path, package: Path) -> AsyncIterator[ReplayTool]:
    """Serve ReplayWeb.page and the crawl's WACZ until the block is left."""
    wacz = crawl_wacz(crawl_dir)

    async def embed(request: web.Request) -> web.Response:
        url = html.escape(request.query.get("url", ""), quote=True)
        ts = html.escape(request.query.get("ts", ""), quote=True)
        return web.Response(text=EMBED.format(url=url, ts=ts), content_type="text/html")

    def script(name: str) -> web.FileResponse:
        return web.FileResponse(package / name, headers={"Content-Type": "application/javascript"})

    async def ui(_: web.Request) -> web.FileResponse:
        return script("ui.js")

    async def worker(_: web.Request) -> web.FileResponse:
        return script("sw.js")

    async def archive(_: web.Request) -> web.FileResponse:
        return web.FileResponse(wacz)

    app = web.Application()
    app.router.add_get("/", embed)
    app.router.add_get("/ui.js", ui)
    app.router.add_get("/replay/sw.js", worker)
    app.router.add_get("/archive.wacz", archive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        yield ReplayTool("rwp", f"http://{HOST}:{port}/")
    finally:
        await runner.cleanup()


def package_from(option: str | None) -> Path:
    return find_package(option or os.environ.get("ARCHIVER_REPLAYWEBPAGE"))


__all__ = ["HOST", "INSTALL_HINT", "find_package", "package_from", "serving"]
