"""The media byte budget is per page: all the playlists, segments and media files one page uses,
together, across workers, backends and processes.

The page plays two HLS media playlists, from two hosts, of 40 one-second segments of 2,000
bytes each; with the rendition rule's cap at 16,000 bit/s a playlist without a bandwidth is
estimated at exactly what its segments weigh. The budget is 40,000 bytes: each playlist alone
could list 20 segments, 80,000 bytes for the page, which a per-playlist budget let through. Per
page, the page's media stop once it has spent its budget: at most one segment more per worker
that was fetching when the budget was reached (each is admitted against the count as it
stands).
The server answers neither playlist before both were asked for, so each is read while its page
has spent nothing yet and lists its 20 segments: what is fetched is then cut by the count alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.support.site import Handler, SiteServer

SEGMENT = 2_000
SEGMENTS = 40
BUDGET = 40_000
BITRATE = SEGMENT * 8  # a one-second segment's bits: the estimate equals the weight
PLAYLISTS = ("/a/index.m3u8", "/b/index.m3u8")
CRAWL_TIMEOUT = 240
HOLD_GUARD = 60.0


def media_playlist(count: int) -> bytes:
    lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:1", "#EXT-X-PLAYLIST-TYPE:VOD"]
    for n in range(count):
        lines += ["#EXTINF:1.0,", f"s{n}.ts"]
    return ("\n".join([*lines, "#EXT-X-ENDLIST"]) + "\n").encode()


def both_playlists_at_once(site: SiteServer) -> None:
    """Hold each playlist's answer until the other was asked for too (a hang guard ends the
    wait): both are read before any segment is counted."""
    asked: set[str] = set()
    both = asyncio.Event()
    for path in PLAYLISTS:
        answer = site.routes[path]

        async def held(request: web.Request, path: str = path, answer: Handler = answer) -> Any:
            asked.add(path)
            if len(asked) == len(PLAYLISTS):
                both.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(both.wait(), HOLD_GUARD)
            return await answer(request)

        site.routes[path] = held


def build(site: SiteServer) -> list[str]:
    """The page, its playlists and their segments (each a distinct payload: no revisits); the
    second playlist is named on the host ``localhost``, the first on the page's own."""
    other = site.url(PLAYLISTS[1]).replace("127.0.0.1", "localhost")
    site.add_page(
        "/",
        f'<!doctype html><title>two players</title><video src="{PLAYLISTS[0]}"></video>'
        f'<video src="{other}"></video>',
    )
    segments = []
    for playlist in PLAYLISTS:
        site.add_file(playlist, media_playlist(SEGMENTS), "application/vnd.apple.mpegurl")
        folder = playlist.rsplit("/", 1)[0]
        for n in range(SEGMENTS):
            path = f"{folder}/s{n}.ts"
            body = (f"{path}:".encode() * SEGMENT)[:SEGMENT]
            site.add_file(path, body, "video/mp2t")
            segments.append(path)
    both_playlists_at_once(site)
    return segments


def media_bytes_fetched(site: SiteServer, segments: list[str]) -> tuple[int, Counter[str]]:
    """Bytes of the segments the server sent, and how many of each playlist's."""
    fetched = [path for path in segments if site.counters.count(path)]
    for path in fetched:
        assert site.counters.count(path) == 1, path
    return len(fetched) * SEGMENT, Counter(path.split("/")[1] for path in fetched)


def budget_skips(out: Path) -> list[str]:
    lines = (out / "crawl.log.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [
        e["url"] for e in events if e.get("event") == "skip" and e.get("reason") == "media-budget"
    ]


def assert_within_page_budget(spent: int, workers: int) -> None:
    playlist_bytes = 2 * len(media_playlist(SEGMENTS))  # counted too: they are media
    assert spent + playlist_bytes >= BUDGET - SEGMENT, spent  # the budget was used
    assert spent <= BUDGET + workers * SEGMENT, spent  # and not more than what was in flight


@pytest.mark.parametrize("frontier", ["memory", "sqlite"])
async def test_a_pages_playlists_share_one_media_budget(tmp_path: Path, frontier: str) -> None:
    async with SiteServer() as site:
        segments = build(site)
        out = tmp_path / "out"
        workers = 3
        settings = fast_settings(
            out,
            site.url("/"),
            frontier=frontier,
            workers=workers,
            media_max_bitrate=BITRATE,
            media_max_bytes=BUDGET,
            allow_private=True,
        )
        result = await Crawler(settings).run()
        assert result.status == "completed", result.reason
        spent, by_playlist = media_bytes_fetched(site, segments)
    assert_within_page_budget(spent, workers)
    assert set(by_playlist) == {"a", "b"}  # both playlists drew on it
    skipped = budget_skips(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skips"]["media-budget"] == len(skipped) > 0
    assert all(site.counters.count(path.split(site.url(""), 1)[-1]) == 0 for path in skipped)


async def test_without_a_budget_every_segment_is_fetched(tmp_path: Path) -> None:
    async with SiteServer() as site:
        segments = build(site)
        out = tmp_path / "out"
        settings = fast_settings(
            out, site.url("/"), media_max_bytes=0, workers=3, allow_private=True
        )
        result = await Crawler(settings).run()
        assert result.status == "completed", result.reason
        spent, _ = media_bytes_fetched(site, segments)
    assert spent == len(segments) * SEGMENT
    assert budget_skips(out) == []


async def test_two_processes_count_one_budget_per_page(tmp_path: Path) -> None:
    """``--processes 2``: the segments may be leased by either process, and the count they are
    admitted against is the page's, in the crawl's Redis (that two frontiers add to one count
    is tests/frontier/test_redis_frontier.py's; which process leases which segment is the
    frontier's choice, so this test bounds the total, whoever fetched it)."""
    async with SiteServer() as site:
        segments = build(site)
        out = tmp_path / "out"
        workers = 2
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "archiver", "crawl", site.url("/"), "--output", str(out),
            "--processes", "2", "--workers", str(workers), "--robots", "ignore",
            "--sitemaps", "off", "--per-host-delay", "0", "--per-host-concurrency", "8",
            "--min-free-disk", "0", "--quiet", "--progress", "off", "--allow-private",
            "--media-max-bitrate", str(BITRATE), "--media-max-bytes", str(BUDGET),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            output, _ = await asyncio.wait_for(process.communicate(), CRAWL_TIMEOUT)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, output.decode(errors="replace")[-3000:]
        spent, _ = media_bytes_fetched(site, segments)
    assert_within_page_budget(spent, 2 * workers)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["processes"]["count"] == 2
    assert summary["skips"]["media-budget"] > 0
