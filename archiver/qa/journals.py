"""What a running crawl has written so far, indexed as its ``index.cdxj`` will be: the lookup
a page's check uses while the crawl goes on (``crawl --qa``).

The sorted ``index.cdxj`` exists only once a crawl is finished: it is merged from the journals
the writer appends one CDXJ line to for each capture, as it writes it (:mod:`archiver.index.cdxj`).
Those lines are the index's lines, so a check that looks them up answers a page's requests as
pywb will from the finished index. :class:`JournalIndex` follows the journals of every process
writing into the crawl directory (their files only grow while the crawl runs): each
:meth:`JournalIndex.refresh` reads the bytes appended since the last one, up to the last whole
line, into a SQLite table keyed as the index is (the SURT key, then the line: byte order), so
memory stays bounded whatever the crawl's size and a prefix search (pywb's fuzzy rule) is a
range of that key. A journal that shrank (a resumed process cut it back with its WARC file) is
read again from its start.

The table lives in the process's state directory while the run lasts, built anew by each run
(the journals are the truth; the table is a cache of them).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from archiver.qa.archive import IndexLine, parse_line

SCHEMA = """
CREATE TABLE journal (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, consumed INTEGER NOT NULL);
CREATE TABLE line (key TEXT NOT NULL, line TEXT NOT NULL, journal INTEGER NOT NULL);
CREATE INDEX line_key ON line (key, line);
CREATE INDEX line_journal ON line (journal);
"""
#: Bytes of a journal read at once while catching up.
READ_CHUNK = 1 << 20
#: The journals' file name ending (:data:`archiver.index.cdxj.JOURNAL_SUFFIX`).
JOURNAL_SUFFIX = ".cdxj"


class JournalIndex:
    """The captures the journals of ``journal_dirs()`` hold so far (see the module docstring);
    a :class:`archiver.qa.archive.CaptureIndex`. Not thread-safe: one caller at a time
    (:class:`archiver.qa.check.SharedArchive` serialises the lookups)."""

    def __init__(self, database: Path, journal_dirs: Callable[[], list[Path]], warcs: Path) -> None:
        self.warcs = warcs
        self._database = database
        self._journal_dirs = journal_dirs
        database.parent.mkdir(parents=True, exist_ok=True)
        for stale in (database, database.with_name(database.name + "-journal")):
            stale.unlink(missing_ok=True)
        self._db = sqlite3.connect(database, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode = OFF")  # a cache: rebuilt by the next run
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.executescript(SCHEMA)
        #: path -> (its id in the table, its inode, the bytes read)
        self._consumed: dict[Path, tuple[int, int, int]] = {}

    def close(self) -> None:
        """Close the table and remove it (a cache of the journals, which stay)."""
        self._db.close()
        self._database.unlink(missing_ok=True)

    def refresh(self) -> int:
        """Read what the journals gained since the last call; returns the lines added."""
        added = 0
        for directory in self._journal_dirs():
            with contextlib.suppress(OSError):
                for entry in os.scandir(directory):
                    if entry.name.endswith(JOURNAL_SUFFIX):
                        added += self._follow(Path(entry.path))
        return added

    def _follow(self, path: Path) -> int:
        try:
            stat = path.stat()
        except OSError:
            return 0
        known = self._consumed.get(path)
        if known is None:
            cursor = self._db.execute(
                "INSERT INTO journal (path, consumed) VALUES (?, 0)", (str(path),)
            )
            assert cursor.lastrowid is not None
            known = (cursor.lastrowid, stat.st_ino, 0)
        journal, inode, consumed = known
        if stat.st_size < consumed or stat.st_ino != inode:
            # cut back by a resumed process (written anew under the same name): read again
            self._db.execute("DELETE FROM line WHERE journal = ?", (journal,))
            consumed = 0
        rows: list[tuple[str, str, int]] = []
        if stat.st_size > consumed:
            with open(path, "rb") as fh:
                fh.seek(consumed)
                pending = b""
                while chunk := fh.read(READ_CHUNK):
                    whole, newline, pending = (pending + chunk).rpartition(b"\n")
                    if newline:  # a line being written stays for the next call
                        consumed += len(whole) + 1
                        rows += _rows(whole, journal)
        self._consumed[path] = (journal, stat.st_ino, consumed)
        if rows:
            self._db.executemany("INSERT INTO line (key, line, journal) VALUES (?, ?, ?)", rows)
        return len(rows)

    def with_prefix(self, prefix: str) -> Iterator[IndexLine]:
        """The lines whose key starts with ``prefix``, in index order (byte order)."""
        cursor = self._db.execute(
            "SELECT line FROM line WHERE key >= ? ORDER BY key, line", (prefix,)
        )
        for (text,) in cursor:
            if not text.startswith(prefix):
                return
            parsed = parse_line(text, self.warcs)
            if parsed is not None:
                yield parsed

    def captures_of(self, key: str) -> list[IndexLine]:
        """Every capture whose key is ``key``."""
        rows = self._db.execute("SELECT line FROM line WHERE key = ? ORDER BY line", (key,))
        found = (parse_line(text, self.warcs) for (text,) in rows)
        return [line for line in found if line is not None]


def _rows(lines: bytes, journal: int) -> list[tuple[str, str, int]]:
    rows = []
    for raw in lines.split(b"\n"):
        text = raw.decode("utf-8", "replace")
        key = text.partition(" ")[0]
        if key:
            rows.append((key, text, journal))
    return rows


__all__ = ["JournalIndex"]
