"""``summary.json``'s ``qa`` totals over ``qa.jsonl``: a page counts once, by its last line;
what the checks found and what was captured for them are added up page by page."""

from __future__ import annotations

import json
from pathlib import Path

from archiver.qa.run import append_line, totals


def test_a_page_checked_again_counts_once_by_its_last_line(tmp_path: Path) -> None:
    lines = tmp_path / "qa.jsonl"
    miss = {"url": "http://e.test/a.js", "method": "GET"}
    append_line(lines, {"url": "http://e.test/", "status": "incomplete", "misses": [miss]})
    append_line(
        lines,
        {"url": "http://e.test/b", "status": "complete", "misses": [], "found": [miss],
         "patched": [{**miss, "status": 200}]},
    )  # fmt: skip
    append_line(
        lines,
        {"url": "http://e.test/", "status": "complete", "misses": [],
         "found": [miss, {"url": "http://e.test/c", "method": "POST"}],
         "patched": [{**miss, "status": 200}]},
    )  # fmt: skip
    with open(lines, "a") as fh:
        fh.write('{"url": "http://e.test/cut')  # a line a crash cut short
    counted = totals(lines)
    assert counted["pages"] == 2 and counted["complete"] == 2 and counted["incomplete"] == 0
    assert counted["missing_urls"] == 0
    assert counted["misses_found"] == 3 and counted["misses_patched"] == 2
    # a line without ``found`` (archiver qa's own) counts its misses as found
    (tmp_path / "qa2.jsonl").write_text(json.dumps({"url": "u", "status": "incomplete",
                                                    "misses": [miss]}) + "\n")  # fmt: skip
    assert totals(tmp_path / "qa2.jsonl")["misses_found"] == 1
