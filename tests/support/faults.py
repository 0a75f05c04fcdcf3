"""Checks every fault test ends with: what a crawl left behind is a sound archive.

``archiver verify`` (the command, run in this process) judges every WARC file of the crawl
directory, ``.open`` ones included, and the index when there is one; warcio, an independent
reader, must read every record of every file too. A fault may stop a crawl; it must never
leave a WARC file that either of them refuses.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from pathlib import Path

from archiver.commands.cli import main
from tests.support.warcs import Rec, read_records, warc_paths


def assert_archive_sound(out: Path) -> list[Rec]:
    """``archiver verify OUT`` passes and warcio reads every record of every WARC file under
    ``OUT/warcs`` (``.open`` files too); the records, for the test's own assertions."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["verify", str(out)])
    assert code == 0, printed.getvalue()
    warcs = out / "warcs"
    paths = [*warc_paths(warcs), *sorted(warcs.glob("*.warc.gz.open"))]
    records = [record for path in paths for record in read_records(path)]
    assert records, f"no WARC record under {warcs}"
    return records


def captured_once(records: list[Rec]) -> Counter[str]:
    """How many response or revisit records each URL has (a test asserts each is 1)."""
    return Counter(
        r.uri or "" for r in records if r.type in ("response", "revisit") and r.uri is not None
    )
