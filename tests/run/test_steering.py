"""Steering a running crawl through the command line: ``archiver pause`` / ``unpause`` and
``archiver add``, on real crawls (``archiver crawl`` in a subprocess, its ``--status-port``
read as a monitoring system reads it) of a local site, with the SQLite frontier and with
``--processes 2`` (the Redis frontier of a private redis-server).

What is asserted is what the site saw (each request, logged by the server) and what the crawl
says (``/status``, ``/metrics``, ``/healthz``, its log and summary): a paused crawl sends no
request for several seconds and its counters stay flat; it completes with every page fetched
exactly once; a URL no page links to, added while the crawl runs or while it is stopped, is
captured; bad input is one line, exit 2, and leaves the crawl as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.docs.registry import documents
from tests.docs.shell import DocShell, read_until, workdir
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer

PAGES = 24
#: Seconds the paused crawl is watched for a request or a counter that moves.
PAUSE_WATCH = 3.0

#: The page the site holds until the test lets it go (:func:`pause_while_held`): one request
#: at a time to the host, so the crawl can be paused at a known point, whatever the load.
HELD = "/p/3"

#: Crawl options: one request to the host at a time, a small delay between them.
QUICK = (
    "--per-host-concurrency",
    "1",
    "--per-host-delay",
    "0.05",
    "--robots",
    "ignore",
    "--sitemaps",
    "off",
    "--progress",
    "off",
    "--stats-interval",
    "0",
    "--status-port",
    "0",
)


def archiver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for ``condition`` (what the crawl or the site says), or fail saying ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def counters(metrics: str) -> dict[str, float]:
    """The counters of a /metrics scrape (what must not move while the crawl is paused)."""
    values = {}
    for line in metrics.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        if "_total" in name or name.startswith(("archiver_queued", "archiver_seen")):
            values[name] = float(value)
    return values


@dataclass
class Crawl:
    """``archiver crawl`` running in a subprocess, and its status endpoint."""

    process: subprocess.Popen[str]
    status_url: str
    output: Path

    def status(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(get(self.status_url + "status")[1])
        return data

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        _, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, err


def start_crawl(site: SiteServer, output: Path, *options: str) -> Crawl:
    command = [sys.executable, "-m", "archiver", "crawl", site.url("/"), "-o", str(output)]
    process = subprocess.Popen(
        [*command, *QUICK, *options], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    line, _ = read_until(process.stderr, r"status at http://127\.0\.0\.1:\d+/")
    return Crawl(process, line.split("status at ", 1)[1].split()[0], output)


@contextlib.contextmanager
def running(site: SiteServer, output: Path, *options: str) -> Iterator[Crawl]:
    crawl = start_crawl(site, output, *options)
    try:
        yield crawl
    finally:
        if crawl.process.poll() is None:
            crawl.process.kill()
            crawl.process.communicate()


class HeldSite(SiteServer):
    """The test site: ``/`` links to ``/p/0`` ... ``/p/23`` (and ``docs`` pages ``/docs/N``);
    ``/hidden`` and ``/unlinked-page`` are linked from nowhere; :data:`HELD` answers once
    :meth:`release` was called."""

    def __init__(self, *, docs: int = 0) -> None:
        super().__init__()
        self.released = asyncio.Event()
        pages = [f"/p/{n}" for n in range(PAGES)] + [f"/docs/{n}" for n in range(docs)]
        self.add_page("/", "".join(f'<a href="{page}">{page}</a>' for page in pages))
        for page in pages:
            self.add_page(page, f"<p>{page}</p>")
        self.add_page("/hidden", "<p>no page links here</p>")
        self.add_page("/unlinked-page", "<p>no page links here either</p>")
        body = b"<p>the held page</p>"

        async def held(_: web.Request) -> web.StreamResponse:
            await self.released.wait()
            return web.Response(body=body, content_type="text/html")

        self.add_handler(HELD, held)

    def release(self) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(self.released.set)


@pytest.fixture
def site() -> Iterator[HeldSite]:
    with HeldSite().running_in_thread() as served:
        assert isinstance(served, HeldSite)
        yield served


def pause_while_held(site: HeldSite, crawl: Crawl) -> None:
    """Pause the crawl while the held page is in flight (so it has not ended before the pause
    lands, however slowly ``archiver pause`` starts), then let that page finish and wait until
    nothing is in flight."""
    wait_for(lambda: site.counters.count(HELD) == 1, f"the crawl to request {HELD}")
    paused = archiver("pause", str(crawl.output))
    assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
    wait_for(lambda: bool(crawl.status()["paused"]), "/status to say paused")
    site.release()
    wait_for(lambda: paused_and_idle(crawl), "the held page to end, nothing in flight")


def hits(site: SiteServer) -> Counter[str]:
    return Counter(hit.path for hit in site.counters.hits)


MODES = {"sqlite": ("--frontier", "sqlite"), "processes": ("--processes", "2")}


def paused_and_idle(crawl: Crawl) -> bool:
    status = crawl.status()
    return bool(status["paused"]) and status["in_flight"] == 0


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_paused_crawl_fetches_nothing_then_completes(
    tmp_path: Path, site: HeldSite, mode: str
) -> None:
    out = tmp_path / "out"
    with running(site, out, *MODES[mode]) as crawl:
        pause_while_held(site, crawl)
        before, scrape = len(site.counters.hits), counters(get(crawl.status_url + "metrics")[1])
        time.sleep(PAUSE_WATCH)  # the window watched: no request, no counter that moves
        assert len(site.counters.hits) == before, "a request was sent while paused"
        assert counters(get(crawl.status_url + "metrics")[1]) == scrape
        metrics = get(crawl.status_url + "metrics")[1]
        assert "archiver_paused 1.0" in metrics
        health, body = get(crawl.status_url + "healthz")
        assert health == 200 and json.loads(body)["status"] == "paused"
        assert before < PAGES + 1  # pages were left to fetch
        unpaused = archiver("unpause", str(out))
        assert unpaused.returncode == 0, unpaused.stderr
        code, err = crawl.finish()
    assert code == 0, err[-3000:]
    fetched = hits(site)
    assert set(fetched) == {"/", *(f"/p/{n}" for n in range(PAGES))}
    assert max(fetched.values()) == 1  # every page exactly once
    events = [json.loads(line)["event"] for line in log_lines(out)]
    assert "paused" in events and "unpaused" in events


def log_lines(output: Path) -> list[str]:
    lines = []
    for log in sorted(output.rglob("crawl.log.jsonl")):
        lines += log.read_text().splitlines()
    return lines


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_paused_crawl_stops_on_a_signal_and_resumes_paused(
    tmp_path: Path, site: HeldSite, mode: str
) -> None:
    out = tmp_path / "out"
    with running(site, out, *MODES[mode]) as crawl:
        pause_while_held(site, crawl)
        stopped_at = time.monotonic()
        crawl.process.send_signal(signal.SIGTERM)
        code, err = crawl.finish(timeout=60)
        assert code == 3, err[-3000:]
        assert time.monotonic() - stopped_at < 30  # not the 30 s grace: nothing was in flight
    before = len(site.counters.hits)
    with running(site, out, *MODES[mode]) as again:  # the same command resumes: paused
        wait_for(lambda: bool(again.status()["paused"]), "the resumed crawl to say paused")
        assert len(site.counters.hits) == before
        assert archiver("unpause", str(out)).returncode == 0
        code, err = again.finish()
    assert code == 0, err[-3000:]
    fetched = hits(site)
    assert set(fetched) == {"/", *(f"/p/{n}" for n in range(PAGES))}
    assert max(fetched.values()) == 1  # nothing lost, nothing fetched twice


# -- archiver add ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_added_url_is_captured_and_bad_input_changes_nothing(
    tmp_path: Path, site: HeldSite, mode: str
) -> None:
    out = tmp_path / "out"
    (tmp_path / "more.txt").write_text("# one URL a line\n" + site.url("/hidden") + "\n")
    with running(site, out, *MODES[mode]) as crawl:
        pause_while_held(site, crawl)  # the crawl must not end meanwhile
        other = site.url("/").replace("127.0.0.1", "127.0.0.2")
        bad = [
            ([other + "x"], "out of the crawl's scope: it is on no seed's site"),
            (["http://[::1/"], "is not an http(s) URL"),
            (["ftp://127.0.0.1/x"], "is not an http(s) URL"),
            ([site.url("/p/1"), other], "out of the crawl's scope"),  # one bad: none added
        ]
        for urls, expected in bad:
            done = archiver("add", str(out), *urls)
            assert done.returncode == 2, done.stderr
            assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
        assert not list((out / "add").glob("*")) if (out / "add").exists() else True
        (out / "ignores").write_text("/p/5$\n")
        ignored = archiver("add", str(out), site.url("/p/5"))
        assert ignored.returncode == 2 and "ignores" in ignored.stderr, ignored.stderr
        (out / "ignores").unlink()
        added = archiver("add", str(out), "--file", str(tmp_path / "more.txt"))
        assert added.returncode == 0, added.stderr
        assert "1 URL for the crawl" in added.stdout
        assert archiver("unpause", str(out)).returncode == 0
        code, err = crawl.finish()
    assert code == 0, err[-3000:]
    fetched = hits(site)
    assert fetched["/hidden"] == 1  # linked from nowhere: captured because it was added
    assert set(fetched) == {"/", "/hidden", *(f"/p/{n}" for n in range(PAGES))}
    assert max(fetched.values()) == 1
    added_events = [json.loads(line) for line in log_lines(out)]
    added_events = [e for e in added_events if e["event"] == "added"]
    assert [(e["url"], e["by"], e["outcome"]) for e in added_events] == [
        (site.url("/hidden"), "operator", "queued")
    ]
    assert [p.name for p in (out / "add" / "done").iterdir()] == [added_events[0]["file"]]


def test_urls_added_to_a_stopped_crawl_are_queued_when_it_resumes(
    tmp_path: Path, site: HeldSite
) -> None:
    out = tmp_path / "out"
    with running(site, out, "--frontier", "sqlite") as crawl:
        pause_while_held(site, crawl)
        crawl.process.send_signal(signal.SIGTERM)
        code, err = crawl.finish()
        assert code == 3, err[-3000:]
    assert archiver("unpause", str(out)).returncode == 0  # else it resumes paused
    added = archiver("add", str(out), site.url("/hidden"), site.url("/p/0"))
    assert added.returncode == 0, added.stderr
    with running(site, out, "--frontier", "sqlite") as again:
        code, err = again.finish()
    assert code == 0, err[-3000:]
    fetched = hits(site)
    assert fetched["/hidden"] == 1 and max(fetched.values()) == 1
    outcomes = {
        e["url"]: e["outcome"] for e in map(json.loads, log_lines(out)) if e["event"] == "added"
    }
    assert outcomes == {site.url("/hidden"): "queued", site.url("/p/0"): "seen"}
    done = archiver("add", str(out), site.url("/p/1"))  # a completed crawl takes no more
    assert done.returncode == 2 and "is completed" in done.stderr, done.stderr


def test_pause_and_add_need_a_crawl_directory(tmp_path: Path) -> None:
    for command in (["pause"], ["unpause"], ["add"]):
        urls = ["http://a.test/"] if command == ["add"] else []
        done = archiver(*command, str(tmp_path / "nothing"), *urls)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "no crawl in" in done.stderr, done.stderr


# -- archiver queue -------------------------------------------------------------------------


def queue(*args: str) -> tuple[list[str], dict[str, int]]:
    """``archiver queue ARGS``: its lines, and the counts it ends with."""
    done = archiver("queue", *args)
    assert done.returncode == 0, done.stderr
    tail = done.stderr.strip().splitlines()[-1]
    numbers = dict(
        (name.replace(" ", "-"), int(count))
        for count, name in re.findall(r"(\d+) (queued|in flight|done|failed|skipped|listed)", tail)
    )
    return done.stdout.splitlines(), numbers


def agrees(crawl: Crawl, args: tuple[str, ...]) -> bool:
    """Whether ``archiver queue``'s counts are the frontier's own (/status) now."""
    status = crawl.status()
    _, counts = queue(*args)
    mine = (counts["queued"], counts["in-flight"], counts["done"])
    return mine == (status["queued"], status["in_flight"], status["done"])


@pytest.fixture(scope="module")
def redis_tcp() -> Iterator[RedisServer]:
    with RedisServer(tcp=True) as server:
        yield server


@pytest.mark.parametrize("mode", ["sqlite", "processes", "redis"])
def test_queue_lists_the_frontier_with_its_own_counts(
    tmp_path: Path, site: HeldSite, mode: str, request: pytest.FixtureRequest
) -> None:
    out = tmp_path / "out"
    options: tuple[str, ...] = MODES.get(mode, ())
    if mode == "redis":
        server: RedisServer = request.getfixturevalue("redis_tcp")
        options = ("--frontier", server.url, "--crawl-id", f"queue-{tmp_path.name}")
    with running(site, out, *options) as crawl:
        pause_while_held(site, crawl)
        wait_for(lambda: agrees(crawl, (str(out),)), "queue's counts to be the frontier's")
        status = crawl.status()
        lines, counts = queue(str(out))
        fetched = {site.url(path) for path in hits(site)}
        left = {site.url(f"/p/{n}") for n in range(PAGES)} - fetched
        states = Counter(line.split("\t")[0] for line in lines)
        listed = {line.split("\t")[1] for line in lines if line.startswith("queued\t")}
        assert listed == left and states["queued"] == status["queued"] == len(left)
        if mode == "sqlite":  # done URLs are listed too (Redis keeps them as keys: counted)
            done = {line.split("\t")[1] for line in lines if line.startswith("done\t")}
            assert done == fetched and states["done"] == status["done"]
        else:
            assert set(states) == {"queued"} and counts["done"] == status["done"]
        assert counts["listed"] == len(lines)
        only, numbers = queue(str(out), "--state", "queued", "--match", r"/p/1\d$")
        assert set(only) == {url for url in left if re.search(r"/p/1\d$", url)}
        assert numbers["listed"] == len(only) and numbers["queued"] == status["queued"]
        assert archiver("unpause", str(out)).returncode == 0
        code, err = crawl.finish()
    assert code == 0, err[-3000:]
    if mode == "redis":  # a shared crawl's server: listed until its crawl is deleted
        return
    after, counts = queue(str(out), "--state", "queued")  # stopped: read from its store
    assert after == [] and counts["queued"] == 0 and counts["done"] == PAGES + 1


def test_queue_of_a_stopped_crawl_of_several_processes(tmp_path: Path, site: HeldSite) -> None:
    """Its private redis-server is started for the listing and stopped again."""
    out = tmp_path / "out"
    with running(site, out, *MODES["processes"]) as crawl:
        pause_while_held(site, crawl)
        crawl.process.send_signal(signal.SIGTERM)
        code, err = crawl.finish()
        assert code == 3, err[-3000:]
    fetched = {site.url(path) for path in hits(site)}
    lines, counts = queue(str(out), "--state", "queued")
    assert set(lines) == {site.url(f"/p/{n}") for n in range(PAGES)} - fetched
    assert counts["queued"] == len(lines) and counts["done"] == len(fetched)
    assert not (out / "state" / "redis" / "redis.pid").exists()  # stopped again
    bad = archiver("queue", str(out), "--state", "done")
    assert bad.returncode == 2 and "keeps finished URLs as keys" in bad.stderr, bad.stderr
    assert archiver("unpause", str(out)).returncode == 0  # else it resumes paused
    again = archiver("crawl", site.url("/"), "-o", str(out), *QUICK, *MODES["processes"])
    assert again.returncode == 0, again.stderr[-3000:]  # resumes from the same server's data
    assert max(hits(site).values()) == 1


def test_queue_bad_input(tmp_path: Path) -> None:
    for args, expected in [
        ([str(tmp_path)], "no crawl in"),
        ([str(tmp_path), "--match", "(unclosed"], "invalid regular expression"),
    ]:
        done = archiver("queue", *args)
        assert done.returncode == 2 and expected in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1
    done = archiver("queue", str(tmp_path), "--state", "waiting")
    assert done.returncode == 2 and "invalid choice: 'waiting'" in done.stderr


# -- the README's lines ---------------------------------------------------------------------

PAUSE = "archiver pause crawls/example"
UNPAUSE = "archiver unpause crawls/example"
ADD = "archiver add crawls/example https://example.org/unlinked-page"
QUEUE = "archiver queue crawls/example --state queued --match '/docs/'"


@documents(PAUSE, UNPAUSE, ADD, QUEUE)
def test_the_readme_steering_lines(doc: DocShell, tmp_path: Path) -> None:
    """The README's four lines as written, in order, on a crawl running in crawls/example."""
    cwd = workdir(tmp_path)
    out = cwd / "crawls" / "example"
    with HeldSite(docs=3).running_in_thread() as site, running(site, out) as crawl:
        assert isinstance(site, HeldSite)
        wait_for(lambda: site.counters.count(HELD) == 1, f"the crawl to request {HELD}")
        paused = doc.run(PAUSE, cwd=cwd)
        assert paused.returncode == 0, paused.stderr
        wait_for(lambda: bool(crawl.status()["paused"]), "/status to say paused")
        site.release()
        wait_for(lambda: paused_and_idle(crawl), "nothing in flight")
        listed = doc.run(QUEUE, cwd=cwd)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines() == [site.url(f"/docs/{n}") for n in range(3)]
        assert "in flight" in listed.stderr and "3 listed" in listed.stderr
        added = doc.run(ADD, cwd=cwd, replace={"https://example.org/": site.url("/")})
        assert added.returncode == 0, added.stderr
        unpaused = doc.run(UNPAUSE, cwd=cwd)
        assert unpaused.returncode == 0, unpaused.stderr
        code, err = crawl.finish()
    assert code == 0, err[-3000:]
    assert hits(site)["/unlinked-page"] == 1 and max(hits(site).values()) == 1
