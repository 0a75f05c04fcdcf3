"""Fault tests' tools: what a crawl left behind, judged.

``archiver verify`` (the command, run in this process) judges every WARC file of the crawl
directory, ``.open`` ones included, and the index when there is one; warcio, an independent
reader, must read every record of every file too. A fault may stop a crawl; it must never
leave a WARC file that either of them refuses.

The filesystem faults (a full disk at one part of a crawl directory) are in
:mod:`tests.support.filesystem`.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections import Counter
from pathlib import Path

from archiver.commands.cli import main
from tests.support.warcs import Rec, read_records, warc_paths


def assert_archive_sound(out: Path, *, stopped: bool = False) -> list[Rec]:
    """``archiver verify OUT`` passes and warcio reads every record of every WARC file under
    ``OUT/warcs`` (``.open`` files too); the records, for the test's own assertions.

    ``stopped``: the crawl was interrupted by the fault, so a file may still be ``.open``
    (captures the frontier did not commit, which the resume repair cuts) and the index may
    name it by its final name: the files are verified without the index, and the one error
    allowed is a ``.open`` file's ``not-closed``."""
    printed = io.StringIO()
    target = out / "warcs" if stopped else out
    with contextlib.redirect_stdout(printed):
        code = main(["verify", "--json", str(target)])
    report = json.loads(printed.getvalue())
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    if stopped:
        errors = [
            f for f in errors if not (f["rule"] == "not-closed" and f["file"].endswith(".open"))
        ]
    assert not errors, json.dumps(errors, indent=1)
    assert code == 0 or stopped
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
