"""How the SQLite frontier stores a URL: its row in ``urls`` and its state (``schema.sql``).

The column orders here are the ones the statements of ``scripts/queries.sql`` write and read
(``url-insert``, ``refill``, ``waiting``); a change to one is a change to both.
"""

from __future__ import annotations

from typing import Any

from archiver.models import CrawlItem, Outcome

# -- per-URL states (urls.state) ----------------------------------------------------------------
QUEUED = 0  #: waiting on disk only (no process holds it in memory)
IN_FLIGHT = 1  #: leased to a worker
DONE = 2
FAILED = 3
SKIPPED = 4
WAITING = 5  #: a retry that is not due before ``not_before`` (wall-clock seconds)
WINDOWED = 6  #: queued, and held in this process's in-memory window of its host

#: The names the SQL files use for the states (``$QUEUED`` ...).
STATES = {
    "QUEUED": QUEUED,
    "IN_FLIGHT": IN_FLIGHT,
    "DONE": DONE,
    "FAILED": FAILED,
    "SKIPPED": SKIPPED,
    "WAITING": WAITING,
    "WINDOWED": WINDOWED,
}

#: The state a final outcome leaves its URL in.
FINAL_STATE = {Outcome.DONE: DONE, Outcome.FAILED: FAILED, Outcome.SKIPPED: SKIPPED}

#: Values per new URL row: url, host id, state, seq, tries, redirects_left, depth, hops, via,
#: extra, found_by, page, seed (the column list of ``url-insert``).
URL_COLUMN_COUNT = 13


def url_row(item: CrawlItem, host_id: int, state: int, seq: int) -> tuple[Any, ...]:
    """The ``urls`` row of a new URL, in the column order of ``url-insert``."""
    return (
        item.url,
        host_id,
        state,
        seq,
        item.tries,
        item.redirects_left,
        item.depth,
        item.hops,
        item.via,
        item.extra,
        item.found_by,
        item.page,
        item.seed,
    )


def refilled_item(row: list[Any]) -> CrawlItem:
    """An item from a ``refill`` row: id, host, url, tries, redirects_left, depth, hops, via,
    seq, extra, found_by, page, seed."""
    return CrawlItem(
        row[2], row[4], row[5], row[6], row[7], row[3], row[9], row[10], row[11], row[12]
    )


def waiting_item(row: tuple[Any, ...]) -> tuple[CrawlItem, float]:
    """An item and its due time from a ``waiting`` row: url, tries, redirects_left, depth,
    hops, via, not_before, extra, found_by, page, seed."""
    url, tries, redirects_left, depth, hops, via, not_before, extra, found_by, page, seed = row
    item = CrawlItem(url, redirects_left, depth, hops, via, tries, extra, found_by, page, seed)
    return item, float(not_before or 0.0)
