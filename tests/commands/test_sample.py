"""`archiver serve-sample`: the demo site serves what it promises, and a crawl of it
shows each feature (redirect chain, 404, gzip page, @import, srcset, a revisit)."""

from __future__ import annotations

import contextlib
import gzip
import os
import select
import signal
import struct
import subprocess
import sys
import urllib.request
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from archiver.commands.sample import REDIRECTS, create_app, site_resources
from tests.conftest import run_crawl
from tests.support.warcs import read_records


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[str]:
    runner = web.AppRunner(create_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def png_size(data: bytes) -> tuple[int, int]:
    """Check a PNG's structure (signature, chunk CRCs, IHDR, IDAT size); return its size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, idat = 8, [], b""
    width = height = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(
            kind + body
        )
        chunks.append(kind)
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert (depth, color) == (8, 2)
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND"
    assert len(zlib.decompress(idat)) == height * (1 + 3 * width)
    return width, height


def test_images_are_valid_pngs() -> None:
    images = {p: r for p, r in site_resources().items() if r.content_type == "image/png"}
    assert len(images) >= 8
    sizes = {path: png_size(r.body) for path, r in images.items()}
    assert sizes["/img/hero-2x.png"] == (240, 120)
    assert images["/img/photo.png"].body == images["/gallery/photo-copy.png"].body
    assert len(images["/img/photo.png"].body) > 1024  # over the default --dedup-min-size


async def test_site_serves_what_it_promises() -> None:
    async with serving() as origin, aiohttp.ClientSession(auto_decompress=False) as http:

        async def get(path: str) -> tuple[int, dict[str, str], bytes]:
            async with http.get(origin + path, allow_redirects=False) as resp:
                return resp.status, dict(resp.headers), await resp.read()

        pages = [p for p, r in site_resources().items() if r.content_type.startswith("text/html")]
        assert len(pages) >= 20
        for path in pages:
            status, _, body = await get(path)
            assert status == 200 and b"<title>" in (
                gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body
            )
        status, headers, body = await get("/robots.txt")
        assert status == 200 and b"Disallow: /private/" in body
        assert f"Sitemap: {origin}/sitemap.xml".encode() in body
        status, _, body = await get("/sitemap.xml")
        assert f"<loc>{origin}/sitemap-only.html</loc>".encode() in body
        assert b"/private/" not in body
        hops = []
        path = "/old-blog"
        while path in REDIRECTS:
            status, headers, _ = await get(path)
            hops.append(status)
            path = headers["Location"]
        assert hops == [301, 302] and path == "/blog/"
        status, headers, body = await get("/news.html")
        assert headers["Content-Encoding"] == "gzip"
        assert b'href="/archive/2023.html"' in gzip.decompress(body)
        assert (await get("/docs/missing.html"))[0] == 404
        _, _, css = await get("/css/site.css")
        assert b'@import url("theme.css")' in css and b"url(../img/bg.png)" in css
        _, _, home = await get("/")
        assert b'srcset="/img/hero-2x.png 2x, /img/hero-3x.png 3x"' in home


async def test_a_crawl_of_the_sample_site(tmp_path: Path) -> None:
    async with serving() as origin:
        result = await run_crawl(tmp_path / "out", origin + "/")
    assert result.status == "completed"
    records = {
        r.uri.removeprefix(origin): r
        for r in read_records(tmp_path / "out" / "warcs")
        if r.uri and r.type in ("response", "revisit")
    }
    captured = set(records)
    for path in (
        "/css/theme.css",  # @import
        "/img/logo.png",  # url() in the imported stylesheet
        "/img/bg.png",  # url() in the first stylesheet
        "/img/hero-3x.png",  # srcset
        "/archive/2023.html",  # linked only from the gzip-encoded page
        "/blog-moved",  # the middle of the redirect chain
        "/docs/missing.html",  # the 404
    ):
        assert path in captured, path
    assert records["/gallery/photo-copy.png"].type == "revisit"
    summary = result.summary
    assert summary["pages"] >= 18
    assert summary["revisits"] >= 1 and summary["dedup_bytes_saved"] > 1024
    assert summary["by_status"].keys() >= {"200", "301", "302", "404"}


def read_lines(proc: subprocess.Popen[bytes], count: int, timeout: float = 30) -> list[str]:
    """The first ``count`` lines of a child's stdout, read from the pipe as they come."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    while buf.count(b"\n") < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no output in {timeout} s: {buf!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"the process exited: {buf!r}"
        buf += chunk
    return buf.decode().splitlines()[:count]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_sample_command(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve-sample", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        first, second = read_lines(proc, 2)
        assert first.startswith("archiver: sample site at http://127.0.0.1:"), first
        url = first.split()[4]
        assert "archiver crawl " + url in second
        with urllib.request.urlopen(url + "sitemap.xml", timeout=10) as resp:
            assert resp.status == 200 and b"<urlset" in resp.read()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert err == b""
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_serve_sample_port_in_use() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve-sample", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as first:
        try:
            port = read_lines(first, 1)[0].split()[4].rsplit(":", 1)[1].strip("/")
            taken = subprocess.run(
                [sys.executable, "-m", "archiver", "serve-sample", "--port", port],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            first.send_signal(signal.SIGINT)
            first.communicate(timeout=30)
    assert taken.returncode == 1
    lines = taken.stderr.splitlines()
    assert len(lines) == 1 and "address already in use" in lines[0].lower(), taken.stderr
    assert taken.stdout == ""


async def test_robots_and_sitemap_of_the_sample_site(tmp_path: Path) -> None:
    async with serving() as origin:
        result = await run_crawl(tmp_path / "out", origin + "/", robots="obey", sitemaps="on")
    assert result.status == "completed"
    captured = {
        r.uri.removeprefix(origin)
        for r in read_records(tmp_path / "out" / "warcs")
        if r.uri and r.type in ("response", "revisit")
    }
    assert "/robots.txt" in captured and "/sitemap.xml" in captured
    assert "/sitemap-only.html" in captured  # listed in sitemap.xml only
    assert "/private/drafts.html" not in captured  # disallowed by robots.txt
    assert result.summary["skips"].get("robots") == 1
