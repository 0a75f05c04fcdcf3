"""Scheduled runs: a job directory, its lock, timestamped runs, "previous", examples."""

from __future__ import annotations

import asyncio
import configparser
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver.commands.exits import EXIT_INTERRUPTED, EXIT_LOCKED, exit_code
from archiver.config.settings import read_config
from archiver.errors import LockedError
from archiver.run import jobs
from archiver.run.crawler import Crawler, CrawlResult
from archiver.timefmt import Clock, utcnow
from tests.conftest import fast_settings
from tests.dedup.test_recrawl import ChangingSite, assert_replays_latest, later, set_status
from tests.docs.registry import documents
from tests.docs.shell import VENV, DocShell, read_until, wait_for, workdir
from tests.support.site import SiteServer
from tests.support.warcs import responses

REPO = Path(__file__).resolve().parents[2]
PREVIOUS = Path("previous")


async def run_job(
    job: Path, *seeds: str, clock: Clock = utcnow, **overrides: Any
) -> tuple[jobs.JobRun, CrawlResult]:
    """What ``archiver crawl --job JOB`` does (cli.py), with the run's clock given."""
    settings = fast_settings(None, *seeds, **overrides)  # type: ignore[arg-type]
    with jobs.open_run(job, settings, now=clock()) as run:
        result = await Crawler(run.settings, clock=clock).run()
        run.finish(result.status, exit_code(result.status), result.reason, result.summary)
    return run, result


async def test_runs_of_a_job_store_only_what_changed(tmp_path: Path) -> None:
    job = tmp_path / "example-job"
    async with SiteServer() as site:
        changing = ChangingSite(site)
        sources: dict[str, Any] = {"dedup_from": (PREVIOUS,), "revalidate_from": (PREVIOUS,)}
        first_run, first = await run_job(job, site.url("/"), **sources)
        assert first.status == "completed" and exit_code(first.status) == 0
        assert first_run.previous is None and not first_run.resumed
        assert first_run.notes == ["no earlier completed run: this run stores everything in full"]
        assert first_run.settings.dedup_from == () == first_run.settings.revalidate_from
        changing.version = 2
        second_run, _ = await run_job(job, site.url("/"), clock=later(1), **sources)
        third_run, third = await run_job(job, site.url("/"), clock=later(2), **sources)

        runs = sorted((job / "runs").iterdir())
        assert runs == [first_run.directory, second_run.directory, third_run.directory]
        for run in runs:
            assert re.fullmatch(r"\d{8}T\d{6}Z(-\d+)?", run.name)
            assert (run / "summary.json").is_file()  # next to warcs/
            for warc in (run / "warcs").glob("*.warc.gz"):
                assert warc.name.startswith("example-job-")
        assert second_run.previous == first_run.directory
        assert second_run.settings.dedup_from == (first_run.directory,)
        assert third_run.settings.revalidate_from == (second_run.directory,)
        kinds = [r.type for r in responses(second_run.directory / "warcs")]
        assert kinds.count("revisit") == 5 and kinds.count("response") == 3
        assert {r.type for r in responses(third_run.directory / "warcs")} == {"revisit"}
        # run 3 refers to run 1 for what has not changed since, through run 2
        deps = {d["crawl"] for d in third.summary["depends_on"]}
        assert deps == {str(first_run.directory.resolve()), str(second_run.directory.resolve())}
        await assert_replays_latest(tmp_path, runs)

    log = [json.loads(line) for line in (job / "runs.jsonl").read_text().splitlines()]
    assert [e["run"] for e in log] == [r.name for r in runs]
    assert [e["status"] for e in log] == ["completed"] * 3
    assert [e["exit_code"] for e in log] == [0] * 3
    assert log[1]["revisits"] == 5 and log[1]["previous"] == str(first_run.directory)
    assert (job / "latest").resolve() == third_run.directory.resolve()
    assert third.summary["status"] == "completed"


async def test_two_runs_of_one_job_at_once(tmp_path: Path) -> None:
    """The second exits at once, with a clear "locked" message, and writes nothing: it is
    refused while the first is provably mid-crawl (its server holds a page until the second
    has been refused), so it did not wait for the lock."""
    job = tmp_path / "job"
    async with SiteServer() as site:
        site.add_page("/", "".join(f'<a href="/p{i}">{i}</a>' for i in range(6)))
        for i in range(6):
            site.add_page(f"/p{i}", "leaf")
        held = asyncio.Event()
        release = asyncio.Event()
        leaf = site.routes["/p0"]

        async def hold(request: web.Request) -> web.StreamResponse:
            held.set()
            await release.wait()
            return await leaf(request)

        site.add_handler("/p0", hold)

        async def first() -> CrawlResult:
            settings = fast_settings(None, site.url("/"), workers=1)  # type: ignore[arg-type]
            with jobs.open_run(job, settings) as run:
                result = await Crawler(run.settings).run()
                run.finish(result.status, exit_code(result.status), result.reason, result.summary)
            return result

        task = asyncio.create_task(first())
        try:
            await asyncio.wait_for(held.wait(), 60)  # a hang guard: the first is mid-crawl
            with pytest.raises(LockedError) as caught:
                await run_job(job, site.url("/"))
            assert not task.done()  # refused while the first still held its page
        finally:
            release.set()
        message = str(caught.value)
        assert "locked" in message and str(job.absolute()) in message
        assert f"pid {os.getpid()}" in message
        assert len(list((job / "runs").iterdir())) == 1
        assert (await task).status == "completed"
    assert len((job / "runs.jsonl").read_text().splitlines()) == 1


@contextlib.contextmanager
def lock_held_by_another_process(job: Path) -> Iterator[subprocess.Popen[str]]:
    """A second Python process holding ``job``'s lock until the block ends."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from archiver.run.jobs import Job\n"
            "with Job(pathlib.Path(sys.argv[1])).lock():\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.read()\n",
            str(job),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield holder
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()


def test_the_lock_holds_across_processes(tmp_path: Path) -> None:
    job = tmp_path / "job"
    settings = fast_settings(None, "http://127.0.0.1:9/")  # type: ignore[arg-type]
    with lock_held_by_another_process(job) as holder:  # noqa: SIM117 - the holder's pid is matched
        with pytest.raises(LockedError, match=f"locked: .*pid {holder.pid}"):
            with jobs.open_run(job, settings):
                pass
    with jobs.open_run(job, settings) as run:  # released when its holder exits
        assert run.directory.parent == job.absolute() / "runs"


def test_cli_second_run_of_a_job_exits_locked(tmp_path: Path) -> None:
    job = tmp_path / "job"
    with lock_held_by_another_process(job) as holder:
        # the lock is held until this block ends: a run that waited for it would never exit
        # (subprocess.run's timeout is the hang guard), so exiting proves it did not wait
        proc = subprocess.run(
            [sys.executable, "-m", "archiver", "crawl", "--job", str(job), "http://127.0.0.1:9/"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert holder.poll() is None  # refused while the lock was held
    assert proc.returncode == EXIT_LOCKED, proc.stderr
    assert "locked" in proc.stderr and str(job.absolute()) in proc.stderr
    assert not (job / "runs").exists() or not list((job / "runs").iterdir())


async def test_interrupted_runs_are_resumed_failed_ones_are_not(tmp_path: Path) -> None:
    job = tmp_path / "job"
    async with SiteServer() as site:
        ChangingSite(site)
        first_run, _ = await run_job(job, site.url("/"))
        for status in ("interrupted", "running"):
            set_status(first_run.directory, status)
            run, result = await run_job(job, site.url("/"))
            assert run.resumed and run.directory == first_run.directory
            assert run.notes[0].startswith(f"resuming run {first_run.directory.name}")
            assert result.status == "completed" and result.resumed
        assert len(list((job / "runs").iterdir())) == 1
        set_status(first_run.directory, "interrupted")
        fresh, _ = await run_job(job, site.url("/"), overwrite=True)  # "start a new run anyway"
        assert not fresh.resumed and fresh.directory != first_run.directory
        set_status(fresh.directory, "failed")
        after_failure, _ = await run_job(job, site.url("/"), clock=later(1), dedup_from=(PREVIOUS,))
        assert not after_failure.resumed
        assert len(list((job / "runs").iterdir())) == 3
        # "previous" skips the failed run and the interrupted one
        assert after_failure.previous is None
        set_status(first_run.directory, "limit")
        assert jobs.Job(job).latest_usable() == after_failure.directory
        assert jobs.Job(job).latest_usable(before=after_failure.directory.name) == (
            first_run.directory
        )


def test_run_names_are_unique_within_a_second(tmp_path: Path) -> None:
    from datetime import UTC, datetime  # noqa: PLC0415

    job = jobs.Job(tmp_path / "job")
    moment = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    names = []
    for _ in range(3):
        name = job.new_run_name(moment)
        (job.runs_dir / name).mkdir(parents=True)
        names.append(name)
    assert names == ["20250102T030405Z", "20250102T030405Z-1", "20250102T030405Z-2"]
    assert sorted(names) == names
    assert jobs.resolve_sources((PREVIOUS, Path("/x"), PREVIOUS), None) == (Path("/x"),)
    assert jobs.resolve_sources((PREVIOUS,), Path("/r")) == (Path("/r"),)


# -------------------------------------------------------------------------------- examples


def test_example_job_file_is_valid_settings(tmp_path: Path) -> None:
    path = REPO / "config" / "job-example.toml"
    data = tomllib.loads(path.read_text())
    assert data["crawl"]["job"] == "/var/lib/archiver/jobs/example"
    assert data["dedup"]["dedup_from"] == ["previous"] == data["dedup"]["revalidate_from"]
    assert "output" not in data["crawl"]  # runs go to JOB/runs/
    values = read_config(path)
    assert values["wacz"] is True
    assert values["min_free_disk"] == 20_000_000_000


def test_example_cron_line() -> None:
    lines = [
        line
        for line in (REPO / "config" / "cron.example").read_text().splitlines()
        if line.strip() and not line.startswith("#") and "=" not in line.split()[0]
    ]
    (line,) = lines
    fields = line.split(None, 6)
    assert fields[:5] == ["15", "2", "*", "*", "*"]
    assert fields[5] == "archiver"  # /etc/cron.d format: a user column
    assert "archiver crawl --config /etc/archiver/jobs/example.toml" in fields[6]


def test_example_systemd_units(tmp_path: Path) -> None:
    service = configparser.ConfigParser(strict=False, interpolation=None)
    service.optionxform = str  # type: ignore[assignment,method-assign]
    service.read(REPO / "config" / "archiver-crawl@.service")
    exec_start = service["Service"]["ExecStart"]
    assert exec_start.endswith("archiver crawl --config /etc/archiver/jobs/%i.toml --quiet")
    assert service["Service"]["SuccessExitStatus"] == "4"
    # SIGTERM to archiver alone: it stops its processes, then their redis-server, in order
    assert service["Service"]["KillMode"] == "mixed"
    timer = configparser.ConfigParser(strict=False, interpolation=None)
    timer.optionxform = str  # type: ignore[assignment,method-assign]
    timer.read(REPO / "config" / "archiver-crawl@.timer")
    assert timer["Timer"]["Unit"] == "archiver-crawl@%i.service"
    assert timer["Timer"]["OnCalendar"].startswith("*-*-* 02:15:00")
    assert timer["Install"]["WantedBy"] == "timers.target"
    analyze = shutil.which("systemd-analyze")
    assert analyze is not None, (
        "systemd-analyze is missing: scripts/test installs it (Debian package systemd)"
    )
    for unit in ("service", "timer"):
        text = (REPO / "config" / f"archiver-crawl@.{unit}").read_text()
        # verify insists that ExecStart's binary exists: any executable will do
        text = text.replace("/opt/archiver/.venv/bin/archiver", sys.executable)
        (tmp_path / f"archiver-crawl@example.{unit}").write_text(text)
    proc = subprocess.run(
        [
            analyze,
            "verify",
            "--man=no",
            str(tmp_path / "archiver-crawl@example.service"),
            str(tmp_path / "archiver-crawl@example.timer"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------- the documented command lines, as written

#: The scheduled job's command lines: config/cron.example's entry, the systemd unit's
#: ExecStart (%i is the instance: archiver-crawl@example runs example.toml), and the README's.
CRON = "/opt/archiver/.venv/bin/archiver crawl --config /etc/archiver/jobs/example.toml --quiet"
UNIT = "/opt/archiver/.venv/bin/archiver crawl --config /etc/archiver/jobs/%i.toml --quiet"
BY_HAND = "archiver crawl --config /etc/archiver/jobs/example.toml"


def example_job(tmp_path: Path, seed: str) -> Path:
    """config/job-example.toml with only what names the machine changed: the job directory and
    the seed (a local site), and the free-disk floor, so the test does not depend on 20 GB
    being free where it runs. Everything else (robots, delays, wacz, dedup from "previous")
    is the example's own."""
    text = (REPO / "config" / "job-example.toml").read_text()
    text = text.replace('"/var/lib/archiver/jobs/example"', json.dumps(str(tmp_path / "job")))
    text = text.replace('"https://www.example.org/"', json.dumps(seed))
    text = text.replace('min_free_disk = "20GB"', 'min_free_disk = "10MB"')
    config = tmp_path / "example.toml"
    config.write_text(text)
    return config


def machine_paths(line: str, config: Path) -> dict[str, str]:
    """Where the documented line names the install and the job file, this checkout's
    archiver and the test's copy of the job file."""
    paths = {
        "/opt/archiver/.venv/bin/archiver": str(VENV / "bin" / "archiver"),
        "/etc/archiver/jobs/example.toml": str(config),
        "/etc/archiver/jobs/%i.toml": str(config),
    }
    return {old: new for old, new in paths.items() if old in line}


def both_at_once(scenario: Callable[[str, Path], None], tmp_path: Path) -> None:
    """``scenario`` for the cron line and the unit's line, in two threads (each waits on
    its crawl's politeness delays, not on the CPU), each in a directory of its own."""
    with ThreadPoolExecutor(2) as pool:
        futures = [
            pool.submit(scenario, line, tmp_path / name)
            for line, name in ((CRON, "cron"), (UNIT, "unit"))
        ]
        for future in futures:
            future.result()


def job_log(job: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (job / "runs.jsonl").read_text().splitlines()]


@documents(CRON, UNIT)
def test_the_example_job_runs_from_its_documented_command_lines(
    doc: DocShell, tmp_path: Path
) -> None:
    """Two scheduled runs of config/job-example.toml, each from the exact command line of the
    cron example or the systemd unit: the seeds come from the job file (no positional seed was
    typed, so none may replace them), and the second run stores only what changed."""

    def two_runs(line: str, tmp: Path) -> None:
        cwd = workdir(tmp)
        with SiteServer().running_in_thread() as site:
            changing = ChangingSite(site)
            replace = machine_paths(line, example_job(tmp, site.url("/")))
            first = doc.run(line, cwd=cwd, replace=replace)
            assert first.returncode == 0, first.stderr
            changing.version = 2
            second = doc.run(line, cwd=cwd, replace=replace)
            assert second.returncode == 0, second.stderr
        job = tmp / "job"
        runs = sorted((job / "runs").iterdir())
        assert len(runs) == 2, runs
        log = job_log(job)
        assert [e["run"] for e in log] == [r.name for r in runs]
        assert [(e["status"], e["exit_code"]) for e in log] == [("completed", 0)] * 2
        assert (job / "latest").resolve() == runs[1].resolve()
        first_kinds = [r.type for r in responses(runs[0] / "warcs")]
        assert first_kinds and set(first_kinds) == {"response"}
        second_kinds = [r.type for r in responses(runs[1] / "warcs")]
        assert second_kinds.count("revisit") >= 4 and second_kinds.count("response") >= 1
        assert log[1]["previous"] == str(runs[0])
        assert list(runs[1].glob("*.wacz"))  # wacz = true in the example

    both_at_once(two_runs, tmp_path)


@dataclass
class HeldPages:
    """A home page linking six pages, each answered only once ``release`` is set."""

    site: SiteServer
    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    paths: tuple[str, ...] = tuple(f"/p{i}" for i in range(6))

    def __post_init__(self) -> None:
        self.site.add_page("/", " ".join(f'<a href="{p}">{p}</a>' for p in self.paths))

        async def held(request: web.Request) -> web.StreamResponse:
            self.entered.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 120)
            return web.Response(text=f"page {request.path}", content_type="text/html")

        for path in self.paths:
            self.site.add_handler(path, held)


@documents(CRON, UNIT, BY_HAND)
def test_a_locked_run_and_an_interrupted_one_from_the_documented_command_lines(
    doc: DocShell, tmp_path: Path
) -> None:
    """While a run from the documented line is mid-crawl, the same line (and the README's line
    for running the job by hand) exits at once with 4 and does nothing; a SIGTERM then stops
    the run with 3 after its in-flight fetches, and the same line again resumes it to the end:
    one run directory, every page fetched once."""

    def interrupted_then_resumed(line: str, tmp: Path) -> None:
        cwd = workdir(tmp)
        with SiteServer().running_in_thread() as site:
            pages = HeldPages(site)
            config = example_job(tmp, site.url("/"))
            running = doc.start(line, cwd=cwd, replace=machine_paths(line, config))
            try:
                wait_for(pages.entered, running)  # mid-crawl, holding the job lock
                for other in (line, BY_HAND):
                    locked = doc.run(other, cwd=cwd, replace=machine_paths(other, config))
                    assert locked.returncode == EXIT_LOCKED, locked.stderr
                    assert "locked" in locked.stderr, locked.stderr
                os.killpg(running.pid, signal.SIGTERM)
                read_until(running.stderr, r"SIGTERM: finishing in-flight fetches")
            finally:
                pages.release.set()
            _, err = running.communicate(timeout=120)
            assert running.returncode == EXIT_INTERRUPTED, err
            job = tmp / "job"
            (run,) = (job / "runs").iterdir()
            assert [(e["status"], e["exit_code"]) for e in job_log(job)] == [("interrupted", 3)]
            assert not (job / "latest").exists()  # no completed run yet
            left = [p for p in pages.paths if site.counters.count(p) == 0]
            assert left, "the run was interrupted with nothing left to do"

            resumed = doc.run(line, cwd=cwd, replace=machine_paths(line, config))
            assert resumed.returncode == 0, resumed.stderr
            assert list((job / "runs").iterdir()) == [run]
            log = job_log(job)
            assert [(e["run"], e["status"], e["exit_code"]) for e in log] == [
                (run.name, "interrupted", 3),
                (run.name, "completed", 0),
            ]
            assert (job / "latest").resolve() == run.resolve()
            for path in ("/", *pages.paths):
                assert site.counters.count(path) == 1, path
                assert len(responses(run / "warcs", site.url(path))) == 1, path

    both_at_once(interrupted_then_resumed, tmp_path)
