"""The SQLite frontier's ledger of committed captures: the
:class:`~archiver.frontier.base.CaptureLedger` in the ``files`` and ``captures`` tables.

The queue writes it: ``task_done`` sends a lease's captures in the same operation as its
outcome, so a capture is committed exactly when its lease is. What is read here is what resume
needs after a crash: which byte ranges of an ``.open`` WARC file were committed, and the URLs
whose captures the repair cut from the file, put back in the queue.
"""

from __future__ import annotations

import asyncio
from typing import Any

from archiver.frontier.sqlite.ops import CALL
from archiver.frontier.sqlite.queue import SqliteQueue
from archiver.frontier.sqlite.store import Store


class SqliteLedger:
    """The committed captures of the crawl whose queue is ``queue``, in ``store``'s database."""

    persistent = True

    def __init__(self, store: Store, queue: SqliteQueue) -> None:
        self._store = store
        self._queue = queue

    async def flush(self) -> None:
        """Wait until every operation issued so far is committed."""
        await self._store.run(self._store.db.noop, None, commit=True)

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        self._store.check()
        result: set[tuple[int, int]] = await self._store.run(self._store.db.committed, filename)
        return result

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        store = self._store
        store.check()
        answered: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_result(found: Any, error: BaseException | None) -> None:
            # on the loop, in order with the queue's own answers: re-queue before anything else
            total = self._queue.requeue_uncommitted(found) if error is None else 0
            if not answered.done():
                if error is not None:
                    answered.set_exception(error)
                else:
                    answered.set_result(total)

        store.submit(CALL, (store.db.uncommit, (filename, offset)), on_result, commit=True)
        return await asyncio.shield(answered)
