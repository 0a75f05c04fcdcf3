"""The benchmark helpers work: the synthetic site generator and the latency server.

Correctness only (no timing asserts): ``scripts/bench`` measures, this checks its inputs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
sys.path.insert(0, str(SCRIPTS))

from benchlib import sitegen, slowserver  # noqa: E402


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def test_site_generator_writes_a_linked_deterministic_site(tmp_path: Path) -> None:
    manifest = sitegen.generate(tmp_path / "a", pages=12, seed=3)
    root = tmp_path / "a" / "root"
    served = (tmp_path / "a" / "urls.txt").read_text().split()
    assert sorted(served) == served
    assert len(served) == manifest["files"]
    assert all((root / p.lstrip("/")).is_file() for p in served)
    assert json.loads((tmp_path / "a" / "manifest.json").read_text()) == manifest

    # every content page is reachable from "/" through <a href> links (page i -> 2i+1, 2i+2)
    index = (root / "index.html").read_text()
    assert 'href="p/000/00000.html"' in index
    page0 = (root / "p" / "000" / "00000.html").read_text()
    hrefs = re.findall(r'<a href="([^"]+)"', page0)
    assert {"00001.html", "/p/000/00001.html"} & set(hrefs)
    assert {"00002.html", "/p/000/00002.html"} & set(hrefs)
    assert 10 * 1024 <= manifest["page_bytes_min"] <= manifest["page_bytes_max"] <= 60 * 1024
    # requisites of every kind are referenced
    assert "srcset=" in page0 and 'rel="stylesheet"' in page0
    assert "@import" in (root / "css" / "style-00.css").read_text()

    # same seed, same bytes; ensure() reuses a matching site
    sitegen.generate(tmp_path / "b", pages=12, seed=3)
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    before = (root / "index.html").stat().st_mtime_ns
    sitegen.ensure(tmp_path / "a", pages=12, seed=3)
    assert (root / "index.html").stat().st_mtime_ns == before


async def _get(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str
) -> tuple[int, bytes]:
    writer.write(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    return status, await reader.readexactly(length)


async def test_latency_server_serves_trees_and_fans_with_keep_alive() -> None:
    server, site = await slowserver.serve(delay=0.01, fanout=5, page_size=1024)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        status, body = await _get(reader, writer, "/tree/20/1")
        assert status == 200
        assert re.findall(rb'href="/tree/20/(\d+)"', body) == [
            b"0",
            *(b"%d" % i for i in range(6, 11)),
        ]
        assert len(body) >= 1024

        # the same connection again (keep-alive): the last page has no children
        status, body = await _get(reader, writer, "/tree/20/19")
        assert status == 200 and re.findall(rb'href="/tree/20/(\d+)"', body) == [b"0"]

        status, body = await _get(reader, writer, "/tree/20/urls.txt")
        assert body.split() == [b"/tree/20/%d" % i for i in range(20)]

        status, body = await _get(reader, writer, "/fan/3")
        assert re.findall(rb'href="(/fan/3/\d+)"', body) == [b"/fan/3/0", b"/fan/3/1", b"/fan/3/2"]
        assert (await _get(reader, writer, "/fan/3/2"))[0] == 200
        assert (await _get(reader, writer, "/nothing"))[0] == 404

        _, stats = await _get(reader, writer, "/__stats")
        counters = json.loads(stats)
        assert counters["requests"] == counters["responses"] == 6
        assert counters["connections"] == 1 and counters["in_flight"] == 0
        assert counters["errors"] == 0
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
    assert site.stats.peak_open_connections == 1


async def test_latency_server_streams_a_large_body_under_flow_control() -> None:
    """``/bytes/N`` sends exactly N bytes that do not compress, and the connection goes on
    serving afterwards (keep-alive): the body of the memory-at-write-time benchmark."""
    server, site = await slowserver.serve(delay=0.0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        size = 9 * 1024 * 1024 + 7  # more than two of the repeated blocks, and a remainder
        status, body = await _get(reader, writer, f"/bytes/{size}")
        assert status == 200 and len(body) == size
        assert len(zlib.compress(body[: 1 << 20], 1)) > (1 << 20)  # incompressible
        assert (await _get(reader, writer, "/fan/0"))[0] == 200  # the same connection
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
    assert site.stats.responses == 2 and site.stats.in_flight == 0


def test_the_bench_script_starts_and_offers_each_benchmark() -> None:
    """``scripts/bench --help`` runs (a script no linter reads: a syntax error would only show
    when someone measures) and lists every benchmark the module docstring describes."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    documented = set(re.findall(r"scripts/bench (--[a-z0-9-]+)", done.stdout))
    assert {"--qa", "--extract", "--large-body", "--browser"} <= documented
    for option in documented:
        assert f"\n  {option} " in done.stdout or f"[{option}]" in done.stdout, option
