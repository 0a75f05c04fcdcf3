"""The SQLite frontier's store: one connection on one thread, operations applied in issue order
and committed in groups.

The event loop does not wait on SQLite: the frontier's calls queue operations and return (a few
await an answer: a seen-set check the caches cannot decide, a refill, resume bookkeeping; then
only the calling coroutine waits, never the loop). The operations issued during one loop
iteration reach the thread as one list; the thread applies everything that has arrived as one
batch inside the current transaction and commits every ``commit_interval`` (group commit), only
ever between batches, so what is on disk is always a prefix of what was issued. Past
:data:`HIGH_WATER` unapplied operations, callers wait (backpressure) instead of growing the heap.

The Redis frontier batches too (its pump sends whatever queued up during the previous round trip
as one pipeline), but there the unit is a network round trip to a server shared by processes,
with retries across outages; here it is a local transaction whose commit is the durability
point. The two share the idea, not code.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archiver.errors import FrontierError
from archiver.frontier.sqlite.database import Database
from archiver.frontier.sqlite.ops import CALL, Callback, Op, Results, op_weight

#: Seconds between group commits while operations keep coming.
COMMIT_INTERVAL = 0.1
#: Unapplied operations (URL rows count one each) past which callers wait for the thread, until
#: the backlog is below LOW_WATER. Small on purpose: a backlog is heap (about 200 bytes a row)
#: that the garbage collector walks, and JSON the thread encodes while holding the GIL.
HIGH_WATER = 20_000
LOW_WATER = 5_000
#: Work the thread takes into one batch (the rest waits for the next): bounds how long a seen
#: check or a refill queued behind a burst of writes waits for its answer.
MAX_BATCH = 5_000


class Store:
    """One SQLite connection on one thread; operations applied and committed in issue order.

    Loop side: :meth:`submit` (fire and forget, or with a callback run on the loop) and
    :meth:`call` (await the result). Operations issued during one loop iteration reach the
    thread as one list; the thread applies whatever has arrived as one batch inside the current
    transaction and commits every ``commit_interval`` (group commit), so every commit holds a
    prefix of the issued operations. A failed statement or commit fails the store for good:
    later operations are answered with :class:`FrontierError`, and the database keeps its last
    committed prefix.
    """

    def __init__(self, path: Path, *, commit_interval: float) -> None:
        self.path = path
        self.commit_interval = commit_interval
        self.db = Database(path)
        self.stats = self.db.stats
        self.failure: FrontierError | None = None
        #: weights (1 per operation, 1 per URL row) issued by the loop and applied by the thread;
        #: ``applied`` is written by the thread and read by the loop (an int: atomic under GIL)
        self.submitted = 0
        self.applied = 0
        self._ops: queue.SimpleQueue[list[Op]] = queue.SimpleQueue()
        self._buffer: list[Op] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._closing = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="frontier-sqlite", daemon=True)
        self._thread.start()

    # -- loop side --------------------------------------------------------------------------
    def check(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self._loop is None or self._closing:
            raise FrontierError("the SQLite frontier is not open")

    def submit(
        self, kind: int, payload: Any, callback: Callback | None = None, *, commit: bool = False
    ) -> None:
        """Queue an operation. Raises only when the store is not open: after a failure the
        operation is answered with the failure (the public calls check for it first)."""
        if self._loop is None or self._closing:
            raise FrontierError("the SQLite frontier is not open")
        if not self._buffer:
            self._loop.call_soon(self._hand_over)
        self._buffer.append((kind, payload, callback, commit))
        self.submitted += op_weight(kind, payload)

    def post(self, kind: int, payload: Any, callback: Callback | None = None) -> None:
        """:meth:`submit` for the scheduler's hooks, which may run from a timer after close:
        then there is nothing left to persist, and raising inside dispatch would only hurt."""
        if self._loop is not None and not self._closing:
            self.submit(kind, payload, callback)

    def _hand_over(self) -> None:
        if self._buffer:
            self._ops.put(self._buffer)
            self._buffer = []

    async def call(self, kind: int, payload: Any, *, commit: bool = False) -> Any:
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()

        def done(result: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        self.submit(kind, payload, done, commit=commit)
        return await future

    async def run(self, fn: Callable[[Any], Any], arg: Any = None, *, commit: bool = False) -> Any:
        """Run ``fn(arg)`` on the thread after everything issued before (resume, flush)."""
        return await self.call(CALL, (fn, arg), commit=commit)

    async def backpressure(self) -> None:
        """Wait while too many operations are not applied yet (bounded memory)."""
        if self.submitted - self.applied <= HIGH_WATER or self.failure is not None:
            return
        assert self._loop is not None
        self._hand_over()
        while self.submitted - self.applied > LOW_WATER and self.failure is None:
            waiter = self._drain_waiter
            if waiter is None or waiter.done():
                waiter = self._drain_waiter = self._loop.create_future()
            await asyncio.shield(waiter)

    def _deliver(self, results: Results) -> None:
        for callback, result, error in results:
            callback(result, error)

    def _wake_drain(self) -> None:
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def close(self) -> None:
        """Apply and commit everything issued, close the connection, end the thread.

        Idempotent. Raises the store's failure, if any, after closing.
        """
        if self._loop is None or self._closing:
            return
        self._hand_over()
        self._closing = True
        self._ops.put([])  # wakes the thread; it sees _closing once the queue is empty
        thread = self._thread
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join)
        if self.failure is not None:
            raise self.failure

    # -- thread side ------------------------------------------------------------------------
    def _send(self, results: Results) -> None:
        loop = self._loop
        if results and loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(self._deliver, results)

    def _fail(self, exc: BaseException, what: str) -> FrontierError:
        if self.failure is None:
            detail = str(exc) if isinstance(exc, sqlite3.Error) else repr(exc)
            self.failure = FrontierError(f"frontier database {self.path}: {what} failed: {detail}")
        return self.failure

    def _run(self) -> None:
        try:
            self.db.connect()
        except Exception as exc:
            self._fail(exc, "opening the database")
        txn: float | None = None  #: when the open transaction began; None: none is open
        while True:
            batch = self._take(txn)
            if batch is None:  # the commit interval passed with nothing new
                self._commit(txn)
                txn = None
                continue
            weight = self._fill(batch)
            began = time.perf_counter()
            results, txn = self._apply(batch, txn)
            closing = self._closing and self._ops.empty()
            txn = self._answer(batch, results, txn, closing)
            self._count(batch, weight, began)
            if closing:
                self.db.close()
                return

    def _take(self, txn: float | None) -> list[Op] | None:
        """The next list of operations; None when a transaction is open and its commit
        interval passes first."""
        try:
            if txn is None:
                return self._ops.get()
            wait = txn + self.commit_interval - time.monotonic()
            return self._ops.get(timeout=wait) if wait > 0 else self._ops.get_nowait()
        except queue.Empty:
            return None

    def _fill(self, batch: list[Op]) -> int:
        """Add what else has arrived to ``batch``, up to :data:`MAX_BATCH`; its weight."""
        weight = sum(op_weight(op[0], op[1]) for op in batch)
        while weight < MAX_BATCH:
            try:
                more = self._ops.get_nowait()
            except queue.Empty:
                break
            batch += more
            weight += sum(op_weight(op[0], op[1]) for op in more)
        return weight

    def _apply(self, batch: list[Op], txn: float | None) -> tuple[Results, float | None]:
        """Apply ``batch`` in the open transaction (begun if needed); its answers."""
        results: Results = []
        if self.failure is None and batch:
            try:
                if txn is None:
                    self.db.begin()
                    txn = time.monotonic()
                self.db.apply(batch, results)
            except Exception as exc:
                self._fail(exc, "a write")
                self.db.rollback()
                txn = None
        if self.failure is not None:  # rolled back: the batch's answers do not hold
            results = [(op[2], None, self.failure) for op in batch if op[2] is not None]
        return results, txn

    def _answer(
        self, batch: list[Op], results: Results, txn: float | None, closing: bool
    ) -> float | None:
        """Commit when due, and send the answers: at once, or after the commit for an
        operation that asked for one (its caller must not go on before it is durable)."""
        commit = any(op[3] for op in batch)
        if not commit:  # answers need not wait for the commit (it follows in order)
            self._send(results)
        if txn is not None and (
            commit or closing or time.monotonic() - txn >= self.commit_interval
        ):
            self._commit(txn)
            txn = None
            if commit and self.failure is not None:
                results = [(cb, None, self.failure) for cb, _, _ in results]
        if commit:
            self._send(results)
        return txn

    def _count(self, batch: list[Op], weight: int, began: float) -> None:
        stats = self.stats
        stats.batches += 1
        stats.operations += len(batch)
        stats.max_batch_seconds = max(stats.max_batch_seconds, time.perf_counter() - began)
        stats.thread_cpu_seconds = time.thread_time()
        self.applied += weight
        if self._drain_waiter is not None and self.submitted - self.applied <= LOW_WATER:
            loop = self._loop
            if loop is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._wake_drain)

    def _commit(self, txn: float | None) -> None:
        """Commit the open transaction, if any; afterwards none is open."""
        if txn is None:
            return
        began = time.perf_counter()
        try:
            self.db.commit()
        except Exception as exc:
            self._fail(exc, "commit")
            self.db.rollback()
            return
        self.stats.commits += 1
        self.stats.max_commit_seconds = max(
            self.stats.max_commit_seconds, time.perf_counter() - began
        )
