"""End to end: real crawls of local sites, politely.

Per-host concurrency and spacing under 64 workers, 429 + Retry-After, a failing host paused, a
slow host not holding workers up; robots.txt obeyed (archived, skips logged with reason
``robots``) in its status cases; traps ending within budgets; sitemaps seeding the crawl.
The SSRF matrix is in ``test_ssrf.py`` (it uses :func:`crawl` from here).

Every assertion about what was requested uses the servers' own hit lists and timestamps.
Several local hosts are 127.0.0.2, 127.0.0.3, ... (all loopback on Linux); each is a seed, so
the SSRF guard allows it without ``--allow-private``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web

from archiver.commands.exits import exit_code
from archiver.run.crawler import Crawler, CrawlResult
from tests.conftest import fast_settings
from tests.support.raw import RawServer
from tests.support.site import Hit, SiteServer
from tests.support.spacing import assert_spaced
from tests.support.warcs import read_records, responses

# Server-side timestamps of requests spaced by the gate differ from the gate's own start times by
# the connection and scheduling latency of each request (same event loop, shared CPU).
TOLERANCE = 0.1
#: a wait that only ends this way when the crawler is broken (it would otherwise hang)
HANG_GUARD = 60.0


async def crawl(output: Path, *seeds: str, **overrides: Any) -> CrawlResult:
    """Run a crawl in-process with the test suite's fast settings (robots ignored, sitemaps
    off, no delay) unless ``overrides`` say otherwise."""
    return await Crawler(fast_settings(output, *seeds, **overrides)).run()


def log_events(output: Path, event: str | None = None) -> list[dict[str, Any]]:
    lines = (output / "crawl.log.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    return [e for e in events if event is None or e.get("event") == event]


def skipped(output: Path, reason: str) -> set[str]:
    return {e["url"] for e in log_events(output, "skip") if e["reason"] == reason}


def paths(site: SiteServer) -> list[str]:
    return [h.path + ("?" + h.query if h.query else "") for h in site.counters.hits]


def gaps(hits: list[Hit]) -> list[float]:
    times = sorted(h.started for h in hits)
    return [b - a for a, b in itertools.pairwise(times)]


def link_page(*hrefs: str, extra: str = "") -> str:
    links = "".join(f'<a href="{h}">{h}</a> ' for h in hrefs)
    return f"<html><body>{links}{extra}</body></html>"


@contextlib.asynccontextmanager
async def hosts(count: int) -> AsyncIterator[list[SiteServer]]:
    """``count`` local sites on 127.0.0.2, 127.0.0.3, ..."""
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(SiteServer(f"127.0.0.{i}")) for i in range(2, 2 + count)
        ]


def mesh(site: SiteServer, pages: int) -> None:
    site.add_page("/", link_page(*(f"/p{i}" for i in range(pages))))
    for i in range(pages):
        site.add_page(f"/p{i}", link_page("/", f"/p{(i + 1) % pages}"))


# -- politeness under 64 workers ----------------------------------------------------------------


async def test_per_host_concurrency_holds_under_64_workers(tmp_path: Path) -> None:
    async with hosts(4) as sites:
        for site in sites:
            mesh(site, 20)
            site.delay = 0.05  # responses overlap, so in-flight counts are observable
        result = await crawl(
            tmp_path / "out",
            *(s.url("/") for s in sites),
            workers=64,
            per_host_concurrency=2,
            per_host_delay=0.0,
            robots="obey",
        )
    assert result.status == "completed"
    for site in sites:
        counters = site.counters
        assert counters.max_in_flight_by_host == {f"{site.host}:{site.port}": 2}
        assert sorted(paths(site)) == sorted(["/", "/robots.txt", *(f"/p{i}" for i in range(20))])


async def test_per_host_delay_spaces_requests_under_64_workers(tmp_path: Path) -> None:
    delay = 0.25
    async with hosts(3) as sites:
        for site in sites:
            mesh(site, 4)
        result = await crawl(
            tmp_path / "out",
            *(s.url("/") for s in sites),
            workers=64,
            per_host_concurrency=2,
            per_host_delay=delay,
        )
    assert result.status == "completed"
    for site in sites:
        assert len(site.counters.hits) == 5
        assert_spaced((hit.started for hit in site.counters.hits), delay)
    # the hosts were crawled side by side, not one after another
    firsts = [min(h.started for h in s.counters.hits) for s in sites]
    lasts = [max(h.started for h in s.counters.hits) for s in sites]
    assert max(firsts) < min(lasts)


async def test_robots_txt_is_spaced_from_the_first_page(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nDisallow:\n", "text/plain")
        site.add_page("/", "<html><body>hello</body></html>")
        await crawl(tmp_path / "out", site.url("/"), per_host_delay=1.0, robots="obey")
    assert paths(site) == ["/robots.txt", "/"]
    assert_spaced((hit.started for hit in site.counters.hits), 1.0)


async def test_429_pauses_the_host_for_retry_after(tmp_path: Path) -> None:
    calls = {"n": 0}

    async def limited(_: web.Request) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] == 1:
            return web.Response(status=429, headers={"Retry-After": "1"}, text="slow down")
        return web.Response(text="<html>ok now</html>", content_type="text/html")

    async with SiteServer() as site:
        site.add_page("/", link_page("/limited", "/a", "/b", "/c"))
        site.add_handler("/limited", limited)
        for name in "abc":
            site.add_page(f"/{name}", "<html>leaf</html>")
        result = await crawl(
            tmp_path / "out", site.url("/"), workers=8, per_host_concurrency=1, max_tries=3
        )
    assert result.status == "completed"
    hits = site.counters.hits
    assert [h.path for h in hits].count("/limited") == 2
    throttled = next(h.started for h in hits if h.path == "/limited")
    after = [h.started - throttled for h in hits if h.started > throttled]
    assert len(after) == 4  # /a, /b, /c and the retry of /limited
    assert min(after) >= 1.0 - TOLERANCE  # the whole host waited, not only the URL
    assert result.summary["retries"] == 1


CHALLENGE_PAGE = (
    "<html><head><title>Just a moment...</title></head><body>"
    '<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script></body></html>'
)


async def test_a_bot_challenge_is_not_archived_but_retried_with_the_host_paused(
    tmp_path: Path,
) -> None:
    calls = {"n": 0}

    async def guarded(_: web.Request) -> web.StreamResponse:
        calls["n"] += 1
        if calls["n"] <= 2:  # Cloudflare's documented marker: cf-mitigated: challenge
            return web.Response(
                status=403,
                text=CHALLENGE_PAGE,
                content_type="text/html",
                headers={"cf-mitigated": "challenge", "Retry-After": "1"},
            )
        return web.Response(text=link_page("/after"), content_type="text/html")

    async with SiteServer() as site:
        site.add_page("/", link_page("/guarded", "/a", "/b"))
        site.add_handler("/guarded", guarded)
        for path in ("/a", "/b", "/after"):
            site.add_page(path, "<html>leaf</html>")
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"), per_host_concurrency=1, max_tries=3)
    assert result.status == "completed"
    hits = site.counters.hits
    assert [h.path for h in hits].count("/guarded") == 3
    for n, challenged in enumerate(h.started for h in hits if h.path == "/guarded"):
        if n == 2:
            break  # the third answer was the page
        later = [h.started - challenged for h in hits if h.started > challenged]
        assert later and min(later) >= 1.0 - TOLERANCE  # the whole host waited
    # nothing of the challenge is archived; the page that finally came is, and its links
    (record,) = responses(out / "warcs", site.url("/guarded"))
    assert record.type == "response" and b"HTTP/1.1 200" in record.block
    assert not any(b"Just a moment" in r.block for r in read_records(out / "warcs"))
    assert responses(out / "warcs", site.url("/after"))
    assert result.summary["retries"] == 2 and "challenge" not in result.summary["failures"]
    (warning,) = log_events(out, "challenge")
    assert (warning["level"], warning["provider"], warning["status"]) == (
        "warning",
        "cloudflare",
        403,
    )
    fetches = [e for e in log_events(out, "fetch") if e["url"] == site.url("/guarded")]
    assert [(e["outcome"], e.get("reason"), e.get("challenge")) for e in fetches] == [
        ("retry", "challenge", "cloudflare"),
        ("retry", "challenge", "cloudflare"),
        ("captured", None, None),
    ]


async def test_a_challenge_that_never_ends_fails_the_url_or_is_kept_when_asked(
    tmp_path: Path,
) -> None:
    async with SiteServer() as site:
        site.add_page("/", link_page("/guarded"))
        site.add_page(  # AWS WAF's documented challenge: 202 and x-amzn-waf-action
            "/guarded", CHALLENGE_PAGE, status=202, headers={"x-amzn-waf-action": "challenge"}
        )
        retried = await crawl(tmp_path / "retry", site.url("/"), max_tries=2)
        kept = await crawl(tmp_path / "keep", site.url("/"), challenge_pages="keep")
    assert retried.status == "completed"
    assert retried.summary["failures"] == {"challenge": 1}
    assert not responses(tmp_path / "retry" / "warcs", site.url("/guarded"))
    (final,) = [e for e in log_events(tmp_path / "retry", "fetch") if e["outcome"] == "failed"]
    assert (final["url"], final["challenge"], final["status"]) == (
        site.url("/guarded"),
        "aws-waf",
        202,
    )
    assert kept.status == "completed" and kept.summary["failures"] == {}
    (record,) = responses(tmp_path / "keep" / "warcs", site.url("/guarded"))
    assert b"HTTP/1.1 202" in record.block and b"x-amzn-waf-action: challenge" in record.block
    assert not log_events(tmp_path / "keep", "challenge")


async def test_a_crawl_that_only_ever_got_challenges_fails(tmp_path: Path) -> None:
    """A scheduled crawl of a site that challenges every request (robots.txt included) has
    archived nothing worth having: it fails (exit 1) rather than completing with an archive
    of robots.txt alone."""

    async def challenge_everything(_: web.Request) -> web.StreamResponse:
        return web.Response(
            status=403,
            text=CHALLENGE_PAGE,
            content_type="text/html",
            headers={"cf-mitigated": "challenge", "Retry-After": "0"},
        )

    async with SiteServer() as site:
        for path in ("/", "/robots.txt"):
            site.add_handler(path, challenge_everything)
        obeying = await crawl(tmp_path / "obey", site.url("/"), robots="obey", max_tries=2)
        ignoring = await crawl(tmp_path / "ignore", site.url("/"), max_tries=2)
    assert (obeying.status, exit_code(obeying.status)) == ("failed", 1)
    assert obeying.reason is not None
    assert obeying.reason.startswith(
        "nothing was captured but robots.txt: every fetch failed (challenge: 1)"
    )
    assert obeying.summary["captures"] == 1  # robots.txt as served (RFC 9309: a 4xx allows all)
    assert (ignoring.status, exit_code(ignoring.status)) == ("failed", 1)
    assert ignoring.reason is not None
    assert ignoring.reason.startswith("nothing was captured: every fetch failed (challenge: 1)")


async def test_a_host_that_keeps_failing_is_paused(tmp_path: Path) -> None:
    """From the third failure in a row the host waits out a pause (capped here at ``pause``);
    before that it does not. The threshold itself is pinned with a fake clock in
    test_politeness; here the order of the gaps shows it, with no bound on how fast a loaded
    machine runs: every gap before the threshold is shorter than every paused one."""
    loop = asyncio.get_running_loop()
    times: dict[str, float] = {}
    pause = 1.0

    async def hang_up(reader: Any, writer: Any, request: bytes) -> bool:
        times.setdefault(request.split(b" ")[1].decode(), loop.time())
        return False  # close the connection without a response

    async with RawServer() as raw:
        for i in range(5):
            raw.add_handler(f"/f{i}", hang_up)
        result = await crawl(
            tmp_path / "out",
            *(raw.url(f"/f{i}") for i in range(5)),
            workers=8,
            per_host_concurrency=1,
            max_tries=1,
            max_retry_after=pause,  # caps the failure backoff (5 s, 10 s, ...) for the test
        )
    assert result.status == "failed"  # every fetch failed: nothing was captured
    assert result.summary["failures"] == {"disconnect": 5}
    starts = sorted(times.values())
    assert len(starts) == 5
    spacing = [b - a for a, b in itertools.pairwise(starts)]
    assert min(spacing[2:]) >= pause - TOLERANCE  # from the third on: paused (capped backoff)
    assert max(spacing[:2]) < min(spacing[2:])  # two failures: not paused yet


async def test_workers_serve_other_hosts_while_one_is_slow(tmp_path: Path) -> None:
    """The slow host's page is held by its server until the fast host has served all its
    pages: two workers, one stuck on the slow host, and the other must do the rest. A crawl
    that made it wait for the slow host would never finish the fast one (the hold gives up
    after a hang guard, and the test fails)."""
    async with hosts(2) as (slow, fast):
        mesh(slow, 1)
        mesh(fast, 10)
        fast_pages = 11
        fast_done = asyncio.Event()
        held: list[int] = []  # fast pages served when the slow page was requested
        served_while_held: list[bool] = []
        slow_home = slow.routes["/"]
        fast_routes = dict(fast.routes)

        async def counted(request: web.Request) -> web.StreamResponse:
            response = await fast_routes[request.path](request)
            if len(fast.counters.hits) == fast_pages:  # the last one is answered
                fast_done.set()
            return response

        async def held_until_fast_is_done(request: web.Request) -> web.StreamResponse:
            held.append(len(fast.counters.hits))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(fast_done.wait(), HANG_GUARD)
            served_while_held.append(fast_done.is_set())
            return await slow_home(request)

        for path in fast_routes:
            fast.add_handler(path, counted)
        slow.add_handler("/", held_until_fast_is_done)
        result = await crawl(
            tmp_path / "out",
            slow.url("/"),
            fast.url("/"),
            workers=2,
            per_host_concurrency=1,
        )
    assert result.status == "completed"
    assert len(fast.counters.hits) == fast_pages
    assert held[0] < fast_pages  # the slow page was requested before the fast host was done
    assert served_while_held == [True]  # and the fast host finished while it was held


# -- robots.txt end to end ----------------------------------------------------------------------


async def test_robots_disallowed_urls_are_never_requested(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file(
            "/robots.txt",
            b"User-agent: *\nDisallow: /private\nAllow: /private/ok\n",
            "text/plain",
        )
        site.add_page("/", link_page("/private/x", "/private/ok", "/public", "/private"))
        for path in ("/private/x", "/private/ok", "/public", "/private"):
            site.add_page(path, "<html>leaf</html>")
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"), robots="obey")
    assert (result.status, result.reason) == ("completed", None)
    assert sorted(paths(site)) == ["/", "/private/ok", "/public", "/robots.txt"]
    assert skipped(out, "robots") == {site.url("/private/x"), site.url("/private")}
    assert result.summary["skips"] == {"robots": 2}
    (robots_record,) = responses(out / "warcs", site.url("/robots.txt"))
    assert b"Disallow: /private" in robots_record.block
    warcinfo = next(r for r in read_records(out / "warcs") if r.type == "warcinfo")
    assert b"robots: rfc9309 (obey)" in warcinfo.block
    (event,) = log_events(out, "robots")
    assert (event["verdict"], event["status"]) == ("parsed", 200)


async def test_robots_503_means_no_page_request(tmp_path: Path) -> None:
    """RFC 9309 section 2.3.1.4: an unreachable robots.txt is complete disallow. The rules are
    unknown, so the page failed (robots-unreachable), and a crawl that archived nothing but
    robots.txt reports a failure (exit 1) instead of an empty success."""
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"down", "text/plain", status=503)
        site.add_page("/", link_page("/a"))
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"), robots="obey")
    assert paths(site) == ["/robots.txt"]
    assert responses(out / "warcs", site.url("/robots.txt"))  # the 503 itself is archived
    (failed,) = [e for e in log_events(out, "fetch") if e.get("outcome") == "failed"]
    assert (failed["url"], failed["reason"]) == (site.url("/"), "robots-unreachable")
    reason = (
        "nothing was captured but robots.txt: every fetch failed (robots-unreachable: 1); "
        "see crawl.log.jsonl, fix the cause and run again with --overwrite"
    )
    assert (result.status, exit_code(result.status), result.reason) == ("failed", 1, reason)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failures"] == {"robots-unreachable": 1}


async def test_a_seed_robots_txt_disallows_fails_the_crawl(tmp_path: Path) -> None:
    """Every seed ended without a capture (here: disallowed by robots.txt): what the run was
    asked to archive is not there, so it exits 1 and says why."""
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain")
        site.add_page("/", link_page("/a"))
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"), robots="obey")
    assert paths(site) == ["/robots.txt"]
    assert skipped(out, "robots") == {site.url("/")}
    reason = (
        "no seed was captured (robots: 1); see crawl.log.jsonl, fix the cause and run again "
        "with --overwrite"
    )
    assert (result.status, exit_code(result.status), result.reason) == ("failed", 1, reason)
    (error,) = log_events(out, "crawl-error")
    assert error["error"] == reason


async def test_robots_4xx_means_everything_is_crawled(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain", status=401)
        site.add_page("/", link_page("/a"))
        site.add_page("/a", "<html>a</html>")
        out = tmp_path / "out"
        await crawl(out, site.url("/"), robots="obey")
    assert paths(site) == ["/robots.txt", "/", "/a"]
    assert skipped(out, "robots") == set()


async def test_robots_redirected_five_times_is_honoured(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_redirect("/robots.txt", "/r1")
        for i in range(1, 5):
            site.add_redirect(f"/r{i}", f"/r{i + 1}", 302)
        site.add_file("/r5", b"User-agent: *\nDisallow: /no\n", "text/plain")
        site.add_page("/", link_page("/no", "/yes"))
        site.add_page("/yes", "<html>y</html>")
        out = tmp_path / "out"
        await crawl(out, site.url("/"), robots="obey")
    assert site.counters.count("/no") == 0
    assert site.counters.count("/yes") == 1
    for hop in ("/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5"):
        assert responses(out / "warcs", site.url(hop)), hop  # every hop archived


async def test_a_600_kib_robots_txt_is_read_to_the_end(tmp_path: Path) -> None:
    filler = b"# " + b"x" * 1000 + b"\n"
    body = b"User-agent: *\nAllow: /\n" + filler * 600 + b"Disallow: /secret\n" + filler * 14
    assert len(body) > 600 * 1024
    async with SiteServer() as site:
        site.add_file("/robots.txt", body, "text/plain")
        site.add_page("/", link_page("/secret/page", "/open"))
        site.add_page("/open", "<html>open</html>")
        out = tmp_path / "out"
        await crawl(out, site.url("/"), robots="obey")
    assert site.counters.count("/secret/page") == 0
    assert site.counters.count("/open") == 1
    assert skipped(out, "robots") == {site.url("/secret/page")}


async def test_crawl_delay_is_honoured(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nCrawl-delay: 0.3\n", "text/plain")
        mesh(site, 4)
        out = tmp_path / "out"
        await crawl(out, site.url("/"), robots="obey", per_host_delay=0.0)
    pages = [h for h in site.counters.hits if h.path not in ("/robots.txt", "/")]
    assert len(pages) == 4
    assert_spaced((hit.started for hit in pages), 0.3)
    (event,) = log_events(out, "robots")
    assert event["crawl_delay"] == 0.3


async def test_crawl_delay_applies_from_the_first_page(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nCrawl-delay: 0.3\n", "text/plain")
        mesh(site, 1)
        await crawl(tmp_path / "out", site.url("/"), robots="obey", per_host_delay=0.0)
    pages = [h for h in site.counters.hits if h.path != "/robots.txt"]
    assert [h.path for h in pages] == ["/", "/p0"]
    assert gaps(pages)[0] >= 0.3 - TOLERANCE


async def test_requisites_exempt_from_robots_on_request(tmp_path: Path) -> None:
    for exempt in (False, True):
        async with SiteServer() as site:
            site.add_file("/robots.txt", b"User-agent: *\nDisallow: /img/\n", "text/plain")
            site.add_page("/", '<html><body><img src="/img/a.png"></body></html>')
            site.add_file("/img/a.png", b"\x89PNG\r\n\x1a\n", "image/png")
            out = tmp_path / f"out-{exempt}"
            await crawl(out, site.url("/"), robots="obey", robots_exempt_requisites=exempt)
        assert site.counters.count("/img/a.png") == (1 if exempt else 0)
        assert skipped(out, "robots") == (set() if exempt else {site.url("/img/a.png")})


async def test_robots_ignore_never_requests_robots_txt(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_file("/robots.txt", b"User-agent: *\nDisallow: /\n", "text/plain")
        site.add_page("/", link_page("/a"))
        site.add_page("/a", "<html>a</html>")
        out = tmp_path / "out"
        await crawl(out, site.url("/"), robots="ignore")
    assert paths(site) == ["/", "/a"]
    warcinfo = next(r for r in read_records(out / "warcs") if r.type == "warcinfo")
    assert b"robots: ignore" in warcinfo.block


# -- traps end within budgets -------------------------------------------------------------------


async def test_an_endless_calendar_ends_and_is_reported(tmp_path: Path) -> None:
    async def calendar(request: web.Request) -> web.StreamResponse:
        month = int(request.query.get("month", "0"))
        body = link_page(f"/cal?month={month + 1}", f"/cal?month={month - 1}")
        return web.Response(text=body, content_type="text/html")

    async with SiteServer() as site:
        site.add_handler("/cal", calendar)
        out = tmp_path / "out"
        result = await crawl(out, site.url("/cal?month=0"), max_pattern_depth=10)
    assert result.status == "completed"
    assert 10 < site.counters.count("/cal") <= 2 * 12  # both directions, ten hops each
    traps = {(t["kind"], t["pattern"].rsplit("/", 1)[1]) for t in result.summary["traps"]}
    assert traps == {  # forwards and backwards in time
        ("endless-numbered-urls", "cal?month=N"),
        ("endless-numbered-urls", "cal?month=-N"),
    }
    assert skipped(out, "trap") == {site.url("/cal?month=11"), site.url("/cal?month=-12")}


async def test_repeated_segments_and_overlong_urls_are_never_requested(tmp_path: Path) -> None:
    long_link = "/long/" + "x" * 10_000
    async with SiteServer() as site:
        site.add_page("/", link_page("/loop/", long_link))
        for depth in range(4):
            site.add_page("/loop/" + "x/" * depth, link_page("x/"))
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"))
    assert result.status == "completed"
    assert sorted(paths(site)) == sorted(["/"] + ["/loop/" + "x/" * d for d in range(4)])
    assert skipped(out, "url-too-long") == {site.url(long_link)}
    assert skipped(out, "trap") == {site.url("/loop/" + "x/" * 4)}
    (trap,) = result.summary["traps"]
    assert (trap["kind"], trap["pattern"]) == ("repeated-path-segments", "/x repeated")


# -- sitemaps -----------------------------------------------------------------------------------


def urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{u}</loc></url>" for u in urls)
    return (
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()
    )


def sitemap_site(site: SiteServer, other: SiteServer) -> None:
    u = site.url
    site.add_file("/robots.txt", f"Sitemap: {u('/sitemap_index.xml')}\n".encode(), "text/plain")
    index = "".join(
        f"<sitemap><loc>{u(p)}</loc></sitemap>" for p in ("/sm/one.xml", "/sm/two.xml.gz")
    )
    site.add_file(
        "/sitemap_index.xml",
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{index}'
        "</sitemapindex>".encode(),
        "application/xml",
    )
    site.add_file("/sm/one.xml", urlset(u("/orphan1"), u("/orphan2")), "application/xml")
    site.add_file(
        "/sm/two.xml.gz",
        gzip.compress(urlset(u("/orphan3"), other.url("/out-of-scope"))),
        "application/x-gzip",
    )
    site.add_file("/sitemap.xml", urlset(u("/guessed")), "application/xml")
    site.add_page("/", "<html><body>no links at all</body></html>")
    for path in ("/orphan1", "/orphan2", "/orphan3", "/guessed"):
        site.add_page(path, "<html>found through a sitemap</html>")
    other.add_page("/out-of-scope", "<html>another host</html>")


async def test_a_sitemap_index_seeds_the_crawl(tmp_path: Path) -> None:
    async with SiteServer() as site, SiteServer("127.0.0.2") as other:
        sitemap_site(site, other)
        out = tmp_path / "out"
        result = await crawl(out, site.url("/"), robots="obey", sitemaps="on")
    assert result.status == "completed"
    assert sorted(paths(site)) == sorted(
        [
            "/robots.txt",
            "/",
            "/sitemap.xml",
            "/sitemap_index.xml",
            "/sm/one.xml",
            "/sm/two.xml.gz",
            "/orphan1",
            "/orphan2",
            "/orphan3",
            "/guessed",
        ]
    )
    assert other.counters.hits == []  # a sitemap entry is still subject to the scope
    for path in ("/sitemap_index.xml", "/sm/two.xml.gz", "/orphan3"):
        assert responses(out / "warcs", site.url(path)), path
    orphan = next(e for e in log_events(out, "fetch") if e["url"] == site.url("/orphan3"))
    assert orphan["hops"] == "MML"
    assert orphan["via"] == site.url("/sm/two.xml.gz")


async def test_sitemaps_off_fetches_none(tmp_path: Path) -> None:
    async with SiteServer() as site, SiteServer("127.0.0.2") as other:
        sitemap_site(site, other)
        await crawl(tmp_path / "out", site.url("/"), robots="obey", sitemaps="off")
    assert paths(site) == ["/robots.txt", "/"]
