"""What a running crawl has journaled, looked up as its finished index will be: every key and
prefix finds in the journal index exactly what the sorted ``index.cdxj`` merged from the same
journals finds; lines appended later are found after a refresh, a line still being written is
not, and a journal written anew (a resumed process cut it back) is read again."""

from __future__ import annotations

import json
from pathlib import Path

from archiver.qa.archive import IndexLine, SortedIndex
from archiver.qa.journals import JournalIndex
from archiver.run.output import journal_dirs
from tests.conftest import run_crawl
from tests.support.hard_site import HardSite


def seen(lines: list[IndexLine]) -> list[tuple[str, str, str, int]]:
    return [(line.key, line.timestamp, line.url, line.location.offset) for line in lines]


async def test_the_journals_answer_as_the_merged_index_does(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    async with HardSite() as site:
        result = await run_crawl(out, site.url("/"), browser="all", browser_tabs=2)
        assert result.status == "completed", result.reason
    journaled = JournalIndex(tmp_path / "index.sqlite", lambda: journal_dirs(out), out / "warcs")
    merged = SortedIndex(out / "index.cdxj", out / "warcs")
    try:
        assert journaled.refresh() == len((out / "index.cdxj").read_text().splitlines())
        assert journaled.refresh() == 0  # nothing new
        keys = {line.split(" ", 1)[0] for line in (out / "index.cdxj").read_text().splitlines()}
        assert any("__wb_method=post" in key for key in keys)  # a POST's key is there too
        prefixes = keys | {key[: len(key) // 2] for key in keys} | {"", "127,0,0,1", "zz"}
        for prefix in sorted(prefixes):
            assert seen(list(journaled.with_prefix(prefix))) == seen(
                list(merged.with_prefix(prefix))
            ), prefix
        for key in keys | {"absent)/"}:
            assert seen(journaled.captures_of(key)) == seen(merged.captures_of(key)), key
    finally:
        journaled.close()
        merged.close()


def test_lines_appended_later_are_found_and_a_rewritten_journal_is_read_again(
    tmp_path: Path,
) -> None:
    journals = tmp_path / "journals"
    journals.mkdir()
    journal = journals / "a.warc.gz.cdxj"

    def line(key: str, offset: int) -> str:
        fields = {"url": "http://e.test/", "length": "9", "offset": str(offset), "filename": "a"}
        return f"{key} 20260101000000 {json.dumps(fields)}"

    journal.write_text(line("e,test)/one", 0) + "\n" + line("e,test)/two", 9)[:20])
    index = JournalIndex(tmp_path / "state" / "index.sqlite", lambda: [journals], tmp_path)
    try:
        assert index.refresh() == 1
        assert index.captures_of("e,test)/two") == []  # still being written
        with open(journal, "a") as fh:
            fh.write(line("e,test)/two", 9)[20:] + "\n")
        assert index.refresh() == 1
        assert [found.location.offset for found in index.captures_of("e,test)/two")] == [9]
        assert [found.key for found in index.with_prefix("e,test)/")] == [
            "e,test)/one",
            "e,test)/two",
        ]
        replaced = journals / "tmp"
        replaced.write_text(line("e,test)/one", 0) + "\n")
        replaced.replace(journal)  # cut back, as resume's repair writes it
        assert index.refresh() == 1
        assert index.captures_of("e,test)/two") == []
        assert len(index.captures_of("e,test)/one")) == 1
    finally:
        index.close()
    assert not (tmp_path / "state" / "index.sqlite").exists()  # a cache, gone with the run
    assert journal.is_file()  # the journals, the truth, stay
