"""End to end at the edges of a crawl's life: an IDNA host, SIGTERM with slow fetches, low disk.

Every test runs the real ``archiver crawl`` command as a subprocess against a :class:`RawServer`
served by the test's own event loop, so the server's request log says exactly what reached it.

* **IDNA (checklist item 18).** A seed with a U-label host (``faß.test``) mapped by ``--resolve``
  to 127.0.0.1 is requested, recorded and indexed under its A-label (``xn--fa-hia.test``), and
  ``--resolve`` matches whichever spelling the operator typed.
* **SIGTERM or Ctrl-C with slow in-flight fetches (item 29).** The first SIGTERM or SIGINT
  lets in-flight fetches run for ``--grace-period``, no longer: trickling responses that never
  end are cut at the grace period (and fetched again on resume); ones that end within it are
  captured whole. A second SIGINT stops at once; the same command then completes the crawl.
* **Free disk space (item 36).** ``--min-free-disk`` above the real free space of the output
  filesystem refuses to start; space taken mid-crawl (a real ``posix_fallocate`` in the same
  filesystem: a tmpfs of the test's own) stops the crawl at the next check. Both stop cleanly
  with exit code 3, a reason that names the free space, and a state that the same command
  resumes once space is back.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import surt

from archiver.commands import verify
from archiver.commands.exits import EXIT_INTERRUPTED, EXIT_OK
from tests.run.test_resume import crawl_args
from tests.support.filesystem import private_tmpfs
from tests.support.raw import RawServer
from tests.support.warcs import read_records, responses

REPO = Path(__file__).resolve().parents[2]
#: a hang guard: how long a crawl here may take before it is called stuck (they take seconds)
RUN_TIMEOUT = 60.0
#: seconds between two bytes of a trickling response
TICK = 0.2
A_LABEL = "xn--fa-hia.test"


# ============================================================================ helpers
def http_response(body: bytes, content_type: str = "text/html") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode("ascii") + body


@dataclass
class Trickle:
    """Routes whose body comes one byte every :data:`TICK` seconds while ``slow`` is set
    (all at once otherwise); ``in_flight`` is set once ``expect`` of them have been requested,
    ``all_cut`` once the crawler has hung up on ``expect`` of them before their end."""

    body: bytes
    expect: int
    slow: bool = True
    requested: int = 0
    cut: int = 0
    in_flight: asyncio.Event = field(default_factory=asyncio.Event)
    all_cut: asyncio.Event = field(default_factory=asyncio.Event)

    def _hung_up(self) -> bool:
        self.cut += 1
        if self.cut >= self.expect:
            self.all_cut.set()
        return False

    async def handler(
        self, _reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _request: bytes
    ) -> bool:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(self.body)}"
        writer.write(head.encode("ascii") + b"\r\n\r\n")
        await writer.drain()
        self.requested += 1
        if self.requested >= self.expect:
            self.in_flight.set()
        if not self.slow:
            writer.write(self.body)
            await writer.drain()
            return True
        for i in range(len(self.body)):
            if writer.is_closing():  # the crawler hung up (the grace period ran out)
                return self._hung_up()
            try:
                writer.write(self.body[i : i + 1])
                await writer.drain()
            except ConnectionError:
                return self._hung_up()
            await asyncio.sleep(TICK)  # the server's behaviour (a trickle), not a test wait
        return True


@dataclass
class Site:
    """A home page linking slow (trickling) routes first, then fast pages."""

    server: RawServer
    trickle: Trickle
    slow_paths: list[str]
    fast_paths: list[str]

    @property
    def paths(self) -> list[str]:
        return ["/", *self.slow_paths, *self.fast_paths]

    def urls(self) -> set[str]:
        return {self.server.url(p) for p in self.paths}


def mixed_site(server: RawServer, *, slow: int, fast: int, trickle_bytes: int) -> Site:
    slow_paths = [f"/slow/{i}.txt" for i in range(slow)]
    fast_paths = [f"/fast/{i}.html" for i in range(fast)]
    trickle = Trickle(body=b"s" * trickle_bytes, expect=slow)
    links = "".join(f'<a href="{p}">{p}</a>\n' for p in slow_paths + fast_paths)
    server.add("/", http_response(f"<html><body>{links}</body></html>".encode()))
    for path in slow_paths:
        server.add_handler(path, trickle.handler)
    for i, path in enumerate(fast_paths):
        server.add(path, http_response(f"<html><body>fast page {i}</body></html>".encode()))
    return Site(server, trickle, slow_paths, fast_paths)


@contextmanager
def _reaped(proc: asyncio.subprocess.Process) -> Iterator[asyncio.subprocess.Process]:
    """Never leave the crawler running behind a failed assertion (only this PID is killed)."""
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()


async def start(args: list[str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "archiver",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    """Wait for the crawler to exit; fail (and kill it) if it hangs (:data:`RUN_TIMEOUT`)."""
    within = RUN_TIMEOUT
    communicate = asyncio.ensure_future(proc.communicate())
    with _reaped(proc):
        done, _ = await asyncio.wait({communicate}, timeout=within)
    if not done:
        _, err = await communicate  # it was killed: read what it said before
        pytest.fail(f"the crawler did not exit within {within:g} s:\n{err.decode()}")
    _, err = communicate.result()
    assert proc.returncode is not None
    return proc.returncode, err.decode("utf-8", "replace")


async def run(args: list[str]) -> tuple[int, str]:
    return await finish(await start(args))


async def until(event: asyncio.Event, proc: asyncio.subprocess.Process) -> None:
    """Wait for ``event``; fail at once with the crawler's stderr if it exits first."""
    waiter = asyncio.ensure_future(event.wait())
    exited = asyncio.ensure_future(proc.wait())
    try:
        await asyncio.wait({waiter, exited}, timeout=RUN_TIMEOUT, return_when="FIRST_COMPLETED")
    finally:
        waiter.cancel()
        exited.cancel()
    if not event.is_set():
        code, err = await finish(proc)
        pytest.fail(f"the crawler exited ({code}) before the condition was met:\n{err}")


async def stop_with(
    proc: asyncio.subprocess.Process, sig: signal.Signals = signal.SIGTERM
) -> tuple[int, str, float]:
    """Signal the crawler once; its exit code, stderr, and seconds from the signal to its exit
    (for lower bounds only: how fast a loaded machine exits is not the test's business)."""
    sent = time.monotonic()
    proc.send_signal(sig)
    code, err = await finish(proc)
    return code, err, time.monotonic() - sent


async def said(proc: asyncio.subprocess.Process, text: str) -> str:
    """Read the crawler's stderr until a line holds ``text``; what was read (hang-guarded)."""
    assert proc.stderr is not None
    lines: list[str] = []
    async with asyncio.timeout(RUN_TIMEOUT):
        while not lines or text not in lines[-1]:
            line = await proc.stderr.readline()
            if not line:
                pytest.fail(f"the crawler exited without saying {text!r}:\n{''.join(lines)}")
            lines.append(line.decode("utf-8", "replace"))
    return "".join(lines)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def log_events(out: Path, name: str) -> list[dict[str, Any]]:
    lines = (out / "crawl.log.jsonl").read_text(encoding="utf-8").splitlines()
    return [event for event in map(json.loads, lines) if event.get("event") == name]


def assert_stopped_resumably(out: Path) -> None:
    """Every WARC closed (none left ``.open``), WARCs and index valid, state ``interrupted``."""
    assert not list((out / "warcs").rglob("*.open"))
    report = verify.verify([out / "warcs"], index=out / "index.cdxj", urlkey=surt.surt)
    assert report.ok, verify.render(report)
    assert read_json(out / "state" / "crawl.json")["status"] == "interrupted"


def assert_complete(out: Path, expected: set[str]) -> None:
    """Every expected URL captured exactly once over all runs; WARCs and index valid."""
    counts = collections.Counter(r.uri for r in responses(out / "warcs"))
    assert dict(counts) == dict.fromkeys(expected, 1)
    assert not list((out / "warcs").rglob("*.open"))
    report = verify.verify([out / "warcs"], index=out / "index.cdxj", urlkey=surt.surt)
    assert report.ok, verify.render(report)
    assert read_json(out / "state" / "crawl.json")["status"] == "completed"


# ============================================================================ IDNA (item 18)
@pytest.mark.parametrize("resolve_host", ["faß.test", A_LABEL, "FAß.Test."])
async def test_a_u_label_seed_is_requested_recorded_and_indexed_as_its_a_label(
    raw_server: RawServer, tmp_path: Path, resolve_host: str
) -> None:
    """``--resolve`` matches the host whatever its spelling; the wire, the WARC and the index
    all carry the A-label (the URL that was requested is the URL recorded, WARC 1.1 §5.14)."""
    port = raw_server.port
    a_origin = f"http://{A_LABEL}:{port}"
    raw_server.add(
        "/",
        http_response(
            # a relative link, and an absolute one spelled with the U-label as pages do
            f'<html><body><a href="/a.html">a</a> <a href="http://faß.test:{port}/b.html">b</a>'
            "</body></html>".encode()
        ),
    )
    raw_server.add("/a.html", http_response(b"<html><body>a</body></html>"))
    raw_server.add("/b.html", http_response(b"<html><body>b</body></html>"))
    out = tmp_path / "crawl"

    code, err = await run(
        crawl_args(
            f"http://faß.test:{port}/",
            out,
            "--resolve",
            f"{resolve_host}=127.0.0.1",
            "--min-free-disk",
            "0",
        )
    )

    assert code == EXIT_OK, err
    expected = {f"{a_origin}/", f"{a_origin}/a.html", f"{a_origin}/b.html"}
    # the server saw the A-label in every Host header
    assert sorted(r.split(b" ", 2)[1] for r in raw_server.requests) == [
        b"/",
        b"/a.html",
        b"/b.html",
    ]
    for request in raw_server.requests:
        assert f"\r\nHost: {A_LABEL}:{port}\r\n".encode() in request, request
    # WARC-Target-URI in A-label form on every response and request record
    records = [r for r in read_records(out / "warcs") if r.type in ("response", "request")]
    assert {r.uri for r in records if r.type == "response"} == expected
    assert {r.uri for r in records if r.type == "request"} == expected
    assert sorted(r.block for r in records if r.type == "request") == sorted(raw_server.requests)
    # the CDXJ key of each capture is surt.surt of its (A-label) URL
    lines = (out / "index.cdxj").read_text(encoding="utf-8").splitlines()
    keyed = {}
    for line in lines:
        key, _timestamp, fields = line.split(" ", 2)
        keyed[json.loads(fields)["url"]] = key
    assert keyed == {url: surt.surt(url) for url in expected}
    assert all(key.startswith(f"test,xn--fa-hia:{port})/") for key in keyed.values())
    report = verify.verify([out / "warcs"], index=out / "index.cdxj", urlkey=surt.surt)
    assert report.ok, verify.render(report)


# ======================================================== SIGTERM and Ctrl-C (item 29)
#: the first SIGTERM or SIGINT (Ctrl-C) stops gracefully; README: "Press Ctrl-C once to stop
#: gracefully (in-flight fetches finish ...; exit code 3), twice to stop at once"
STOP_SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])


@STOP_SIGNALS
async def test_a_stop_signal_cuts_endless_slow_fetches_at_the_grace_period_and_resume_refetches(
    raw_server: RawServer, tmp_path: Path, sig: signal.Signals
) -> None:
    grace = 1.0
    out = tmp_path / "crawl"
    # 10 000 bytes at one per TICK: half an hour, i.e. never within the test
    site = mixed_site(raw_server, slow=4, fast=30, trickle_bytes=10_000)
    args = crawl_args(
        raw_server.url("/"), out, "--grace-period", f"{grace:g}", "--min-free-disk", "0"
    )
    proc = await start(args)
    await until(site.trickle.in_flight, proc)  # all 4 slow fetches are on the wire

    code, err, took = await stop_with(proc, sig)

    assert code == EXIT_INTERRUPTED, err
    assert f"{sig.name}: finishing in-flight fetches" in err
    # it waited for the in-flight fetches for the grace period...
    assert took >= grace, (took, err)
    # ...then hung up on every one of them, half an hour before their end: exiting at all
    # proves it (how soon after the grace period is a loaded machine's business)
    await asyncio.wait_for(site.trickle.all_cut.wait(), RUN_TIMEOUT)
    assert site.trickle.cut == 4
    assert_stopped_resumably(out)
    assert read_json(out / "summary.json")["reason"] == f"stopped by {sig.name}"
    captured = {r.uri for r in responses(out / "warcs")}
    slow_urls = {raw_server.url(p) for p in site.slow_paths}
    assert not captured & slow_urls  # cut fetches leave no record: resume fetches them

    site.trickle.slow = False
    code, err = await run(args)  # the same command

    assert code == EXIT_OK, err
    assert "resuming the crawl" in err
    assert_complete(out, site.urls())
    for path in site.slow_paths:  # cut once, fetched again once
        assert len(raw_server.requests_for(path)) == 2, path
    for path in ["/", *site.fast_paths]:  # done within the grace period, or left queued
        assert len(raw_server.requests_for(path)) == 1, path


@STOP_SIGNALS
async def test_a_stop_signal_lets_slow_fetches_that_end_within_the_grace_period_finish(
    raw_server: RawServer, tmp_path: Path, sig: signal.Signals
) -> None:
    # an hour: a crawler that waited out the grace period would hit the hang guard instead
    grace = 3600.0
    trickle_bytes = 8  # 8 bytes at one per TICK: done 1.6 s after they start
    out = tmp_path / "crawl"
    site = mixed_site(raw_server, slow=4, fast=30, trickle_bytes=trickle_bytes)
    args = crawl_args(
        raw_server.url("/"), out, "--grace-period", f"{grace:g}", "--min-free-disk", "0"
    )
    proc = await start(args)
    await until(site.trickle.in_flight, proc)

    code, err, _ = await stop_with(proc, sig)  # exiting at all: not at the end of the hour

    assert code == EXIT_INTERRUPTED, err
    assert f"{sig.name}: finishing in-flight fetches" in err
    # it stopped once the fetches ended: all of them served whole (below), none cut
    assert site.trickle.cut == 0
    assert_stopped_resumably(out)
    for path in site.slow_paths:  # captured whole, not truncated
        (record,) = responses(out / "warcs", raw_server.url(path))
        assert record.get("WARC-Truncated") is None
        assert record.block.endswith(b"\r\n\r\n" + site.trickle.body)

    code, err = await run(args)  # the same command

    assert code == EXIT_OK, err
    assert_complete(out, site.urls())
    for path in site.paths:  # what finished during the grace period is not fetched again
        assert len(raw_server.requests_for(path)) == 1, path


async def test_a_second_ctrl_c_stops_at_once_and_resume_completes(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Ctrl-C twice: the first waits for in-flight fetches (here: endless ones, with an hour of
    grace), the second stops at once. Exit code 3, a resumable state, and the same command
    completes the crawl with every page exactly once (the cut fetches fetched again)."""
    out = tmp_path / "crawl"
    site = mixed_site(raw_server, slow=4, fast=30, trickle_bytes=10_000)
    args = crawl_args(raw_server.url("/"), out, "--grace-period", "3600", "--min-free-disk", "0")
    proc = await start(args)
    with _reaped(proc):
        await until(site.trickle.in_flight, proc)
        proc.send_signal(signal.SIGINT)
        before = await said(proc, "SIGINT: finishing in-flight fetches")
        proc.send_signal(signal.SIGINT)  # once the first was taken: signals do not queue
        code, err = await finish(proc)  # an hour of grace left: only "at once" gets here

    assert code == EXIT_INTERRUPTED, before + err
    assert "SIGINT: stopping now" in err
    await asyncio.wait_for(site.trickle.all_cut.wait(), RUN_TIMEOUT)
    assert read_json(out / "state" / "crawl.json")["status"] == "interrupted"
    assert read_json(out / "summary.json")["reason"] == "stopped by SIGINT"
    slow_urls = {raw_server.url(p) for p in site.slow_paths}
    assert not {r.uri for r in responses(out / "warcs")} & slow_urls

    site.trickle.slow = False
    code, err = await run(args)  # the same command

    assert code == EXIT_OK, err
    assert "resuming the crawl" in err
    assert_complete(out, site.urls())
    for path in site.slow_paths:  # cut once, fetched again once
        assert len(raw_server.requests_for(path)) == 2, path


# ============================================================================ disk (item 36)
async def test_min_free_disk_above_the_real_free_space_refuses_to_start_resumably(
    raw_server: RawServer, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    site = mixed_site(raw_server, slow=0, fast=5, trickle_bytes=0)
    beyond = shutil.disk_usage(tmp_path).free // 10**12 + 1  # in TB: more than there is
    code, err = await run(crawl_args(raw_server.url("/"), out, "--min-free-disk", f"{beyond}TB"))

    assert code == EXIT_INTERRUPTED, err
    reason = read_json(out / "summary.json")["reason"]
    # in the unit the floor was given in (a floor in MB was shown as "0.00 GB")
    assert " TB free in " in reason and f"(--min-free-disk {beyond} TB)" in reason
    assert reason.endswith("; not starting")
    assert reason in err  # the terminal says why
    assert raw_server.requests == []  # nothing was fetched
    assert read_json(out / "state" / "crawl.json")["status"] == "interrupted"

    code, err = await run(crawl_args(raw_server.url("/"), out, "--min-free-disk", "1MB"))

    assert code == EXIT_OK, err
    assert "resuming the crawl" in err
    assert_complete(out, site.urls())


@contextmanager
def ballast(path: Path, size: int) -> Iterator[None]:
    """Really take ``size`` bytes of the filesystem (allocated blocks, not a sparse file)."""
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
        yield
    finally:
        os.close(fd)
        path.unlink()


async def test_free_space_falling_below_min_free_disk_mid_crawl_stops_resumably(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """The watcher runs every ``DISK_CHECK_SECONDS`` during the crawl, not only at the start.

    The crawl writes to a 64 MiB tmpfs of its own, which the ballast fills: the shared
    filesystem (and every other crawl on the machine, stopping at its own --min-free-disk)
    never sees the space go."""
    grace = 0.5
    with private_tmpfs(tmp_path / "fs", 64 << 20) as disk:
        out = disk / "crawl"
        free = shutil.disk_usage(disk).free
        # start with a quarter to spare, then take half: room for what the crawl itself writes
        margin = free // 4
        threshold = (free - margin) >> 20  # in MiB, as an operator gives it
        site = mixed_site(raw_server, slow=1, fast=10, trickle_bytes=10_000)
        args = crawl_args(
            raw_server.url("/"),
            out,
            "--min-free-disk",
            f"{threshold}MiB",
            "--grace-period",
            f"{grace:g}",
        )
        proc = await start(args)
        with _reaped(proc):
            await until(site.trickle.in_flight, proc)  # mid-crawl: a fetch is on the wire
            with ballast(disk / "ballast", 2 * margin):
                assert shutil.disk_usage(disk).free < threshold << 20
                # the next check sees it, and the slow fetch is cut at the grace period
                code, err = await finish(proc)

        assert code == EXIT_INTERRUPTED, err
        reason = read_json(out / "summary.json")["reason"]
        assert " MiB free in " in reason and f"(--min-free-disk {threshold} MiB)" in reason
        assert "not starting" not in reason
        assert reason in err
        # seen by the periodic check, or first by the writer before its next batch
        seen = log_events(out, "disk-space") + log_events(out, "write-error")
        assert reason in {event["error"] for event in seen}
        assert_stopped_resumably(out)

        site.trickle.slow = False
        code, err = await run(args)  # the same command, once the space is back

        assert code == EXIT_OK, err
        assert "resuming the crawl" in err
        assert_complete(out, site.urls())
