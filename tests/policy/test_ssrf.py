"""The SSRF guard: links and redirects from a site never reach the network the crawler runs in.

Three levels: the address classification (:mod:`archiver.policy.netguard`) and the numeric host
forms (:mod:`archiver.urls`); the connect-time check in the fetcher (the decision is taken on the
resolved address, so a name that resolves to a private address is refused too); and a crawl
whose seed links to a canary server on another loopback port in every way a site can, with
``--allow-private`` off: the canary must receive no request at all, and every refusal is logged.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from archiver import urls
from archiver.errors import BlockedAddressError
from archiver.fetch.fetcher import FetchConfig, Fetcher
from archiver.policy.netguard import AddressPolicy, classify
from tests.conftest import run_crawl
from tests.pipeline.test_polite_crawl import crawl, log_events
from tests.support.site import SiteServer

# -- classification -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("100.100.100.200", "shared (CGNAT)"),  # Alibaba Cloud metadata
        ("169.254.169.254", "link-local"),  # AWS/GCP/Azure metadata
        ("169.254.0.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "private"),  # 0.0.0.0/8 "this network"
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "private"),  # broadcast
        ("240.0.0.1", "private"),  # reserved (Python files 240/4 under is_private)
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fc00::1", "private"),  # unique local
        ("fd00:ec2::254", "private"),  # AWS metadata over IPv6
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
        ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of 169.254.169.254
        ("not-an-ip", "not an IP address"),
    ],
)
def test_non_global_addresses_are_classified(ip: str, reason: str) -> None:
    assert classify(ip) == reason


@pytest.mark.parametrize("ip", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])
def test_global_addresses_pass(ip: str) -> None:
    assert classify(ip) is None


@pytest.mark.parametrize(
    "host", ["2130706433", "0x7f.1", "017700000001", "0x7f000001", "127.1", "0177.0.0.1"]
)
def test_numeric_host_forms_are_the_address_they_connect_to(host: str) -> None:
    assert urls.normalize_url(f"http://{host}:8080/x") == "http://127.0.0.1:8080/x"


@pytest.mark.parametrize(
    "ref",
    [
        "file:///etc/passwd",
        "ftp://127.0.0.1/",
        "gopher://127.0.0.1:25/",
        "data:text/html,hi",
        "javascript:fetch('http://127.0.0.1')",
        "dict://127.0.0.1:11211/",
    ],
)
def test_only_http_and_https_are_ever_fetched(ref: str) -> None:
    assert urls.resolve("http://a.example/", ref) is None


def test_policy_allows_only_the_seeds_own_address_and_port() -> None:
    policy = AddressPolicy(allowed=[("127.0.0.1", 8000)])
    assert policy.check("127.0.0.1", 8000) is None
    assert policy.check("127.0.0.1", 8001) is not None  # another port is another service
    assert policy.check("127.0.0.2", 8000) is not None
    assert policy.check("::ffff:127.0.0.1", 8001) is not None
    assert policy.check("93.184.216.34", 80) is None
    assert AddressPolicy(allow_private=True).check("169.254.169.254", 80) is None


# -- the connect-time guard -----------------------------------------------------------------------


async def test_the_guard_decides_on_the_resolved_address() -> None:
    async with SiteServer() as site, SiteServer() as canary:
        site.add_page("/", "seed")
        canary.add_page("/", "canary")
        config = FetchConfig(
            resolve={"canary.test": "127.0.0.1", "site.test": "127.0.0.1"},
            connect_timeout=30,  # never reached: a loaded machine is not a refusal
            fetch_timeout=30,
        )
        policy = AddressPolicy(allowed=[("127.0.0.1", site.port)])
        async with Fetcher(config, policy) as fetcher:
            assert (await fetcher.fetch(site.url("/"))).status == 200
            # a name is judged by what it resolves to (DNS rebinding has nothing to rebind)
            ok = await fetcher.fetch(f"http://site.test:{site.port}/")
            assert ok.status == 200
            for url in (
                canary.url("/"),
                f"http://canary.test:{canary.port}/",
                urls.normalize_url(f"http://2130706433:{canary.port}/"),
            ):
                with pytest.raises(BlockedAddressError, match="loopback"):
                    await fetcher.fetch(url)
            with pytest.raises(BlockedAddressError, match="link-local"):
                await fetcher.fetch("http://169.254.169.254/latest/meta-data/")
    assert canary.counters.hits == []


# -- a crawl that tries every way to the canary ---------------------------------------------


def ssrf_site(site: SiteServer, canary: SiteServer) -> dict[str, str]:
    """The seed site; returns, by route, the URL the crawler derives for each canary link."""
    port = canary.port
    links = {
        "direct": canary.url("/direct"),
        "decimal": f"http://2130706433:{port}/decimal",
        "hex": f"http://0x7f.1:{port}/hex",
        "octal": f"http://017700000001:{port}/octal",
        "named": f"http://canary.test:{port}/named",
        "metadata": "http://169.254.169.254/latest/meta-data/",
        "ipv6-loopback": f"http://[::1]:{port}/v6",
        "ipv4-mapped": f"http://[::ffff:127.0.0.1]:{port}/mapped",
    }
    anchors = "".join(f'<a href="{url}">{name}</a> ' for name, url in links.items())
    site.add_page(
        "/",
        f'<html><body>{anchors}<a href="/go">redirect</a>'
        f'<img src="{canary.url("/pixel.png")}"></body></html>',
    )
    site.add_redirect("/go", canary.url("/redirected"), 302)
    site.add_file(
        "/sitemap.xml",
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>'
        + canary.url("/from-sitemap").encode()
        + b"</loc></url></urlset>",
        "application/xml",
    )
    canary.add_page("/", "canary")
    expected = {name: urls.normalize_url(url) for name, url in links.items()}
    expected["redirect"] = canary.url("/redirected")
    expected["requisite"] = canary.url("/pixel.png")
    expected["sitemap"] = canary.url("/from-sitemap")
    return expected


def refusals(out: Path) -> set[str]:
    """URLs logged as refused by the guard: a failed fetch today, a skip once the crawler
    reports a refusal as ``SkipReason.BLOCKED_ADDRESS`` (proposed in the issue-4 report)."""
    return {
        e["url"]
        for e in log_events(out)
        if e.get("reason") == "blocked-address"
        and (e["event"] == "skip" or (e["event"] == "fetch" and e.get("outcome") == "failed"))
    }


async def test_the_canary_is_never_reached(tmp_path: Path) -> None:
    async with SiteServer() as site, SiteServer() as canary:
        expected = ssrf_site(site, canary)
        out = tmp_path / "out"
        result = await crawl(
            out,
            site.url("/"),
            scope="any",  # the guard, not the scope, must stop every one of them
            allow_private=False,
            robots="obey",
            sitemaps="on",
            resolve=(("canary.test", "127.0.0.1"),),
            max_tries=1,
            max_retry_after=0.2,  # refusals count as host failures today: keep the backoff short
        )
    assert result.status == "completed"
    assert canary.counters.hits == []
    missing = {name: url for name, url in expected.items() if url not in refusals(out)}
    assert missing == {}
    summary = result.summary
    counted = summary["failures"].get("blocked-address", 0) + summary["skips"].get(
        "blocked-address", 0
    )
    assert counted == len(expected)
    assert site.counters.count("/go") == 1 and site.counters.count("/sitemap.xml") == 1
    # robots.txt of the canary's origin was refused by the guard as well, not fetched
    verdicts = {e["url"]: e["verdict"] for e in log_events(out, "robots")}
    assert verdicts[canary.url("/robots.txt")] == "blocked"


async def test_refused_links_do_not_hold_the_crawl_up(tmp_path: Path) -> None:
    """A refusal by the guard is no failure of the host: counted as one, the third in a row
    would pause the host 5 s, then 10, 20, 40 s for the next ones, and eight refusals would
    outlast the hang guard by far. Unpaused, the crawl takes a second."""
    async with SiteServer() as site, SiteServer() as canary:
        site.add_page("/", "".join(f'<a href="{canary.url(f"/{i}")}">x</a>' for i in range(8)))
        async with asyncio.timeout(60):
            result = await crawl(
                tmp_path / "out",
                site.url("/"),
                scope="any",
                per_host_concurrency=1,
                max_tries=1,
            )
    assert canary.counters.hits == []
    assert result.status == "completed"
    assert result.summary["skips"] == {"blocked-address": 8}


async def test_allow_private_opens_the_way(tmp_path: Path) -> None:
    """The control: the same site with --allow-private does reach the canary."""
    async with SiteServer() as site, SiteServer() as canary:
        ssrf_site(site, canary)
        await crawl(
            tmp_path / "out",
            site.url("/"),
            scope="any",
            allow_private=True,
            sitemaps="on",
            resolve=(("canary.test", "127.0.0.1"),),
            max_tries=1,
        )
    reached = {h.path for h in canary.counters.hits}
    assert {"/direct", "/decimal", "/hex", "/octal", "/named", "/redirected"} <= reached
    assert {"/pixel.png", "/from-sitemap"} <= reached


async def test_a_seed_with_a_trailing_dot_gets_its_resolve_override_allowed(
    tmp_path: Path,
) -> None:
    """``http://x.test.:PORT/`` is resolved through ``--resolve x.test=127.0.0.1`` (the trailing
    dot names the same host), so the seed's own address is allowed like any seed's."""
    async with SiteServer() as site:
        site.add_page("/", "<p>dotted</p>")
        result = await run_crawl(
            tmp_path / "out",
            f"http://x.test.:{site.port}/",
            resolve=(("x.test", "127.0.0.1"),),
            scope="page",
            max_tries=1,
        )
    assert result.status == "completed", result.reason
    assert result.summary["captures"] == 1


def test_address_policy() -> None:
    for ip in (
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a00:1",
    ):
        assert classify(ip) is not None, ip
    assert classify("93.184.216.34") is None
    policy = AddressPolicy(allowed=[("127.0.0.1", 8000)])
    assert policy.check("127.0.0.1", 8000) is None
    assert policy.check("127.0.0.1", 8001) is not None
    assert AddressPolicy(allow_private=True).check("10.0.0.1", 80) is None
