"""The cookie jar as part of the crawl's state: a crawl killed with SIGKILL and resumed still
sends the session cookie it had, and the processes of a Redis crawl share one jar.

The crawler runs as ``python -m archiver crawl`` subprocesses on a site served from a thread of
this process. The site sets its session cookie on the first visit to ``/`` only, and answers
every other page 403 without it: a resumed process, or a second process of a shared crawl, can
only send the cookie if the jar's state carried it.
"""

from __future__ import annotations

import asyncio
import collections
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.processes.test_multiprocess import hold_until_processes_join, redis_args
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
SESSION = "c2Vzc2lvbi0xMjM0NQ=="
RUN_TIMEOUT = 180
HANG_GUARD = 120.0  #: how long a held page waits for the test at most (never reached)


@pytest.fixture
def redis_tcp() -> Iterator[RedisServer]:
    with RedisServer(tcp=True) as server:
        yield server


class SessionSite:
    """``/`` sets the session cookie on its first visit only; ``/pN`` need it (else 403).

    Pages can be held (``hold``) until the test releases them: the crawl is then killed with
    requests in flight. Every page request is noted with its User-Agent and Cookie header.
    """

    def __init__(self, site: SiteServer, pages: int) -> None:
        self.site = site
        self.paths = [f"/p{n}" for n in range(pages)]
        self.homes = 0
        self.seen: list[tuple[str, str, str | None]] = []  # (path, user agent, cookie)
        self.first_page = threading.Event()
        self.holding = True
        self._lock = threading.Lock()
        site.add_handler("/", self._home)
        for path in self.paths:
            site.add_handler(path, self._page)

    async def _home(self, _: web.Request) -> web.StreamResponse:
        links = "".join(f'<a href="{path}">{path}</a>' for path in self.paths)
        response = web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
        with self._lock:
            self.homes += 1
            if self.homes == 1:
                response.headers["Set-Cookie"] = f"sid={SESSION}; Path=/; HttpOnly"
        return response

    async def _page(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.seen.append(
                (request.path, request.headers.get("User-Agent", ""), request.headers.get("Cookie"))
            )
        self.first_page.set()
        deadline = time.monotonic() + HANG_GUARD
        while self.holding and time.monotonic() < deadline:  # noqa: ASYNC110 - the test releases
            await asyncio.sleep(0.01)
        if request.headers.get("Cookie") != f"sid={SESSION}":
            return web.Response(status=403, text="no session")
        return web.Response(text="<html>members</html>", content_type="text/html")


def crawl_command(url: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        url,
        "--output",
        str(out),
        "--robots",
        "ignore",
        "--sitemaps",
        "off",
        "--per-host-delay",
        "0",
        "--quiet",
        "--min-free-disk",
        "0",
        *extra,
    ]


def page_statuses(out: Path) -> collections.Counter[int]:
    return collections.Counter(
        int(rec.block.split(b" ", 2)[1])
        for rec in responses(out / "warcs")
        if rec.uri is not None and "/p" in rec.uri
    )


def test_a_resumed_crawl_still_sends_the_session_cookie(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with SiteServer().running_in_thread() as server:
        site = SessionSite(server, pages=30)
        command = crawl_command(server.url("/"), out, "--workers", "4")
        proc = subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True)
        try:
            # pages are requested (so / was fetched and the cookie received), then the jar's
            # state file holds it: SIGKILL with page requests in flight
            assert site.first_page.wait(RUN_TIMEOUT)
            state = out / "state" / "cookies.txt"
            deadline = time.monotonic() + RUN_TIMEOUT
            while f"sid\t{SESSION}" not in (state.read_text() if state.exists() else ""):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=RUN_TIMEOUT)
        assert proc.returncode == -signal.SIGKILL
        site.holding = False
        killed_at = len(site.seen)
        resumed = subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
        )
        assert resumed.returncode == 0, resumed.stderr
        assert "resuming the crawl" in resumed.stderr
    after = site.seen[killed_at:]
    assert after, "the resumed crawl fetched no page"
    assert all(cookie == f"sid={SESSION}" for _, _, cookie in after), after
    assert page_statuses(out) == {200: 30}


def test_two_processes_of_a_redis_crawl_share_the_jar(
    tmp_path: Path, redis_tcp: RedisServer
) -> None:
    """One process receives the cookie; both send it. Each page is held until both processes
    have asked for pages (told apart by their User-Agent), so both take part."""
    out = tmp_path / "out"
    with SiteServer().running_in_thread() as server:
        site = SessionSite(server, pages=24)
        site.holding = False
        hold_until_processes_join(server, redis_tcp, "jar", 2)
        both = threading.Event()
        page = server.routes["/p0"]

        async def until_both(request: web.Request) -> web.StreamResponse:
            response = await page(request)
            agents = {agent for _, agent, _ in site.seen}
            if len(agents) >= 2:
                both.set()
            deadline = time.monotonic() + HANG_GUARD
            while not both.is_set() and time.monotonic() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            return response

        for path in site.paths:
            server.routes[path] = until_both
        procs = [
            subprocess.Popen(
                crawl_command(
                    server.url("/"),
                    out,
                    *redis_args(redis_tcp, "jar"),
                    "--workers",
                    "2",
                    "--per-host-concurrency",
                    "4",
                    "--user-agent",
                    f"archiver-test-{name}",
                ),
                cwd=REPO,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in ("a", "b")
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=RUN_TIMEOUT)
            assert proc.returncode == 0, err
    assert site.homes == 1
    agents = collections.Counter(agent for _, agent, _ in site.seen)
    assert set(agents) == {"archiver-test-a", "archiver-test-b"}, agents
    assert all(cookie == f"sid={SESSION}" for _, _, cookie in site.seen), site.seen
    assert page_statuses(out) == {200: 24}
