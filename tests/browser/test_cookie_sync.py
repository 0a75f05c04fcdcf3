"""The browser's cookie store and the crawl's jar kept in step (pipeline.cookiesync), in real
Chromium: what a page's script sets, changes or deletes reaches the jar before the page's next
request; what the jar holds (HttpOnly cookies too) is what the page's scripts see; a fresh
Chromium gets the whole jar."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from archiver.browser.cookies import BrowserCookie
from archiver.browser.exchange import BrowserRequest, BrowserResponse, Refusal
from archiver.browser.pool import BrowserConfig, BrowserPool
from archiver.fetch.cookies import CrawlCookieJar, CrawlCookies, FileCookieStore
from archiver.fetch.cookiestxt import CookieLine, parse_text
from archiver.pipeline.cookiesync import BrowserCookies, jar_changes, page_changes
from tests.browser.conftest import SiteHandler
from tests.support.site import SiteServer

pytestmark = pytest.mark.usefixtures("chromium_installed")

PAGE = """<!DOCTYPE html><html><head><title>cookies</title></head><body><script>
const seen = document.cookie;
document.cookie = "made=by-script; path=/";
document.cookie = "changed=new; path=/";
document.cookie = "doomed=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT";
fetch("/after").then(() => { document.title = "seen: " + seen; });
</script></body></html>"""


async def jar_with(*lines: CookieLine, store: FileCookieStore | None = None) -> CrawlCookies:
    """The crawl's jar (with its store, opened) holding ``lines``."""
    cookies = CrawlCookies(CrawlCookieJar(), store)
    await cookies.open()
    for line in lines:
        cookies.jar.apply(line)
    return cookies


class Syncing:
    """A handler that keeps the stores in step before each request, as the crawl's does, and
    notes what the jar held when each request was made."""

    def __init__(self, site: SiteHandler, sync: BrowserCookies, cookies: CrawlCookies) -> None:
        self.site = site
        self.sync = sync
        self.cookies = cookies
        self.jar_at: dict[str, dict[str, str]] = {}

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | Refusal:
        await self.sync.sync()
        self.jar_at[request.url] = {line.name: line.value for line in self.cookies.jar.lines()}
        return await self.site(request)


def host_cookie(name: str, value: str, *, http_only: bool = False) -> CookieLine:
    return CookieLine("127.0.0.1", True, "/", False, 0, name, value, http_only=http_only)


async def test_what_a_script_sets_reaches_the_jar_before_its_next_request(
    browser_config: Callable[..., BrowserConfig], handler: SiteHandler, tmp_path: Path
) -> None:
    async with SiteServer() as site:
        site.add_page("/", PAGE)
        site.add_page("/after", "ok")
        state = tmp_path / "state" / "cookies.txt"
        cookies = await jar_with(
            host_cookie("session", "jar-secret", http_only=True),
            host_cookie("changed", "old"),
            host_cookie("doomed", "soon"),
            store=FileCookieStore(state),
        )
        async with BrowserPool(browser_config(behaviors=("none",))) as pool:
            sync = BrowserCookies(pool, cookies)
            answer = Syncing(handler, sync, cookies)
            result = await pool.load(site.url("/"), answer)
            await sync.sync()
    # the page saw the jar's cookies its scripts may read (not the HttpOnly one)
    assert result.title == "seen: changed=old; doomed=soon"
    # its request after the script ran went with what the script set, changed and deleted
    before = answer.jar_at[site.url("/after")]
    assert before == {"session": "jar-secret", "changed": "new", "made": "by-script"}
    assert sync.from_pages == 3
    assert {line.name: line.value for line in cookies.jar.lines()} == before
    # and the jar handed them to its store (resume, the other processes of a crawl)
    await cookies.close()
    stored = {line.name: line.value for line in parse_text(state.read_text())}
    assert stored == {"made": "by-script", "changed": "new"}


async def test_a_fresh_chromium_gets_the_whole_jar(
    browser_config: Callable[..., BrowserConfig], handler: SiteHandler
) -> None:
    async with SiteServer() as site:
        site.add_page("/", "<title>x</title><script>document.title = document.cookie;</script>")
        cookies = await jar_with(host_cookie("kept", "1"))
        async with BrowserPool(browser_config(behaviors=("none",), restart_after=1)) as pool:
            sync = BrowserCookies(pool, cookies)
            answer = Syncing(handler, sync, cookies)
            first = await pool.load(site.url("/"), answer)
            cookies.jar.apply(host_cookie("later", "2"))
            second = await pool.load(site.url("/"), answer)  # a new Chromium: restart_after=1
            assert pool.stats.launches == 2
    assert first.title == "kept=1"
    assert second.title == "kept=1; later=2"
    assert sync.from_pages == 0  # nothing the pages did: no change went back to the jar


def cookie(name: str, value: str, **overrides: object) -> BrowserCookie:
    values: dict[str, object] = {
        "name": name,
        "value": value,
        "domain": "a.example",
        "host_only": True,
        "path": "/",
        "secure": False,
        "http_only": False,
    }
    values.update(overrides)
    return BrowserCookie(**values)  # type: ignore[arg-type]


def test_changes_are_told_apart_from_expiry() -> None:
    known = {
        c.key: c for c in (cookie("a", "1"), cookie("b", "1"), cookie("old", "x", expires=10.0))
    }
    held = {c.key: c for c in (cookie("a", "1", expires=99.0), cookie("c", "1"))}
    changed, deleted = page_changes(known, held, now=50.0)
    # a renewed expiry is no change; "b" was deleted; "old" expired (not a deletion)
    assert [c.name for c in changed] == ["c"]
    assert [key[2] for key in deleted] == ["b"]
    to_set, to_delete = jar_changes({cookie("a", "2").key: cookie("a", "2")}, held)
    assert [(c.name, c.value) for c in to_set] == [("a", "2")]
    assert [c.name for c in to_delete] == ["c"]
