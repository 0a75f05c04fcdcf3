"""robots.txt (RFC 9309): parsing and matching, group selection, status handling, caching.

The parsing tests run :func:`archiver.policy.robots.parse_robots` on literal files. The fetching
tests run :class:`archiver.policy.robots.Robots` against local servers through the real fetcher (the
crawler passes a fetch function that also archives; here it records the URLs), with an injected
clock for the cache and the retry of an unreachable file. End-to-end crawls are in
``test_polite_crawl.py``.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from archiver.errors import FetchError
from archiver.fetch.fetcher import FetchConfig, Fetcher
from archiver.models import CrawlItem, Exchange, Hop
from archiver.policy.netguard import AddressPolicy
from archiver.policy.robots import (
    CACHE_TTL,
    MAX_ROBOTS_BYTES,
    RETRY_UNREACHABLE,
    Robots,
    Verdict,
    parse_robots,
    product_token,
    select_groups,
)
from tests.support.raw import RawServer
from tests.support.site import SiteServer

H = "http://h.test"


def allowed(robots_txt: str, path: str, agent: str = "archiver") -> bool:
    rules = parse_robots(robots_txt.encode(), agent, url=H + "/robots.txt")
    return rules.allowed(H + path)


# -- matching (RFC 9309 section 2.2.2) --------------------------------------------------------


@pytest.mark.parametrize(
    ("robots_txt", "path", "expected"),
    [
        # the longest (most octets) match wins, whichever order the rules are in
        ("User-agent: *\nDisallow: /a\nAllow: /a/b\n", "/a/b/c", True),
        ("User-agent: *\nAllow: /a/b\nDisallow: /a\n", "/a/b/c", True),
        ("User-agent: *\nAllow: /a\nDisallow: /a/b\n", "/a/b/c", False),
        ("User-agent: *\nAllow: /a\nDisallow: /a/b\n", "/a/c", True),
        # equally specific: Allow wins (section 2.2.2, "SHOULD use the least restrictive")
        ("User-agent: *\nDisallow: /page\nAllow: /page\n", "/page", True),
        ("User-agent: *\nAllow: /page\nDisallow: /page\n", "/page", True),
        # '*' matches any sequence, '$' anchors the end
        ("User-agent: *\nDisallow: /*.php\n", "/x/y.php?a=1", False),
        ("User-agent: *\nDisallow: /*.php$\n", "/x/y.php?a=1", True),
        ("User-agent: *\nDisallow: /*.php$\n", "/x/y.php", False),
        ("User-agent: *\nDisallow: /*/private/*\n", "/a/private/b", False),
        ("User-agent: *\nDisallow: /*?sort=\n", "/list?sort=asc", False),
        ("User-agent: *\nDisallow: /*?sort=\n", "/list?page=2", True),
        ("User-agent: *\nDisallow: /\nAllow: /$\n", "/", True),
        ("User-agent: *\nDisallow: /\nAllow: /$\n", "/x", False),
        # a '$' inside a pattern is an ordinary character
        ("User-agent: *\nDisallow: /a$b\n", "/a$b", False),
        # percent-encoding is compared normalised on both sides
        ("User-agent: *\nDisallow: /caf%C3%A9\n", "/caf%c3%a9", False),
        ("User-agent: *\nDisallow: /café\n", "/caf%C3%A9", False),
        # an empty Disallow allows everything; /robots.txt is always allowed
        ("User-agent: *\nDisallow:\n", "/x", True),
        ("User-agent: *\nDisallow: /\n", "/robots.txt", True),
        # comments, white space, CRLF, case of the directive names
        ("user-AGENT : *   # all\r\nDISALLOW:   /x  # no\r\n", "/x/1", False),
        # lines that do not parse are skipped; the rules that parse are used (section 2.2)
        ("User-agent: *\n<html>\nnonsense line\nDisallow: /x\n", "/x", False),
        # a byte-order mark does not hide the first line
        ("\ufeffUser-agent: *\nDisallow: /x\n", "/x", False),
    ],
)
def test_matching(robots_txt: str, path: str, expected: bool) -> None:
    assert allowed(robots_txt, path) is expected


# -- group selection (RFC 9309 section 2.2.1) -------------------------------------------------


@pytest.mark.parametrize(
    ("robots_txt", "expected"),
    [
        ("User-agent: archiver\nDisallow: /\n", False),
        ("User-agent: ARCHIVER\nDisallow: /\n", False),  # case-insensitive
        ("User-agent: archiver/1.0\nDisallow: /\n", False),  # product token extracted
        ("User-agent: arch\nDisallow: /\n", True),  # a prefix of our token is another robot
        ("User-agent: archiverbot\nDisallow: /\n", True),  # so is a longer token
        ("User-agent: otherbot\nDisallow: /\n", True),
        ("User-agent: *\nDisallow: /\n", False),
        # a specific group does not inherit the '*' group's rules
        ("User-agent: *\nDisallow: /\n\nUser-agent: archiver\nDisallow: /private\n", True),
        # groups for the same agent are combined
        (
            "User-agent: archiver\nDisallow: /a\n\nUser-agent: other\nDisallow: /\n\n"
            "User-agent: archiver\nDisallow: /x\n",
            False,
        ),
        # several user-agent lines start one group
        ("User-agent: other\nUser-agent: archiver\nDisallow: /x\n", False),
    ],
)
def test_group_selection(robots_txt: str, expected: bool) -> None:
    assert allowed(robots_txt, "/x") is expected


def test_product_token() -> None:
    assert product_token("archiver") == "archiver"
    assert product_token("Archiver-Bot/2.0 (+https://x)") == "Archiver-Bot"
    with pytest.raises(ValueError, match="product token"):
        product_token("/1.0")


def test_select_groups_rewrites_user_agent_lines_and_moves_what_would_split_a_group() -> None:
    text = "User-agent: arch # c\nDisallow: /a # keep\nuser agent archiver\n* \nUser-agent: * x"
    assert select_groups(text, "Archiver").splitlines() == [
        "User-agent: ~",
        "Disallow: /a # keep",
        "User-agent: archiver",
        "User-agent: *",
        "* ",  # not a group member: after the group's last User-agent line
    ]


# -- groups (RFC 9309 section 2.2.4: other records do not interfere with a group) --------------


@pytest.mark.parametrize(
    ("robots_txt", "path", "expected"),
    [
        # a line that is no group member between two User-agent lines does not split the group
        ("User-agent: archiver\nCrawl-delay: 5\nUser-agent: other\nDisallow: /p\n", "/p", False),
        ("User-agent: archiver\nFoo: bar\nUser-agent: other\nDisallow: /p\n", "/p", False),
        ("User-agent: archiver\nSitemap: /s.xml\nUser-agent: *\nDisallow: /p\n", "/p", False),
        ("User-agent: archiver\nHost: h.test\nUser-agent: x\nDisallow: /p\n", "/p", False),
        ("User-agent: a\nX: 1\nUser-agent: archiver\nY: 2\nDisallow: /p\n", "/p", False),
        # comments and empty lines do not either (section 2.2: "startgroupline / emptyline")
        ("User-agent: archiver\nX: 1\n# c\n\nUser-agent: *\nDisallow: /p\n", "/p", False),
        ("User-agent: archiver\n# note\n\nUser-agent: other\nDisallow: /p\n", "/p", False),
        # neighbours: a group that has a rule ends at the next User-agent line
        ("User-agent: archiver\nDisallow: /q\nUser-agent: other\nDisallow: /p\n", "/p", True),
        ("User-agent: archiver\nDisallow:\nUser-agent: other\nDisallow: /p\n", "/p", True),
        (
            "User-agent: archiver\nDisallow: /q\nCrawl-delay: 1\nUser-agent: o\nDisallow: /p",
            "/p",
            True,
        ),
        # and a record that is not ours stays out of our group
        ("User-agent: other\nCrawl-delay: 5\nUser-agent: another\nDisallow: /p\n", "/p", True),
    ],
)
def test_other_records_do_not_split_a_group(robots_txt: str, path: str, expected: bool) -> None:
    assert allowed(robots_txt, path) is expected


def test_a_crawl_delay_between_user_agent_lines_applies_to_the_whole_group() -> None:
    text = b"User-agent: other\nCrawl-delay: 7\nUser-agent: archiver\nDisallow: /p\n"
    assert parse_robots(text, "archiver", url=H + "/robots.txt").crawl_delay == 7.0


#: RFC 9309 section 5.1, "Simple Example", as printed (its last line included).
RFC_5_1 = """User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        ("otherbot", "/publications/a", True),
        ("otherbot", "/example/a", False),
        ("otherbot", "/a/b.gif", False),
        ("otherbot", "/a/b.png", True),
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/publications/a", False),
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("bazbot", "/example/a.gif", True),
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/a/b.gif", True),
    ],
)
def test_rfc_9309_section_5_1(agent: str, path: str, expected: bool) -> None:
    assert allowed(RFC_5_1, path, agent) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/example/page/", True),
        ("/example/page/x.html", True),
        ("/example/page/disallowed.gif", False),
    ],
)
def test_rfc_9309_section_5_2_longest_match(path: str, expected: bool) -> None:
    text = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    assert allowed(text, path, "foobot") is expected


def test_crawl_delay_and_sitemaps() -> None:
    rules = parse_robots(
        b"Sitemap: https://h.test/sitemap_index.xml\nSitemap: /relative.xml\n"
        b"Sitemap: ftp://h.test/no.xml\n"
        b"User-agent: *\nCrawl-delay: 9\n\nUser-agent: archiver\nCrawl-delay: 2.5\n",
        "archiver",
        url=H + "/robots.txt",
    )
    assert rules.crawl_delay == 2.5
    assert rules.sitemaps == ("https://h.test/sitemap_index.xml", "http://h.test/relative.xml")


def test_a_600_kib_file_is_read_to_the_end() -> None:
    """RFC 9309 section 2.5: at least 500 KiB must be parsed; a rule near the end counts."""
    filler = ("# " + "x" * 1000 + "\n") * 615
    body = f"User-agent: *\nAllow: /\n{filler}Disallow: /secret\n# end\n".encode()
    assert len(body) > 600 * 1024
    assert body.index(b"Disallow: /secret") > 600 * 1000
    rules = parse_robots(body, "archiver", url=H + "/robots.txt")
    assert not rules.truncated
    assert not rules.allowed(H + "/secret/x")
    assert rules.allowed(H + "/public")


def test_past_the_parse_limit_the_rest_is_ignored_at_a_line_boundary() -> None:
    head = b"User-agent: *\nDisallow: /first\n"
    body = head + b"Disallow: /second\n"
    rules = parse_robots(body, "archiver", url=H + "/robots.txt", max_bytes=len(head) + 5)
    assert rules.truncated
    assert not rules.allowed(H + "/first")
    assert rules.allowed(H + "/second")  # not half a rule ("Disal"), not the rule
    assert MAX_ROBOTS_BYTES >= 500 * 1024


def test_invalid_utf8_costs_one_line_at_most() -> None:
    body = b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /x\n"
    rules = parse_robots(body, "archiver", url=H + "/robots.txt")
    assert not rules.allowed(H + "/x")


# -- fetching: status handling (RFC 9309 section 2.3.1) ---------------------------------------


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recorder:
    """The crawler's fetch function stand-in: the real fetcher, plus the list of URLs fetched."""

    fetcher: Fetcher
    urls: list[str] = field(default_factory=list)

    async def __call__(self, url: str) -> Exchange:
        self.urls.append(url)
        return await self.fetcher.fetch(url)


@pytest.fixture
async def fetch() -> AsyncIterator[Recorder]:
    config = FetchConfig(connect_timeout=30, read_timeout=30, fetch_timeout=30)  # never reached
    async with Fetcher(config, AddressPolicy(allow_private=True)) as fetcher:
        yield Recorder(fetcher)


def item(url: str, hops: str = "L") -> CrawlItem:
    return CrawlItem(url=url, hops=hops, depth=1)


async def test_2xx_is_parsed_and_obeyed(site: SiteServer, fetch: Recorder) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nDisallow: /private\n", "text/plain")
    robots = Robots()
    assert not await robots.allowed(item(site.url("/private/a")), fetch)
    assert await robots.allowed(item(site.url("/public")), fetch)
    assert fetch.urls == [site.url("/robots.txt")]
    (report,) = robots.take_reports()
    assert (report.verdict, report.status, report.redirects) == (Verdict.PARSED, 200, 0)
    assert robots.take_reports() == []
    stats = robots.statistics()
    assert (stats.fetches, stats.parsed, stats.disallowed, stats.origins) == (1, 1, 1, 1)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 451])
async def test_4xx_allows_everything(site: SiteServer, fetch: Recorder, status: int) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain", status=status)
    robots = Robots()
    assert await robots.allowed(item(site.url("/anything")), fetch)
    assert robots.take_reports()[0].verdict is Verdict.UNAVAILABLE


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_5xx_and_429_disallow_everything(
    site: SiteServer, fetch: Recorder, status: int
) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nAllow: /\n", "text/plain", status=status)
    robots = Robots()
    assert not await robots.allowed(item(site.url("/")), fetch)
    assert not await robots.allowed(item(site.url("/other")), fetch)
    assert await robots.allowed(item(site.url("/robots.txt")), fetch)  # section 2.2.2
    assert fetch.urls == [site.url("/robots.txt")]
    (report,) = robots.take_reports()
    assert (report.verdict, report.status, report.error) == (
        Verdict.UNREACHABLE,
        status,
        f"HTTP {status}",
    )


async def test_unreachable_is_retried_after_the_backoff(site: SiteServer, fetch: Recorder) -> None:
    state = {"status": 503}

    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(text="User-agent: *\nDisallow: /x\n", status=state["status"])

    site.add_handler("/robots.txt", handler)
    clock = Clock()
    robots = Robots(clock=clock)
    assert not await robots.allowed(item(site.url("/a")), fetch)
    clock.now += RETRY_UNREACHABLE - 1
    assert not await robots.allowed(item(site.url("/a")), fetch)
    assert site.counters.count("/robots.txt") == 1
    state["status"] = 200
    clock.now += 1
    assert await robots.allowed(item(site.url("/a")), fetch)
    assert not await robots.allowed(item(site.url("/x")), fetch)
    assert site.counters.count("/robots.txt") == 2


async def test_network_errors_disallow_everything(raw_server: RawServer, fetch: Recorder) -> None:
    async def hang_up(*_: object) -> bool:
        return False  # close the connection without a response

    raw_server.add_handler("/robots.txt", hang_up)
    robots = Robots()
    assert not await robots.allowed(item(raw_server.url("/page")), fetch)
    (report,) = robots.take_reports()
    assert report.verdict is Verdict.UNREACHABLE
    assert report.status is None and report.error


async def test_a_timeout_disallows_everything(raw_server: RawServer) -> None:
    release = asyncio.Event()

    async def stall(*_: object) -> bool:
        await release.wait()
        return False

    raw_server.add_handler("/robots.txt", stall)
    config = FetchConfig(connect_timeout=1, read_timeout=0.2, fetch_timeout=0.2)
    try:
        async with Fetcher(config, AddressPolicy(allow_private=True)) as fetcher:
            robots = Robots()
            assert not await robots.allowed(item(raw_server.url("/page")), fetcher.fetch)
            assert robots.take_reports()[0].verdict is Verdict.UNREACHABLE
    finally:
        release.set()


async def test_a_body_cut_short_is_unreachable(raw_server: RawServer, fetch: Recorder) -> None:
    raw_server.add(
        "/robots.txt",
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nUser-agent: *\nAllow: /\n",
        close=True,
    )
    robots = Robots()
    assert not await robots.allowed(item(raw_server.url("/page")), fetch)
    assert "cut short" in (robots.take_reports()[0].error or "")


async def test_an_earlier_copy_stays_in_force_while_unreachable(
    site: SiteServer, fetch: Recorder
) -> None:
    """Section 2.4: past 24 h a cached copy may be used while the file is unreachable."""
    state = {"status": 200}

    async def handler(_: web.Request) -> web.StreamResponse:
        return web.Response(text="User-agent: *\nDisallow: /x\n", status=state["status"])

    site.add_handler("/robots.txt", handler)
    clock = Clock()
    robots = Robots(clock=clock)
    assert await robots.allowed(item(site.url("/a")), fetch)
    state["status"] = 500
    clock.now += CACHE_TTL + 1
    assert await robots.allowed(item(site.url("/a")), fetch)  # not a complete disallow
    assert not await robots.allowed(item(site.url("/x")), fetch)
    reports = robots.take_reports()
    assert [r.verdict for r in reports] == [Verdict.PARSED, Verdict.UNREACHABLE]
    assert reports[1].kept_cached_copy
    assert site.counters.count("/robots.txt") == 2


# -- redirects (section 2.3.1.2) --------------------------------------------------------------


async def test_five_redirects_are_followed_and_each_hop_fetched(
    site: SiteServer, fetch: Recorder
) -> None:
    site.add_redirect("/robots.txt", "/r1", 301)
    for i in range(1, 5):
        site.add_redirect(f"/r{i}", f"/r{i + 1}", 302)
    site.add_file("/r5", b"User-agent: *\nDisallow: /private\n", "text/plain")
    robots = Robots()
    assert not await robots.allowed(item(site.url("/private")), fetch)
    assert fetch.urls == [site.url("/robots.txt")] + [site.url(f"/r{i}") for i in range(1, 6)]
    (report,) = robots.take_reports()
    assert (report.verdict, report.redirects, report.url) == (
        Verdict.PARSED,
        5,
        site.url("/robots.txt"),
    )


async def test_a_sixth_redirect_makes_the_file_unavailable(
    site: SiteServer, fetch: Recorder
) -> None:
    site.add_redirect("/robots.txt", "/r1", 301)
    for i in range(1, 6):
        site.add_redirect(f"/r{i}", f"/r{i + 1}", 302)
    site.add_file("/r6", b"User-agent: *\nDisallow: /\n", "text/plain")
    robots = Robots()
    assert await robots.allowed(item(site.url("/private")), fetch)
    assert len(fetch.urls) == 6
    assert site.counters.count("/r6") == 0
    assert robots.take_reports()[0].error == "too many redirects"


async def test_a_redirect_to_another_host_is_followed(fetch: Recorder) -> None:
    async with SiteServer() as site, SiteServer("127.0.0.2") as other:
        site.add_redirect("/robots.txt", other.url("/shared-robots.txt"))
        other.add_file("/shared-robots.txt", b"User-agent: *\nDisallow: /no\n", "text/plain")
        robots = Robots()
        assert not await robots.allowed(item(site.url("/no")), fetch)
        assert await robots.allowed(item(site.url("/yes")), fetch)
        # the rules are the first origin's: the other host has its own robots.txt
        assert robots.cached(other.url("/no")) is None


async def test_a_redirect_loop_or_a_bad_location_is_unavailable(
    site: SiteServer, fetch: Recorder
) -> None:
    site.add_redirect("/robots.txt", "/loop", 302)
    site.add_redirect("/loop", "/robots.txt", 302)
    robots = Robots()
    assert await robots.allowed(item(site.url("/x")), fetch)
    assert robots.take_reports()[0].error == "redirect loop"
    async with SiteServer() as other:
        other.add_redirect("/robots.txt", "ftp://elsewhere/robots.txt", 301)
        assert await robots.allowed(item(other.url("/x")), fetch)
        assert robots.take_reports()[0].verdict is Verdict.UNAVAILABLE


# -- caching, concurrency, options --------------------------------------------------------------


async def test_fetched_once_per_origin_within_24_hours(site: SiteServer, fetch: Recorder) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nDisallow: /x\n", "text/plain")
    clock = Clock()
    robots = Robots(clock=clock)
    for path in ("/a", "/b", "/x", "/c"):
        await robots.allowed(item(site.url(path)), fetch)
    clock.now += CACHE_TTL - 1
    await robots.allowed(item(site.url("/d")), fetch)
    assert site.counters.count("/robots.txt") == 1
    clock.now += 1
    await robots.allowed(item(site.url("/e")), fetch)
    assert site.counters.count("/robots.txt") == 2


async def test_each_origin_has_its_own_file(fetch: Recorder) -> None:
    async with SiteServer() as a, SiteServer() as b:
        a.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain")
        robots = Robots()
        assert not await robots.allowed(item(a.url("/p")), fetch)
        assert await robots.allowed(item(b.url("/p")), fetch)  # another port, another origin
        assert robots.statistics().origins == 2


async def test_concurrent_callers_share_one_fetch(site: SiteServer, fetch: Recorder) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(_: web.Request) -> web.StreamResponse:
        started.set()
        await release.wait()
        return web.Response(text="User-agent: *\nDisallow: /x\n")

    site.add_handler("/robots.txt", slow)
    robots = Robots()
    paths = ["/a", "/x1", "/b", "/x2"] * 4
    tasks = [asyncio.create_task(robots.allowed(item(site.url(p)), fetch)) for p in paths]
    await started.wait()
    for _ in range(5):
        await asyncio.sleep(0)  # let every caller reach the shared future
    release.set()
    results = await asyncio.gather(*tasks)
    assert results == [not p.startswith("/x") for p in paths]
    assert site.counters.count("/robots.txt") == 1
    assert len(robots.take_reports()) == 1


async def test_a_cancelled_fetch_hands_over_to_a_waiter(site: SiteServer, fetch: Recorder) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(_: web.Request) -> web.StreamResponse:
        started.set()
        await release.wait()
        return web.Response(text="User-agent: *\nDisallow: /x\n")

    site.add_handler("/robots.txt", slow)
    robots = Robots()
    first = asyncio.create_task(robots.allowed(item(site.url("/a")), fetch))
    await started.wait()
    second = asyncio.create_task(robots.allowed(item(site.url("/x")), fetch))
    await asyncio.sleep(0)
    first.cancel()
    release.set()
    assert await second is False
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_any_fetch_error_disallows_and_a_bug_propagates(site: SiteServer) -> None:
    async def refused(url: str) -> Exchange:
        raise FetchError("connection refused")

    robots = Robots()
    assert not await robots.allowed(item(site.url("/a")), refused)

    async def buggy(url: str) -> Exchange:
        raise RuntimeError("a bug, not a network error")

    other = Robots()
    with pytest.raises(RuntimeError):
        await other.allowed(item(site.url("/a")), buggy)
    assert other.cached(site.url("/a")) is None  # nothing cached: the next caller fetches
    assert not await other.allowed(item(site.url("/a")), refused)


async def test_ignore_never_fetches(site: SiteServer, fetch: Recorder) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain")
    robots = Robots(obey=False)
    assert await robots.allowed(item(site.url("/x")), fetch)
    assert fetch.urls == []


async def test_requisites_can_be_exempted(site: SiteServer, fetch: Recorder) -> None:
    site.add_file("/robots.txt", b"User-agent: *\nDisallow: /img/\n", "text/plain")
    exempt = Robots(exempt_requisites=True)
    image = item(site.url("/img/a.png"), hops="L" + Hop.EMBED)
    assert await exempt.allowed(image, fetch)
    assert fetch.urls == []  # a requisite-only host costs no robots.txt fetch
    assert not await exempt.allowed(item(site.url("/img/page.html")), fetch)
    strict = Robots()
    assert not await strict.allowed(image, fetch)


async def test_crawl_delay_is_applied_capped(site: SiteServer, fetch: Recorder) -> None:
    site.add_file(
        "/robots.txt", b"User-agent: archiver\nCrawl-delay: 45\nDisallow:\n", "text/plain"
    )
    applied: list[tuple[str, float]] = []
    robots = Robots(max_crawl_delay=30.0, set_host_delay=lambda h, s: applied.append((h, s)))
    assert await robots.allowed(item(site.url("/a")), fetch)
    assert applied == [(f"127.0.0.1:{site.port}", 30.0)]
    assert robots.take_reports()[0].crawl_delay == 30.0


async def test_sitemaps_are_reported_once(site: SiteServer, fetch: Recorder) -> None:
    site.add_file(
        "/robots.txt",
        b"Sitemap: /sitemap_index.xml\nUser-agent: *\nDisallow:\n",
        "text/plain",
    )
    clock = Clock()
    robots = Robots(clock=clock)
    await robots.allowed(item(site.url("/a")), fetch)
    assert robots.take_reports()[0].sitemaps == (site.url("/sitemap_index.xml"),)
    clock.now += CACHE_TTL
    await robots.allowed(item(site.url("/a")), fetch)
    assert robots.take_reports()[0].sitemaps == ()


async def test_gzip_encoded_robots_txt(site: SiteServer, fetch: Recorder) -> None:
    site.add_file(
        "/robots.txt",
        gzip.compress(b"User-agent: *\nDisallow: /x\n"),
        "text/plain",
        headers={"Content-Encoding": "gzip"},
    )
    robots = Robots()
    assert not await robots.allowed(item(site.url("/x")), fetch)
    assert await robots.allowed(item(site.url("/y")), fetch)


async def test_a_blocked_address_is_left_to_the_fetch_guard(site: SiteServer) -> None:
    """The SSRF guard refuses robots.txt as it will refuse the page: the page's own fetch is
    where the refusal is logged (blocked-address), so robots does not turn it into a skip."""
    config = FetchConfig(connect_timeout=30, read_timeout=30, fetch_timeout=30)  # never reached
    async with Fetcher(config, AddressPolicy(allow_private=False)) as fetcher:
        robots = Robots()
        assert await robots.allowed(item(site.url("/x")), fetcher.fetch)
    assert site.counters.hits == []
    (report,) = robots.take_reports()
    assert report.verdict is Verdict.BLOCKED
    assert robots.cached(site.url("/x")) is not None
