"""Live progress: the panel is redrawn in place during a real crawl; without a
terminal, JSON stats lines; --quiet prints one line. In-process with a recording rich console,
and end to end with `archiver crawl` on a pseudo-terminal and on a pipe."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from archiver.commands.progress import (
    Display,
    Mode,
    choose_mode,
    render_snapshot,
    stats_line,
    summary_renderable,
)
from archiver.run.crawler import Crawler, CrawlResult
from archiver.run.stats import QaSnapshot, Snapshot
from tests.conftest import fast_settings
from tests.support.site import SiteServer, generated_site

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
CURSOR_UP = "\x1b[1A"
ERASE_LINE = "\x1b[2K"
DONE = re.compile(r"(\d+) done · (\d+) queued · (\d+) in flight")


def slow_site(site: SiteServer) -> list[str]:
    """~40 resources at 15 ms each, one at a time: a crawl of about 0.6 s."""
    site.delay = 0.015
    return generated_site(site, 30)


@pytest.mark.parametrize(
    ("quiet", "progress", "interval", "tty", "mode"),
    [
        (False, "auto", 10.0, True, Mode.LIVE),
        (False, "auto", 10.0, False, Mode.LINES),
        (False, "on", 10.0, False, Mode.LIVE),
        (False, "off", 10.0, True, Mode.LINES),
        (False, "off", None, True, Mode.OFF),
        (False, "auto", None, False, Mode.OFF),
        (True, "on", 10.0, True, Mode.OFF),
    ],
)
def test_choose_mode(
    quiet: bool, progress: str, interval: float | None, tty: bool, mode: Mode
) -> None:
    assert choose_mode(quiet=quiet, progress=progress, stats_interval=interval, is_tty=tty) is mode


SNAPSHOT = Snapshot(
    elapsed=83.2,
    captures=340,
    pages=120,
    revisits=12,
    pages_per_second=3.1,
    captures_per_second=4.0,
    queued=58,
    in_flight=8,
    done=330,
    seen=396,
    bytes_received=4_500_000,
    bytes_written=3_200_000,
    warc_file="crawl-20240102030405000-00000-host.warc.gz",
    failures={"timeout": 2},
    skips={"scope": 120, "robots": 3},
    by_status_class={"2xx": 300, "3xx": 20, "4xx": 5},
    top_hosts=(("example.org", 320), ("cdn.example.net", 20)),
    stopping=False,
)


def test_panel_shows_what_the_issue_asks_for() -> None:
    console = Console(record=True, width=120, file=io.StringIO(), force_terminal=True)
    console.print(render_snapshot(SNAPSHOT, title="http://example.org/", rate_now=4.2))
    text = console.export_text()
    for expected in (
        "crawling http://example.org/",
        "0:01:23",
        "330 done · 58 queued · 8 in flight",
        "120",  # pages
        "3.1 pages/s (now 4.2)",
        "received 4.5 MB",
        "WARC written 3.2 MB",
        "crawl-20240102030405000-00000-host.warc.gz",
        "2xx 300 · 3xx 20 · 4xx 5",
        "timeout 2",
        "scope 120 · robots 3",
        "example.org 320 · cdn.example.net 20",
    ):
        assert expected in text, (expected, text)


def test_panel_says_paused_and_stopping() -> None:
    """The operator's pause (DIR/paused) shows in the panel's head; stopping outranks it."""
    for snapshot, state in (
        (dataclasses.replace(SNAPSHOT, paused=True), "paused http://example.org/"),
        (dataclasses.replace(SNAPSHOT, paused=True, stopping=True), "stopping… http://"),
    ):
        console = Console(record=True, width=120, file=io.StringIO(), force_terminal=True)
        console.print(render_snapshot(snapshot, title="http://example.org/"))
        text = console.export_text()
        assert state in text and "crawling" not in text, text


def test_the_replay_check_is_shown_live_read_back_and_summed() -> None:
    """``--qa``: the panel's replay row; a process's stats line carries the figures, which the
    supervisor reads back and adds up; the end-of-crawl table has them."""
    checks = QaSnapshot(checked=7, complete=5, incomplete=2, misses_found=11, misses_patched=9)
    snapshot = dataclasses.replace(SNAPSHOT, qa=checks)
    console = Console(record=True, width=120, file=io.StringIO(), force_terminal=True)
    console.print(render_snapshot(snapshot, title="http://example.org/", rate_now=None))
    (row,) = [line for line in console.export_text().splitlines() if line.startswith("replay")]
    assert row.split(None, 1)[1].rstrip() == (
        "7 checked  complete 5  misses found 11  patched 9  incomplete 2"
    )
    read = Snapshot.from_json(json.loads(stats_line(snapshot, now="2024-01-02T03:04:05.678Z")))
    assert read.qa == checks
    merged = Snapshot.merged([read, read], queue=read, elapsed=1.0, stopping=False, processes=2)
    assert merged.qa == QaSnapshot(14, 10, 4, 22, 18)
    assert Snapshot.from_json(json.loads(stats_line(SNAPSHOT))).qa is None  # no --qa, no row
    totals = {"pages": 7, "complete": 5, "incomplete": 2, "misses_found": 11, "misses_patched": 9}
    result = CrawlResult("completed", None, Path("out"), summary={"qa": totals})
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(summary_renderable(result))
    assert "5/7  pages complete; 2 incomplete, 11 misses found, 9 patched" in (
        console.export_text()
    )


def test_stats_line_is_compact_json() -> None:
    line = stats_line(SNAPSHOT, now="2024-01-02T03:04:05.678Z")
    assert "\n" not in line and ", " not in line
    data = json.loads(line)
    assert data["event"] == "stats" and data["timestamp"] == "2024-01-02T03:04:05.678Z"
    assert data["top_hosts"] == {"example.org": 320, "cdn.example.net": 20}
    assert data["pages"] == 120 and data["queued"] == 58 and data["failures"] == {"timeout": 2}


async def test_live_panel_redraws_in_place_during_a_crawl(tmp_path: Path, site: SiteServer) -> None:
    slow_site(site)
    settings = fast_settings(
        tmp_path / "out",
        site.url("/"),
        quiet=False,
        progress="on",
        verbose=1,
        workers=1,
        per_host_concurrency=1,
    )
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system="standard")
    display = Display(settings, out, console=console, refresh=0.05)
    assert display.mode is Mode.LIVE
    crawler = Crawler(settings, console=display.log_stream)
    async with display.watching(crawler):
        result = await crawler.run()
    assert result.status == "completed"
    raw = out.getvalue()
    assert display.frames >= 3
    # redrawn in place: each frame moves the cursor back up over the previous one
    assert raw.count(CURSOR_UP) >= 3 * display.frames
    assert ERASE_LINE in raw
    plain = ANSI.sub("", raw)
    done = [int(m.group(1)) for m in DONE.finditer(plain)]
    assert len(set(done)) >= 2, done
    assert done == sorted(done)
    # -v fetch lines printed above the panel, not into it
    assert plain.count("fetch") >= result.summary["captures"]
    # transient: the panel is erased at the end (the summary takes its place)
    assert raw.endswith((CURSOR_UP + ERASE_LINE) * 9)  # head, bar and seven rows


async def test_stats_lines_without_a_terminal(tmp_path: Path, site: SiteServer) -> None:
    slow_site(site)
    settings = fast_settings(
        tmp_path / "out",
        site.url("/"),
        quiet=False,
        progress="auto",
        stats_interval=0.1,
        workers=1,
        per_host_concurrency=1,
    )
    out = io.StringIO()
    display = Display(settings, out)
    assert display.mode is Mode.LINES
    crawler = Crawler(settings, console=display.log_stream)
    async with display.watching(crawler):
        await crawler.run()
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]
    assert len(lines) == display.lines >= 3
    assert all(line["event"] == "stats" for line in lines)
    captures = [line["captures"] for line in lines]
    assert captures == sorted(captures) and captures[-1] > captures[0]
    assert {"queued", "in_flight", "pages_per_second", "bytes_written", "warc_file"} <= set(
        lines[0]
    )


# -- end to end: `archiver crawl` on a pseudo-terminal and on a pipe ----------------------------


@pytest.fixture
def served() -> Iterator[SiteServer]:
    with SiteServer().running_in_thread() as site:
        slow_site(site)
        yield site


def crawl_args(site: SiteServer, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "archiver",
        "crawl",
        site.url("/"),
        "-o",
        str(out),
        "--frontier",
        "memory",
        "--robots",
        "ignore",
        "--per-host-delay",
        "0",
        "--per-host-concurrency",
        "1",
        "--workers",
        "1",
        "--sitemaps",
        "off",
        *extra,
    ]


def run_on_pty(args: list[str], columns: int = 110, rows: int = 40) -> tuple[int, str]:
    """Run with stdin/stdout/stderr on a pseudo-terminal; return (exit code, all output)."""
    import fcntl  # noqa: PLC0415
    import termios  # noqa: PLC0415

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                raise AssertionError("no output from archiver for 60 s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        code = proc.wait(60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_cli_live_display_on_a_terminal(tmp_path: Path, served: SiteServer) -> None:
    code, raw = run_on_pty(crawl_args(served, tmp_path / "out"))
    assert code == 0, raw
    plain = ANSI.sub("", raw)
    frames = DONE.findall(plain)
    assert len(frames) >= 2, plain
    assert len({f[0] for f in frames}) >= 2, frames
    assert raw.count(CURSOR_UP) >= 5 and ERASE_LINE in raw  # redrawn in place, not scrolled
    assert "\x1b[" in raw.split("archiver: completed")[1]  # colours in the summary on a tty
    summary = plain.split("archiver: completed")[1]
    for expected in ("duration", "pages", "Status", "MIME types", "Hosts", "index.cdxj"):
        assert expected in summary
    assert "Traceback" not in plain


def test_cli_stats_lines_on_a_pipe(tmp_path: Path, served: SiteServer) -> None:
    proc = subprocess.run(
        crawl_args(served, tmp_path / "out", "--stats-interval", "0.15"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    stats = [json.loads(line) for line in lines if line.startswith('{"event":"stats"')]
    assert len(stats) >= 2, proc.stderr
    assert "\x1b[" not in proc.stderr  # no escape codes for a pipe
    summary_at = lines.index("archiver: completed")
    assert all(line.startswith("{") for line in lines[:summary_at])


def test_cli_quiet_prints_one_line(tmp_path: Path, served: SiteServer) -> None:
    code, raw = run_on_pty(crawl_args(served, tmp_path / "out", "--quiet"))
    assert code == 0
    lines = [line for line in ANSI.sub("", raw).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("archiver: completed: ") and str(tmp_path / "out") in lines[0]


def test_cli_live_display_of_several_processes(tmp_path: Path, served: SiteServer) -> None:
    """``--processes 2``: one panel for the crawl (the processes' figures added up, how many
    run), then one summary."""
    code, raw = run_on_pty(
        [*crawl_args(served, tmp_path / "out"), "--processes", "2", "--frontier", "sqlite"]
    )
    assert code == 0, raw
    plain = ANSI.sub("", raw)
    assert "2 processes" in plain
    assert len(DONE.findall(plain)) >= 2, plain
    assert plain.count("archiver: completed") == 1
    assert "Traceback" not in plain
