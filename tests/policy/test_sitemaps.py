"""Sitemaps: parsing (urlset, sitemapindex, text, gzip) with its limits, XML-bomb refusal, and
the items a fetched sitemap adds to the frontier. End-to-end seeding is in test_polite_crawl.py."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator

import pytest

from archiver.fetch.fetcher import FetchConfig, Fetcher
from archiver.models import CrawlItem, Hop
from archiver.policy.netguard import AddressPolicy
from archiver.policy.sitemaps import (
    MANIFEST,
    MAX_BYTES,
    MAX_URLS,
    SitemapError,
    SitemapPolicy,
    is_sitemap,
    parse_sitemap,
    sitemap_item,
)
from tests.support.site import SiteServer

U = "http://h.test/sitemap.xml"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*locs: str) -> bytes:
    entries = "".join(f"<url><loc>{loc}</loc><lastmod>2024-01-01</lastmod></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{entries}</urlset>'.encode()


def index(*locs: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{entries}</sitemapindex>'.encode()


# -- parsing ------------------------------------------------------------------------------


def test_urlset() -> None:
    body = urlset("http://h.test/a", "http://h.test/b?x=1&amp;y=2", "http://h.test/a", " /rel ")
    sitemap = parse_sitemap(body, U)
    assert sitemap.kind == "urlset"
    assert sitemap.urls == ("http://h.test/a", "http://h.test/b?x=1&y=2", "http://h.test/rel")
    assert not sitemap.truncated


def test_sitemap_index() -> None:
    sitemap = parse_sitemap(index("http://h.test/s1.xml", "http://h.test/s2.xml.gz"), U)
    assert sitemap.kind == "sitemapindex"
    assert sitemap.urls == ("http://h.test/s1.xml", "http://h.test/s2.xml.gz")


def test_extension_locs_are_not_entries() -> None:
    body = (
        f'<urlset {NS} xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        "<url><loc>http://h.test/page</loc><image:image><image:loc>http://h.test/i.png"
        "</image:loc></image:image></url></urlset>"
    ).encode()
    assert parse_sitemap(body, U).urls == ("http://h.test/page",)


def test_no_namespace_and_cdata_and_bom() -> None:
    body = b"\xef\xbb\xbf<urlset><url><loc><![CDATA[http://h.test/c]]></loc></url></urlset>"
    assert parse_sitemap(body, U).urls == ("http://h.test/c",)


def test_unusable_locs_are_counted_not_followed() -> None:
    body = urlset("javascript:alert(1)", "ftp://h.test/f", "http://h.test/ok", "x" * 5000)
    sitemap = parse_sitemap(body, U)
    assert sitemap.urls == ("http://h.test/ok",)
    assert sitemap.skipped == 3  # the 5,000-character loc is over the length limit


def test_gzipped_file_and_gzip_content_encoding() -> None:
    body = urlset("http://h.test/a")
    assert parse_sitemap(gzip.compress(body), U).urls == ("http://h.test/a",)
    assert parse_sitemap(gzip.compress(body), U, content_encoding="gzip").urls == (
        "http://h.test/a",
    )
    # a .xml.gz file that is also sent with Content-Encoding: gzip
    twice = gzip.compress(gzip.compress(body))
    assert parse_sitemap(twice, U, content_encoding="gzip").urls == ("http://h.test/a",)


def test_text_sitemap() -> None:
    body = b"http://h.test/1\r\nhttps://h.test/2\n\n  http://h.test/3  \nnot a url\n"
    sitemap = parse_sitemap(body, U)
    assert sitemap.kind == "text"
    assert sitemap.urls == ("http://h.test/1", "https://h.test/2", "http://h.test/3")
    assert sitemap.skipped == 1


@pytest.mark.parametrize(
    "body",
    [
        b"<html><body>Not found</body></html>",  # a soft-404 page at /sitemap.xml
        b"<urlset><url><loc>http://h.test/a",  # cut before any entry ended
        b'{"json": true}',
        gzip.compress(b"<urlset>", mtime=0)[:-9] + b"garbage!!",  # corrupt gzip
        # found by fuzzing: expat raised LookupError for an encoding Python does not know
        b'<?xml version="1.0" encoding="UTF-6"?><urlset/>',
        # found by fuzzing: expat raised ValueError for a multi-byte codec it cannot use; read
        # through Python's codec, this one's bytes make no XML
        b'<?xml version="1.0" encoding="UTF-32"?><urlset/>',
        b'<?xml version="1.0" encoding="rot13"?><urlset/>',
    ],
)
def test_not_a_sitemap(body: bytes) -> None:
    with pytest.raises(SitemapError):
        parse_sitemap(body, U)


@pytest.mark.parametrize("encoding", ["Shift_JIS", "EUC-JP", "GB2312", "Big5"])
def test_a_multi_byte_encoding_expat_lacks_is_read_through_python_codecs(encoding: str) -> None:
    body = (
        f'<?xml version="1.0" encoding="{encoding}"?>'
        "<urlset><url><loc>http://h.test/\u65e5\u672c</loc></url>"
        "<url><loc>http://h.test/b</loc></url></urlset>"
    ).encode(encoding)
    sitemap = parse_sitemap(body, U)
    assert sitemap.urls == ("http://h.test/%E6%97%A5%E6%9C%AC", "http://h.test/b")
    assert not sitemap.truncated


def test_a_namespace_name_holding_a_space_is_read() -> None:
    # A space is legal in a namespace name; expat refuses a name holding its separator, which
    # the sitemap reader's own parser had as a space (ElementTree, the fuzz oracle, reads it).
    body = b'<urlset xmlns="x y" xmlns:a="p q"><url><loc>http://h.test/a</loc></url></urlset>'
    sitemap = parse_sitemap(body, U)
    assert (sitemap.kind, sitemap.urls) == ("urlset", ("http://h.test/a",))


def test_damaged_xml_keeps_the_entries_before_the_damage() -> None:
    body = urlset("http://h.test/a", "http://h.test/b")[:-20] + b"<<<>>>"
    sitemap = parse_sitemap(body, U)
    assert sitemap.urls == ("http://h.test/a", "http://h.test/b")
    assert sitemap.truncated


def test_at_most_max_urls_are_read() -> None:
    body = urlset(*(f"http://h.test/{i}" for i in range(100)))
    sitemap = parse_sitemap(body, U, max_urls=10)
    assert sitemap.urls == tuple(f"http://h.test/{i}" for i in range(10))
    assert sitemap.truncated
    assert MAX_URLS == 50_000


def gzip_bomb(head: bytes, spaces: int, tail: bytes) -> bytes:
    """A gzip member of ``head``, ``spaces`` spaces and ``tail``, built without the expansion
    ever being in memory."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    chunk = b" " * 1_000_000
    out = [compressor.compress(head)]
    out += [compressor.compress(chunk) for _ in range(spaces // len(chunk))]
    out += [compressor.compress(tail), compressor.flush()]
    return b"".join(out)


def test_a_gzip_bomb_is_inflated_to_the_limit_only() -> None:
    bomb = gzip_bomb(urlset("http://h.test/a")[:-9], 200_000_000, b"</urlset>")
    assert len(bomb) < 250_000  # 200 MB of spaces
    sitemap = parse_sitemap(bomb, U, max_bytes=1_000_000)
    assert sitemap.urls == ("http://h.test/a",)
    assert sitemap.truncated
    assert MAX_BYTES == 50 * 1024 * 1024


@pytest.mark.parametrize(
    "body",
    [
        # billion laughs
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
        b"<urlset><url><loc>http://h.test/&lol3;</loc></url></urlset>",
        # external entity (XXE)
        b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b"<urlset><url><loc>http://h.test/&x;</loc></url></urlset>",
        # external DTD
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "http://127.0.0.1:1/evil.dtd"><urlset/>',
    ],
)
def test_document_type_declarations_are_refused(body: bytes) -> None:
    with pytest.raises(SitemapError, match="document type declarations"):
        parse_sitemap(body, U)


# -- items ------------------------------------------------------------------------------


def test_sitemap_items() -> None:
    seed_map = sitemap_item("http://h.test/sitemap.xml", via="http://h.test/")
    assert (seed_map.hops, seed_map.depth, seed_map.via) == (MANIFEST, 0, "http://h.test/")
    assert is_sitemap(seed_map)
    assert not seed_map.is_seed and not seed_map.is_requisite
    moved = seed_map.child("https://h.test/sitemap.xml", Hop.REDIRECT)
    assert is_sitemap(moved)  # a redirected sitemap is still a sitemap
    nested = sitemap_item("http://h.test/s1.xml", parent=seed_map)
    assert (nested.hops, nested.via) == ("MM", "http://h.test/sitemap.xml")
    page = nested.child("http://h.test/p", Hop.LINK)
    assert not is_sitemap(page)
    assert page.depth == 1


def test_start_items_one_per_origin_and_off() -> None:
    seeds = ("http://h.test/a", "http://h.test/b", "https://h.test/", "http://g.test:8080/x")
    items = SitemapPolicy().start_items(seeds)
    assert [i.url for i in items] == [
        "http://h.test/sitemap.xml",
        "https://h.test/sitemap.xml",
        "http://g.test:8080/sitemap.xml",
    ]
    assert SitemapPolicy(enabled=False).start_items(seeds) == []
    robots = "http://h.test/robots.txt"
    (from_robots,) = SitemapPolicy().from_robots(robots, ("http://h.test/s.xml",))
    assert (from_robots.via, from_robots.hops) == (robots, MANIFEST)
    assert SitemapPolicy(enabled=False).from_robots(robots, ("http://h.test/s.xml",)) == []


@pytest.fixture
async def fetcher() -> AsyncIterator[Fetcher]:
    async with Fetcher(FetchConfig(), AddressPolicy(allow_private=True)) as f:
        yield f


async def test_children_of_a_fetched_index_and_sitemap(site: SiteServer, fetcher: Fetcher) -> None:
    site.add_file("/index.xml", index(site.url("/s1.xml"), site.url("/s2.xml.gz")), "text/xml")
    site.add_file(
        "/s2.xml.gz", gzip.compress(urlset(site.url("/p1"), site.url("/p2"))), "application/gzip"
    )
    policy = SitemapPolicy()
    root = sitemap_item(site.url("/index.xml"), via=site.url("/robots.txt"))
    found = policy.children(root, await fetcher.fetch(root.url))
    assert found.error is None and found.sitemap is not None
    assert [i.url for i in found.items] == [site.url("/s1.xml"), site.url("/s2.xml.gz")]
    assert all(is_sitemap(i) for i in found.items)
    second = found.items[1]
    pages = policy.children(second, await fetcher.fetch(second.url))
    assert [(i.url, i.hops, i.depth) for i in pages.items] == [
        (site.url("/p1"), "MML", 1),
        (site.url("/p2"), "MML", 1),
    ]


async def test_children_of_errors_and_soft_404s(site: SiteServer, fetcher: Fetcher) -> None:
    site.add_page("/sitemap.xml", "<html><body>Welcome!</body></html>")
    policy = SitemapPolicy()
    soft = sitemap_item(site.url("/sitemap.xml"), via=site.url("/"))
    result = policy.children(soft, await fetcher.fetch(soft.url))
    assert result.items == () and "not a sitemap" in (result.error or "")
    missing = sitemap_item(site.url("/none.xml"), via=site.url("/"))
    assert policy.children(missing, await fetcher.fetch(missing.url)).items == ()


async def test_nested_indexes_stop_at_the_limit(site: SiteServer, fetcher: Fetcher) -> None:
    site.add_file("/loop.xml", index(site.url("/loop.xml"), site.url("/other.xml")), "text/xml")
    policy = SitemapPolicy(max_nesting=2)
    item = sitemap_item(site.url("/loop.xml"), via=None)
    exchange = await fetcher.fetch(item.url)
    assert len(policy.children(item, exchange).items) == 2
    deep = CrawlItem(url=item.url, hops="MM", via=item.url)
    result = policy.children(deep, exchange)
    assert result.items == () and "nested" in (result.error or "")
