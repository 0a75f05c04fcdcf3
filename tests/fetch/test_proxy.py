"""Crawling through real proxies: proxy.py (HTTP and HTTPS proxies, CONNECT, Basic auth) and
microsocks (SOCKS5), started by the tests on 127.0.0.1 (:mod:`tests.support.proxies`).

What a proxied crawl writes must be what a direct crawl of the same site writes: record by
record, the same blocks and digests (only WARC-Date, WARC-Record-ID and the addresses differ).
The site answers with fixed bytes (a raw server: no Date header), so two crawls of it can be
compared byte for byte. The SSRF guard still judges where the proxy is asked to go; credentials
in the proxy URL reach no file the crawl writes; a proxy that is down fails every fetch with a
clear reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import os
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import trustme

from archiver.commands.cli import main
from archiver.commands.exits import EXIT_FAILED, exit_code
from archiver.fetch.proxy import ProxyRoutes, parse_direct_hosts, parse_proxy_url, redact_proxy_url
from archiver.fetch.tunnel import BlockedSocketError, Destination, Tunnels
from archiver.policy.netguard import AddressPolicy
from tests.conftest import run_crawl
from tests.support.proxies import MicroSocks, ProxyPy
from tests.support.raw import RawServer
from tests.support.site import SiteServer
from tests.support.warcs import Rec, read_records

#: headers that differ between two captures of the same bytes
VOLATILE = {"warc-date", "warc-record-id", "warc-ip-address", "warc-concurrent-to",
            "warc-warcinfo-id", "warc-refers-to"}  # fmt: skip
PASSWORD = "pr0xy-s3cret"


def http(status: str, body: bytes, *headers: str, content_type: str = "text/html") -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
    return ("\r\n".join([*head, *headers]) + "\r\n\r\n").encode() + body


def fixed_site(server: RawServer) -> None:
    """A small site of fixed bytes: pages, a stylesheet, an image, a gzip body, a chunked
    body, a redirect."""
    links = "".join(
        f'<a href="{path}">{path}</a>' for path in ("/a.html", "/data", "/chunked", "/moved")
    )
    page = f'<html><link rel="stylesheet" href="/style.css">{links}</html>'
    server.add("/", http("200 OK", page.encode()))
    server.add("/a.html", http("200 OK", b"<html><p>page a</p></html>"))
    server.add(
        "/style.css", http("200 OK", b"p { background: url(/img.png) }", content_type="text/css")
    )
    server.add(
        "/img.png",
        http("200 OK", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), content_type="image/png"),
    )
    server.add(
        "/data",
        http("200 OK", gzip.compress(b"compressed " * 50, mtime=0), "Content-Encoding: gzip"),
    )
    server.add(
        "/chunked",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
    )
    server.add(
        "/moved", b"HTTP/1.1 302 Found\r\nLocation: /a.html?via=moved\r\nContent-Length: 0\r\n\r\n"
    )
    server.add("/a.html?via=moved", http("200 OK", b"<html>redirected</html>"))


def comparable(out: Path) -> list[tuple[str, str, list[tuple[str, str]], bytes]]:
    """Every record but warcinfo (which names the proxy), in a stable order, without the
    headers that differ between captures of the same bytes."""
    records: list[Rec] = [r for r in read_records(out / "warcs") if r.type != "warcinfo"]
    rows = [
        (
            r.type,
            r.uri or "",
            sorted((k, v) for k, v in r.headers if k.lower() not in VOLATILE),
            r.block,
        )
        for r in records
    ]
    return sorted(rows, key=lambda row: (row[1], row[0]))


def ip_addresses(out: Path) -> set[str | None]:
    return {r.get("WARC-IP-Address") for r in read_records(out / "warcs") if r.type == "response"}


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    """Wait until ``predicate()`` holds (a proxy's log is written when a tunnel closes)."""
    deadline = time.monotonic() + 60
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A CA and a certificate for 127.0.0.1 / localhost (the proxy's and the origin's)."""
    directory = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    paths = {
        "ca": directory / "ca.pem",
        "cert": directory / "cert.pem",
        "key": directory / "key.pem",
    }
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    yield paths


@contextlib.asynccontextmanager
async def site(tls: ssl.SSLContext | None = None) -> AsyncIterator[RawServer]:
    async with RawServer(tls=tls) as server:
        fixed_site(server)
        yield server


# -- the proxy URL -------------------------------------------------------------------------------


def test_proxy_urls_and_their_redaction() -> None:
    proxy = parse_proxy_url(f"socks5h://user:{PASSWORD}@Proxy.Example:1081")
    assert (proxy.scheme, proxy.host, proxy.port, proxy.username, proxy.password) == (
        "socks5h", "proxy.example", 1081, "user", PASSWORD
    )  # fmt: skip
    assert PASSWORD not in repr(proxy) and "user" not in proxy.redacted
    assert proxy.redacted == "socks5h://***@proxy.example:1081"
    assert parse_proxy_url("http://[::1]").port == 80 and parse_proxy_url("socks5://h").port == 1080
    assert parse_proxy_url("http://u:p%40ss@h:3128").password == "p@ss"
    assert redact_proxy_url(f"http://user:{PASSWORD}@h:1/") == "http://***@h:1/"
    routes = ProxyRoutes(proxy, parse_direct_hosts(["intranet.example, .corp.example", "10.0.0.1"]))
    assert routes.for_host("intranet.example") is None
    assert routes.for_host("a.corp.example") is None and routes.for_host("corp.example") is None
    assert routes.for_host("10.0.0.1") is None
    assert routes.for_host("example.org") is proxy
    assert routes.for_host("notintranet.example") is proxy


def test_who_resolves_the_destination_and_what_the_guard_judges() -> None:
    guard = AddressPolicy()  # only globally routable addresses pass
    http_proxy, socks = parse_proxy_url("http://p:3128"), parse_proxy_url("socks5://p:1080")
    public = (2, 1, 6, "", ("93.184.216.34", 80))
    loopback = (2, 1, 6, "", ("127.0.0.1", 80))
    by_name = Tunnels(
        ProxyRoutes(http_proxy), guard.check, guard_active=True, pinned=frozenset({"pinned.test"})
    )
    # the proxy resolves the name: every address it has here must pass (the proxy picks one)
    assert by_name.destination(http_proxy, "a.test", 80, [public]) == Destination(
        "a.test", 80, None
    )
    with pytest.raises(BlockedSocketError, match="loopback"):
        by_name.destination(http_proxy, "a.test", 80, [public, loopback])
    # a name pinned with --resolve, or a socks5:// proxy: given an address the guard allows
    assert by_name.destination(http_proxy, "pinned.test", 80, [public]).address == "93.184.216.34"
    refusals: list[str] = []
    by_address = Tunnels(
        ProxyRoutes(socks), guard.check, guard_active=True, refused=refusals.append
    )
    assert by_address.destination(socks, "a.test", 80, [loopback, public]) == Destination(
        "93.184.216.34", 80, "93.184.216.34"
    )
    assert refusals == []  # a refused address passed over does not refuse the exchange
    with pytest.raises(BlockedSocketError, match="link-local"):
        by_address.destination(socks, "169.254.169.254", 80, [])  # an address: judged as is
    assert len(refusals) == 1 and "link-local" in refusals[0]
    # no lookup here only when nothing is judged and the proxy takes names
    assert not by_name.resolved_by_proxy("a.test")
    unguarded = Tunnels(ProxyRoutes(http_proxy), guard.check, guard_active=False)
    assert unguarded.resolved_by_proxy("a.test") and not unguarded.resolved_by_proxy("127.0.0.1")
    assert not Tunnels(ProxyRoutes(socks), guard.check, guard_active=False).resolved_by_proxy(
        "a.test"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ftp://proxy:21", "scheme must be http, https, socks5 or socks5h"),
        (f"http://user:{PASSWORD}@proxy:notaport", "valid port"),
        (f"http://user:{PASSWORD}@:3128", "names no proxy host"),
        ("http://proxy:3128/path", "no path, query or fragment"),
        ("proxy.example:3128", "scheme must be"),
    ],
)
def test_a_malformed_proxy_url_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, expected: str
) -> None:
    out = tmp_path / "out"
    code = main(["crawl", "http://127.0.0.1:9/", "-o", str(out), "--proxy", value])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--proxy" in err and expected in err, err
    assert PASSWORD not in err
    assert not out.exists()


def test_no_proxy_for_without_a_proxy_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crawl", "http://127.0.0.1:9/", "--no-proxy-for", "example.org"]) == 2
    assert "--no-proxy-for" in capsys.readouterr().err


# -- byte for byte as direct ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["http", "http-auth", "socks5", "socks5-auth", "socks5h"])
async def test_records_through_a_proxy_equal_a_direct_crawl(tmp_path: Path, kind: str) -> None:
    async with site() as server:
        direct = await run_crawl(tmp_path / "direct", server.url("/"))
        assert exit_code(direct.status) == 0
        if kind.startswith("http"):
            auth = f"user:{PASSWORD}" if kind == "http-auth" else None
            with ProxyPy(auth=auth) as proxy:
                url = proxy.url(auth)
                result = await run_crawl(tmp_path / "proxied", server.url("/"), proxy=url)
                wait_for(lambda: f"127.0.0.1:{server.port}" in proxy.connects(), "no CONNECT")
        else:
            creds = {"user": "user", "password": PASSWORD} if kind == "socks5-auth" else {}
            with MicroSocks(**creds) as socks:
                url = socks.url("socks5h" if kind == "socks5h" else "socks5")
                result = await run_crawl(tmp_path / "proxied", server.url("/"), proxy=url)
                assert f"127.0.0.1:{server.port}" in socks.destinations()
    assert exit_code(result.status) == 0, result.reason
    assert comparable(tmp_path / "proxied") == comparable(tmp_path / "direct")
    assert len(comparable(tmp_path / "direct")) == 16  # 8 responses, 8 requests
    # the seed is an address: the proxy was given it, and the record names it
    assert ip_addresses(tmp_path / "proxied") == {"127.0.0.1"}


@pytest.mark.parametrize("proxy_kind", ["http", "https"])
async def test_an_https_origin_through_connect_equals_a_direct_crawl(
    tmp_path: Path,
    certificates: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    proxy_kind: str,
) -> None:
    """TLS to the origin inside the tunnel (inside TLS to an https:// proxy: TLS in TLS): the
    records hold the decrypted exchange, as a direct crawl's do."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates["ca"]))  # trust the test CA
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(certificates["cert"], certificates["key"])
    async with site(tls) as server:
        direct = await run_crawl(tmp_path / "direct", server.url("/"))
        assert exit_code(direct.status) == 0
        proxy_tls = (certificates["cert"], certificates["key"]) if proxy_kind == "https" else None
        with ProxyPy(tls=proxy_tls) as proxy:
            result = await run_crawl(tmp_path / "proxied", server.url("/"), proxy=proxy.url())
            wait_for(lambda: f"127.0.0.1:{server.port}" in proxy.connects(), "no CONNECT")
    assert exit_code(result.status) == 0, result.reason
    rows = comparable(tmp_path / "proxied")
    assert rows == comparable(tmp_path / "direct")
    protocols = {
        dict(headers).get("WARC-Protocol") for kind, _, headers, _ in rows if kind == "response"
    }
    assert protocols and all(p and "tls/" in p for p in protocols)


async def test_the_address_is_left_out_when_the_proxy_resolved_the_name(tmp_path: Path) -> None:
    """CONNECT by name: the proxy chose the address, so ``WARC-IP-Address`` is absent."""
    async with site() as server:
        seed = f"http://localhost:{server.port}/"
        with ProxyPy() as proxy:
            result = await run_crawl(tmp_path / "out", seed, proxy=proxy.url())
            wait_for(lambda: f"localhost:{server.port}" in proxy.connects(), "no CONNECT by name")
    assert exit_code(result.status) == 0, result.reason
    assert ip_addresses(tmp_path / "out") == {None}


# -- the SSRF guard through the proxy ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["http", "socks5h"])
async def test_a_public_seed_cannot_reach_private_addresses_through_the_proxy(
    tmp_path: Path, kind: str
) -> None:
    """The seed is "public" (a name mapped with --resolve, allowed as the seed's own address
    and port); its redirects and links to loopback and link-local addresses are refused before
    the proxy is asked for them, whoever would resolve the name."""
    async with RawServer() as seed, SiteServer() as canary:
        canary.add_page("/", "canary")
        port = canary.port
        seed.add(
            "/",
            http(
                "200 OK",
                (
                    f'<a href="/metadata">m</a><a href="/loopback">l</a>'
                    f'<a href="http://127.0.0.1:{port}/direct">d</a>'
                    f'<a href="http://localhost:{port}/by-name">n</a>'
                ).encode(),
            ),
        )
        seed.add(
            "/metadata",
            http("302 Found", b"", "Location: http://169.254.169.254/latest/meta-data/"),
        )
        seed.add("/loopback", http("302 Found", b"", f"Location: http://127.0.0.1:{port}/"))
        out = tmp_path / "out"
        with contextlib.ExitStack() as stack:
            if kind == "http":
                proxy_url = stack.enter_context(ProxyPy()).url()
            else:
                proxy_url = stack.enter_context(MicroSocks()).url("socks5h")
            result = await run_crawl(
                out,
                f"http://public.test:{seed.port}/",
                proxy=proxy_url,
                resolve=(("public.test", "127.0.0.1"),),
                scope="any",
            )
    assert exit_code(result.status) == 0, result.reason
    assert canary.counters.hits == []
    log = (out / "crawl.log.jsonl").read_text()
    for target in (
        "http://169.254.169.254/latest/meta-data/",
        f"http://127.0.0.1:{port}/",
        f"http://127.0.0.1:{port}/direct",
        f"http://localhost:{port}/by-name",
    ):
        assert any(target in line and "blocked-address" in line for line in log.splitlines()), (
            target
        )


# -- credentials and failures --------------------------------------------------------------------


def every_byte_written(out: Path) -> bytes:
    """Everything the crawl wrote, WARC files decompressed."""
    data = b""
    for path in sorted(out.rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            data += gzip.decompress(raw) if path.name.endswith(".gz") else raw
    return data


def test_proxy_credentials_reach_no_file_or_output_of_the_crawl(
    tmp_path: Path, certificates: dict[str, Path]
) -> None:
    """``archiver crawl`` (uvloop, as run by people) through an https:// proxy with a password:
    the captures are there, and the password, and the Proxy-Authorization it becomes, are in
    no file the crawl wrote (logs at -v, warcinfo, state, summary) and not on its console."""
    token = base64.b64encode(f"user:{PASSWORD}".encode())
    out = tmp_path / "out"
    env = {**os.environ, "SSL_CERT_FILE": str(certificates["ca"])}
    with SiteServer().running_in_thread() as server:
        server.add_page("/", '<a href="/a">a</a>')
        server.add_page("/a", "a page")
        tls = (certificates["cert"], certificates["key"])
        with ProxyPy(auth=f"user:{PASSWORD}", tls=tls) as proxy:
            done = subprocess.run(
                [sys.executable, "-m", "archiver", "crawl", server.url("/"), "-o", str(out),
                 "--proxy", proxy.url(f"user:{PASSWORD}"), "--robots", "ignore",
                 "--per-host-delay", "0", "--min-free-disk", "0", "-vv"],
                capture_output=True, env=env, timeout=180, cwd=Path(__file__).parents[2],
                check=False,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr.decode(errors="replace")
            assert f"127.0.0.1:{server.port}" in proxy.connects()
    assert server.counters.count("/a") == 1
    written = every_byte_written(out) + done.stdout + done.stderr
    assert PASSWORD.encode() not in written and token not in written
    assert b"https://***@127.0.0.1" in written  # the settings name the proxy, redacted


async def test_a_wrong_proxy_password_fails_with_the_proxys_answer(tmp_path: Path) -> None:
    async with site() as server:
        with ProxyPy(auth=f"user:{PASSWORD}") as proxy:
            result = await run_crawl(
                tmp_path / "out", server.url("/"), proxy=proxy.url("user:badpass-x7"), max_tries=1
            )
    assert exit_code(result.status) == EXIT_FAILED
    log = (tmp_path / "out" / "crawl.log.jsonl").read_text()
    assert "proxy-error" in log and "407" in log
    assert "badpass-x7" not in log


async def test_an_unreachable_proxy_fails_every_fetch_with_a_clear_reason(tmp_path: Path) -> None:
    closed = RawServer()
    async with closed:
        port = closed.port  # a port nothing listens on once this server is gone
    async with site() as server:
        result = await run_crawl(
            tmp_path / "out",
            server.url("/"),
            proxy=f"http://user:{PASSWORD}@127.0.0.1:{port}",
            max_tries=1,
        )
        assert server.requests == []
    assert exit_code(result.status) == EXIT_FAILED
    assert result.reason is not None and "proxy-error" in result.reason
    log = (tmp_path / "out" / "crawl.log.jsonl").read_text()
    assert f"cannot reach proxy http://***@127.0.0.1:{port}" in log
    assert PASSWORD not in log


async def test_hosts_named_in_no_proxy_for_go_direct(tmp_path: Path) -> None:
    async with site() as proxied, RawServer() as direct:
        direct.add("/", http("200 OK", b"direct"))
        link = f"http://direct.test:{direct.port}/"
        proxied.add("/", http("200 OK", f'<a href="{link}">d</a>'.encode()))
        with ProxyPy() as proxy:
            result = await run_crawl(
                tmp_path / "out",
                f"http://proxied.test:{proxied.port}/",
                proxy=proxy.url(),
                no_proxy_for=("direct.test",),
                resolve=(("proxied.test", "127.0.0.1"), ("direct.test", "127.0.0.1")),
                scope="any",
                allow_private=True,
            )
            wait_for(lambda: bool(proxy.connects()), "no CONNECT")
            assert exit_code(result.status) == 0, result.reason
            assert len(direct.requests) == 1
            assert set(proxy.connects()) == {f"127.0.0.1:{proxied.port}"}


# -- a proxy that misbehaves ---------------------------------------------------------------------


@contextlib.asynccontextmanager
async def misbehaving_proxy(reply: list[bytes]) -> AsyncIterator[int]:
    """A CONNECT proxy on a port it yields: it sends ``reply`` (in those pieces, each its own
    packet) and then relays to the origin. Every connection it opened is closed on exit."""
    writers: list[asyncio.StreamWriter] = []
    tasks: set[asyncio.Task[None]] = set()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        writers.append(writer)
        with contextlib.suppress(ConnectionError):
            head = await reader.readuntil(b"\r\n\r\n")
            host, _, port = head.split(b" ", 2)[1].decode().rpartition(":")
            origin_reader, origin_writer = await asyncio.open_connection(host, int(port))
            writers.append(origin_writer)
            for piece in reply:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0.05)  # a separate packet
            await asyncio.gather(relay(reader, origin_writer), relay(origin_reader, writer))
        tasks.discard(task)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for writer in writers:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for w in writers), return_exceptions=True)
        await server.wait_closed()


async def test_a_connect_reply_in_pieces_is_not_part_of_the_record(tmp_path: Path) -> None:
    """A reply whose blank line comes in a later packet: the records still start at the
    origin's status line (a one-read client would record the rest of the proxy's reply)."""
    async with site() as server:
        direct = await run_crawl(tmp_path / "direct", server.url("/"))
        pieces = [b"HTTP/1.1 200 Connection established\r\n", b"X-Proxy: slow\r\n", b"\r\n"]
        async with misbehaving_proxy(pieces) as port:
            result = await run_crawl(
                tmp_path / "proxied", server.url("/"), proxy=f"http://127.0.0.1:{port}"
            )
    assert exit_code(direct.status) == 0 and exit_code(result.status) == 0, result.reason
    assert comparable(tmp_path / "proxied") == comparable(tmp_path / "direct")


async def test_bytes_after_the_connect_reply_fail_the_fetch(tmp_path: Path) -> None:
    surplus = [b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 200 OK\r\n"]
    async with site() as server, misbehaving_proxy(surplus) as port:
        result = await run_crawl(
            tmp_path / "out", server.url("/"), proxy=f"http://127.0.0.1:{port}", max_tries=1
        )
    assert exit_code(result.status) == EXIT_FAILED
    assert "sent data before the origin" in (tmp_path / "out" / "crawl.log.jsonl").read_text()
