"""The archive's index searched in place: the bisection over the sorted CDXJ finds exactly what
a scan of every line finds, for keys present, absent, first, last and prefixes of others; and
the command's usage errors are one line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from archiver.browser.exchange import BrowserRequest
from archiver.commands.cli import main
from archiver.qa.archive import SortedIndex, parse_line, request_key


def write_index(path: Path, keys: list[str]) -> list[str]:
    lines = []
    for n, key in enumerate(keys):
        fields = {"url": f"http://e.test/{n}", "length": "10", "offset": str(n), "filename": "a"}
        lines.append(f"{key} 2026010100{n % 10000:04d} {json.dumps(fields)}")
    lines.sort(key=lambda line: line.encode())
    path.write_text("".join(line + "\n" for line in lines))
    return lines


def test_bisection_finds_what_a_scan_finds(tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = "abc/?=&)._-0123"
    keys = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    keys += ["e,test)/a"] * 5 + ["e,test)/a?x=1", "e,test)/ab"]
    index_path = tmp_path / "index.cdxj"
    lines = write_index(index_path, keys)
    index = SortedIndex(index_path, tmp_path)
    try:
        probes = set(keys[:300]) | {"", "a", "zzz", "e,test)/a", "e,test)/", "e,test)/a?"}
        probes |= {key[: len(key) // 2] for key in keys[:300]}
        for prefix in probes:
            found = [line.key + " " + line.timestamp for line in index.with_prefix(prefix)]
            scanned = [
                " ".join(line.split(" ", 2)[:2]) for line in lines if line.startswith(prefix)
            ]
            assert found == scanned, prefix
        assert len(index.captures_of("e,test)/a")) == 5  # not its longer neighbours
    finally:
        index.close()


def test_an_empty_index_finds_nothing(tmp_path: Path) -> None:
    (tmp_path / "index.cdxj").write_text("")
    index = SortedIndex(tmp_path / "index.cdxj", tmp_path)
    try:
        assert list(index.with_prefix("a")) == [] and index.captures_of("") == []
    finally:
        index.close()


def test_a_line_that_is_not_cdxj_is_skipped() -> None:
    assert parse_line("key 2026 not-json", Path()) is None
    assert parse_line('key 2026 {"url": "u"}', Path()) is None  # no record location


def test_a_post_is_looked_up_by_its_body_as_pywb_looks_it_up() -> None:
    request = BrowserRequest(
        "POST", "http://e.test/api/search", (("Content-Type", "application/json"),),
        b'{"query": "brass"}', True, "Fetch", False, False, False,
    )  # fmt: skip
    assert request_key(request) == "test,e)/api/search?__wb_method=post&query=brass"


@pytest.mark.parametrize(
    "args",
    [["--sample", "0"], ["--browser-tabs", "0"], ["--page-timeout", "0"], ["--follow-links", "-1"]],
)
def test_bad_options_are_one_usage_line(
    tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "index.cdxj").write_text("")
    assert main(["qa", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("archiver qa: error:") and err.count("\n") == 1
