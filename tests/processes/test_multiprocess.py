"""Several ``archiver crawl`` processes on one crawl through Redis, as real processes.

* 3 processes crawl a local site of ~2,400 URLs together into one output directory: the union
  of their captures is what one process captures, no URL twice; the merged index equals
  cdxj-indexer's over all the WARCs; pywb replays a sample.
* One of 3 is killed with SIGKILL mid-crawl: the others finish, including its leased URLs;
  only URLs it had in flight may be captured twice (at most twice, both copies valid).
* Per-host concurrency holds across processes (the test server counts concurrent requests).
* Redis unreachable at start is a one-line error.

The processes share ``--output DIR`` (WARCs in ``DIR/warcs``, names carrying host and pid; the
last process to leave writes ``DIR/index.cdxj``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from aiohttp import web

from archiver.commands import verify
from archiver.warc.naming import safe_name_part
from tests.support.pywb import PywbReplay
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer, generated_site
from tests.support.tools import reference_cdxj
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
ARCHIVER = [sys.executable, "-m", "archiver"]
CRAWL_TIMEOUT = 120


@pytest.fixture
def redis_tcp() -> Iterator[RedisServer]:
    with RedisServer(tcp=True) as server:
        yield server


def crawl_args(seed: str, output: Path, *extra: str) -> list[str]:
    return [
        "crawl",
        seed,
        "--output",
        str(output),
        "--robots",
        "ignore",
        "--sitemaps",
        "off",
        "--per-host-delay",
        "0",
        "--allow-private",
        "--quiet",
        "--min-free-disk",
        "0",
        *extra,
    ]


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([*ARCHIVER, *args], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def finish(proc: subprocess.Popen[bytes], log: Path) -> None:
    code = proc.wait(CRAWL_TIMEOUT)
    assert code == 0, f"exit {code}:\n{log.read_text(errors='replace')[-3000:]}"


def redis_args(server: RedisServer, crawl_id: str, *extra: str, lease: str = "60") -> list[str]:
    """A long lease timeout unless expiry is the point: a loaded test box may stall a process
    for a few seconds, and a live process's lease must not expire then."""
    return ["--frontier", server.url, "--crawl-id", crawl_id, "--lease-timeout", lease, *extra]


def captured(warc_dir: Path) -> Counter[str]:
    return Counter(rec.uri or "" for rec in responses(warc_dir))


def count_hits(site: SiteServer, threshold: int) -> threading.Event:
    """An event set once the site has answered ``threshold`` requests (for 'mid-crawl')."""
    reached = threading.Event()
    hits = 0
    for path, handler in list(site.routes.items()):

        async def counted(request, handler=handler):  # type: ignore[no-untyped-def]
            nonlocal hits
            hits += 1
            if hits >= threshold:
                reached.set()
            return await handler(request)

        site.routes[path] = counted
    return reached


def hold_until_processes_join(site: SiteServer, server: RedisServer, crawl_id: str, n: int) -> None:
    """Hold the seed page until ``n`` processes have joined the crawl in Redis (``open``
    stamps each in ``P:procs`` before it seeds): every process is in before there is any work
    to share, however slowly a loaded machine starts them. A hang guard ends the wait."""
    home = site.routes["/"]

    async def held(request: web.Request) -> web.StreamResponse:
        client = redis.asyncio.Redis.from_url(server.url)
        try:
            async with asyncio.timeout(CRAWL_TIMEOUT):
                # other processes' state, in Redis: nothing to wait on but the key itself
                while await client.zcard(f"archiver:{{{crawl_id}}}:procs") < n:  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        finally:
            await client.aclose()
        return await home(request)

    site.routes["/"] = held


def single_process_set(seed: str, out: Path, tmp: Path) -> set[str]:
    proc = start(crawl_args(seed, out, "--frontier", "memory", "--workers", "8"), tmp / "one.log")
    finish(proc, tmp / "one.log")
    return set(captured(out / "warcs"))


def assert_index_and_files(out: Path, pids: list[int]) -> list[str]:
    """WARC names carry host and pid; the merged index is cdxj-indexer's; verify passes."""
    host = safe_name_part(socket.gethostname())
    names = [p.name for p in (out / "warcs").glob("*.warc.gz")]
    assert not list((out / "warcs").glob("*.open"))
    for pid in pids:
        assert any(f"{host}-{pid}" in name for name in names), (pid, names)
    merged = (out / "index.cdxj").read_text().splitlines()
    assert merged == reference_cdxj(out / "warcs")
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    again = out / "reindexed.cdxj"
    subprocess.run(
        [sys.executable, "-m", "archiver", "index", str(out), "-o", str(again)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    assert again.read_text().splitlines() == merged  # `archiver index DIR` agrees
    return merged


def test_three_processes_capture_what_one_does(tmp_path: Path, redis_tcp: RedisServer) -> None:
    with SiteServer().running_in_thread() as site:
        generated_site(site, pages=2000)
        seed = site.url("/")
        expected = single_process_set(seed, tmp_path / "single", tmp_path)
        site.counters.hits.clear()
        hold_until_processes_join(site, redis_tcp, "three", 3)
        out = tmp_path / "shared"
        extra = redis_args(redis_tcp, "three", "--workers", "8", "--per-host-concurrency", "24")
        logs = [tmp_path / f"p{i}.log" for i in range(3)]
        procs = [start(crawl_args(seed, out, *extra), log) for log in logs]  # same seeds x3
        for proc, log in zip(procs, logs, strict=True):
            finish(proc, log)
        fetched = Counter(hit.path for hit in site.counters.hits)
    got = captured(out / "warcs")
    assert set(got) == expected and len(expected) > 2400
    assert max(got.values()) == 1  # no URL captured twice
    assert max(fetched.values()) == 1  # nor fetched twice
    merged = assert_index_and_files(out, [p.pid for p in procs])
    per_file = Counter(json.loads(line.split(" ", 2)[2])["filename"] for line in merged)
    host = safe_name_part(socket.gethostname())
    for proc in procs:  # every process did part of the work
        assert sum(n for name, n in per_file.items() if f"{host}-{proc.pid}" in name) > 0
    sample = random.Random(7).sample(merged, 25)
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    with (
        PywbReplay(
            tmp_path / "pywb", warcs, cdxj=out / "index.cdxj", warc_root=out / "warcs"
        ) as replay,
        SiteServer().running_in_thread() as live,
    ):
        generated_site(live, pages=2000)
        for line in sample:
            _, timestamp, data = line.split(" ", 2)
            url = json.loads(data)["url"]
            replayed = replay.get_id(url, timestamp)
            assert replayed.status == 200, url
            assert replayed.memento_datetime is not None, url
            path = url.split("/", 3)[3]
            with urllib.request.urlopen(live.url("/" + path)) as resp:
                assert replayed.body == resp.read(), url


def test_a_killed_process_leaves_nothing_undone(tmp_path: Path, redis_tcp: RedisServer) -> None:
    with SiteServer().running_in_thread() as site:
        paths = generated_site(site, pages=2000)
        midway = count_hits(site, len(paths) // 3)
        seed = site.url("/")
        out = tmp_path / "shared"
        # Leases expire 15 s after their holder's last heartbeat (one every 5 s): the
        # victim's are reaped that long after it dies, and a survivor stalled by a loaded
        # machine for less than that keeps its own, so only the victim's URLs can be fetched
        # twice. (4 s, as before, let a stall of a few seconds re-lease a live process's URL.)
        # One timeout for all: each process judges who is still alive, and so who leaves
        # last and closes the victim's files, by its own.
        extra = redis_args(
            redis_tcp, "kill", "--workers", "8", "--per-host-concurrency", "24", lease="15"
        )
        logs = [tmp_path / f"p{i}.log" for i in range(3)]
        procs = [start(crawl_args(seed, out, *extra), log) for log in logs]
        assert midway.wait(CRAWL_TIMEOUT)
        victim = procs[0]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        client = redis.Redis.from_url(redis_tcp.url)
        leases = client.hgetall("archiver:{kill}:lease")
        client.close()
        owner = f"{socket.gethostname()}-{victim.pid}".encode()
        in_flight = set()
        for value in leases.values():
            raw = value if isinstance(value, bytes) else value.encode()
            who, _, item = raw.split(b"\0", 2)
            if who == owner:
                in_flight.add(json.loads(item[16:])[0])
        assert in_flight, "the victim held no lease when it was killed"
        for proc, log in zip(procs[1:], logs[1:], strict=True):
            finish(proc, log)
    expected = {site.url(p) for p in paths}
    got = captured(out / "warcs")
    assert set(got) == expected  # the others finished the crawl, the victim's leases too
    twice = {url for url, n in got.items() if n > 1}
    assert twice <= in_flight, twice - in_flight
    assert max(got.values()) <= 2
    assert_index_and_files(out, [p.pid for p in procs])  # every copy is valid


def test_per_host_concurrency_across_processes(tmp_path: Path, redis_tcp: RedisServer) -> None:
    with SiteServer().running_in_thread() as site:
        paths = generated_site(site, pages=60)
        site.delay = 0.05
        seed = site.url("/")
        out = tmp_path / "shared"
        extra = redis_args(redis_tcp, "polite", "--workers", "4", "--per-host-concurrency", "2")
        logs = [tmp_path / f"p{i}.log" for i in range(3)]
        procs = [start(crawl_args(seed, out, *extra), log) for log in logs]
        for proc, log in zip(procs, logs, strict=True):
            finish(proc, log)
        host = f"127.0.0.1:{site.port}"
        assert site.counters.max_in_flight_by_host[host] == 2  # 12 workers, 2 slots
    assert set(captured(out / "warcs")) == {site.url(p) for p in paths}


def test_unreachable_redis_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, not listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        url = f"redis://127.0.0.1:{port}/0"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "archiver",
                *crawl_args("http://127.0.0.1:9/", tmp_path / "out"),
                "--frontier",
                url,
                "--crawl-id",
                "x",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    said = [line for line in proc.stderr.splitlines() if "cannot reach Redis" in line]
    assert said, proc.stderr
    for line in said:  # the error is one line, whoever prints it (log, summary)
        assert f"cannot reach Redis at {url}: Error 111 connecting to" in line
        assert "Connection refused." in line
