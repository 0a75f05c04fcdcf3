"""CDXJ lines as ``--dedup-from`` reads them (:mod:`archiver.dedup.sources`): an earlier crawl's
``index.cdxj``, or any CDXJ file a user points at, loaded into the lookup database.

Oracles, on every input (a CDXJ file):

* :func:`reference` reads the lines as the CDXJ format has them (``key SP timestamp SP
  json-object``; a line that is not one is skipped, as a header line is), with the line ends
  of a text file (LF, CR, CRLF): ``_cdxj_entries`` yields the same entries in the same order;
* loading them into the lookup database (``_load_cdxj`` into the real schema, in memory)
  raises nothing: a line whose fields are of the wrong kind is skipped, not fatal;
* the 11-field CDX line of every entry (``archiver index --cdx``) has 11 fields.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from archiver.dedup.sources import _SCHEMA, Source, _cdxj_entries, _load_cdxj
from archiver.index.cdxj import cdx11_line
from tests.fuzz.harness import Target, agree

_SCRATCH = Path(os.environ.get("XDG_RUNTIME_DIR") or "/dev/shm")


def reference(text: str) -> list[tuple[dict[str, Any], str]]:
    entries = []
    for line in re.split(r"\r\n|\r|\n", text):
        _key, sep, rest = line.partition(" ")
        ts, sep2, data = rest.partition(" ")
        if not (sep and sep2 and ts.isdigit() and data.startswith("{")):
            continue
        try:
            fields = json.loads(data)
        except ValueError:
            continue
        if isinstance(fields, dict):
            entries.append((fields, ts[:14]))
    return entries


def check(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    with tempfile.TemporaryDirectory(dir=_SCRATCH) as scratch:
        cdxj = Path(scratch) / "index.cdxj"
        cdxj.write_bytes(data)
        ours = list(_cdxj_entries(cdxj))
        expected = reference(text)
        agree(ours == expected, "entries differ", ours, expected)
        con = sqlite3.connect(":memory:")
        try:
            con.executescript(_SCHEMA)
            con.execute("CREATE TEMP TABLE revisit_digests (digest TEXT PRIMARY KEY) WITHOUT ROWID")
            _load_cdxj(con, Source(cdxj, Path(scratch)), {})
        finally:
            con.close()
    for fields, ts in ours:
        if all(
            isinstance(fields.get(k, "-"), str)
            for k in ("url", "mime", "status", "digest", "length", "offset", "filename")
        ):
            line = f"key {ts} {json.dumps(fields)}"
            agree(len(cdx11_line(line).split(" ")) >= 11, "CDX line", line)


TARGET = Target(
    name="cdxj",
    check=check,
    max_len=4096,
    summary="_cdxj_entries and _load_cdxj (--dedup-from); oracles: a CDXJ reading of the "
    "lines, the lookup schema loads every line or skips it",
    dictionary=(
        b'com,example)/ 20240501120000 {"url": "http://example.com/", ',
        b'"digest": "sha1:AAAA", ',
        b'"mime": "warc/revisit", ',
        b'"status": "200", ',
        b'"offset": "0", "length": "10", ',
        b'"filename": "a.warc.gz"}',
        b"\n",
        b"\r",
        b"!meta 0 {}",
        b"99999999999999999999999",
        b"\xc2\xb2",
    ),
)
