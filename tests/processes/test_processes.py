"""``archiver crawl --processes N``: one command, N real crawler processes, a real redis-server.

* Two processes capture what one process captures, no URL twice; one index (cdxj-indexer's),
  one summary, one exit code; the WARCs of both in ``warcs/``; nothing left running.
* Ctrl-C (SIGINT to the supervisor) stops all of them (exit 3); the same command resumes.
* ``kill -9`` of a crawler process: it is started again under its name and repairs what it
  left, so the crawl completes with every URL once.
* ``kill -9`` of the supervisor: its processes and redis-server stop by themselves; the next
  run (here with fewer processes: the third one's state is adopted) completes the crawl.
* redis-server killed mid-crawl: every process stops within seconds (exit 3), nothing is left
  running, and the same command (a new server from the append-only file) completes the crawl.
* redis-server missing is a one-line usage error before anything is written.

The crawl's processes are found in ``/proc`` by what ties them to the crawl (the supervisor's
pid on the crawler processes' command line, the output directory in the keeper's, the state
directory as redis-server's working directory), so every test can assert that none is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from archiver.commands import verify
from archiver.warc.naming import safe_name_part
from tests.support.processes import wait_exited
from tests.support.site import SiteServer, generated_site
from tests.support.tools import reference_cdxj
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
ARCHIVER = [sys.executable, "-m", "archiver"]
#: Hang guard for one crawl command (never a timing assertion).
CRAWL_TIMEOUT = 240
HOST = safe_name_part(socket.gethostname())


def command(seed: str, out: Path, *extra: str) -> list[str]:
    return [
        *ARCHIVER,
        "crawl",
        seed,
        "--output",
        str(out),
        "--robots",
        "ignore",
        "--sitemaps",
        "off",
        "--per-host-delay",
        "0",
        "--per-host-concurrency",
        "16",
        "--allow-private",
        "--min-free-disk",
        "0",
        "--progress",
        "off",
        "--stats-interval",
        "0",
        *extra,
    ]


def start(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)


def wait(proc: subprocess.Popen[bytes], log: Path, expected: int = 0) -> None:
    code = proc.wait(CRAWL_TIMEOUT)
    assert code == expected, f"exit {code}:\n{log.read_text(errors='replace')[-4000:]}"


def crawl_processes(out: Path, supervisor: int | None = None) -> list[tuple[int, str]]:
    """Every live process tied to the crawl in ``out`` (zombies have no command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        mine = supervisor is not None and f"--parent {supervisor}" in cmdline
        if cmdline and (mine or str(out) in cmdline or cwd.startswith(str(out))):
            found.append((int(entry.name), cmdline))
    return found


def assert_nothing_left(out: Path, supervisor: int, guard: float = 120.0) -> None:
    """Nothing of the crawl is running (waited for, up to a generous hang guard, when the
    processes are stopping by themselves)."""
    deadline = time.monotonic() + guard
    while (left := crawl_processes(out, supervisor)) and time.monotonic() < deadline:
        wait_exited([pid for pid, _ in left], deadline - time.monotonic())
    assert not left, f"processes outlived the crawl: {left}"


def captured(out: Path) -> Counter[str]:
    return Counter(rec.uri or "" for rec in responses(out / "warcs"))


def assert_one_crawl(out: Path, expected: set[str]) -> dict[str, object]:
    """Every URL once; one index (cdxj-indexer's over all the WARCs); verify passes; the
    summary counts every capture."""
    got = captured(out)
    assert set(got) == expected
    assert max(got.values()) == 1, {url: n for url, n in got.items() if n > 1}
    assert not list((out / "warcs").glob("*.open"))
    assert (out / "index.cdxj").read_text().splitlines() == reference_cdxj(out / "warcs")
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    summary: dict[str, object] = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "completed"
    assert json.loads((out / "state" / "crawl.json").read_text())["status"] == "completed"
    return summary


def hits_reached(site: SiteServer, threshold: int) -> threading.Event:
    """An event set once the site has answered ``threshold`` requests (for 'mid-crawl')."""
    reached = threading.Event()
    for path, handler in list(site.routes.items()):

        async def counted(request, handler=handler):  # type: ignore[no-untyped-def]
            if len(site.counters.hits) >= threshold:
                reached.set()
            return await handler(request)

        site.routes[path] = counted
    return reached


def running(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return False


def child_pid(out: Path, number: int) -> int:
    """A crawler process's pid, from the lock file of its state directory (checked against
    its command line: only ever signal a crawler process)."""
    lock = out / "state" / f"{HOST}-p{number}" / "lock"
    deadline = time.monotonic() + CRAWL_TIMEOUT
    while time.monotonic() < deadline:
        text = lock.read_text().strip() if lock.exists() else ""
        if text.isdigit():
            try:
                cmdline = Path(f"/proc/{text}/cmdline").read_bytes()
            except OSError:
                cmdline = b""
            if b"crawl-process" in cmdline:
                return int(text)
        time.sleep(0.05)
    raise AssertionError(f"no crawler process {number} in {out}")


@pytest.fixture
def site() -> Iterator[tuple[SiteServer, set[str]]]:
    with SiteServer().running_in_thread() as server:
        paths = generated_site(server, pages=1200)
        yield server, {server.url(p) for p in paths}


def test_two_processes_capture_what_one_does(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    server, expected = site
    seed = server.url("/")
    one = tmp_path / "one"
    log = tmp_path / "one.log"
    wait(start(command(seed, one, "--workers", "8", "--quiet"), log), log)
    assert set(captured(one)) == expected
    assert not (one / "state" / "redis").exists()  # --processes 1: no Redis, no child
    server.counters.hits.clear()
    out = tmp_path / "two"
    log = tmp_path / "two.log"
    proc = start(command(seed, out, "--workers", "8", "--processes", "2", "--wacz"), log)
    wait(proc, log)
    assert_nothing_left(out, proc.pid, guard=0)
    summary = assert_one_crawl(out, expected)
    assert set(captured(out)) == set(captured(one))
    assert max(Counter(hit.path for hit in server.counters.hits).values()) == 1  # fetched once
    names = [p.name for p in (out / "warcs").glob("*.warc.gz")]
    processes = summary["processes"]
    assert isinstance(processes, dict) and processes["count"] == 2
    assert sorted(run["process"] for run in processes["runs"]) == [f"{HOST}-p0", f"{HOST}-p1"]
    assert all(run["exit"] == 0 for run in processes["runs"])
    assert summary["captures"] == len(captured(out))
    assert summary["warc_files"] == sorted(f"warcs/{name}" for name in names)
    assert (out / "two.wacz").is_file() and summary["wacz"] == "two.wacz"
    assert "Traceback" not in log.read_text()
    assert not list((out / "state").glob("redis/redis.pid"))
    report = subprocess.run(
        [*ARCHIVER, "report", str(out)], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert report.returncode == 0, report.stderr
    assert f"{len(captured(out)):,}" in (out / "report.html").read_text()  # the summary's


def test_ctrl_c_stops_every_process_and_the_same_command_resumes(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    server, expected = site
    server.delay = 0.01
    midway = hits_reached(server, len(expected) // 4)
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    args = command(server.url("/"), out, "--workers", "4", "--processes", "2")
    proc = start(args, log)
    assert midway.wait(CRAWL_TIMEOUT)
    proc.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends the supervisor
    wait(proc, log, expected=3)
    assert_nothing_left(out, proc.pid, guard=0)
    first = json.loads((out / "summary.json").read_text())
    assert first["status"] == "interrupted" and "SIGINT" in str(first["reason"])
    assert 0 < int(first["captures"]) < len(expected)
    resumed = start(args, log)
    wait(resumed, log)
    assert_nothing_left(out, resumed.pid, guard=0)
    assert_one_crawl(out, expected)
    assert "resuming the crawl" in log.read_text()


def test_a_killed_process_is_started_again_and_loses_nothing(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    server, expected = site
    server.delay = 0.01
    midway = hits_reached(server, len(expected) // 3)
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    proc = start(command(server.url("/"), out, "--workers", "4", "--processes", "2"), log)
    victim = child_pid(out, 1)
    assert midway.wait(CRAWL_TIMEOUT)
    os.kill(victim, signal.SIGKILL)
    wait(proc, log)
    assert_nothing_left(out, proc.pid, guard=0)
    summary = assert_one_crawl(out, expected)  # its .open file was cut back: no URL twice
    runs = summary["processes"]["runs"]  # type: ignore[index]
    assert {"process": f"{HOST}-p1", "pid": victim, "exit": -9, "status": None} in runs
    assert sum(run["process"] == f"{HOST}-p1" for run in runs) == 2
    assert "process-died" in log.read_text() and "started again" in log.read_text()


def test_a_killed_supervisor_leaves_nothing_running_and_the_next_run_resumes(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    server, expected = site
    server.delay = 0.01
    midway = hits_reached(server, len(expected) // 3)
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    proc = start(command(server.url("/"), out, "--workers", "4", "--processes", "3"), log)
    children = [child_pid(out, n) for n in range(3)]
    redis_pid = json.loads((out / "state" / "redis" / "redis.pid").read_text())["redis"]
    assert midway.wait(CRAWL_TIMEOUT)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert_nothing_left(out, proc.pid)  # they stop by themselves, redis-server last
    for pid in [*children, redis_pid]:
        assert not running(pid), pid
    # resumed with fewer processes: the third one's leases and WARC files are adopted
    again = start(command(server.url("/"), out, "--workers", "4", "--processes", "2"), log)
    wait(again, log)
    assert_nothing_left(out, again.pid, guard=0)
    assert_one_crawl(out, expected)


#: How soon every process must be gone once the crawl's redis-server died (the issue's bound;
#: it took about two minutes, a few seconds are left for a loaded machine).
REDIS_DEATH_STOP = 10.0


def test_a_dead_redis_server_stops_every_process_within_seconds(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    """Fault: the crawl's private redis-server is killed (SIGKILL) mid-crawl. The supervisor
    sees its keeper exit and stops every process at once. That used to take about two
    minutes: its two SIGTERMs (stop, then at once) reached a process as one pending signal,
    so it stopped gracefully, and then sealing and closing each waited out the outage. Now
    the second signal is a SIGINT and a stopping process gives up on an unreachable Redis:
    exit 3 within seconds, nothing left running; the same command resumes from the
    append-only file and completes the crawl with every URL once."""
    server, expected = site
    server.delay = 0.01
    midway = hits_reached(server, len(expected) // 4)
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    args = command(server.url("/"), out, "--workers", "4", "--processes", "2")
    proc = start(args, log)
    children = [child_pid(out, n) for n in range(2)]
    redis_pid = json.loads((out / "state" / "redis" / "redis.pid").read_text())["redis"]
    assert midway.wait(CRAWL_TIMEOUT)
    os.kill(redis_pid, signal.SIGKILL)
    try:
        code = proc.wait(REDIS_DEATH_STOP)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {REDIS_DEATH_STOP:g} s after redis-server died")
    assert code == 3, log.read_text(errors="replace")[-4000:]
    assert_nothing_left(out, proc.pid, guard=REDIS_DEATH_STOP)
    for pid in children:
        assert not running(pid), pid
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and "redis-server exited" in str(summary["reason"])
    resumed = start(args, log)
    wait(resumed, log)
    assert_nothing_left(out, resumed.pid, guard=0)
    assert_one_crawl(out, expected)


def test_redis_server_missing_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    empty = tmp_path / "bin"
    empty.mkdir()
    proc = subprocess.run(
        [*command("http://127.0.0.1:9/", out), "--processes", "2"],
        cwd=REPO,
        env={**os.environ, "PATH": str(empty)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "apt-get install redis-server" in lines[0] and "brew install redis" in lines[0]
    assert not out.exists()  # nothing written


def test_a_deep_output_directory_gets_a_short_socket(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    """A Unix socket path holds ~107 bytes (unix(7)): a deeper state directory puts the
    socket in a private directory under /tmp, removed at the end."""
    server, _ = site
    out = tmp_path / ("d" * 60) / ("e" * 60) / "out"
    log = tmp_path / "crawl.log"
    proc = start(
        command(server.url("/"), out, "--processes", "2", "--max-pages", "40", "--quiet"), log
    )
    sockets: set[str] = set()
    while proc.poll() is None:
        with_pid = out / "state" / "redis" / "redis.pid"
        if with_pid.exists():
            with contextlib.suppress(ValueError, OSError):
                sockets.add(json.loads(with_pid.read_text())["socket"])
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(0.02)  # the next look at the pid file, or at once when the crawl ends
    wait(proc, log)
    assert sockets and all(len(s) <= 100 and str(out) not in s for s in sockets)
    assert not any(Path(s).parent.exists() for s in sockets)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "limit" and summary["pages"] == 40
    assert summary["reason"] == "max-pages of 40 reached (shared out between 2 processes)"
    assert_nothing_left(out, proc.pid, guard=0)


def test_one_process_does_not_resume_a_crawl_of_several(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    server, _ = site
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    wait(start(command(server.url("/"), out, "--processes", "2", "--max-pages", "10"), log), log)
    one = subprocess.run(
        command(server.url("/"), out, "--quiet"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        check=False,
    )
    assert one.returncode == 1
    assert "resume it with --processes 2 or more" in one.stderr


def test_an_external_redis_is_used_as_given(
    tmp_path: Path, site: tuple[SiteServer, set[str]]
) -> None:
    """``--frontier redis://…`` with ``--processes N``: no private server; the crawl's keys
    are the given crawl id's."""
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    server, expected = site
    out = tmp_path / "out"
    log = tmp_path / "crawl.log"
    with RedisServer(tcp=True) as external:
        extra = ["--processes", "2", "--frontier", external.url, "--crawl-id", "ext"]
        wait(start(command(server.url("/"), out, *extra), log), log)
        client = redis.Redis.from_url(external.url)
        assert client.exists("archiver:{ext}:meta")
        client.close()
    assert not (out / "state" / "redis").exists()
    assert_one_crawl(out, expected)


def test_a_crawl_that_captured_nothing_fails(tmp_path: Path) -> None:
    """Every fetch failed (nothing listens on port 9): a failed crawl (exit 1), as with one
    process, not an empty success."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [*command("http://127.0.0.1:9/", out, "--quiet"), "--processes", "2", "--max-tries", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed"
    assert str(summary["reason"]).startswith("nothing was captured: every fetch failed")
    assert "nothing was captured" in proc.stderr
