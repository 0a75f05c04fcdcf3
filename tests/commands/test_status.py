"""The status endpoint (``--status-port``): real crawls of local sites, scraped over HTTP and
read back with prometheus-client's own parser."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from archiver.commands.status import Health, StatusServer, serving
from archiver.errors import SettingsError
from archiver.run.crawler import Crawler
from archiver.run.stats import Snapshot
from tests.conftest import fast_settings
from tests.support.site import SiteServer


async def until(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110 - the servers' counters, no event to wait on
        await asyncio.sleep(0.02)


async def get(url: str, method: str = "GET") -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.request(method, url) as response:
        return response.status, response.headers.get("Content-Type", ""), await response.text()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, parsed by prometheus-client: (name, labels) -> value."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def by_label(scrape: dict[Any, float], name: str) -> dict[str, float]:
    return {labels[0][1]: value for (n, labels), value in scrape.items() if n == name and labels}


def build_site(site: SiteServer) -> asyncio.Event:
    """Pages, an image, a 404; /p/3 answers when the event is set."""
    release = asyncio.Event()
    links = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(6))
    site.add_page(
        "/", f'{links}<a href="/missing">404</a><img src="/i.png"><a href="ftp://x/">f</a>'
    )
    for i in range(6):
        site.add_page(f"/p/{i}", f"<p>page {i}</p>")
    site.add_file("/i.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 200, "image/png")

    async def held(_: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(text="<p>held</p>", content_type="text/html")

    site.add_handler("/p/3", held)
    return release


async def test_metrics_during_a_crawl_and_equal_to_the_summary_at_the_end(
    tmp_path: Path, site: SiteServer
) -> None:
    release = build_site(site)
    out = tmp_path / "out"
    crawler = Crawler(
        fast_settings(out, site.url("/"), workers=1, per_host_concurrency=1, exclude=("/p/5",))
    )
    async with serving(crawler, "127.0.0.1", 0, stall_after=300.0) as server:
        assert server is not None and server.address is not None
        assert server.address[0] == "127.0.0.1"
        task = asyncio.create_task(crawler.run())
        await until(lambda: site.counters.count("/p/3") == 1)
        status, content_type, text = await get(server.url + "metrics")
        assert status == 200 and content_type.startswith("text/plain; version=")
        during = samples(text)
        assert during[("archiver_in_flight", ())] == 1
        assert during[("archiver_queued", ())] >= 1  # /p/4 waits behind the held page
        assert during[("archiver_captures_total", ())] >= 1
        assert during[("archiver_info", (("version", __import__("archiver").__version__),))] == 1
        _, _, snapshot_text = await get(server.url + "status")
        assert json.loads(snapshot_text)["in_flight"] == 1
        release.set()
        result = await task
        assert result.status == "completed"
        _, _, text = await get(server.url + "metrics")  # the run is over, the server not yet
    final = samples(text)
    summary = json.loads((out / "summary.json").read_text())
    for name in ("pages", "captures", "revisits", "bytes_received", "bytes_written", "retries"):
        assert final[(f"archiver_{name}_total", ())] == summary[name], name
    assert by_label(final, "archiver_errors_total") == summary["failures"]
    assert by_label(final, "archiver_skips_total") == summary["skips"] == {"excluded": 1}
    assert by_label(final, "archiver_responses_total") == summary["by_status_class"]
    assert by_label(final, "archiver_host_captures_total") == summary["by_host"]
    assert final[("archiver_captures_total", ())] == 8  # /, 5 pages, the image, the 404
    assert final[("archiver_queued", ())] == 0 and final[("archiver_in_flight", ())] == 0
    for later, value in final.items():  # counters only grow
        if later[0].endswith("_total") and later in during:
            assert value >= during[later]


async def test_healthz_goes_503_when_the_only_host_stalls(tmp_path: Path, site: SiteServer) -> None:
    release = build_site(site)
    crawler = Crawler(fast_settings(tmp_path / "out", site.url("/"), workers=1))
    async with serving(crawler, "127.0.0.1", 0, stall_after=0.5) as server:
        assert server is not None
        task = asyncio.create_task(crawler.run())
        await until(lambda: site.counters.count("/p/3") == 1)  # held: nothing can end now
        answers: list[tuple[int, dict[str, Any]]] = []
        while not answers or answers[-1][0] != 503:
            status, _, body = await get(server.url + "healthz")
            answers.append((status, json.loads(body)))
            await asyncio.sleep(0.1)
        stalled = answers[-1][1]
        assert stalled["status"] == "stalled" and stalled["in_flight"] == 1
        assert stalled["seconds_since_progress"] >= 0.5
        _, _, metrics = await get(server.url + "metrics")
        assert samples(metrics)[("archiver_seconds_since_progress", ())] >= 0.5
        release.set()  # the host answers again: progress, then the end
        assert (await task).status == "completed"
        status, _, body = await get(server.url + "healthz")
        assert status == 200 and json.loads(body)["status"] in ("idle", "stopping")


async def test_the_endpoint_is_read_only_and_stops_with_its_block(
    tmp_path: Path, site: SiteServer
) -> None:
    build_site(site).set()
    crawler = Crawler(fast_settings(tmp_path / "out", site.url("/")))
    async with serving(crawler, "127.0.0.1", 0, stall_after=300.0) as server:
        assert server is not None and server.address is not None
        port = server.address[1]
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            for path in ("metrics", "status", "healthz"):
                status, _, _ = await get(server.url + path, method)
                assert status == 405, (method, path)
        assert (await get(server.url + "anything"))[0] == 404
        assert (await get(server.url + "metrics", "HEAD"))[0] == 200
        assert (await crawler.run()).status == "completed"
    with socket.socket() as probe:  # nothing listens any more
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_health_counts_every_way_a_url_ends() -> None:
    now = [0.0]
    health = Health(stall_after=10.0, clock=lambda: now[0])
    snap = Snapshot(queued=1, in_flight=1)
    assert health.verdict(snap)[0]
    changes: list[dict[str, Any]] = [
        {"retries": 1},
        {"failures": {"timeout": 1}},
        {"skips": {"ignored": 1}},
    ]
    for change in changes:
        now[0] += 11
        assert not health.verdict(snap)[0]
        snap = dataclasses.replace(snap, **change)
        assert health.verdict(snap)[0], change
    now[0] += 11
    assert health.verdict(dataclasses.replace(snap, queued=0, in_flight=0)) == (
        True,
        {
            "status": "idle",
            "seconds_since_progress": 11.0,
            "stall_after": 10.0,
            "queued": 0,
            "in_flight": 0,
        },
    )


async def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        crawler = Crawler(fast_settings(tmp_path / "o", "http://127.0.0.1/"))
        with pytest.raises(SettingsError, match=f"--status-port.*127.0.0.1:{port}"):
            await StatusServer(crawler, stall_after=1).start("127.0.0.1", port)


def test_a_port_in_use_stops_the_command_before_it_writes(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "archiver",
                "crawl",
                "http://127.0.0.1:9/",
                "-o",
                str(tmp_path / "out"),
                "--status-port",
                str(port),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--status-port" in done.stderr
    assert not (tmp_path / "out").exists()  # refused before anything was written
