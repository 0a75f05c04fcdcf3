"""Faults the crawl must survive without reporting success over nothing kept.

Every test runs the real ``archiver crawl`` command as a subprocess against a local
:class:`RawServer`, injects one fault (named in the test's docstring), and checks what is
left: the exit code, what ``state/crawl.json`` says, no stray ``.tmp`` file, and every WARC
file judged by ``archiver verify`` and read by warcio. Where the crawl can go on, the same
command is run again once the fault is gone, and every page must then be captured exactly
once over both runs.

* **A full disk at each place a crawl writes** (a tmpfs of the test's own for each part of
  the crawl directory, filled mid-crawl by a ballast file: real ENOSPC from the kernel, never
  the shared filesystem's): the WARC files, the index journals, the state directory (the
  frontier database, crawl.json, pages.jsonl), and the crawl directory itself (the crawl log,
  then at the end the index and summary.json). Each stops the crawl resumably (exit 3).
  An I/O error (EIO) at the WARC file is injected below the writer instead (its ``write``),
  as no filesystem here can produce one on demand.
* **The crawl directory taken away mid-crawl**: removed (``rm -rf``), replaced (renamed and
  made again), unmounted. The crawl stops (exit 3) saying so, and writes nothing into what
  is at the path now; it never reports "completed".
* **The frontier database lost while the crawl is stopped**: deleted, cut short, replaced by
  another crawl's. The next run refuses to start over (exit 2) and names the command that
  rebuilds it from the WARC files; after ``archiver rebuild-frontier`` the same crawl command
  completes the crawl with every page captured once.
* **Reruns and resumes never lower the summary's counts**: ``summary.json`` describes the
  whole crawl across its runs (with the list of runs), a run killed before it wrote its
  summary included (its figures are checkpointed in crawl.json).
* **A hang-up** (the crawl's controlling terminal closed, as by a dropped SSH session: the
  kernel sends SIGHUP): a graceful stop like SIGTERM's, exit 3; ignored under ``nohup`` and
  in a systemd service, where the crawl completes.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from archiver.commands.exits import EXIT_INTERRUPTED, EXIT_OK, exit_code
from archiver.commands.hangup import hangup_stops
from archiver.commands.report import write_report
from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.run.test_edges_lifecycle import (
    REPO,
    _reaped,
    finish,
    http_response,
    log_events,
    run,
    said,
    start,
)
from tests.run.test_resume import crawl_args
from tests.support.faults import Terminal, assert_archive_sound, captured_once
from tests.support.filesystem import private_tmpfs, split_output
from tests.support.raw import RawServer

#: pages linked from the held page: enough that the crawl writes on after a fault
AFTER = 40
#: how the kernel (ENOSPC) and SQLite (SQLITE_FULL) say it
FULL = re.compile(r"No space left on device|database or disk is full")


@dataclass
class GatedSite:
    """``/`` links to ``/gate`` and to ``/a/0-3``; ``/gate`` is answered once ``open`` is set
    (``asked`` is set when it is requested) and links to ``/after/0-39``. Bodies are random
    bytes in hex: they do not compress, so the WARC grows as the pages come."""

    server: RawServer
    after: int = AFTER
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    open: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.server.add("/", page(["/gate", *(f"/a/{i}" for i in range(4))], filler=1000))
        for i in range(4):
            self.server.add(f"/a/{i}", page([], filler=4000))
        gate = page([f"/after/{i}" for i in range(self.after)], filler=20_000)

        async def held(_r: asyncio.StreamReader, writer: asyncio.StreamWriter, _q: bytes) -> bool:
            self.asked.set()
            await self.open.wait()
            writer.write(gate)
            await writer.drain()
            return True

        self.server.add_handler("/gate", held)
        for i in range(self.after):
            self.server.add(f"/after/{i}", page([], filler=4000))

    def urls(self) -> set[str]:
        paths = ["/", "/gate", *(f"/a/{i}" for i in range(4))]
        paths += [f"/after/{i}" for i in range(self.after)]
        return {self.server.url(path) for path in paths}


def page(links: list[str], *, filler: int) -> bytes:
    """A page of random text. Its long title makes each page's line in ``state/pages.jsonl``
    long too: on a full ``state/`` filesystem that file cannot grow within the blocks it
    has (the frontier database may, reusing its write-ahead log), so the fault is certain."""
    anchors = "".join(f'<a href="{link}">{link}</a>\n' for link in links)
    noise = os.urandom(filler).hex()
    title = os.urandom(1000).hex()
    return http_response(
        f"<html><head><title>{title}</title></head><body>{anchors}<p>{noise}</p></body></html>".encode()
    )


def crawl_state(out: Path) -> dict[str, Any]:
    data = json.loads((out / "state" / "crawl.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def stray_tmp(out: Path) -> list[Path]:
    return [path for path in out.rglob("*.tmp") if path.is_file()]


def assert_every_page_once(out: Path, site: GatedSite) -> None:
    records = assert_archive_sound(out)
    assert captured_once(records) == dict.fromkeys(site.urls(), 1)
    assert not list((out / "warcs").glob("*.open"))
    assert crawl_state(out)["status"] == "completed"


# ============================================================================ a full disk


@pytest.mark.parametrize(
    ("part", "where"),
    [
        ("warcs", "warcs/"),
        ("journals", "journals/"),
        ("state", "state/"),  # the frontier database, pages.jsonl: whichever writes first
        ("root", "crawl.log.jsonl"),
    ],
)
async def test_a_full_disk_anywhere_stops_resumably_and_the_rerun_completes(
    raw_server: RawServer, tmp_path: Path, part: str, where: str
) -> None:
    """Fault: the filesystem holding one part of the crawl directory fills up (real ENOSPC)
    while ``/gate`` is held, so the pages it links to are written onto a full disk. The crawl
    exits 3 ("interrupted"), crawl.json says which file could not be written and why, no
    ``.tmp`` is left, the WARC files are sound; once the space is back the same command
    completes the crawl, every page captured once."""
    site = GatedSite(raw_server)
    with split_output(tmp_path / "out") as disks:
        out = disks.out
        args = crawl_args(raw_server.url("/"), out, "--min-free-disk", "0", "--workers", "2")
        proc = await start(args)
        with _reaped(proc):
            await asyncio.wait_for(site.asked.wait(), 60)
            disks.fill(part)
            site.open.set()
            code, err = await finish(proc)

        assert code == EXIT_INTERRUPTED, err
        state = crawl_state(out)
        assert state["status"] == "interrupted"
        assert FULL.search(state["reason"]), state["reason"]
        assert where in state["reason"], state["reason"]
        assert state["runs"][-1]["status"] == "interrupted"
        assert stray_tmp(out) == []
        assert_archive_sound(out, stopped=True)

        disks.free(part)
        code, err = await run(args)
        assert code == EXIT_OK, err
        assert_every_page_once(out, site)
        assert stray_tmp(out) == []


async def test_a_full_disk_at_the_end_leaves_no_summary_half_written(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: the crawl directory's own filesystem (the log, index.cdxj, summary.json) fills
    up once the last page is asked for: the crawl finishes its captures, then cannot write its
    index and summary. Interrupted (exit 3), crawl.json (in ``state/``, which has room) says
    so, no ``index.cdxj.tmp`` or ``summary.json.tmp`` is left; the rerun writes them and
    completes with nothing fetched twice."""
    site = GatedSite(raw_server, after=0)
    with split_output(tmp_path / "out") as disks:
        out = disks.out
        args = crawl_args(raw_server.url("/"), out, "--min-free-disk", "0", "--workers", "1")
        proc = await start(args)
        with _reaped(proc):
            await asyncio.wait_for(site.asked.wait(), 60)
            disks.fill("root")
            site.open.set()
            code, err = await finish(proc)

        assert code == EXIT_INTERRUPTED, err
        state = crawl_state(out)
        assert state["status"] == "interrupted"
        assert FULL.search(state["reason"]), state["reason"]
        assert stray_tmp(out) == []
        assert_archive_sound(out, stopped=True)

        disks.free("root")
        code, err = await run(args)
        assert code == EXIT_OK, err
        assert_every_page_once(out, site)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["status"] == "completed"


async def test_an_io_error_at_the_warc_stops_resumably(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: EIO from ``write`` on the WARC file after the first captures (injected below the
    writer: ``Crawler(write_fn=...)``). The run is interrupted with the error named, the file
    written so far stays ``.open`` for the resume repair, and the next run completes."""
    site = GatedSite(raw_server, after=5)
    site.open.set()
    out = tmp_path / "out"
    budget = {"writes": 6}

    def failing_write(fd: int, data: Any) -> int:
        budget["writes"] -= 1
        if budget["writes"] < 0:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.write(fd, data)

    settings = fast_settings(out, raw_server.url("/"), frontier="sqlite", workers=1)
    result = await Crawler(settings, write_fn=failing_write).run()
    assert exit_code(result.status) == EXIT_INTERRUPTED
    assert "Input/output error" in (result.reason or "")
    assert crawl_state(out)["status"] == "interrupted"
    assert stray_tmp(out) == []
    assert_archive_sound(out, stopped=True)

    result = await Crawler(settings).run()
    assert exit_code(result.status) == EXIT_OK, result.reason
    assert_every_page_once(out, site)


# ================================================================ the directory taken away


async def crawl_until_gate(site: GatedSite, out: Path) -> asyncio.subprocess.Process:
    proc = await start(crawl_args(site.server.url("/"), out, "--min-free-disk", "0"))
    await asyncio.wait_for(site.asked.wait(), 60)
    return proc


async def test_the_crawl_directory_removed_mid_crawl_is_never_completed(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: ``rm -rf`` of the crawl directory while a fetch is in flight. The crawl went on
    writing into deleted files, exited 0 ("completed") and made ``state/crawl.json`` again
    saying so. Now: exit 3, the reason names the removed directory, and nothing is made
    again at its path."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    proc = await crawl_until_gate(site, out)
    with _reaped(proc):
        shutil.rmtree(out)
        site.open.set()
        code, err = await finish(proc)

    assert code == EXIT_INTERRUPTED, err
    assert f"{out} was removed while the crawl ran" in err
    assert "completed" not in err
    assert not out.exists()


async def test_the_crawl_directory_replaced_mid_crawl_is_left_alone(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: the crawl directory renamed away and an empty one made at its path (a restore,
    a cleanup script) while a fetch is in flight: exit 3, nothing is written into the new
    directory; moved back, the same command resumes the crawl and completes it, every page
    captured once."""
    site = GatedSite(raw_server)
    out, away = tmp_path / "out", tmp_path / "moved-away"
    proc = await crawl_until_gate(site, out)
    with _reaped(proc):
        out.rename(away)
        out.mkdir()
        site.open.set()
        code, err = await finish(proc)

    assert code == EXIT_INTERRUPTED, err
    assert f"{out} was replaced while the crawl ran" in err
    assert list(out.iterdir()) == []
    assert_archive_sound(away, stopped=True)

    out.rmdir()
    away.rename(out)
    code, err = await run(crawl_args(raw_server.url("/"), out, "--min-free-disk", "0"))
    assert code == EXIT_OK, err
    assert_every_page_once(out, site)


async def test_the_crawl_directory_unmounted_mid_crawl_stops(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: the volume holding the crawl directory is unmounted (lazily, as ``umount -l``
    does with files still open) while a fetch is in flight: exit 3, the reason says
    unmounted, and nothing is written into the directory the mount covered."""
    site = GatedSite(raw_server)
    mount = tmp_path / "volume"
    with private_tmpfs(mount, 64 << 20):
        out = mount / "out"
        proc = await crawl_until_gate(site, out)
        with _reaped(proc):
            umount = await asyncio.create_subprocess_exec(
                "umount", "-l", str(mount), stderr=asyncio.subprocess.PIPE
            )
            _, said = await umount.communicate()
            assert umount.returncode == 0, said.decode()
            site.open.set()
            code, err = await finish(proc)

    assert code == EXIT_INTERRUPTED, err
    assert f"{out} was " in err and "while the crawl ran" in err
    assert list(mount.iterdir()) == []  # the directory under the mount point: untouched


# ============================================================================ lost state


async def interrupted_crawl(site: GatedSite, out: Path) -> list[str]:
    """A crawl stopped by SIGTERM while ``/gate`` is held: the pages before it captured, the
    ones it links to queued. Returns the crawl's command line (run again, it resumes)."""
    args = crawl_args(site.server.url("/"), out, "--min-free-disk", "0", "--workers", "2")
    proc = await start(args)
    with _reaped(proc):
        await asyncio.wait_for(site.asked.wait(), 60)
        proc.send_signal(signal.SIGTERM)
        await said(proc, "SIGTERM: finishing in-flight fetches")
        site.open.set()
        code, err = await finish(proc)
    assert code == EXIT_INTERRUPTED, err
    return args


def lose_database(out: Path, how: str) -> None:
    database = out / "state" / "frontier.sqlite"
    if how == "deleted":
        for suffix in ("", "-wal", "-shm"):
            database.with_name(database.name + suffix).unlink(missing_ok=True)
    else:  # cut short, as a copy interrupted half-way leaves it
        with open(database, "r+b") as fh:
            fh.truncate(os.fstat(fh.fileno()).st_size // 2)


async def rebuild(out: Path) -> str:
    """``archiver rebuild-frontier OUT``, as the error message says to run it: its output."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", "rebuild-frontier", str(out),
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    with _reaped(proc):
        said_, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == EXIT_OK, err.decode()
    return said_.decode()


@pytest.mark.parametrize("how", ["deleted", "truncated"])
async def test_a_lost_frontier_is_a_clear_error_and_the_rebuild_captures_each_page_once(
    raw_server: RawServer, tmp_path: Path, how: str
) -> None:
    """Fault: ``state/frontier.sqlite`` deleted, or cut to half its size, while the crawl is
    stopped. The next run used to start over from the seed without a word and archive every
    page a second time (the dedup digests were lost with it); now it exits 2 before writing a
    thing, saying what is wrong and which command rebuilds it. ``archiver rebuild-frontier``
    makes the database again from the WARC files, and the crawl's own command then completes
    the crawl: every page captured once over all the runs."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    args = await interrupted_crawl(site, out)
    before = crawl_state(out)
    requested = len(raw_server.requests)
    captured = len(captured_once(assert_archive_sound(out, stopped=True)))
    lose_database(out, how)

    code, err = await run(args)
    assert code == 2, err
    *_, said_ = err.splitlines()  # one line says it (after "resuming the crawl in ...")
    assert said_.startswith("archiver crawl: state: ") and "state/frontier.sqlite" in said_
    assert f"archiver rebuild-frontier {out}" in said_
    assert crawl_state(out) == before  # nothing was written
    assert len(raw_server.requests) == requested  # nothing was fetched

    rebuilt = await rebuild(out)
    # every captured URL done; every other page of the site found again from the seed
    assert f"{captured} URLs done, {len(site.urls()) - captured} queued" in rebuilt
    code, err = await run(args)
    assert code == EXIT_OK, err
    assert_every_page_once(out, site)
    assert stray_tmp(out) == []


async def test_another_crawls_frontier_is_refused(raw_server: RawServer, tmp_path: Path) -> None:
    """Fault: the frontier database of another crawl copied into a stopped crawl's state (a
    restore from the wrong backup): the run refuses it by the crawl's identity, which
    crawl.json and the database both carry (exit 2)."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    args = await interrupted_crawl(site, out)
    other = tmp_path / "other"
    code, err = await run(crawl_args(raw_server.url("/a/0"), other, "--min-free-disk", "0"))
    assert code == EXIT_OK, err
    for suffix in ("", "-wal", "-shm"):
        (out / "state" / f"frontier.sqlite{suffix}").unlink(missing_ok=True)
    shutil.copy(other / "state" / "frontier.sqlite", out / "state" / "frontier.sqlite")

    code, err = await run(args)
    assert code == 2, err
    assert "belongs to another crawl" in err and "archiver rebuild-frontier" in err


# ==================================================================== the summary of every run


async def test_the_summary_counts_every_run_and_a_rerun_lowers_nothing(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: a crawl stopped (SIGTERM), resumed to completion, then run again. summary.json
    described the last run only: the resume's summary counted only what it captured, and a
    rerun that had nothing left to do wrote 0 captures. Now it is the whole crawl: the sum of
    the runs, each listed with its own figures, and a rerun changes nothing."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    args = await interrupted_crawl(site, out)
    first = json.loads((out / "summary.json").read_text())
    assert [run["status"] for run in first["runs"]] == ["interrupted"]

    code, err = await run(args)
    assert code == EXIT_OK, err
    assert_every_page_once(out, site)
    whole = json.loads((out / "summary.json").read_text())
    assert whole["captures"] == len(site.urls()) > first["captures"] > 0
    assert [run["status"] for run in whole["runs"]] == ["interrupted", "completed"]
    assert sum(run["captures"] for run in whole["runs"]) == whole["captures"]
    assert whole["runs"][0]["captures"] == first["captures"]
    assert whole["started"] == first["started"]
    page = write_report(out, tmp_path / "report.html").read_text()  # the report lists them
    runs = page.split("<h2>Runs</h2>", 1)[1].split("</table>", 1)[0]
    assert runs.count("<tr><td>") == 2 and "stopped by SIGTERM" in runs

    code, err = await run(args)  # nothing left to do
    assert code == EXIT_OK, err
    again = json.loads((out / "summary.json").read_text())
    assert again["runs"] == whole["runs"], (again["runs"], whole["runs"], err)
    assert again == whole


async def test_a_killed_run_is_still_counted(raw_server: RawServer, tmp_path: Path) -> None:
    """Fault: ``kill -9`` of the crawl, which therefore never wrote its summary. The run that
    resumes it counts it all the same, from the figures the killed run checkpointed in
    crawl.json every couple of seconds: the crawl's summary lists both runs and counts no
    fewer captures than the WARC files hold."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    args = crawl_args(raw_server.url("/"), out, "--min-free-disk", "0", "--workers", "2")
    proc = await start(args)
    with _reaped(proc):
        await asyncio.wait_for(site.asked.wait(), 60)
        # its first checkpoint: crawl.json is a file, no event to wait on
        while not crawl_state(out)["runs"][-1].get("captures"):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        proc.kill()
        await proc.wait()
    assert not (out / "summary.json").exists()
    site.open.set()

    code, err = await run(args)
    assert code == EXIT_OK, err
    records = assert_archive_sound(out)
    summary = json.loads((out / "summary.json").read_text())
    assert [run["status"] for run in summary["runs"]] == ["running", "completed"]
    assert summary["runs"][0]["captures"] > 0
    assert summary["captures"] >= sum(captured_once(records).values()) == len(site.urls())


# ============================================================================ huge inputs


def million_seeds(server: RawServer, path: Path, count: int = 1_000_000) -> Path:
    """A seeds file of ``count`` URLs of the local server (each answered 404 at once), with
    one line that is not a URL."""
    base = server.url("/s/")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# a comment\nnot a url at all ::\n")
        fh.writelines(f"{base}{n}\n" for n in range(count))
    return path


async def test_a_million_seeds_file_never_holds_the_crawl(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: a ``--seeds-file`` of 1,000,000 URLs. Read and queued in one go, it held the
    event loop for about 90 s (SIGTERM answered after 63 s) and copied every seed into a
    39 MB summary.json. Now the file is fed a batch at a time while the crawl runs: fetching
    starts at once, SIGTERM is answered within a second, and the summary keeps the count
    (and the first seeds), not the list; the line that is not a URL is logged and left
    out."""
    seeds = million_seeds(raw_server, tmp_path / "seeds.txt")
    out = tmp_path / "out"
    proc = await start(crawl_args(raw_server.url("/"), out, "--seeds-file", str(seeds)))
    with _reaped(proc):
        while len(raw_server.requests) < 50:  # fetching the seeds: the crawl is under way
            await asyncio.sleep(0.05)
            assert proc.returncode is None
        sent = asyncio.get_running_loop().time()
        proc.send_signal(signal.SIGTERM)
        await said(proc, "SIGTERM: finishing in-flight fetches")
        answered = asyncio.get_running_loop().time() - sent
        code, err = await finish(proc)

    assert code == EXIT_INTERRUPTED, err
    assert answered < 1.0, f"SIGTERM answered after {answered:.2f} s"
    text = (out / "summary.json").read_text()
    assert len(text) < 64 * 1024, f"summary.json is {len(text)} bytes"
    summary = json.loads(text)
    assert summary["reason"] == "stopped by SIGTERM"
    assert len(summary["seeds"]) == 100 and summary["seeds"][0] == raw_server.url("/")
    assert summary["seeds_count"] > len(raw_server.requests) > 0
    (invalid,) = [e for e in log_events(out, "seed-invalid")]
    assert invalid["line"] == 2 and invalid["seed"] == "not a url at all ::"


async def test_max_duration_holds_with_a_million_seeds(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: as above, with ``--max-duration 3s``: the crawl stops at its limit (exit 0,
    status "limit"), not after the seeds file was read (which took 28 s before the file was
    read in batches). The stop is decided at the limit; the summary's duration also holds the
    drain after it (leases in flight end, the index is written), which a loaded machine slows:
    two seconds are allowed for it."""
    seeds = million_seeds(raw_server, tmp_path / "seeds.txt")
    out = tmp_path / "out"
    code, err = await run(
        crawl_args(raw_server.url("/"), out, "--seeds-file", str(seeds), "--max-duration", "3s")
    )
    assert code == EXIT_OK, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "limit"
    assert 3.0 <= summary["duration_seconds"] < 5.0, summary["duration_seconds"]


# ============================================================================ SIGHUP


def terminal_args(seed: str, out: Path) -> list[str]:
    """The crawl's command line with its progress display on (it draws on the terminal)."""
    return [arg for arg in crawl_args(seed, out, "--min-free-disk", "0") if arg != "--quiet"]


async def exited(proc: asyncio.subprocess.Process) -> int:
    try:
        return await asyncio.wait_for(proc.wait(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()


async def test_a_hang_up_stops_the_crawl_like_sigterm(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: the crawl's terminal is closed while a fetch is in flight (a dropped SSH
    session); the kernel sends it SIGHUP, and its terminal fails every write from then on. It
    used to die on the spot (crawl.json left at "running", no summary); it stops gracefully
    as for SIGTERM: the fetch in flight finishes, exit 3, "stopped by SIGHUP". The same
    command, run again, completes the crawl."""
    site = GatedSite(raw_server, after=5)
    out = tmp_path / "out"
    terminal = Terminal()
    proc = await terminal.start(
        sys.executable, "-m", "archiver", *terminal_args(raw_server.url("/"), out), cwd=REPO
    )
    with _reaped(proc):
        await asyncio.wait_for(site.asked.wait(), 60)
        terminal.hang_up()
        site.open.set()
        code = await exited(proc)

    assert code == EXIT_INTERRUPTED, terminal.output.decode("utf-8", "replace")[-2000:]
    state = crawl_state(out)
    assert (state["status"], state["reason"]) == ("interrupted", "stopped by SIGHUP")
    assert json.loads((out / "summary.json").read_text())["reason"] == "stopped by SIGHUP"
    assert site.server.requests_for("/gate")  # the fetch in flight was let finish
    assert_archive_sound(out, stopped=True)

    code, err = await run(crawl_args(raw_server.url("/"), out, "--min-free-disk", "0"))
    assert code == EXIT_OK, err
    assert_every_page_once(out, site)


async def test_a_hang_up_under_nohup_is_ignored(raw_server: RawServer, tmp_path: Path) -> None:
    """Fault: as above, but the command runs under ``nohup`` (SIGHUP ignored from the start,
    output to nohup.out): the user detached it, so the hang-up changes nothing and the crawl
    completes (exit 0)."""
    site = GatedSite(raw_server, after=5)
    out = tmp_path / "out"
    terminal = Terminal()
    argv = ["nohup", sys.executable, "-m", "archiver", *crawl_args(raw_server.url("/"), out)]
    proc = await terminal.start(*argv, cwd=tmp_path)
    with _reaped(proc):
        await asyncio.wait_for(site.asked.wait(), 60)
        terminal.hang_up()
        site.open.set()
        code = await exited(proc)

    assert code == EXIT_OK, (tmp_path / "nohup.out").read_text(errors="replace")[-2000:]
    assert_every_page_once(out, site)


async def test_sighup_in_a_systemd_service_is_ignored(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: SIGHUP sent to a crawl running as a systemd service (``INVOCATION_ID`` set, as
    systemd sets it): there is no terminal to hang up, the signal is ignored (its default
    action would kill the crawl) and the crawl completes."""
    site = GatedSite(raw_server, after=5)
    out = tmp_path / "out"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "archiver", *crawl_args(raw_server.url("/"), out),
        cwd=REPO, env={**os.environ, "INVOCATION_ID": "0123456789abcdef"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    with _reaped(proc):
        await asyncio.wait_for(site.asked.wait(), 60)
        proc.send_signal(signal.SIGHUP)
        site.open.set()
        code, err = await finish(proc)

    assert code == EXIT_OK, err
    assert_every_page_once(out, site)


@pytest.mark.parametrize(
    ("handler", "environ", "stops"),
    [
        (signal.SIG_DFL, {}, True),  # a terminal's crawl
        (signal.SIG_IGN, {}, False),  # nohup
        (signal.SIG_DFL, {"INVOCATION_ID": "x"}, False),  # a systemd service
    ],
)
def test_which_hang_ups_stop_a_crawl(handler: object, environ: dict[str, str], stops: bool) -> None:
    assert hangup_stops(handler, environ) is stops


async def test_an_older_copy_of_the_frontier_is_refused(
    raw_server: RawServer, tmp_path: Path
) -> None:
    """Fault: a copy of the frontier database from before the crawl's last run put back (a
    restore from yesterday's backup): crawl.json recorded more URLs settled at the end of that
    run than the copy holds, so the copy is refused (exit 2) rather than fetching them again."""
    site = GatedSite(raw_server)
    out = tmp_path / "out"
    args = await interrupted_crawl(site, out)
    state = crawl_state(out)
    assert state["frontier_settled"] == len(captured_once(assert_archive_sound(out, stopped=True)))
    state["frontier_settled"] += 5  # the crawl went on after the copy was made
    (out / "state" / "crawl.json").write_text(json.dumps(state))

    code, err = await run(args)
    assert code == 2, err
    assert "is older than the crawl" in err and "archiver rebuild-frontier" in err
