"""What the command loads before it does anything: the crawl's log writes its JSON lines without
importing structlog, which (through structlog.dev) imports rich's traceback module and pygments;
structlog is imported when the first readable console line is written, and renders it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SLOW = ("structlog", "rich.traceback", "pygments")


def test_the_log_loads_structlog_for_its_first_console_line(tmp_path: Path) -> None:
    code = (
        "import io, sys, archiver.commands.cli\n"
        "from archiver.run.log import crawl_logger\n"
        f"slow = {SLOW!r}\n"
        "console = io.StringIO()\n"
        "crawl = crawl_logger(sys.argv[1], console=console)\n"
        "log = crawl.bind(run=1)\n"
        "log.info('crawl-start', seeds=['http://a.test/'])\n"
        "crawl.info_event('fetch', {'url': 'http://a.test/'})\n"
        "print([m for m in slow if m in sys.modules])\n"
        "log.warning('disk-space', free=1)\n"
        "crawl.close()\n"
        "print([m for m in slow if m in sys.modules])\n"
        "print(console.getvalue().strip())\n"
    )
    log_file = tmp_path / "crawl.log.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", code, str(log_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    before, after, console = done.stdout.strip().split("\n")
    assert before == "[]", "imported before anything was shown on the console"
    assert after == repr(["structlog", "rich.traceback", "pygments"])
    assert "disk-space" in console and "free=1" in console
    events = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert [list(e) for e in events] == [
        ["run", "seeds", "event", "level", "timestamp"],
        ["url", "event", "level", "timestamp"],
        ["run", "free", "event", "level", "timestamp"],
    ]
    assert [(e["event"], e["level"]) for e in events] == [
        ("crawl-start", "info"),
        ("fetch", "info"),
        ("disk-space", "warning"),
    ]
