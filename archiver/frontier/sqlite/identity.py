"""Whose a frontier database is, and how far its crawl got: read and stamped from outside the
frontier, before it opens the database and while it holds it.

A crawl resumed from a frontier database that is not its own, or an older copy of it (a
restore, a cleanup script), would start over or skip ahead without a word: ``state/crawl.json``
records the crawl's identity and, at the end of every run, how many URLs the frontier had
settled; the database records the identity in its ``meta`` table. The run compares them before
it starts (:mod:`archiver.run.state`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from archiver.errors import FrontierError
from archiver.frontier.sqlite.codec import DONE, FAILED, SKIPPED

#: The ``meta`` key of the crawl's identity (``crawl`` in ``state/crawl.json``).
CRAWL_KEY = "crawl"


@dataclass(frozen=True, slots=True)
class FrontierIdentity:
    """What a frontier database says of itself."""

    crawl: str | None  #: the crawl's identity; None in a database of an older archiver
    settled: int  #: URLs with an outcome (done, failed or skipped)


def read_identity(path: Path) -> FrontierIdentity:
    """The identity and the settled count of the database at ``path``; a file that is not a
    readable frontier database (cut short, overwritten) is a :class:`FrontierError`."""
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=10.0)) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (CRAWL_KEY,)).fetchone()
            (settled,) = conn.execute(
                f"SELECT count(*) FROM urls WHERE state IN ({DONE}, {FAILED}, {SKIPPED})"
            ).fetchone()
    except sqlite3.Error as exc:
        raise FrontierError(f"{path} is not a readable frontier database: {exc}") from None
    return FrontierIdentity(str(row[0]) if row else None, int(settled))


def write_identity(path: Path, crawl: str) -> None:
    """Stamp the database at ``path`` (open or not: SQLite serialises the two connections)
    with its crawl's identity."""
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=10.0)) as conn, conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (CRAWL_KEY, crawl))
    except sqlite3.Error as exc:
        raise FrontierError(f"cannot write the identity of {path}: {exc}") from None


__all__ = ["CRAWL_KEY", "FrontierIdentity", "read_identity", "write_identity"]
