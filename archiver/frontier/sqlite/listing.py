"""The SQLite frontier read from outside its crawl (:mod:`archiver.frontier.listing`): the
database opened read-only, the counts by state (``state-counts``), the URLs streamed from one
cursor in id order (``list-urls``), a page of rows at a time."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path

from archiver.errors import FrontierError
from archiver.frontier.listing import STATES, StateCounts
from archiver.frontier.sqlite.codec import (
    DONE,
    FAILED,
    IN_FLIGHT,
    QUEUED,
    SKIPPED,
    WAITING,
    WINDOWED,
)
from archiver.frontier.sqlite.sql import QUERIES, marks, sized

#: Each stored state, as the listing names it: a URL in a process's memory window is queued
#: still, a retry waiting for its time too.
STATE_NAMES = {
    QUEUED: "queued",
    WINDOWED: "queued",
    WAITING: "queued",
    IN_FLIGHT: "in-flight",
    DONE: "done",
    FAILED: "failed",
    SKIPPED: "skipped",
}
#: Rows fetched from the cursor at a time.
PAGE = 1000


class SqliteView:
    """A crawl's SQLite frontier, read-only."""

    listable = frozenset(STATES)

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise FrontierError(f"no frontier database at {path}")
        try:
            self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            self._conn.execute("PRAGMA query_only=1")
            self._conn.execute("PRAGMA busy_timeout=10000")
        except sqlite3.Error as exc:
            raise FrontierError(f"cannot read {path}: {exc}") from None
        self.path = path

    def counts(self) -> StateCounts:
        found = dict.fromkeys(STATES, 0)
        try:
            for state, count in self._conn.execute(QUERIES["state-counts"]):
                name = STATE_NAMES.get(int(state))
                if name is not None:
                    found[name] += int(count)
        except sqlite3.Error as exc:
            raise FrontierError(f"cannot read {self.path}: {exc}") from None
        return StateCounts(
            found["queued"], found["in-flight"], found["done"], found["failed"], found["skipped"]
        )

    def urls(self, states: Collection[str]) -> Iterator[tuple[str, str]]:
        wanted = [code for code, name in STATE_NAMES.items() if name in states]
        if not wanted:
            return
        statement = sized(QUERIES["list-urls"], marks=marks(len(wanted)))
        try:
            cursor = self._conn.execute(statement, wanted)
            while rows := cursor.fetchmany(PAGE):
                for state, url in rows:
                    yield STATE_NAMES[int(state)], str(url)
        except sqlite3.Error as exc:
            raise FrontierError(f"cannot read {self.path}: {exc}") from None

    def close(self) -> None:
        self._conn.close()


__all__ = ["STATE_NAMES", "SqliteView"]
