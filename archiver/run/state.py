"""The crawl's state cross-checked before a run resumes it: the WARC files, ``state/crawl.json``
and the frontier database must agree.

A frontier database lost while the crawl was stopped (a restore, a cleanup script) made the
next run start over from the seeds without a word: every page was archived a second time as a
full record (the dedup digests were in the lost database too), and ``archiver verify`` still
said OK. So a resumed crawl with WARC files checks, before anything is written:

* that ``state/frontier.sqlite`` exists and is a readable frontier database;
* that it is this crawl's: ``state/crawl.json`` names the crawl (``crawl``, made when the
  crawl was), and the database's ``meta`` table carries the same name;
* that it is not older than the crawl: ``state/crawl.json`` records, at the end of every run,
  how many URLs the frontier had settled (``frontier_settled``); a copy restored from before
  holds fewer.

A failed check is a :class:`~archiver.errors.StateError` (exit 2): the message says what is
wrong and the one command that rebuilds what can be rebuilt from the WARC files
(``archiver rebuild-frontier DIR``: :mod:`archiver.run.rebuild`), or to crawl into a new
directory. Only a crawl run by one process has this database (``--processes N`` keeps its
queue in its redis-server's append-only file).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from archiver.errors import FrontierError, StateError
from archiver.frontier.sqlite import read_identity, write_identity
from archiver.run.output import Layout
from archiver.warc.naming import warc_files

#: crawl.json's keys (see the module docstring)
CRAWL_KEY = "crawl"
SETTLED_KEY = "frontier_settled"


def new_identity() -> str:
    return uuid.uuid4().hex


def rebuild_hint(layout: Layout) -> str:
    return (
        f"rebuild it from the WARC files with: archiver rebuild-frontier {layout.root} "
        "(then run the same command again), or crawl into a new directory"
    )


def check_state(layout: Layout, state: dict[str, Any]) -> None:
    """Raise :class:`StateError` when the frontier database of the crawl that ``state``
    (crawl.json) describes cannot be resumed from (see the module docstring)."""
    warcs = warc_files(layout.warcs, include_open=True) if layout.warcs.is_dir() else []
    if not warcs:
        return  # nothing captured yet: a run from the seeds loses nothing
    database = layout.frontier_db
    files = f"{len(warcs)} WARC file{'s' if len(warcs) != 1 else ''}"
    if not database.exists():
        raise StateError(
            f"{database} is missing, but {layout.warcs} holds {files} of this crawl: a run "
            f"from the seeds would capture every page again; {rebuild_hint(layout)}"
        )
    try:
        found = read_identity(database)
    except FrontierError as exc:
        raise StateError(f"{exc}, beside {files}; {rebuild_hint(layout)}") from None
    crawl = state.get(CRAWL_KEY)
    if isinstance(crawl, str) and found.crawl is not None and found.crawl != crawl:
        raise StateError(
            f"{database} belongs to another crawl ({found.crawl}; crawl.json says {crawl}); "
            f"{rebuild_hint(layout)}"
        )
    recorded = state.get(SETTLED_KEY)
    if isinstance(recorded, int) and found.settled < recorded:
        raise StateError(
            f"{database} is older than the crawl: it has {found.settled} URLs settled, the "
            f"crawl had {recorded} when its last run ended (a copy restored from before?); "
            f"{rebuild_hint(layout)}"
        )


def stamp(layout: Layout, state: dict[str, Any]) -> None:
    """Once the run closed the frontier: write the crawl's identity into the database (a crawl
    of an older archiver gets one now; written from outside while the frontier holds the
    database, it could make the frontier's next write fail), and record in ``state`` what the
    database has settled, for the caller to write into crawl.json."""
    crawl = state.setdefault(CRAWL_KEY, new_identity())
    if layout.frontier_db.exists():
        with contextlib.suppress(FrontierError):  # the next run says what is wrong with it
            write_identity(layout.frontier_db, str(crawl))
        record_settled(layout, state)


def record_settled(layout: Layout, state: dict[str, Any]) -> None:
    """What the frontier database has settled (the next run checks it has no fewer): at the
    end of a run, and at its start once the resume repair re-queued what it cut from the WARC
    files (a read only; from there on the count only grows until the next repair). Nothing
    when it cannot be read (the next run says so)."""
    with contextlib.suppress(FrontierError):
        state[SETTLED_KEY] = read_identity(layout.frontier_db).settled


__all__ = [
    "CRAWL_KEY",
    "SETTLED_KEY",
    "check_state",
    "new_identity",
    "rebuild_hint",
    "record_settled",
    "stamp",
]
