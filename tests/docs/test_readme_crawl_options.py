"""The README's crawl examples, each run as written against a local site of its own.

``https://example.org/`` (and ``members.example.org``) becomes the local site's URL, the proxy's
and Redis' addresses those of a real microsocks and redis-server started here; everything else
is as shown. The crawls are latency-bound (the default politeness: 0.5 s between requests to a
host), so they all start at once with the module (the second browser crawl once the first is
done) and each test collects its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from archiver.config.settings import available_cores
from tests.docs.registry import documents
from tests.docs.shell import DocShell, fixed_port, read_until, wait_for, workdir
from tests.support.proxies import MicroSocks
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = "https://example.org/"
BROWSER_AUTO = ".venv/bin/archiver crawl https://example.org/ --browser auto"
BROWSER_ALL = ".venv/bin/archiver crawl https://example.org/ --browser all"
COOKIES = "archiver crawl https://members.example.org/ --cookies cookies.txt --save-cookies jar.txt"
PROXY = (
    "archiver crawl https://example.org/ --proxy socks5h://user:pass@proxy.example:1080 "
    "--no-proxy-for intranet.example"
)
PROXY_URL = "socks5h://user:pass@proxy.example:1080"
STATUS = "archiver crawl https://example.org/ --status-port 9811"
CURL = "curl -s 127.0.0.1:9811/metrics | grep archiver_captures"
STATUS_PORT = 9811
PROCESSES = "archiver crawl https://example.org/ --output crawls/example --processes auto"
REDIS = (
    "archiver crawl https://example.org/ --output crawls/example "
    "--frontier redis://127.0.0.1:6379/0 --crawl-id example"
)
REDIS_URL = "redis://127.0.0.1:6379/0"
MEMBERS = "https://members.example.org/"
#: A cookie for the local site, in the Netscape format (host-only, any path, not Secure).
COOKIES_TXT = "# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t4102444800\tmember\tm1\n"
EXAMPLE_CONFIG = "archiver crawl --config config/example.toml"

PAGES = ("/", "/a", "/b")


def small_site(site: SiteServer) -> SiteServer:
    """Three pages, a stylesheet and an image: every request a crawl of it makes is known."""
    site.add_page("/", '<link rel="stylesheet" href="/s.css"><a href="/a">a</a> <a href="/b">b</a>')
    site.add_page("/a", '<img src="/i.png"><a href="/b">b</a>')
    site.add_page("/b", "<p>b</p>")
    site.add_file("/s.css", b"p { color: green }", "text/css")
    site.add_file("/i.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
    return site


SHELL = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Shell</title>
<script src="/app.js" defer></script></head><body><div id="root"></div></body></html>"""
APP = """fetch("/api/items.json").then((r) => r.json()).then((items) => {
  document.getElementById("root").innerHTML =
    items.map((i) => `<a href="${i.href}">${i.title}</a>`).join(" ");
});"""
ABOUT = (
    "<!DOCTYPE html><html><head><title>About</title></head><body><h1>About us</h1><p>"
    + "An ordinary page, written on the server, with text and no script at all. " * 8
    + '</p><a href="/">home</a></body></html>'
)


def client_rendered_site(site: SiteServer) -> SiteServer:
    """A page whose only link is built by its script from JSON, and an ordinary page."""
    site.add_page("/", SHELL)
    site.add_file("/app.js", APP.encode(), "text/javascript")
    site.add_file("/api/items.json", b'[{"href": "/about", "title": "About"}]', "application/json")
    site.add_page("/about", ABOUT)
    return site


def cookie_site(site: SiteServer) -> SiteServer:
    """Sets a session cookie on its home page and links a members' page."""
    site.add_page(
        "/", '<a href="/members">members</a>', headers={"Set-Cookie": "session=s1; Path=/"}
    )
    site.add_page("/members", "<p>members only</p>")
    return site


@dataclass
class Held:
    """A site whose one link is answered only once the test says so."""

    site: SiteServer
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.site.add_page("/", '<a href="/slow">slow</a>')

        async def slow(_: web.Request) -> web.StreamResponse:
            self.entered.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 120)
            return web.Response(text="at last", content_type="text/html")

        self.site.add_handler("/slow", slow)


@dataclass
class Started:
    process: subprocess.Popen[str]
    cwd: Path
    site: SiteServer

    def finished(self, timeout: float = 240) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def output(self) -> Path:
        """The crawl directory, wherever the command put it under ``crawls/``."""
        (found,) = [p for p in (self.cwd / "crawls").iterdir() if p.name != "day1"]
        return found


@dataclass
class Examples:
    started: dict[str, Started]
    later: dict[str, Callable[[], Started]]  #: started when their test asks for them
    proxy: MicroSocks
    redis: RedisServer
    held: Held
    sites: list[SiteServer]

    def run(self, command: str) -> Started:
        if command not in self.started:
            self.started[command] = self.later.pop(command)()
        return self.started[command]


def example_config(cwd: Path, www: SiteServer, blog: SiteServer) -> None:
    """config/example.toml with its two remote seeds replaced by the two local sites."""
    text = (REPO / "config" / "example.toml").read_text()
    text = text.replace('"https://www.example.org/"', json.dumps(www.url("/")))
    text = text.replace('"https://blog.example.org/"', json.dumps(blog.url("/")))
    (cwd / "config").mkdir()
    (cwd / "config" / "example.toml").write_text(text)


@pytest.fixture(scope="module")
def examples(doc: DocShell, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Examples]:
    with ExitStack() as stack:

        def serve(build: Callable[[SiteServer], object] = small_site) -> SiteServer:
            site = stack.enter_context(SiteServer().running_in_thread())
            build(site)
            return site

        def start(
            command: str,
            site: SiteServer,
            *,
            origin: str = EXAMPLE,
            extra: Mapping[str, str] | None = None,
            cwd: Path | None = None,
        ) -> Started:
            """``command`` in a directory of its own, with the remote URL it shows
            (``origin``) replaced by ``site``'s and ``extra``'s URLs by theirs."""
            cwd = cwd or workdir(tmp_path_factory.mktemp("example"))
            urls = {origin: site.url("/"), **(extra or {})}
            return Started(doc.start(command, cwd=cwd, replace=urls), cwd, site)

        proxy = stack.enter_context(MicroSocks(user="user", password="pass"))
        redis = stack.enter_context(RedisServer(tcp=True))
        held = Held(serve(lambda _: None))
        www, blog = serve(config_site_www), serve(config_site_blog)
        cookies = workdir(tmp_path_factory.mktemp("cookies"))
        (cookies / "cookies.txt").write_text(COOKIES_TXT)
        config = workdir(tmp_path_factory.mktemp("config"))
        example_config(config, www, blog)
        started = {
            BROWSER_AUTO: start(BROWSER_AUTO, serve(client_rendered_site)),
            PROXY: start(PROXY, serve(), extra={PROXY_URL: proxy.url("socks5h")}),
            PROCESSES: start(PROCESSES, serve()),
            REDIS: start(REDIS, serve(), extra={REDIS_URL: redis.url}),
            COOKIES: start(COOKIES, serve(cookie_site), origin=MEMBERS, cwd=cookies),
            EXAMPLE_CONFIG: Started(doc.start(EXAMPLE_CONFIG, cwd=config), config, www),
        }
        # the second Chromium starts once the first is done: two at once on a busy 2-core
        # machine have timed out each other's DevTools commands
        all_pages = serve(client_rendered_site)
        later = {BROWSER_ALL: lambda: start(BROWSER_ALL, all_pages)}
        try:
            yield Examples(started, later, proxy, redis, held, [www, blog])
        finally:
            held.release.set()
            for run in started.values():
                if run.process.poll() is None:
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.communicate()


def config_site_www(site: SiteServer) -> SiteServer:
    """www: pages, and the links config/example.toml's exclude patterns are there for."""
    site.add_page(
        "/",
        '<a href="/about">about</a> <a href="/post?replytocom=5">reply</a> '
        '<a href="/wp-login.php">log in</a> <a href="/events/2024/05/">May</a>',
    )
    site.add_page("/about", "<p>about</p>")
    return site


def config_site_blog(site: SiteServer) -> SiteServer:
    site.add_page("/", '<a href="/post">post</a>')
    site.add_page("/post", "<p>a post</p>")
    return site


def captured_paths(directory: Path, site: SiteServer) -> set[str]:
    return {str(r.uri).removeprefix(site.origin) for r in responses(directory / "warcs") if r.uri}


def summary(directory: Path) -> dict[str, object]:
    loaded = json.loads((directory / "summary.json").read_text())
    assert isinstance(loaded, dict)
    return loaded


# ------------------------------------------------------------------------------------ tests


@pytest.mark.parametrize(
    ("command", "through_the_browser"),
    [
        pytest.param(BROWSER_AUTO, ["/"], marks=documents(BROWSER_AUTO), id="auto"),
        pytest.param(BROWSER_ALL, ["/", "/about"], marks=documents(BROWSER_ALL), id="all"),
    ],
)
def test_browser(examples: Examples, command: str, through_the_browser: list[str]) -> None:
    """``auto`` loads the page only its script fills in a browser, ``all`` every page; either
    way the link the script built is followed and the JSON it fetched is recorded."""
    run = examples.run(command)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    out_dir = run.output()
    browser = summary(out_dir)["browser"]
    assert isinstance(browser, dict)
    assert browser["pages"] == len(through_the_browser) and browser["failed"] == 0, (
        f"{browser}\n{err}"
    )
    assert {"/", "/app.js", "/api/items.json", "/about"} <= captured_paths(out_dir, run.site)
    pages = [
        json.loads(line).get("url")
        for line in (out_dir / "crawl.log.jsonl").read_text().splitlines()
        if '"browser-page"' in line
    ]
    assert sorted(str(url).removeprefix(run.site.origin) for url in pages) == through_the_browser


@documents(COOKIES)
def test_cookies(examples: Examples) -> None:
    """The cookie of cookies.txt goes with every request; the one the site sets comes back on
    the next; both are in the jar written at the end."""
    run = examples.run(COOKIES)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    sent = {hit.path: hit.headers.get("Cookie", "") for hit in run.site.counters.hits}
    assert sent["/"] == "member=m1"
    assert sorted(sent["/members"].split("; ")) == ["member=m1", "session=s1"]
    jar = (run.cwd / "jar.txt").read_text()
    assert "\tmember\tm1" in jar and "\tsession\ts1" in jar
    assert (run.cwd / "jar.txt").stat().st_mode & 0o077 == 0  # the owner's only


@documents(PROXY)
def test_proxy(examples: Examples) -> None:
    """Every request went through the SOCKS5 proxy, with the credentials of the URL (microsocks
    refuses others), and the proxy resolved the name (socks5h)."""
    run = examples.run(PROXY)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    assert {"/", "/a", "/b", "/s.css", "/i.png"} <= captured_paths(run.output(), run.site)
    assert set(examples.proxy.destinations()) == {f"127.0.0.1:{run.site.port}"}


@documents(STATUS, CURL)
def test_status_endpoint_read_with_curl(doc: DocShell, examples: Examples, tmp_path: Path) -> None:
    """While the crawl is held on a page, the documented curl line reads its captures so far;
    the crawl then completes. Port 9811 is the README's: its machine-wide lock is held."""
    held = examples.held
    cwd = workdir(tmp_path)
    with fixed_port(STATUS_PORT):
        crawl = doc.start(STATUS, cwd=cwd, replace={EXAMPLE: held.site.url("/")})
        try:
            wait_for(held.entered, crawl)
            read_until(crawl.stderr, r"status at http://127\.0\.0\.1:9811/")
            metrics = doc.run(CURL, cwd=cwd)
        finally:
            held.release.set()
            _, err = crawl.communicate(timeout=120)
    assert crawl.returncode == 0, err[-3000:]
    assert metrics.returncode == 0, metrics.stderr
    values = {
        line.split()[0]: float(line.split()[1])
        for line in metrics.stdout.splitlines()
        if not line.startswith("#")
    }
    assert values["archiver_captures_total"] >= 1  # robots.txt and / at least, /slow not yet
    assert not [line for line in metrics.stdout.splitlines() if "archiver_captures" not in line]


@documents(PROCESSES)
def test_every_core(examples: Examples) -> None:
    run = examples.run(PROCESSES)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    out_dir = run.cwd / "crawls" / "example"
    assert {"/", "/a", "/b", "/s.css", "/i.png"} <= captured_paths(out_dir, run.site)
    assert max(hit_counts(run.site).values()) == 1  # each URL once, whatever the processes
    processes = {p.name for p in (out_dir / "state").iterdir() if re.search(r"-p\d+$", p.name)}
    assert len(processes) == (available_cores() if available_cores() > 1 else 0)


@documents(REDIS)
def test_redis_frontier(examples: Examples) -> None:
    run = examples.run(REDIS)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    out_dir = run.cwd / "crawls" / "example"
    assert {"/", "/a", "/b", "/s.css", "/i.png"} <= captured_paths(out_dir, run.site)
    (process_state,) = (out_dir / "state").iterdir()  # HOST-PID: this process's own
    index = (out_dir / "index.cdxj").read_text().splitlines()
    assert len(index) == summary(process_state)["captures"]
    keys = subprocess.run(
        [shutil.which("redis-cli") or "redis-cli", "-u", examples.redis.url, "--scan"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.split()
    assert keys and all("example" in key for key in keys), keys  # the crawl id names them


@documents(EXAMPLE_CONFIG)
def test_example_config(examples: Examples) -> None:
    """Both seeds crawled, the excluded links never requested, the From header sent, the
    WACZ and the Heritrix log written, the operator in every warcinfo record."""
    run = examples.run(EXAMPLE_CONFIG)
    code, _, err = run.finished()
    assert code == 0, err[-3000:]
    www, blog = examples.sites
    out_dir = run.cwd / "crawls" / "example-org"
    assert {www.url("/"), www.url("/about"), blog.url("/"), blog.url("/post")} <= {
        str(r.uri) for r in responses(out_dir / "warcs")
    }
    requested = [hit.path for hit in www.counters.hits] + [hit.path for hit in blog.counters.hits]
    assert not {"/wp-login.php", "/events/2024/05/"} & set(requested)
    assert not [hit for hit in www.counters.hits if "replytocom" in hit.query]
    assert {hit.headers.get("From") for hit in www.counters.hits} == {"webarchive@example.org"}
    assert (out_dir / "example-org.wacz").is_file() and (out_dir / "crawl.log").is_file()


def hit_counts(site: SiteServer) -> dict[str, int]:
    counts: dict[str, int] = {}
    for hit in site.counters.hits:
        counts[hit.path] = counts.get(hit.path, 0) + 1
    return counts
