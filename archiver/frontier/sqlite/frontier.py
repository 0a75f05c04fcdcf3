"""The SQLite frontier: one database, the three roles of :mod:`archiver.frontier.base` over it.

:class:`SqliteFrontier` is its :class:`~.queue.SqliteQueue` (the hot path: workers call it for
every URL), with host politeness from :class:`~archiver.frontier.local.LocalFrontier` (shared
with the memory frontier), the :class:`~.ledger.SqliteLedger` of committed captures, the
services that live in the same database (:mod:`.services`), and the life cycle: the store
thread started, the database opened and read back into each part, closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from archiver.errors import FrontierError
from archiver.frontier.sqlite.bloom import BLOOM_CAPACITY, BLOOM_MAX_BYTES
from archiver.frontier.sqlite.database import OpenState
from archiver.frontier.sqlite.ledger import SqliteLedger
from archiver.frontier.sqlite.ops import StoreStats
from archiver.frontier.sqlite.queue import MEMORY_ITEMS, RECENT_URLS, WINDOW, SqliteQueue
from archiver.frontier.sqlite.services import (
    SqliteCapturedUrls,
    SqliteDigestIndex,
    SqliteMediaBytes,
    SqliteSeedStore,
)
from archiver.frontier.sqlite.store import COMMIT_INTERVAL, Store
from archiver.models import ResumeInfo
from archiver.policy.politeness import HostGate


class SqliteFrontier(SqliteQueue):
    """A frontier in ``path`` (an SQLite database): resumable, bounded memory.

    ``window`` URLs per host and ``memory_items`` over all hosts live in memory;
    ``recent_urls`` sizes the seen-set cache; ``commit_interval`` is the group-commit period.
    ``max_pages`` (tests) caps the database size like a full disk would.
    """

    persistent = True

    def __init__(
        self,
        path: Path,
        gate: HostGate | None = None,
        *,
        window: int = WINDOW,
        memory_items: int = MEMORY_ITEMS,
        recent_urls: int = RECENT_URLS,
        commit_interval: float = COMMIT_INTERVAL,
        bloom_capacity: int = BLOOM_CAPACITY,
        bloom_max_bytes: int = BLOOM_MAX_BYTES,
        max_pages: int | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        store = Store(self.path, commit_interval=commit_interval)
        store.db.max_pages = max_pages
        store.db.bloom_capacity = bloom_capacity
        store.db.bloom_max_bytes = bloom_max_bytes
        super().__init__(
            store,
            gate,
            window=window,
            memory_items=memory_items,
            recent_urls=recent_urls,
            wall_clock=wall_clock,
        )
        self.ledger = SqliteLedger(store, self)
        self._digests = SqliteDigestIndex(store)
        self._captured = SqliteCapturedUrls(store)
        self._media = SqliteMediaBytes(store)
        self._seeds = SqliteSeedStore(store)
        self._opened = False
        self.open_seconds = 0.0

    # -- life cycle -------------------------------------------------------------------------
    async def open(self) -> ResumeInfo:
        if self._opened:
            raise FrontierError("the SQLite frontier is already open")
        store = self._store
        store.start(asyncio.get_running_loop())
        try:
            state: OpenState = await store.run(store.db.open, None, commit=True)
        except BaseException:
            with contextlib.suppress(FrontierError):
                await store.close()
            raise
        self._opened = True
        self.open_seconds = state.seconds
        queued = self.restore(state)
        self._digests.restore(state.digests)
        notes = [f"opened {self.path.name} in {state.seconds:.2f} s ({self.seen} URLs seen)"]
        return ResumeInfo(
            resumed=state.existed,
            requeued_in_flight=state.requeued_in_flight,
            queued=queued,
            done=self.outcomes.done,
            notes=notes,
        )

    async def close(self) -> None:
        """Commit what was issued and close the database; leases stay in flight for resume."""
        await self._store.close()

    @property
    def store(self) -> Store:
        """The store thread (the services queue their operations there too)."""
        return self._store

    @property
    def store_stats(self) -> StoreStats:
        return self._store.stats

    # -- the capture ledger -----------------------------------------------------------------
    async def flush(self) -> None:
        """Wait until every operation issued so far is committed."""
        await self.ledger.flush()

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        return await self.ledger.committed_captures(filename)

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        return await self.ledger.uncommit_captures(filename, offset)

    # -- payload digests, captured URLs ----------------------------------------------------
    def digest_index(self) -> SqliteDigestIndex:
        """The crawl's payload digests, in this frontier's database (valid once it is open)."""
        return self._digests

    def captured_urls(self) -> SqliteCapturedUrls:
        """The URLs the crawl captured, in this frontier's database (valid once it is open)."""
        return self._captured

    def media_bytes(self) -> SqliteMediaBytes:
        """The media bytes each page took, in this frontier's database (valid once open)."""
        return self._media

    def seed_store(self) -> SqliteSeedStore:
        """The rules of the seeds that have their own, in this frontier's database."""
        return self._seeds
