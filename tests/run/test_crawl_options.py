"""Options people expect from wget and Browsertrix: --warc-header, --extra-hops, --sitemap and
--sitemap-from. Real crawls of local sites; records read back with warcio."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archiver.frontier.redis.codec import decode_item, encode_item
from archiver.frontier.sqlite import SqliteFrontier
from archiver.models import CrawlItem, Hop
from archiver.policy.politeness import HostGate
from archiver.policy.scope import Scope, ScopeRules
from archiver.policy.sitemaps import parse_sitemap
from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.support.site import SiteServer
from tests.support.warcs import read_records, responses


async def until(condition: Callable[[], bool]) -> None:
    while not condition():  # noqa: ASYNC110 - the server's counters, no event to wait on
        await asyncio.sleep(0.02)


# -- --warc-header ----------------------------------------------------------------------------


async def test_warc_headers_go_into_every_warcinfo(tmp_path: Path, site: SiteServer) -> None:
    site.add_page("/", "<p>home</p>")
    out = tmp_path / "out"
    given = (("operator", "Archive Team <at@example.org>"), ("x-collection", "local-test"))
    result = await Crawler(fast_settings(out, site.url("/"), warc_header=given)).run()
    assert result.status == "completed"
    infos = [r for r in read_records(out / "warcs") if r.type == "warcinfo"]
    assert infos
    for info in infos:
        lines = info.block.decode().splitlines()
        assert lines.count("operator: Archive Team <at@example.org>") == 1
        assert not any(line == "operator: " for line in lines)  # replaced, not repeated
        names = [line.split(":", 1)[0] for line in lines if line]
        assert names.index("x-collection") == names.index("crawl-settings") + 1  # added last


def crawl_command(output: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "archiver", "crawl", "http://127.0.0.1:9/", "-o", str(output)]
    return subprocess.run([*command, *options], capture_output=True, text=True, check=False)


def test_a_malformed_warc_header_is_a_usage_error(tmp_path: Path) -> None:
    for bad in ("no-colon", "bad name:x", ":empty"):
        done = crawl_command(tmp_path / "o", "--warc-header", bad)
        assert done.returncode == 2, bad
        assert done.stderr.count("\n") == 1 and "--warc-header" in done.stderr
    for option, value in (("--sitemap-from", "yesterday"), ("--sitemap", "ftp://x/map.xml")):
        done = crawl_command(tmp_path / "o", option, value)
        assert done.returncode == 2 and option in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "o").exists()


# -- --extra-hops -----------------------------------------------------------------------------


def test_extra_hops_count_pages_outside_the_scope() -> None:
    scope = Scope(ScopeRules(seeds=("http://in.test/",), extra_hops=2))
    seed = CrawlItem("http://in.test/")
    out1 = seed.child("http://out.test/1", Hop.LINK)
    reason, out1 = scope.admit(out1)
    assert reason is None and out1.extra == 1
    reason, out2 = scope.admit(out1.child("http://out.test/2", Hop.LINK))
    assert reason is None and out2.extra == 2
    assert scope.admit(out2.child("http://out.test/3", Hop.LINK))[0] == "scope"
    moved = scope.admit(out2.child("http://out.test/2b", Hop.REDIRECT))  # the same page, moved
    assert moved[0] is None and moved[1].extra == 2
    back = scope.admit(out2.child("http://in.test/again", Hop.LINK))  # inside again: from 0
    assert back[0] is None and back[1].extra == 0
    image = scope.admit(out2.child("http://cdn.test/i.png", Hop.EMBED))  # a requisite
    assert image[0] is None and image[1].extra == 0
    redirect = scope.admit(
        seed.child("http://out.test/r", Hop.LINK).child("http://o.test/", Hop.REDIRECT)
    )
    assert redirect[0] is None and redirect[1].extra == 1
    sitemap = CrawlItem("http://out.test/map.xml", hops="M")
    assert Scope(ScopeRules(seeds=("http://in.test/",), extra_hops=2)).check(sitemap) == "scope"
    assert Scope(ScopeRules(seeds=("http://in.test/",))).check(out1) == "scope"  # 0: none


async def test_extra_hops_capture_linked_pages_one_hop_out(tmp_path: Path) -> None:
    async with SiteServer() as home, SiteServer("127.0.0.2") as other:
        home.add_page("/", f'<a href="{other.url("/a")}">a</a>')
        other.add_page("/a", '<img src="/a.png"><a href="/b">b</a>')
        other.add_file("/a.png", b"\x89PNG\r\n\x1a\n" + b"a" * 100, "image/png")
        other.add_page("/b", "<p>two hops out</p>")
        out = tmp_path / "out"
        result = await Crawler(
            fast_settings(out, home.url("/"), extra_hops=1, frontier="sqlite", allow_private=True)
        ).run()
    assert result.status == "completed"
    captured = {r.uri for r in responses(out / "warcs")}
    assert captured == {home.url("/"), other.url("/a"), other.url("/a.png")}
    skipped = [e for e in map(json.loads, (out / "crawl.log.jsonl").read_text().splitlines())]
    assert [e["url"] for e in skipped if e.get("reason") == "scope"] == [other.url("/b")]


@pytest.mark.parametrize("extra", [0, 3])
async def test_the_count_survives_a_resume(tmp_path: Path, extra: int) -> None:
    item = CrawlItem("http://out.test/p", depth=2, hops="LL", via="http://in.test/", extra=extra)
    assert decode_item(encode_item(item)) == item
    if not extra:  # what a process before --extra-hops wrote: six fields
        assert encode_item(item).endswith(b',"http://in.test/",0]')
    path = tmp_path / "frontier.sqlite"
    first = SqliteFrontier(path, HostGate())
    await first.open()
    await first.put(item)
    await first.close()
    again = SqliteFrontier(path, HostGate())
    info = await again.open()
    assert info.queued == 1
    lease = await again.get()
    assert lease.item == item
    await again.close()


# -- --sitemap and --sitemap-from -------------------------------------------------------------


def sitemap(*entries: tuple[str, str | None]) -> bytes:
    body = "".join(
        f"<url><loc>{loc}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>"
        for loc, mod in entries
    )
    return (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{body}</urlset>"
    ).encode()


def test_lastmod_before_the_cutoff_is_left_out() -> None:
    body = sitemap(
        ("http://h.test/new", "2024-05-02"),
        ("http://h.test/same-day", "2024-05-01T00:00:00Z"),
        ("http://h.test/old", "2024-04-30T23:59:59+00:00"),
        ("http://h.test/zone", "2024-05-01T01:00:00+02:00"),  # 23:00 UTC the day before
        ("http://h.test/none", None),
        ("http://h.test/garbled", "last tuesday"),
    )
    cutoff = datetime(2024, 5, 1, tzinfo=UTC)
    parsed = parse_sitemap(body, "http://h.test/s.xml", newer_than=cutoff)
    assert parsed.urls == (
        "http://h.test/new",
        "http://h.test/same-day",
        "http://h.test/none",
        "http://h.test/garbled",
    )
    assert parsed.older == 2
    assert len(parse_sitemap(body, "http://h.test/s.xml").urls) == 6  # no cutoff: all


async def test_a_named_sitemap_is_read_and_filtered_by_lastmod(
    tmp_path: Path, site: SiteServer
) -> None:
    site.add_page("/", "<p>no links</p>")
    site.add_file("/robots.txt", b"User-agent: *\nAllow: /\n", "text/plain")  # names no sitemap
    site.add_file(
        "/feeds/special.xml",
        sitemap(
            (site.url("/new"), "2024-06-01"),
            (site.url("/old"), "2019-01-01"),
            (site.url("/undated"), None),
        ),
        "application/xml",
    )
    for path in ("/new", "/old", "/undated"):
        site.add_page(path, f"<p>{path}</p>")
    out = tmp_path / "out"
    result = await Crawler(
        fast_settings(
            out,
            site.url("/"),
            robots="obey",
            sitemaps="off",
            sitemap=(site.url("/feeds/special.xml"),),
            sitemap_from="2024-01-01",
        )
    ).run()
    assert result.status == "completed"
    fetched = {hit.path for hit in site.counters.hits}
    assert {"/feeds/special.xml", "/new", "/undated"} <= fetched
    assert "/old" not in fetched and "/sitemap.xml" not in fetched  # --sitemaps off
    events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
    read = [e for e in events if e["event"] == "sitemap"]
    assert len(read) == 1 and read[0]["urls"] == 2 and read[0]["older"] == 1


# -- --max-links-per-page ---------------------------------------------------------------------


@pytest.mark.parametrize(("option", "captured"), [("0", 13), ("4", 5)])
async def test_max_links_per_page_zero_means_no_limit(
    tmp_path: Path, site: SiteServer, option: str, captured: int
) -> None:
    """``0`` means no limit, as for every other limit (it was refused: "must be at least 1")."""
    links = [f"/p/{i}" for i in range(12)]
    site.add_page("/", "".join(f'<a href="{link}">{link}</a>' for link in links))
    for link in links:
        site.add_page(link, "<p>leaf</p>")
    process = await asyncio.create_subprocess_exec(  # the site answers from this loop
        sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(tmp_path / "o"),
        "--max-links-per-page", option, "--robots", "ignore", "--sitemaps", "off",
        "--per-host-delay", "0", "--frontier", "memory", "--quiet", "--progress", "off",
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    assert len(responses(tmp_path / "o" / "warcs")) == captured
