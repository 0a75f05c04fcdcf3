"""The crawl's cookie jar, against real local servers: what a site sets is sent back as a browser
would, request records hold the Cookie header exactly as it went on the wire, a cookies.txt file
unlocks a members' page and its cookies go only where their domain says, and the jar is saved.

The sites are raw servers (:mod:`tests.support.raw`): they record every request's bytes, so a
request record can be compared with what the server received, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from yarl import URL

from archiver.commands.cli import main
from archiver.commands.exits import exit_code
from archiver.config.settings import load_settings
from archiver.fetch.cookies import (
    CrawlCookieJar,
    CrawlCookies,
    FileCookieStore,
    field_name,
)
from archiver.fetch.cookiestxt import (
    CookieFileError,
    CookieLine,
    format_text,
    parse_line,
    parse_text,
)
from archiver.fetch.fetcher import FetchConfig, Fetcher, relayed_fields
from archiver.policy.netguard import AddressPolicy
from tests.conftest import run_crawl
from tests.support.raw import RawServer
from tests.support.tls import self_signed_server
from tests.support.warcs import read_records, responses

#: base64 with padding: aiohttp's default jar would send it back quoted ("...=="), which a
#: server that does not strip quotes reads as another session
SESSION = "c2Vzc2lvbi0xMjM0NQ=="
PAGES = ("/a", "/b", "/c")

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Awaitable[bool]]


def http(status: str, body: bytes, *headers: str) -> bytes:
    head = [f"HTTP/1.1 {status}", "Content-Type: text/html", f"Content-Length: {len(body)}"]
    return ("\r\n".join([*head, *headers]) + "\r\n\r\n").encode() + body


def cookie_header(request: bytes) -> str | None:
    for line in request.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"cookie":
            return value.strip().decode("latin-1")
    return None


def requiring(cookie: str, body: bytes = b"<p>members only</p>") -> RawHandler:
    """A page that answers 403 unless the request's Cookie header is exactly ``cookie``."""

    async def handler(_: asyncio.StreamReader, writer: asyncio.StreamWriter, req: bytes) -> bool:
        ok = cookie_header(req) == cookie
        writer.write(http("200 OK", body) if ok else http("403 Forbidden", b"no session"))
        await writer.drain()
        return True

    return handler


def session_site(server: RawServer) -> None:
    """``/`` sets a session cookie and links to pages that answer 403 without it."""
    links = "".join(f'<a href="{path}">{path}</a>' for path in PAGES).encode()
    server.add("/", http("200 OK", links, f"Set-Cookie: sid={SESSION}; Path=/; HttpOnly"))
    for path in PAGES:
        server.add_handler(path, requiring(f"sid={SESSION}"))


def statuses(out: Path) -> dict[str, int]:
    result = {}
    for rec in responses(out / "warcs"):
        assert rec.uri is not None
        result[rec.uri] = int(rec.block.split(b" ", 2)[1])
    return result


# -- the format ---------------------------------------------------------------------------------


def test_cookies_txt_as_wget_curl_and_export_extensions_write_it() -> None:
    text = (
        "# Netscape HTTP Cookie File\n"
        "# https://curl.se/docs/http-cookies.html\n"
        "\n"
        ".example.org\tTRUE\t/\tTRUE\t2000000000\tsid\tabc==\n"
        '#HttpOnly_members.example.org\tFALSE\t/account\tFALSE\t0\ttoken\t"quoted value"\n'
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tempty\n"  # six fields: an exporter dropped the last tab
    )
    first, second, third = parse_text(text)
    assert first == CookieLine("example.org", False, "/", True, 2000000000, "sid", "abc==")
    assert second == CookieLine(
        "members.example.org", True, "/account", False, 0, "token", '"quoted value"', True
    )
    assert third.value == "" and third.host_only and third.domain == "127.0.0.1"
    assert set(parse_text(format_text([first, second, third]))) == {first, second, third}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("example.org\tTRUE\t/\tFALSE\t0", "expected 7 tab-separated fields, found 5"),
        ("example.org\tYES\t/\tFALSE\t0\ta\tb", "must be TRUE or FALSE"),
        ("example.org\tTRUE\t/\tFALSE\tnever\ta\tb", "not a Unix time"),
        # found by fuzzing: int(float(...)) raised OverflowError past the parser
        ("example.org\tTRUE\t/\tFALSE\tinf\ta\tb", "not a Unix time"),
        ("example.org\tTRUE\t/\tFALSE\t1e400\ta\tb", "not a Unix time"),
        # found by fuzzing: written back, a host-only ".#x" cookie became a comment line
        (".#x\tFALSE\t/\tFALSE\t0\ta\tb", "is no host name"),
        (". x.test\tFALSE\t/\tFALSE\t0\ta\tb", "is no host name"),
        ("\tTRUE\t/\tFALSE\t0\ta\tb", "needs a domain and a name"),
    ],
)
def test_a_line_that_is_not_a_cookie_is_named(line: str, message: str) -> None:
    with pytest.raises(CookieFileError, match=message):
        parse_text(f"# Netscape HTTP Cookie File\n{line}\n")
    with pytest.raises(CookieFileError, match=r"^line 2: "):
        parse_text(f"# Netscape HTTP Cookie File\n{line}\n")
    assert parse_line("# a comment") is None


# -- the jar in a crawl -------------------------------------------------------------------------


async def test_a_session_site_is_captured_with_the_jar(tmp_path: Path) -> None:
    async with RawServer() as server:
        session_site(server)
        result = await run_crawl(tmp_path / "jar", server.url("/"))
        assert exit_code(result.status) == 0
        assert statuses(tmp_path / "jar") == {
            server.url("/"): 200,
            **{server.url(path): 200 for path in PAGES},
        }
        for path in PAGES:
            (sent,) = server.requests_for(path)
            assert cookie_header(sent) == f"sid={SESSION}"  # as set: not re-quoted
        # the request records hold exactly the bytes the server received, Cookie included
        requests = [r for r in read_records(tmp_path / "jar" / "warcs") if r.type == "request"]
        assert sorted(r.block for r in requests) == sorted(server.requests)


async def test_without_the_jar_the_session_pages_are_refused(tmp_path: Path) -> None:
    async with RawServer() as server:
        session_site(server)
        await run_crawl(tmp_path / "nojar", server.url("/"), cookie_jar=False)
        assert statuses(tmp_path / "nojar") == {
            server.url("/"): 200,
            **{server.url(path): 403 for path in PAGES},
        }
        assert all(cookie_header(req) is None for req in server.requests)


async def test_a_cookies_file_unlocks_a_page_and_its_cookies_keep_to_their_domain(
    tmp_path: Path,
) -> None:
    """The members' host gets the cookie; a host-only cookie is not sent to its subdomain, a
    domain cookie is; another site linked from the page gets nothing."""
    async with RawServer() as members, RawServer() as other:
        port = members.port
        members.add(
            "/",
            http(
                "200 OK",
                f'<a href="/private">p</a><a href="http://sub.members.test:{port}/x">s</a>'
                f'<a href="{other.url("/")}">o</a>'.encode(),
            ),
        )
        members.add_handler("/private", requiring("host=h1; shared=s1"))
        members.add_handler("/x", requiring("shared=s1"))
        other.add("/", http("200 OK", b"another site"))
        cookies = tmp_path / "cookies.txt"
        cookies.write_text(
            "# Netscape HTTP Cookie File\n"
            "members.test\tFALSE\t/\tFALSE\t0\thost\th1\n"
            ".members.test\tTRUE\t/\tFALSE\t0\tshared\ts1\n"
            "other.test\tFALSE\t/\tFALSE\t0\tnot\tfor-127\n"
        )
        out = tmp_path / "out"
        result = await run_crawl(
            out,
            f"http://members.test:{port}/",
            cookies=cookies,
            resolve=(("members.test", "127.0.0.1"), ("sub.members.test", "127.0.0.1")),
            scope="any",
            max_depth=1,
            allow_private=True,  # the other site is on another loopback port
        )
        assert exit_code(result.status) == 0, result.reason
        got = statuses(out)
        assert got[f"http://members.test:{port}/private"] == 200
        assert got[f"http://sub.members.test:{port}/x"] == 200
        assert got[other.url("/")] == 200
        assert all(cookie_header(req) is None for req in other.requests)
        # nothing of the file reaches the log, the warcinfo or the state: only the requests
        # and the jar's own file hold cookie values
        for secret in ("h1", "s1", "for-127"):
            assert f"={secret}" not in (out / "crawl.log.jsonl").read_text()
            assert secret not in (out / "state" / "crawl.json").read_text()
            warcinfo = [r for r in read_records(out / "warcs") if r.type == "warcinfo"]
            assert warcinfo and all(secret.encode() not in r.block for r in warcinfo)
        assert stat.S_IMODE((out / "state" / "cookies.txt").stat().st_mode) == 0o600


async def test_loaded_cookies_are_withheld_from_an_unverified_host_its_own_are_not() -> None:
    """As configured credential headers are: never to a host whose certificate failed
    verification (capture-anyway mode). A cookie that host set itself goes back to it."""
    seen: list[str | None] = []

    async def page(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers.get("Cookie"))
        response = web.Response(text="tls")
        response.headers["Set-Cookie"] = "own=1"
        return response

    async with self_signed_server(page) as url:
        loaded = CookieLine("127.0.0.1", True, "/", False, 0, "secret", "from-file")
        config = FetchConfig(cookie_file=(loaded,), connect_timeout=30, fetch_timeout=30)
        async with Fetcher(config, AddressPolicy(allow_private=True)) as fetcher:
            await fetcher.fetch(url)
            await fetcher.fetch(url)
    assert seen == [None, "own=1"]


async def test_a_request_carries_one_cookie_header() -> None:
    """A configured ``Cookie`` header (a credential for the seed's host) and the jar's cookies
    go as one header (RFC 6265 section 5.4); a browser's own Cookie header is dropped by the
    filter the browser stage relays its requests through."""
    async with RawServer() as server:
        session_site(server)
        config = FetchConfig(
            extra_headers={"Cookie": "configured=1"},
            credential_scope={"127.0.0.1": frozenset({"http"})},
        )
        async with Fetcher(config, AddressPolicy(allow_private=True)) as fetcher:
            await fetcher.fetch(server.url("/"))
            await fetcher.fetch(server.url("/a"))
            browser = relayed_fields([("Cookie", "chromium=1"), ("Accept", "image/*")])
            assert browser == {"Accept": "image/*"}
            await fetcher.fetch(server.url("/b"), browser)
    for request in server.requests[1:]:
        assert request.lower().count(b"\r\ncookie:") == 1, request
        assert cookie_header(request) == f"configured=1; sid={SESSION}"


async def test_a_relayed_request_goes_with_the_fetchers_own_fields_only() -> None:
    """A page's request relayed through the fetcher (the browser stage, ``archiver qa --live``)
    leaves out its Cookie, Host, Content-Length and connection fields: the jar's Cookie and the
    fetcher's Host go out, once each, beside the page's other fields."""
    page = (
        ("Accept", "image/*"),
        ("Cookie", "chromium=1"),
        ("Host", "elsewhere.test"),
        ("Content-Length", "99"),
        ("Connection", "close"),
        ("TE", "trailers"),
        ("X-Page", "1"),
    )
    async with RawServer() as server:
        session_site(server)
        async with Fetcher(FetchConfig(), AddressPolicy(allow_private=True)) as fetcher:
            await fetcher.fetch(server.url("/"))
            await fetcher.fetch(server.url("/a"), relayed_fields(page))
    request = server.requests[-1]
    fields = [line.partition(b":") for line in request.split(b"\r\n")[1:] if line]
    names = [name.strip().lower() for name, _, _ in fields]
    values = {name.strip().lower(): value.strip() for name, _, value in fields}
    assert cookie_header(request) == f"sid={SESSION}"
    assert all(names.count(name) == 1 for name in (b"host", b"cookie", b"accept", b"x-page"))
    assert values[b"host"].startswith(b"127.0.0.1") and values[b"accept"] == b"image/*"
    assert not {b"content-length", b"te"} & set(names) and values.get(b"connection") != b"close"


async def test_save_cookies_writes_a_file_that_a_later_crawl_loads(tmp_path: Path) -> None:
    saved = tmp_path / "jar.txt"
    async with RawServer() as server:
        session_site(server)
        await run_crawl(tmp_path / "first", server.url("/"), save_cookies=saved)
    (line,) = parse_text(saved.read_text())
    assert (line.name, line.value, line.http_only, line.host_only) == ("sid", SESSION, True, True)
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    async with RawServer() as server:  # a new server: nothing sets the cookie any more
        server.add("/", http("200 OK", b'<a href="/a">a</a>'))
        server.add_handler("/a", requiring(f"sid={SESSION}"))
        result = await run_crawl(tmp_path / "second", server.url("/"), cookies=saved)
        assert exit_code(result.status) == 0
        assert statuses(tmp_path / "second")[server.url("/a")] == 200


async def test_the_state_file_keeps_the_jar_and_a_resume_reads_it(tmp_path: Path) -> None:
    """The store rewrites ``state/cookies.txt`` within its interval after a change, and
    another store (a resumed run) reads the same cookies back."""
    path = tmp_path / "state" / "cookies.txt"
    store = FileCookieStore(path, interval=0.01)
    line = CookieLine("example.org", False, "/", True, 2**31 - 1, "sid", "v1")
    gone = CookieLine("example.org", True, "/", False, 1, "old", "expired")
    await store.update({field_name(line.key): line.to_line(), field_name(gone.key): gone.to_line()})
    while not path.exists():  # noqa: ASYNC110 - the flush task writes it
        await asyncio.sleep(0.01)
    again = await FileCookieStore(path).load()
    assert again == {field_name(line.key): line.to_line()}  # the expired one was dropped
    await store.close()


async def test_the_same_cookies_file_on_resume_does_not_undo_what_the_site_set(
    tmp_path: Path,
) -> None:
    """A resumed run given the same ``--cookies`` file keeps the value the site set since; a
    changed file is applied."""
    path = tmp_path / "state" / "cookies.txt"
    url = URL("http://127.0.0.1/")

    async def run(loaded: CookieLine, set_cookie: str | None = None) -> str:
        cookies = CrawlCookies(CrawlCookieJar(), FileCookieStore(path), (loaded,))
        await cookies.open()
        if set_cookie is not None:
            cookies.jar.update_cookies_from_headers([set_cookie], url)
            await cookies.publish()
        value = cookies.jar.filter_cookies(url)["sid"].coded_value
        await cookies.close()
        return value

    old = CookieLine("127.0.0.1", True, "/", False, 0, "sid", "from-file")
    assert await run(old, "sid=refreshed-by-site; Path=/") == "refreshed-by-site"
    assert await run(old) == "refreshed-by-site"  # resumed with the same file
    new = CookieLine("127.0.0.1", True, "/", False, 0, "sid", "new-file")
    assert await run(new) == "new-file"  # a new file is applied


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("example.org\tTRUE\t/\n", "line 1: expected 7 tab-separated fields"),
        ("# Netscape HTTP Cookie File\n", "holds no cookie"),
        (b"\xff\xfe\x00binary", "is not a cookies.txt text file"),
    ],
)
def test_a_bad_cookies_file_is_a_one_line_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, expected: str
) -> None:
    path = tmp_path / "cookies.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    code = main(
        ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "out"), "--cookies", str(path)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "--cookies" in err and expected in err, err
    assert not (tmp_path / "out").exists()  # nothing was started


def test_save_cookies_into_no_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "jar.txt"
    code = main(
        ["crawl", "http://127.0.0.1:9/", "-o", str(tmp_path / "out"), "--save-cookies", str(target)]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--save-cookies" in err and "no such directory" in err, err
    assert not (tmp_path / "out").exists()


def test_no_cookies_with_a_cookies_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["crawl", "http://127.0.0.1:9/", "--no-cookies", "--cookies", str(tmp_path)])
    assert code == 2
    assert "--no-cookies" in capsys.readouterr().err


def test_the_jar_setting_is_named_in_warcinfo_settings(tmp_path: Path) -> None:
    settings = load_settings(None, {"seeds": ("http://x.test/",), "cookie_jar": "false"})
    assert json.loads(settings.to_json_text())["cookie_jar"] is False
