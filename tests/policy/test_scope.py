"""Scope rules, crawl budgets and trap defences.

:class:`archiver.policy.scope.Scope` is pure, so most cases are decided on items directly; the
budgets the crawler enforces (pages, bytes, duration, per-host URLs, depth, exclusions from a
file) are checked with small crawls of a local site.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web

from archiver.commands import verify
from archiver.models import CrawlItem, Hop, SkipReason
from archiver.policy.scope import Scope, ScopeRules, url_pattern
from tests.conftest import run_crawl
from tests.support.site import SiteServer
from tests.support.warcs import responses

SEED = "http://www.example.org/docs/index.html"


def scope(mode: str = "host", **rules: object) -> Scope:
    return Scope(ScopeRules(seeds=(SEED,), mode=mode, **rules))  # type: ignore[arg-type]


def link(url: str, depth: int = 1, via: str = SEED, hops: str = "L") -> CrawlItem:
    return CrawlItem(url=url, depth=depth, hops=hops, via=via)


# -- modes --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "url", "in_scope"),
    [
        ("page", SEED, True),
        ("page", "http://www.example.org/docs/other.html", False),
        ("prefix", "http://www.example.org/docs/other.html", True),
        ("prefix", "https://www.example.org/docs/deep/page", True),  # http and https alike
        ("prefix", "http://www.example.org/blog/", False),
        ("prefix", "http://www.example.org/docsearch", False),
        ("host", "http://www.example.org/blog/", True),
        ("host", "http://example.org/", True),  # the www. twin
        ("host", "https://www.example.org:8443/", True),  # any scheme and port of the host
        ("host", "http://sub.example.org/", False),
        ("domain", "http://sub.example.org/", True),
        ("domain", "http://a.b.example.org/x", True),
        ("domain", "http://notexample.org/", False),
        ("domain", "http://example.com/", False),
        ("any", "http://example.com/", True),
    ],
)
def test_modes(mode: str, url: str, in_scope: bool) -> None:
    expected = None if in_scope else SkipReason.SCOPE
    assert scope(mode).check(link(url)) is expected


def test_seeds_are_always_in_scope() -> None:
    s = scope("page")
    assert s.check(CrawlItem(url=SEED)) is None


def test_requisites_of_in_scope_pages_on_any_host() -> None:
    image = link("http://cdn.example.net/a.png", hops="L" + Hop.EMBED)
    assert scope("host").check(image) is None
    assert scope("page").check(link("http://cdn.example.net/a.png", hops=Hop.EMBED)) is None
    assert scope("host", page_requisites=False).check(image) is SkipReason.SCOPE
    font = link("http://cdn.example.net/f.woff", hops="LEEE")  # page -> css -> css -> font
    assert scope("host").check(font) is None
    too_deep = link("http://cdn.example.net/x.png", hops="LEEEE")
    assert scope("host").check(too_deep) is SkipReason.SCOPE
    # a module graph on the site's own host goes deeper: in scope where a page would be
    module = link("http://www.example.org/assets/chunk-5.js", hops="LEEEEEE")
    assert scope("host").check(module) is None
    assert scope("host", page_requisites=False).check(module) is SkipReason.SCOPE
    via_redirect = link("http://cdn2.example.net/a.png", hops="LERR")
    assert scope("host").check(via_redirect) is None


def test_a_seed_that_redirects_brings_its_new_host_into_scope() -> None:
    s = scope("host")
    moved = CrawlItem(url="https://example.net/", hops=Hop.REDIRECT, via=SEED)
    assert s.check(moved) is None
    s.accepted(moved)
    assert s.check(link("https://example.net/page", via="https://example.net/")) is None
    # a page's redirect elsewhere does not widen the scope
    elsewhere = link("https://other.example/", hops="LR")
    assert s.check(elsewhere) is SkipReason.SCOPE


def test_include_and_exclude() -> None:
    s = scope("host", include=(r"^https?://partner\.example/",), exclude=(r"/private/", r"\.pdf$"))
    assert s.check(link("http://partner.example/page")) is None
    assert s.check(link("http://other.example/page")) is SkipReason.SCOPE
    assert s.check(link("http://www.example.org/private/x")) is SkipReason.EXCLUDED
    assert s.check(link("http://www.example.org/file.pdf")) is SkipReason.EXCLUDED
    assert s.check(link("http://partner.example/private/x")) is SkipReason.EXCLUDED
    assert s.check(link("http://www.example.org/file.pdf?x")) is None


def test_max_depth_counts_link_hops_only() -> None:
    s = scope("host", max_depth=2)
    assert s.check(link("http://www.example.org/2", depth=2)) is None
    assert s.check(link("http://www.example.org/3", depth=3)) is SkipReason.DEPTH
    image = link("http://www.example.org/3.png", depth=3, hops="LLLE")
    assert s.check(image) is None  # a requisite of a page in scope is kept


def test_per_host_url_budget() -> None:
    s = scope("any", max_urls_per_host=3)
    for i in range(3):
        item = link(f"http://a.example/{i}")
        assert s.check(item) is None
        s.accepted(item)
    assert s.check(link("http://a.example/3")) is SkipReason.HOST_BUDGET
    assert s.check(link("http://b.example/0")) is None  # per host
    assert s.check(link("http://a.example:8080/0")) is None  # host:port is the key


# -- traps --------------------------------------------------------------------------------------


def test_overlong_url() -> None:
    s = scope("any")
    assert s.check(link("http://a.example/" + "x" * 2031)) is None  # 2,048 characters
    assert s.check(link("http://a.example/" + "x" * 2032)) is SkipReason.URL_TOO_LONG
    assert s.check(link("http://a.example/" + "x" * 10_000)) is SkipReason.URL_TOO_LONG
    assert scope("any", max_url_length=100).check(link("http://a.example/" + "x" * 90)) == (
        SkipReason.URL_TOO_LONG
    )


@pytest.mark.parametrize(
    ("path", "kind", "pattern"),
    [
        ("/a/a/a/a", "repeated-path-segments", "/a repeated"),
        ("/x/a/b/a/b/a/b/a/b", "repeated-path-segments", "/a/b repeated"),
        ("/a/b/c/a/b/c/a/b/c/a/b/c/", "repeated-path-segments", "/a/b/c repeated"),
        ("/" + "/".join(str(i) for i in range(33)), "too-many-path-segments", "more than 32"),
        ("/s?a=1&a=2&a=3&a=4", "repeated-query-key", "query key 'a' repeated"),
    ],
)
def test_trap_shapes(path: str, kind: str, pattern: str) -> None:
    s = scope("any")
    url = "http://a.example" + path
    assert s.check(link(url)) is SkipReason.TRAP
    (report,) = s.trap_summary()
    assert report["kind"] == kind
    assert str(report["pattern"]).startswith(pattern)
    assert report["example"] == url


@pytest.mark.parametrize(
    "path",
    [
        "/a/b/a/b/a/b",  # three repeats: at the limit, not over it
        "/a/a/a",
        "/" + "/".join(str(i) for i in range(32)),
        "/s?a=1&a=2&a=3&b=1",
        "/2024/01/01/01/",  # numbers repeat, but not three-in-a-row four times
    ],
)
def test_not_traps(path: str) -> None:
    s = scope("any")
    assert s.check(link("http://a.example" + path)) is None
    assert s.trap_summary() == []


def test_the_issue_example_with_a_tighter_limit() -> None:
    assert scope("any", max_segment_repeats=2).check(link("http://a.example/a/b/a/b/a/b")) == (
        SkipReason.TRAP
    )


def test_an_endless_calendar_is_stopped_and_reported() -> None:
    """``/cal?month=N`` links to ``N+1``: the same pattern, one hop deeper each time."""
    s = scope("any", max_pattern_depth=10)
    via = "http://a.example/cal?month=0"
    s.accepted(CrawlItem(url=via))  # the seed, at depth 0
    stopped_at = None
    for month in range(1, 100):
        item = link(f"http://a.example/cal?month={month}", depth=month, via=via)
        if s.check(item) is not None:
            stopped_at = month
            break
        s.accepted(item)
        via = item.url
    assert stopped_at == 11
    (report,) = s.trap_summary()
    assert report == {
        "kind": "endless-numbered-urls",
        "pattern": "http://a.example/cal?month=N",
        "example": "http://a.example/cal?month=11",
        "skipped": 1,
    }


def test_a_large_catalogue_is_not_a_calendar() -> None:
    """Thousands of numbered URLs linked from listing pages a few hops deep are fine."""
    s = scope("any", max_pattern_depth=10)
    for page in range(1, 20):
        for product in range(200):
            item = link(f"http://a.example/product/{page * 1000 + product}", depth=page % 3 + 1)
            assert s.check(item) is None
            s.accepted(item)
    assert s.trap_summary() == []


def test_url_pattern() -> None:
    assert url_pattern("http://a.example/2024/05/cal?d=17") == "http://a.example/N/N/cal?d=N"


# -- budgets and exclusions enforced by the crawler ---------------------------------------------


def mesh(site: SiteServer, pages: int, *, size: int = 0) -> None:
    site.add_page("/", "".join(f'<a href="/p{i}">{i}</a>' for i in range(pages)))
    for i in range(pages):
        site.add_page(f"/p{i}", f'<a href="/p{(i + 1) % pages}">next</a>' + "x" * size)


def skip_reasons(out: Path) -> dict[str, str]:
    events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
    return {e["url"]: e["reason"] for e in events if e["event"] == "skip"}


async def test_max_pages(site: SiteServer, tmp_path: Path) -> None:
    mesh(site, 30)
    result = await run_crawl(tmp_path / "out", site.url("/"), max_pages=5, workers=4)
    assert result.status == "limit"
    assert "max-pages" in (result.reason or "")
    assert result.summary["pages"] == 5
    assert len(site.counters.hits) == 5


async def test_max_bytes(site: SiteServer, tmp_path: Path) -> None:
    mesh(site, 30, size=10_000)
    result = await run_crawl(
        tmp_path / "out", site.url("/"), max_bytes=30_000, workers=1, per_host_concurrency=1
    )
    assert result.status == "limit"
    assert "max-bytes" in (result.reason or "")
    assert 30_000 <= result.summary["bytes_received"] < 50_000
    assert len(site.counters.hits) < 10


async def test_max_duration(site: SiteServer, tmp_path: Path) -> None:
    """A site that takes 100 s to crawl (1,000 pages at 0.1 s, one at a time) ends at the
    0.5 s limit: the limit is what stopped it, at no earlier than 0.5 s. How soon after is not
    asserted (a loaded machine decides that); the hang guard only fails a crawl that ignored
    the limit."""
    pages = 1000
    mesh(site, pages)
    site.delay = 0.1
    async with asyncio.timeout(60):
        result = await run_crawl(
            tmp_path / "out", site.url("/"), max_duration=0.5, workers=1, per_host_concurrency=1
        )
    assert result.status == "limit"
    assert result.reason == "max-duration of 0.5 s reached"
    assert result.summary["duration_seconds"] >= 0.5
    assert len(site.counters.hits) < pages + 1  # it did not get to the end


@pytest.mark.parametrize(
    ("seed_host", "twin"),
    [("example.test", "www.example.test"), ("www.example.test", "example.test")],
)
async def test_host_scope_covers_the_www_twin_of_a_seed_host(
    site: SiteServer, tmp_path: Path, seed_host: str, twin: str
) -> None:
    """README, --scope host: "the seeds' hosts and their www. twins". Three names resolve
    (--resolve) to the one local server: the seed's host, its www. twin, and a sibling
    subdomain. The twin is crawled (its own Host header, its own records); the sibling is
    not (that is --scope domain)."""
    port = site.port
    names = {"seed": seed_host, "twin": twin, "sibling": "shop.example.test"}

    def url(name: str, path: str) -> str:
        return f"http://{names[name]}:{port}{path}"

    async def by_host(request: web.Request) -> web.StreamResponse:
        served.append((request.host, request.path))
        if request.path == "/":
            links = (url("twin", "/twin-page"), url("sibling", "/sibling-page"), "/seed-page")
            anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)
            return web.Response(
                text=f"<html><body>{anchors}</body></html>", content_type="text/html"
            )
        return web.Response(text=f"{request.host}{request.path}", content_type="text/html")

    served: list[tuple[str, str]] = []
    for path in ("/", "/twin-page", "/sibling-page", "/seed-page"):
        site.add_handler(path, by_host)
    out = tmp_path / "out"
    result = await run_crawl(
        out,
        url("seed", "/"),
        scope="host",
        resolve=tuple((name, "127.0.0.1") for name in names.values()),
    )
    assert result.status == "completed"
    assert sorted(served) == sorted(
        [
            (f"{seed_host}:{port}", "/"),
            (f"{seed_host}:{port}", "/seed-page"),
            (f"{twin}:{port}", "/twin-page"),
        ]
    )
    captured = {r.uri for r in responses(out / "warcs")}
    assert captured == {url("seed", "/"), url("seed", "/seed-page"), url("twin", "/twin-page")}
    assert skip_reasons(out) == {url("sibling", "/sibling-page"): "scope"}
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


async def test_per_host_budget_across_pages(site: SiteServer, tmp_path: Path) -> None:
    site.add_page("/", '<a href="/a">a</a>')
    for name, nxt in (("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a")):
        site.add_page(f"/{name}", f'<a href="/{nxt}">{nxt}</a><a href="/">home</a>')
    out = tmp_path / "out"
    result = await run_crawl(out, site.url("/"), max_urls_per_host=4)
    assert result.status == "completed"
    assert sorted(h.path for h in site.counters.hits) == ["/", "/a", "/b", "/c"]
    assert skip_reasons(out)[site.url("/d")] == "host-budget"


async def test_per_host_budget_holds_within_one_page(site: SiteServer, tmp_path: Path) -> None:
    site.add_page("/", "".join(f'<a href="/w{i}">w</a>' for i in range(9)))
    for i in range(9):
        site.add_page(f"/w{i}", '<a href="/">home</a>')
    out = tmp_path / "out"
    result = await run_crawl(out, site.url("/"), max_urls_per_host=4)
    assert len(site.counters.hits) == 4
    assert result.summary["skips"]["host-budget"] >= 6


async def test_depth_is_logged(site: SiteServer, tmp_path: Path) -> None:
    site.add_page("/", '<a href="/d1">1</a>')
    site.add_page("/d1", '<a href="/d2">2</a>')
    site.add_page("/d2", "deep")
    out = tmp_path / "out"
    await run_crawl(out, site.url("/"), max_depth=1)
    assert site.counters.count("/d2") == 0
    assert skip_reasons(out) == {site.url("/d2"): "depth"}


async def test_exclusions_from_a_file(site: SiteServer, tmp_path: Path) -> None:
    site.add_page("/", '<a href="/keep">k</a><a href="/drop/a">d</a><a href="/file.pdf">p</a>')
    for path in ("/keep", "/drop/a", "/file.pdf"):
        site.add_page(path, "leaf")
    exclusions = tmp_path / "exclude.txt"
    exclusions.write_text("# comment lines and blank lines are ignored\n\n/drop/\n\\.pdf$\n")
    out = tmp_path / "out"
    result = await run_crawl(out, site.url("/"), exclude_file=exclusions, exclude=("/none",))
    assert result.status == "completed"
    assert sorted(h.path for h in site.counters.hits) == ["/", "/keep"]
    assert skip_reasons(out) == {
        site.url("/drop/a"): "excluded",
        site.url("/file.pdf"): "excluded",
    }
