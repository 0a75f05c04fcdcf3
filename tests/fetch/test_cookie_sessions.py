"""A new login before a resume is a new session: the jar keeps what the site set since the
cookies were loaded, unless other cookies are loaded (a new profile), which replace them."""

from __future__ import annotations

from pathlib import Path

from archiver.fetch.cookies import CrawlCookieJar, CrawlCookies, FileCookieStore
from archiver.fetch.cookiestxt import CookieLine


def line(name: str, value: str) -> CookieLine:
    return CookieLine("members.example.org", True, "/", False, 0, name, value)


async def opened(state: Path, loaded: tuple[CookieLine, ...]) -> CrawlCookies:
    cookies = CrawlCookies(CrawlCookieJar(), FileCookieStore(state), loaded)
    await cookies.open()
    return cookies


def held(cookies: CrawlCookies) -> dict[str, str]:
    return {cookie.name: cookie.value for cookie in cookies.jar.lines()}


async def test_a_new_profile_replaces_the_old_sessions_cookies(tmp_path: Path) -> None:
    state = tmp_path / "state" / "cookies.txt"
    first_login = (line("sid", "old-session"), line("auth", "old-token"))
    run = await opened(state, first_login)
    # during the crawl the site (or a page's script) set a cookie from the old session
    run.jar.apply(line("feedkey", "f-old-token"))
    run.jar.pending[("members.example.org", "", "feedkey")] = line("feedkey", "f-old-token")
    await run.close()

    # resumed with the same profile: what was set since is kept
    same = await opened(state, first_login)
    assert held(same) == {"sid": "old-session", "auth": "old-token", "feedkey": "f-old-token"}
    await same.close()

    # resumed after a new login: the new session alone
    second_login = (line("sid", "new-session"), line("auth", "new-token"))
    renewed = await opened(state, second_login)
    assert held(renewed) == {"sid": "new-session", "auth": "new-token"}
    await renewed.close()
    again = await opened(state, second_login)
    assert held(again) == {"sid": "new-session", "auth": "new-token"}
    await again.close()


async def test_cookies_loaded_on_a_resume_of_a_crawl_that_had_none_keep_the_sites(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state" / "cookies.txt"
    run = await opened(state, ())
    run.jar.apply(line("lang", "en"))
    run.jar.pending[("members.example.org", "", "lang")] = line("lang", "en")
    await run.close()
    resumed = await opened(state, (line("sid", "s"),))
    assert held(resumed) == {"lang": "en", "sid": "s"}
    await resumed.close()
