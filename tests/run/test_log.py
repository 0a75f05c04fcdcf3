"""archiver.run.log: the crawl log survives the half line a killed run left."""

from __future__ import annotations

import json
from pathlib import Path

from archiver.run.log import crawl_logger


def test_a_killed_runs_half_line_does_not_break_the_next_runs_log(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log.jsonl"
    path.write_bytes(b'{"event":"fetch","url":"http://a/"}\n{"event":"fetch","url":"http://')
    log = crawl_logger(path, quiet=True)
    log.logger.info("crawl-start", resumed=True)
    log.close()
    events = [json.loads(line) for line in path.read_text().splitlines()]  # every line parses
    assert [e["event"] for e in events] == ["fetch", "log-repaired", "crawl-start"]
    assert events[1]["removed_bytes"] == len(b'{"event":"fetch","url":"http://')
