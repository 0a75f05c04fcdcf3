"""The SQLite frontier: the crawl's queue, seen set and per-URL state on disk, resumable.

The workers see the same joinable queue as with :class:`~archiver.frontier.memory.MemoryFrontier`
(the same :class:`~archiver.frontier.memory.HostScheduler` in front), but memory stays bounded
for millions of URLs and a killed crawl resumes from ``state/frontier.sqlite``. Four rules
shape it:

**The event loop does not wait on SQLite.** One thread owns the one connection. ``put_many``,
``get`` and ``task_done`` update in-memory structures synchronously and queue their writes;
only a seen-set check the caches cannot answer, a refill of a host's window and the resume
bookkeeping wait for the thread, and then only the calling coroutine waits, never the loop.
Past :data:`HIGH_WATER` unapplied writes, callers wait (backpressure) instead of growing the heap.

**Few statements, many rows.** The operations issued during one loop iteration reach the thread
as one list; the thread applies everything that has arrived as one batch, coalesced into a
handful of set-based statements whose rows travel as one JSON parameter (``json_each``). The
reason is the GIL: the sqlite3 module releases it around every step, and behind a busy event
loop each re-acquisition waits up to the switch interval (5 ms), so one statement per row
managed a few hundred rows a second under load, where a statement per batch keeps up with
tens of thousands.

**What is on disk is always a prefix of what was issued.** Operations go through one FIFO into
the thread; a batch is applied inside the current transaction, and a commit (every
``commit_interval``: group commit) only ever falls between batches. After a SIGKILL the state
is therefore the state at some earlier moment: a page's links (``put_many``) are persisted
before its ``task_done``, so a URL is never "done" without its children. WAL with
``synchronous=NORMAL``: a commit is a ``write`` to the WAL, which survives a killed process;
after a power loss the last commits may roll back, which is still a prefix (``FULL`` would
fsync every 100 ms for a guarantee the WARC files, fsynced every few seconds, do not give
either). Captures committed with a ``task_done`` but missing from an ``.open`` WARC after a crash
are re-queued by :meth:`SqliteFrontier.uncommit_captures` when the crawl resumes.

**Memory is bounded.** Per host only a window of the oldest queued URLs lives in memory
(refilled from disk in batches when it runs low). The seen set is SQLite's ``UNIQUE`` index on
the URL, in front of which sit a bounded cache of recent URLs (navigation links repeat on every
page: one set lookup) and a Bloom filter over Python's string hash (a URL it never saw is new
without asking SQLite; ~1.3 bytes per URL). Only URLs neither can decide go to the database,
which answers exactly. The filter is rebuilt from the table on ``open`` (the string hash is
salted per process): about a second per million URLs.

Per-URL states (``urls.state``): see the ``QUEUED`` ... ``WINDOWED`` constants. ``WINDOWED`` and
``IN_FLIGHT`` only mean something to the process that set them: ``open`` turns both back into
``QUEUED`` (tries unchanged).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from archiver.errors import FrontierError
from archiver.frontier.base import Lease
from archiver.frontier.memory import HostScheduler
from archiver.models import CrawlItem, FrontierStats, Original, Outcome, ResumeInfo, TaskResult
from archiver.policy.politeness import HostGate
from archiver.urls import host_port

# -- per-URL states ---------------------------------------------------------------------------
QUEUED = 0  #: waiting on disk only (no process holds it in memory)
IN_FLIGHT = 1  #: leased to a worker
DONE = 2
FAILED = 3
SKIPPED = 4
WAITING = 5  #: a retry that is not due before ``not_before`` (wall-clock seconds)
WINDOWED = 6  #: queued, and held in this process's in-memory window of its host

_FINAL_STATE = {Outcome.DONE: DONE, Outcome.FAILED: FAILED, Outcome.SKIPPED: SKIPPED}

SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (id INTEGER PRIMARY KEY, host TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- the seen set
    host INTEGER NOT NULL,             -- hosts.id (archiver.urls.host_port)
    state INTEGER NOT NULL,
    seq INTEGER NOT NULL,              -- FIFO order within the host (a retry gets a new one)
    tries INTEGER NOT NULL,
    redirects_left INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    hops TEXT NOT NULL,
    via TEXT,
    not_before REAL,                   -- WAITING: wall-clock time the retry is due
    status INTEGER,
    reason TEXT
);
CREATE INDEX IF NOT EXISTS urls_queue ON urls (host, seq) WHERE state = 0;
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS captures (
    file INTEGER NOT NULL,             -- files.id (the WARC's final name)
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    url INTEGER NOT NULL,              -- urls.id of the lease that committed it
    PRIMARY KEY (file, start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS digests (
    digest TEXT PRIMARY KEY,
    record_id TEXT,
    target_uri TEXT NOT NULL,
    date TEXT NOT NULL
) WITHOUT ROWID;
"""

#: URLs held in memory per host (the oldest of its queue); refilled from disk below half.
WINDOW = 1024
#: URLs held in memory over all hosts; past it new URLs go to disk and refills shrink.
MEMORY_ITEMS = 100_000
#: Recent URLs kept for the cheap "already seen" answer (two generations of this size).
RECENT_URLS = 65_536
#: Seconds between group commits while operations keep coming.
COMMIT_INTERVAL = 0.1
#: Unapplied operations (URL rows count one each) past which callers wait for the thread, until
#: the backlog is below LOW_WATER. Small on purpose: a backlog is heap (about 200 bytes a row)
#: that the garbage collector walks, and JSON the thread encodes while holding the GIL.
HIGH_WATER = 20_000
LOW_WATER = 5_000
#: Rows per set-based statement at most (a power of two; also capped by SQLite's variable limit).
CHUNK_ROWS = 1024
#: Work the thread takes into one batch (the rest waits for the next): bounds how long a seen
#: check or a refill queued behind a burst of writes waits for its answer.
MAX_BATCH = 5_000
#: Bloom filter: bits per URL in its first layer, the first layer's capacity, a memory cap.
BLOOM_BITS_PER_ITEM = 10
BLOOM_CAPACITY = 1 << 20
BLOOM_MAX_BYTES = 64 << 20

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1


# ============================================================================== in memory
class Bloom:
    """A scalable Bloom filter over 64-bit hashes: "definitely not added" or "maybe added".

    Four probes by double hashing (Kirsch and Mitzenmacher), unrolled: this runs on the event
    loop for every URL the recent-URL cache does not know, and for every URL when a resumed
    frontier rebuilds it. Layer *i* takes ``capacity * 2**i`` items at ``10 + 4*i`` bits each
    (~1.2 %, 0.4 %, 0.17 %, ... false positives when full, so the sum stays under 2 %, Almeida
    et al.'s scalable Bloom filters). Past ``max_bytes`` the last layer keeps absorbing items:
    false positives grow, answers stay safe (a positive is always checked exactly).
    """

    def __init__(self, capacity: int = BLOOM_CAPACITY, *, max_bytes: int = BLOOM_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.count = 0
        self._layers: list[tuple[bytearray, int]] = []  #: (bits, number of bits)
        self._bits = bytearray()  #: the last layer, where items are added
        self._size = 1
        self._capacity = 0  #: items the last layer takes before a new one is added
        self._filled = 0
        self._add_layer(max(capacity, 8))

    @property
    def nbytes(self) -> int:
        return sum(len(bits) for bits, _ in self._layers)

    def _add_layer(self, capacity: int) -> None:
        per_item = BLOOM_BITS_PER_ITEM + 4 * len(self._layers)
        nbytes = (capacity * per_item + 7) // 8
        if self._layers and self.nbytes + nbytes > self.max_bytes:
            self._capacity = 1 << 62  # cap reached: saturate the last layer
            return
        self._bits, self._size = bytearray(nbytes), nbytes * 8
        self._layers.append((self._bits, self._size))
        self._capacity = capacity
        self._filled = 0

    def might_contain(self, h: int) -> bool:
        a = h & _MASK32
        b = (h >> 32) | 1
        for bits, size in self._layers:
            p = a % size
            if not bits[p >> 3] & (1 << (p & 7)):
                continue
            p = (a + b) % size
            if not bits[p >> 3] & (1 << (p & 7)):
                continue
            p = (a + 2 * b) % size
            if not bits[p >> 3] & (1 << (p & 7)):
                continue
            p = (a + 3 * b) % size
            if bits[p >> 3] & (1 << (p & 7)):
                return True
        return False

    def add(self, h: int) -> None:
        if self._filled >= self._capacity:
            self._add_layer(self._capacity * 2)
        bits, size = self._bits, self._size
        a = h & _MASK32
        b = (h >> 32) | 1
        p = a % size
        bits[p >> 3] |= 1 << (p & 7)
        p = (a + b) % size
        bits[p >> 3] |= 1 << (p & 7)
        p = (a + 2 * b) % size
        bits[p >> 3] |= 1 << (p & 7)
        p = (a + 3 * b) % size
        bits[p >> 3] |= 1 << (p & 7)
        self._filled += 1
        self.count += 1

    def add_many(self, hashes: Iterable[int]) -> None:
        """``add`` for a stream of Python ``hash()`` values (signed: masked to 64 bits here), as
        when a resumed frontier rebuilds the filter. (An inlined copy of ``add`` measured only
        ~10 % faster on a million URLs: not worth a second copy of the probing.)"""
        add = self.add
        for value in hashes:
            add(value & _MASK64)


class _Recent:
    """The last seen URLs, in two generations: a bounded set with an LRU flavour."""

    __slots__ = ("hot", "limit", "warm")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.hot: set[str] = set()
        self.warm: set[str] = set()

    def add(self, url: str) -> None:
        hot = self.hot
        hot.add(url)
        if len(hot) >= self.limit:
            self.warm = hot
            self.hot = set()


class _HostQueue:
    """One host's queue: a window of its oldest URLs in memory, the rest counted on disk."""

    __slots__ = ("id", "name", "on_disk", "refilling", "spilled", "window")

    def __init__(self, name: str, host_id: int) -> None:
        self.name = name
        self.id = host_id
        self.window: deque[CrawlItem] = deque()
        self.on_disk = 0  #: QUEUED rows of this host not in the window
        self.refilling = False
        #: URLs went to disk while a refill was under way (it may not have seen them)
        self.spilled = False


# ============================================================================== the thread
_Callback = Callable[[Any, BaseException | None], None]

# Operation kinds; the thread coalesces a batch of them into a few set-based statements.
_HOST = 0  #: (host id, name)
_INSERT = 1  #: [url row, ...]: URLs known to be new
_MAYBE = 2  #: [url row, ...]: URLs the Bloom filter could not rule out -> [new?, ...]
_UPDATE = 3  #: (url, columns, values, [(file, start, end), ...])
_REFILL = 4  #: (host id, count) -> rows of the host's oldest queued URLs, now WINDOWED
_DIGEST_ADD = 5  #: (digest, record id, target uri, date)
_DIGEST_GET = 6  #: digest -> (record id, target uri, date) | None
_CALL = 7  #: (function, argument): run alone, after everything issued before it

_Op = tuple[int, Any, _Callback | None, bool]

#: columns an _UPDATE may set, in statement order
_COLUMNS = ("state", "seq", "tries", "not_before", "status", "reason")
_SET_STATE = ("state",)
_SET_REQUEUE = ("state", "seq", "not_before")
_SET_FINISH = ("state", "status", "reason")
_SET_RETRY = ("state", "tries", "not_before", "status", "reason")

#: url rows: url, host id, state, seq, tries, redirects_left, depth, hops, via
_URL_COLUMNS = "url, host, state, seq, tries, redirects_left, depth, hops, via"
#: one host's oldest queued URLs: id, host, url, tries, redirects_left, depth, hops, via, seq
_REFILL_PART = (
    "SELECT * FROM (SELECT id, host, url, tries, redirects_left, depth, hops, via, seq "
    f"FROM urls WHERE host = ? AND state = {QUEUED} ORDER BY seq LIMIT ?)"
)
_REFILL_CHUNK = 64  #: hosts per refill statement (a power of two; SQLite allows 500 terms)


def _weight(kind: int, payload: Any) -> int:
    """How much an operation counts towards the backlog limit."""
    return len(payload) if kind in (_INSERT, _MAYBE) else 1


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _padded_size(count: int) -> int:
    """Rows are padded to a power of two (NULL rows, filtered out by the statement) so that a
    few statement texts repeat and stay prepared in the sqlite3 statement cache."""
    return max(8, 1 << (count - 1).bit_length())


class _Batch:
    """The operations of one batch, coalesced per kind (per URL for updates)."""

    __slots__ = (
        "captures",
        "digest_gets",
        "digests",
        "hosts",
        "maybe",
        "refills",
        "rows",
        "updates",
    )

    def __init__(self) -> None:
        self.hosts: list[tuple[int, str]] = []
        self.rows: list[tuple[tuple[Any, ...], bool]] = []  # (row, from a _MAYBE op)
        self.maybe: list[tuple[_Callback | None, int]] = []  # per _MAYBE op: its row count
        self.updates: dict[str, dict[str, Any]] = {}
        self.captures: list[tuple[str, int, int, str]] = []
        self.digests: list[tuple[str, str | None, str, str]] = []
        self.digest_gets: list[tuple[str, _Callback | None]] = []
        self.refills: list[tuple[int, int, _Callback | None]] = []

    def add(self, kind: int, payload: Any, callback: _Callback | None) -> None:
        if kind == _UPDATE:
            url, columns, values, captures = payload
            update = self.updates.get(url)
            if update is None:
                self.updates[url] = dict(zip(columns, values, strict=True))
            else:
                update.update(zip(columns, values, strict=True))
            for name, start, end in captures:
                self.captures.append((name, start, end, url))
        elif kind == _INSERT:
            self.rows.extend((row, False) for row in payload)
        elif kind == _MAYBE:
            self.rows.extend((row, True) for row in payload)
            self.maybe.append((callback, len(payload)))
        elif kind == _HOST:
            self.hosts.append(payload)
        elif kind == _REFILL:
            self.refills.append((payload[0], payload[1], callback))
        elif kind == _DIGEST_ADD:
            self.digests.append(payload)
        elif kind == _DIGEST_GET:
            self.digest_gets.append((payload, callback))
        else:  # pragma: no cover - a bug
            raise ValueError(f"unknown operation kind {kind}")

    def __bool__(self) -> bool:
        return bool(
            self.hosts
            or self.rows
            or self.updates
            or self.captures
            or self.digests
            or self.digest_gets
            or self.refills
        )


_Results = list[tuple[_Callback, Any, BaseException | None]]


@dataclass(slots=True)
class StoreStats:
    """What the SQLite thread has done (for benchmarks and the debug log)."""

    batches: int = 0
    operations: int = 0
    statements: int = 0
    commits: int = 0
    max_batch_seconds: float = 0.0
    max_commit_seconds: float = 0.0
    thread_cpu_seconds: float = 0.0  #: CPU time of the SQLite thread (GIL-bound part included)


class _Store:
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
        self.db = _Database(path)
        self.stats = self.db.stats
        self.failure: FrontierError | None = None
        #: weights (1 per operation, 1 per URL row) issued by the loop and applied by the thread;
        #: ``applied`` is written by the thread and read by the loop (an int: atomic under GIL)
        self.submitted = 0
        self.applied = 0
        self._ops: queue.SimpleQueue[list[_Op]] = queue.SimpleQueue()
        self._buffer: list[_Op] = []
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
        self, kind: int, payload: Any, callback: _Callback | None = None, *, commit: bool = False
    ) -> None:
        """Queue an operation. Raises only when the store is not open: after a failure the
        operation is answered with the failure (the public calls check for it first)."""
        if self._loop is None or self._closing:
            raise FrontierError("the SQLite frontier is not open")
        if not self._buffer:
            self._loop.call_soon(self._hand_over)
        self._buffer.append((kind, payload, callback, commit))
        self.submitted += _weight(kind, payload)

    def post(self, kind: int, payload: Any, callback: _Callback | None = None) -> None:
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
        return await self.call(_CALL, (fn, arg), commit=commit)

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

    def _deliver(self, results: _Results) -> None:
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
    def _send(self, results: _Results) -> None:
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
        db = self.db
        stats = self.stats
        ops = self._ops
        in_txn = False
        txn_start = 0.0
        try:
            db.connect()
        except Exception as exc:
            self._fail(exc, "opening the database")
        while True:
            try:
                if in_txn:
                    wait = txn_start + self.commit_interval - time.monotonic()
                    batch = ops.get(timeout=wait) if wait > 0 else ops.get_nowait()
                else:
                    batch = ops.get()
            except queue.Empty:
                in_txn = self._commit(in_txn)
                continue
            weight = sum(_weight(op[0], op[1]) for op in batch)
            while weight < MAX_BATCH:
                try:
                    more = ops.get_nowait()
                except queue.Empty:
                    break
                batch += more
                weight += sum(_weight(op[0], op[1]) for op in more)
            began = time.perf_counter()
            results: _Results = []
            commit = any(op[3] for op in batch)
            if self.failure is None and batch:
                try:
                    if not in_txn:
                        db.begin()
                        in_txn = True
                        txn_start = time.monotonic()
                    db.apply(batch, results)
                except Exception as exc:
                    self._fail(exc, "a write")
                    in_txn = db.rollback()
            if self.failure is not None:  # rolled back: the batch's answers do not hold
                results = [(op[2], None, self.failure) for op in batch if op[2] is not None]
            closing = self._closing and ops.empty()
            due = commit or closing or time.monotonic() - txn_start >= self.commit_interval
            if not commit:  # answers need not wait for the commit (it follows in order)
                self._send(results)
            if in_txn and due:
                in_txn = self._commit(in_txn)
                if commit and self.failure is not None:
                    results = [(cb, None, self.failure) for cb, _, _ in results]
            if commit:
                self._send(results)
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
            if closing:
                db.close()
                return

    def _commit(self, in_txn: bool) -> bool:
        if not in_txn:
            return False
        began = time.perf_counter()
        try:
            self.db.commit()
        except Exception as exc:
            self._fail(exc, "commit")
            self.db.rollback()
            return False
        self.stats.commits += 1
        self.stats.max_commit_seconds = max(
            self.stats.max_commit_seconds, time.perf_counter() - began
        )
        return False


@dataclass(slots=True)
class _OpenState:
    """What :meth:`_Database.open` found, handed to the loop once."""

    existed: bool
    requeued_in_flight: int
    counts: dict[int, int]
    hosts: list[tuple[int, str]]
    queued_by_host: dict[int, int]
    max_seq: int
    waiting: list[tuple[CrawlItem, float]]
    seen: Bloom
    digests: Bloom
    seconds: float = 0.0


class _Database:
    """The SQL, run on the store's thread only (the connection never leaves it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn: sqlite3.Connection | None = None
        self.stats = StoreStats()
        self._files: dict[str, int] = {}
        self._sql: dict[tuple[str, int], str] = {}
        self._variables = 999  #: SQLITE_LIMIT_VARIABLE_NUMBER, read on connect
        self.max_pages: int | None = None  #: tests: ``PRAGMA max_page_count`` (a full disk)
        self.bloom_capacity = BLOOM_CAPACITY
        self.bloom_max_bytes = BLOOM_MAX_BYTES

    def _x(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        assert self.conn is not None
        self.stats.statements += 1
        return self.conn.execute(sql, params)

    def _json(self, sql: str, params: Any = ()) -> Any:
        """A statement that returns one JSON text (one step: the GIL is released once)."""
        row = self._x(sql, params).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else []

    def begin(self) -> None:
        self._x("BEGIN")

    def commit(self) -> None:
        self._x("COMMIT")

    def rollback(self) -> bool:
        if self.conn is not None and self.conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        return False

    def close(self) -> None:
        if self.conn is not None:
            self.rollback()
            with contextlib.suppress(sqlite3.Error):
                self.conn.close()
            self.conn = None

    # -- open -------------------------------------------------------------------------------
    def connect(self) -> None:
        """Open the file and set it up (outside of any transaction)."""
        if sqlite3.sqlite_version_info < (3, 35, 0):
            raise FrontierError(
                f"the SQLite frontier needs SQLite 3.35+ ({sqlite3.sqlite_version})"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        self.conn = conn
        self._variables = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        conn.execute("PRAGMA busy_timeout=10000")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise sqlite3.OperationalError(f"cannot use WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-32768")  # 32 MiB of page cache
        if self.max_pages is not None:
            conn.execute(f"PRAGMA max_page_count={int(self.max_pages)}")

    def open(self, _: Any) -> _OpenState:
        """Create or check the schema; in-flight and windowed URLs become queued again."""
        began = time.perf_counter()
        x = self._x
        for statement in SCHEMA.split(";"):
            if statement.strip():
                x(statement)
        row = x("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None:
            x("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        elif row[0] != str(SCHEMA_VERSION):
            raise FrontierError(
                f"{self.path}: frontier schema {row[0]}, this archiver reads {SCHEMA_VERSION}"
            )
        counts = dict(x("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
        requeued = counts.pop(IN_FLIGHT, 0)
        windowed = counts.pop(WINDOWED, 0)
        if requeued or windowed:
            x(f"UPDATE urls SET state = {QUEUED} WHERE state IN ({IN_FLIGHT}, {WINDOWED})")
            counts[QUEUED] = counts.get(QUEUED, 0) + requeued + windowed
        hosts = [(int(i), str(h)) for i, h in x("SELECT id, host FROM hosts")]
        queued_by_host = dict(
            x(f"SELECT host, count(*) FROM urls WHERE state = {QUEUED} GROUP BY host")
        )
        max_seq = x("SELECT max(seq) FROM urls").fetchone()[0] or 0
        waiting = [
            (CrawlItem(url, redirects_left, depth, hops, via, tries), float(not_before or 0.0))
            for url, tries, redirects_left, depth, hops, via, not_before in x(
                "SELECT url, tries, redirects_left, depth, hops, via, not_before FROM urls "
                f"WHERE state = {WAITING} ORDER BY seq"
            )
        ]
        total = sum(counts.values())
        seen = Bloom(max(self.bloom_capacity, total * 2), max_bytes=self.bloom_max_bytes)
        seen.add_many(hash(url) for (url,) in x("SELECT url FROM urls"))
        ndigests = x("SELECT count(*) FROM digests").fetchone()[0]
        digests = Bloom(max(self.bloom_capacity // 4, ndigests * 2), max_bytes=self.bloom_max_bytes)
        digests.add_many(hash(digest) for (digest,) in x("SELECT digest FROM digests"))
        self._files = {str(n): int(i) for i, n in x("SELECT id, name FROM files")}
        return _OpenState(
            existed=total > 0,
            requeued_in_flight=requeued,
            counts=counts,
            hosts=hosts,
            queued_by_host=queued_by_host,
            max_seq=int(max_seq),
            waiting=waiting,
            seen=seen,
            digests=digests,
            seconds=time.perf_counter() - began,
        )

    # -- a batch ----------------------------------------------------------------------------
    def apply(self, ops: list[_Op], results: _Results) -> None:
        """Apply a batch in issue order; answers go to ``results`` (refills last: their
        callbacks must see the counts that earlier answers, e.g. new queued URLs, adjust)."""
        batch = _Batch()
        late: _Results = []
        for kind, payload, callback, _ in ops:
            if kind == _CALL:  # runs alone, after everything before it
                if batch:
                    self._flush(batch, results, late)
                    batch = _Batch()
                fn, arg = payload
                result = fn(arg)
                if callback is not None:
                    results.append((callback, result, None))
            else:
                batch.add(kind, payload, callback)
        if batch:
            self._flush(batch, results, late)
        results.extend(late)

    def _chunks(self, rows: list[Any], width: int) -> Iterator[tuple[int, list[Any]]]:
        """``rows`` (tuples of ``width`` values, or single values for ``width == 1``) as
        parameter lists of padded size, each within SQLite's limit on bound variables."""
        limit = min(CHUNK_ROWS, self._variables // width)
        limit = 1 << (limit.bit_length() - 1)  # a power of two, so padding stays within it
        for i in range(0, len(rows), limit):
            chunk = rows[i : i + limit]
            size = min(_padded_size(len(chunk)), limit)
            params = list(chunk) if width == 1 else [value for row in chunk for value in row]
            params.extend([None] * ((size - len(chunk)) * width))
            yield size, params

    def _statement(self, key: str, size: int, build: Callable[[int], str]) -> str:
        sql = self._sql.get((key, size))
        if sql is None:
            sql = self._sql[(key, size)] = build(size)
        return sql

    @staticmethod
    def _values(size: int, width: int) -> str:
        row = "(" + ",".join("?" * width) + ")"
        return ",".join([row] * size)

    def _flush(self, b: _Batch, results: _Results, late: _Results) -> None:
        """Inserts first (a URL's later updates need its row), then updates, captures,
        digests; reads last, so they see every write of the batch."""
        if b.hosts:
            for size, params in self._chunks(b.hosts, 2):
                sql = self._statement(
                    "hosts",
                    size,
                    lambda n: (
                        "INSERT INTO hosts (id, host) SELECT * FROM "
                        f"(VALUES {self._values(n, 2)}) WHERE column1 IS NOT NULL"
                    ),
                )
                self._x(sql, params)
        if b.rows:
            self._insert(b, results)
        if b.updates:
            self._update(b.updates)
        if b.captures:
            self._captures(b.captures)
        if b.digests:
            for size, params in self._chunks(b.digests, 4):
                sql = self._statement(
                    "digests",
                    size,
                    lambda n: (
                        "INSERT OR IGNORE INTO digests (digest, record_id, target_uri, date) "
                        f"SELECT * FROM (VALUES {self._values(n, 4)}) WHERE column1 IS NOT NULL"
                    ),
                )
                self._x(sql, params)
        if b.digest_gets:
            found: dict[str, tuple[str | None, str, str]] = {}
            for size, params in self._chunks([d for d, _ in b.digest_gets], 1):
                sql = self._statement(
                    "digest-get",
                    size,
                    lambda n: (
                        "SELECT json_group_array(json_array(digest, record_id, target_uri, "
                        f"date)) FROM digests WHERE digest IN ({','.join('?' * n)})"
                    ),
                )
                found.update((d, (r, u, t)) for d, r, u, t in self._json(sql, params))
            for digest, callback in b.digest_gets:
                if callback is not None:
                    results.append((callback, found.get(digest), None))
        if b.refills:
            self._refill(b.refills, late)

    def _insert(self, b: _Batch, results: _Results) -> None:
        maybe_urls = [row[0] for row, maybe in b.rows if maybe]
        existing: set[str] = set()
        for size, params in self._chunks(maybe_urls, 1):
            sql = self._statement(
                "seen",
                size,
                lambda n: (
                    f"SELECT json_group_array(url) FROM urls WHERE url IN ({','.join('?' * n)})"
                ),
            )
            existing.update(self._json(sql, params))
        fresh: list[tuple[Any, ...]] = []
        answers: list[bool] = []
        in_batch: set[str] = set()
        for row, maybe in b.rows:
            url = row[0]
            if maybe:
                new = url not in existing and url not in in_batch
                answers.append(new)
                if not new:
                    continue
            in_batch.add(url)  # a definite URL twice would be a bug: the INSERT raises
            fresh.append(row)
        for size, params in self._chunks(fresh, 9):
            sql = self._statement(
                "insert",
                size,
                lambda n: (
                    f"INSERT INTO urls ({_URL_COLUMNS}) SELECT * FROM "
                    f"(VALUES {self._values(n, 9)}) WHERE column1 IS NOT NULL"
                ),
            )
            self._x(sql, params)
        start = 0
        for callback, count in b.maybe:
            if callback is not None:
                results.append((callback, answers[start : start + count], None))
            start += count

    def _update(self, updates: dict[str, dict[str, Any]]) -> None:
        groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for url, values in updates.items():
            columns = tuple(c for c in _COLUMNS if c in values)
            groups.setdefault(columns, []).append((url, *(values[c] for c in columns)))
        for columns, rows in groups.items():
            width = len(columns) + 1
            sets = ", ".join(f"{c} = v.column{n}" for n, c in enumerate(columns, 2))

            def build(n: int, sets: str = sets, width: int = width) -> str:
                return (
                    f"UPDATE urls SET {sets} FROM (VALUES {self._values(n, width)}) AS v "
                    "WHERE urls.url = v.column1"
                )

            for size, params in self._chunks(rows, width):
                self._x(self._statement("update:" + ",".join(columns), size, build), params)

    def _captures(self, captures: list[tuple[str, int, int, str]]) -> None:
        names = sorted({name for name, _, _, _ in captures if name not in self._files})
        if names:
            listed = _dumps(names)
            self._x("INSERT OR IGNORE INTO files (name) SELECT value FROM json_each(?)", (listed,))
            for file_id, name in self._json(
                "SELECT json_group_array(json_array(id, name)) FROM files "
                "WHERE name IN (SELECT value FROM json_each(?))",
                (listed,),
            ):
                self._files[name] = int(file_id)
        rows = [(self._files[name], start, end, url) for name, start, end, url in captures]
        for size, params in self._chunks(rows, 4):
            sql = self._statement(
                "captures",
                size,
                lambda n: (
                    "INSERT OR REPLACE INTO captures (file, start, end, url) "
                    "SELECT v.column1, v.column2, v.column3, urls.id FROM "
                    f"(VALUES {self._values(n, 4)}) AS v JOIN urls ON urls.url = v.column4"
                ),
            )
            self._x(sql, params)

    def _refill(self, refills: list[tuple[int, int, _Callback | None]], late: _Results) -> None:
        """Each host's oldest queued URLs, marked WINDOWED (now held in memory)."""
        for i in range(0, len(refills), _REFILL_CHUNK):
            chunk = refills[i : i + _REFILL_CHUNK]
            size = min(_padded_size(len(chunk)), _REFILL_CHUNK)
            params: list[Any] = [v for host_id, count, _ in chunk for v in (host_id, count)]
            params.extend([-1, 0] * (size - len(chunk)))  # no host has id -1
            sql = self._statement(
                "refill",
                size,
                lambda n: (
                    "SELECT json_group_array(json_array(id, host, url, tries, "
                    "redirects_left, depth, hops, via, seq)) FROM ("
                    + " UNION ALL ".join([_REFILL_PART] * n)
                    + ")"
                ),
            )
            rows = self._json(sql, params)
            for size_ids, ids in self._chunks([r[0] for r in rows], 1):
                sql = self._statement(
                    "windowed",
                    size_ids,
                    lambda n: (
                        f"UPDATE urls SET state = {WINDOWED} WHERE id IN ({','.join('?' * n)})"
                    ),
                )
                self._x(sql, ids)
            by_host: dict[int, list[Any]] = {}
            for row in rows:
                by_host.setdefault(row[1], []).append(row)
            for host_id, _, callback in chunk:
                got = by_host.get(host_id, [])
                got.sort(key=lambda r: r[8])
                if callback is not None:
                    late.append((callback, got, None))

    # -- resume -----------------------------------------------------------------------------
    def committed(self, name: str) -> set[tuple[int, int]]:
        file_id = self._files.get(name)
        if file_id is None:
            return set()
        rows = self._x("SELECT start, end FROM captures WHERE file = ?", (file_id,))
        return {(int(s), int(e)) for s, e in rows}

    def uncommit(self, arg: tuple[str, int]) -> dict[int, dict[int, int]]:
        """Re-queue the finished URLs whose captures in the file start at or after ``offset``.

        Returns ``{host id: {previous state: count}}``. URLs still pending (waiting for a retry,
        queued) only lose their capture rows.
        """
        name, offset = arg
        file_id = self._files.get(name)
        if file_id is None:
            return {}
        x = self._x
        ids = _dumps(
            [
                r[0]
                for r in x(
                    "SELECT DISTINCT url FROM captures WHERE file = ? AND start >= ?",
                    (file_id, offset),
                )
            ]
        )
        x("DELETE FROM captures WHERE file = ? AND start >= ?", (file_id, offset))
        rows = x(
            "SELECT host, state, count(*) FROM urls WHERE id IN (SELECT value FROM json_each(?)) "
            f"AND state IN ({DONE}, {FAILED}, {SKIPPED}) GROUP BY host, state",
            (ids,),
        ).fetchall()
        x(
            f"UPDATE urls SET state = {QUEUED}, status = NULL, reason = NULL "
            f"WHERE id IN (SELECT value FROM json_each(?)) AND state IN ({DONE}, {FAILED}, "
            f"{SKIPPED})",
            (ids,),
        )
        found: dict[int, dict[int, int]] = {}
        for host, state, count in rows:
            found.setdefault(int(host), {})[int(state)] = int(count)
        return found

    def noop(self, _: Any) -> None:
        return None


def _item(row: list[Any]) -> CrawlItem:
    """A refilled row (id, host, url, tries, redirects_left, depth, hops, via, seq)."""
    return CrawlItem(row[2], row[4], row[5], row[6], row[7], row[3])


# ============================================================================== the frontier
class SqliteFrontier:
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
        self.gate = gate or HostGate()
        self.window = max(window, 2)
        self.memory_items = max(memory_items, self.window)
        self._low = max(self.window // 2, 1)
        self._wall = wall_clock
        self._store = _Store(self.path, commit_interval=commit_interval)
        self._db = self._store.db
        self._db.max_pages = max_pages
        self._db.bloom_capacity = bloom_capacity
        self._db.bloom_max_bytes = bloom_max_bytes
        self._recent = _Recent(max(recent_urls, 1))
        self._bloom = Bloom(1, max_bytes=64)
        self._digests = Bloom(1, max_bytes=64)
        self._hosts: dict[str, _HostQueue] = {}
        self._hosts_by_id: dict[int, _HostQueue] = {}
        self._host_ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._in_memory = 0  #: URLs in host windows
        self._on_disk = 0  #: queued URLs not in any window
        self._waiting = 0  #: retries not yet due
        self._done = 0
        self._failed = 0
        self._skipped = 0
        self._seen = 0
        self._opened = False
        self.open_seconds = 0.0
        self.scheduler = HostScheduler(
            self.gate, self._pop_item, self._has_items, self._requeue, clock=self.gate.clock
        )

    # -- life cycle -------------------------------------------------------------------------
    async def open(self) -> ResumeInfo:
        if self._opened:
            raise FrontierError("the SQLite frontier is already open")
        self._store.start(asyncio.get_running_loop())
        try:
            state: _OpenState = await self._store.run(self._db.open, None, commit=True)
        except BaseException:
            with contextlib.suppress(FrontierError):
                await self._store.close()
            raise
        self._opened = True
        self.open_seconds = state.seconds
        counts = state.counts
        self._done = counts.get(DONE, 0)
        self._failed = counts.get(FAILED, 0)
        self._skipped = counts.get(SKIPPED, 0)
        self._seen = sum(counts.values())
        self._bloom = state.seen
        self._digests = state.digests
        self._seq = itertools.count(state.max_seq + 1)
        for host_id, name in state.hosts:
            hq = _HostQueue(name, host_id)
            self._hosts[name] = hq
            self._hosts_by_id[host_id] = hq
        self._host_ids = itertools.count(max(self._hosts_by_id, default=0) + 1)
        queued = 0
        for host_id, count in state.queued_by_host.items():
            self._hosts_by_id[int(host_id)].on_disk = int(count)
            queued += int(count)
        self._on_disk = queued
        self.scheduler.added(queued + len(state.waiting))
        now = self._wall()
        for item, not_before in state.waiting:
            self._waiting += 1
            self.scheduler.delay(item, min(max(not_before - now, 0.0), self.gate.max_pause))
        for hq in self._hosts.values():
            if hq.on_disk:
                self._refill(hq)
        notes = [f"opened {self.path.name} in {state.seconds:.2f} s ({self._seen} URLs seen)"]
        return ResumeInfo(
            resumed=state.existed,
            requeued_in_flight=state.requeued_in_flight,
            queued=queued + len(state.waiting),
            done=self._done,
            notes=notes,
        )

    async def close(self) -> None:
        """Commit what was issued and close the database; leases stay in flight for resume."""
        await self._store.close()

    async def flush(self) -> None:
        """Wait until every operation issued so far is committed."""
        await self._store.run(self._db.noop, None, commit=True)

    @property
    def store_stats(self) -> StoreStats:
        return self._store.stats

    # -- storage hooks for the scheduler ----------------------------------------------------
    def _host(self, name: str) -> _HostQueue:
        hq = self._hosts.get(name)
        if hq is None:
            hq = _HostQueue(name, next(self._host_ids))
            self._hosts[name] = hq
            self._hosts_by_id[hq.id] = hq
            self._store.post(_HOST, (hq.id, name))
        return hq

    def _room(self, hq: _HostQueue) -> bool:
        """May a newly queued URL of ``hq`` go straight into its window?"""
        return (
            hq.on_disk == 0 and len(hq.window) < self.window and self._in_memory < self.memory_items
        )

    def _pop_item(self, host: str) -> CrawlItem | None:
        hq = self._hosts.get(host)
        if hq is None or not hq.window:
            return None
        item = hq.window.popleft()
        self._in_memory -= 1
        if hq.on_disk and not hq.refilling and len(hq.window) <= self._low:
            self._refill(hq)
        self._store.post(_UPDATE, (item.url, _SET_STATE, (IN_FLIGHT,), ()))
        return item

    def _has_items(self, host: str) -> bool:
        hq = self._hosts.get(host)
        return hq is not None and bool(hq.window)

    def _requeue(self, item: CrawlItem, front: bool) -> str:
        hq = self._host(host_port(item.url))
        if front:  # a lease no worker started: back where it was
            hq.window.appendleft(item)
            self._in_memory += 1
            self._store.post(_UPDATE, (item.url, _SET_STATE, (WINDOWED,), ()))
            return hq.name
        self._waiting -= 1  # a retry is due: to the back of its host's queue
        if self._room(hq):
            hq.window.append(item)
            self._in_memory += 1
            state = WINDOWED
        else:
            state = QUEUED
            self._spill(hq, 1)
        self._store.post(_UPDATE, (item.url, _SET_REQUEUE, (state, next(self._seq), None), ()))
        return hq.name

    def _spill(self, hq: _HostQueue, count: int) -> None:
        """``count`` queued URLs of ``hq`` are on disk only; refill its window if it runs low."""
        hq.on_disk += count
        self._on_disk += count
        if hq.refilling:
            hq.spilled = True
        elif len(hq.window) <= self._low:
            self._refill(hq)

    def _refill(self, hq: _HostQueue) -> None:
        count = max(2, min(self.window - len(hq.window), self.memory_items - self._in_memory))
        hq.refilling = True
        hq.spilled = False
        self._store.post(_REFILL, (hq.id, count), partial(self._refilled, hq, count))

    def _refilled(self, hq: _HostQueue, asked: int, rows: Any, error: BaseException | None) -> None:
        hq.refilling = False
        if error is not None:
            return
        got = len(rows)
        if got:
            hq.window.extend(_item(row) for row in rows)
            hq.on_disk -= got
            self._on_disk -= got
            self._in_memory += got
        # Again if the host is still low and there is more to read: the refill was full, or
        # URLs went to disk after it was issued (a later batch, which it did not see). A short
        # refill otherwise means the disk part is empty: asking again would only spin.
        if hq.on_disk > 0 and len(hq.window) <= self._low and (got == asked or hq.spilled):
            self._refill(hq)
        if got:
            self.scheduler.schedule(hq.name)

    # -- the queue --------------------------------------------------------------------------
    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        store = self._store
        store.check()
        recent = self._recent
        bloom = self._bloom
        new: list[CrawlItem] = []
        positions: list[int] = []  # of the new items among the candidates (for the merge)
        maybe: list[tuple[int, CrawlItem]] = []
        rows: list[tuple[Any, ...]] = []
        touched: set[str] = set()
        for item in items:
            url = item.url
            if url in recent.hot:
                continue
            if url in recent.warm:
                recent.add(url)  # still in use: keep it
                continue
            h = hash(url) & _MASK64
            if bloom.might_contain(h):
                maybe.append((len(new) + len(maybe), item))
                continue
            bloom.add(h)
            recent.add(url)
            hq = self._host(host_port(url))
            if self._room(hq):
                hq.window.append(item)
                self._in_memory += 1
                state = WINDOWED
                touched.add(hq.name)
            else:
                state = QUEUED
                self._spill(hq, 1)
            rows.append(self._row(item, hq, state))
            positions.append(len(new) + len(maybe))
            new.append(item)
        if rows:
            store.submit(_INSERT, rows)
            self._seen += len(rows)
            self.scheduler.added(len(rows))
            for host in touched:
                self.scheduler.schedule(host)
        if maybe:
            fresh = await self._put_maybe(maybe)
            if fresh:  # merge back into the order given
                both = [*zip(positions, new, strict=True), *fresh]
                both.sort(key=lambda pair: pair[0])
                new = [item for _, item in both]
        await store.backpressure()
        return new

    def _row(self, item: CrawlItem, hq: _HostQueue, state: int) -> tuple[Any, ...]:
        """The ``urls`` table row of a new URL (column order of the _INSERT statement)."""
        return (
            item.url,
            hq.id,
            state,
            next(self._seq),
            item.tries,
            item.redirects_left,
            item.depth,
            item.hops,
            item.via,
        )

    async def _put_maybe(self, maybe: list[tuple[int, CrawlItem]]) -> list[tuple[int, CrawlItem]]:
        """Ask the database about URLs the Bloom filter could not rule out (exact)."""
        rows = []
        hosts = []
        for _, item in maybe:
            hq = self._host(host_port(item.url))
            hosts.append(hq)
            rows.append(self._row(item, hq, WINDOWED if self._room(hq) else QUEUED))
        # Pending lookups count towards join until answered: nothing joins under a put.
        self.scheduler.added(len(rows))
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[list[tuple[int, CrawlItem]]] = loop.create_future()

        def on_result(result: Any, error: BaseException | None) -> None:
            fresh: list[tuple[int, CrawlItem]] = []
            touched: set[str] = set()
            for n, ((pos, item), hq, row) in enumerate(zip(maybe, hosts, rows, strict=True)):
                if error is None and result[n]:
                    self._recent.add(item.url)
                    self._seen += 1
                    fresh.append((pos, item))
                    if row[2] == WINDOWED:
                        hq.window.append(item)
                        self._in_memory += 1
                        touched.add(hq.name)
                    else:
                        self._spill(hq, 1)
                else:
                    if error is None:
                        self._recent.add(item.url)
                    self.scheduler.finished()
            for host in touched:
                self.scheduler.schedule(host)
            if answered.done():
                return
            if error is not None:
                answered.set_exception(error)
            else:
                answered.set_result(fresh)

        self._store.submit(_MAYBE, rows, on_result)
        return await asyncio.shield(answered)

    async def get(self) -> Lease:
        self._store.check()
        return await self.scheduler.get()

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        store = self._store
        store.check()
        item = lease.item
        captures = [(c.filename, c.start, c.end) for c in result.captures]
        # The write is issued before the scheduler runs: handing the freed slot to a waiting
        # worker, or releasing a retry due now, issues writes that must come after this one.
        if result.outcome is Outcome.RETRY:
            retry = item.retry()
            delay = max(result.retry_after or 0.0, 0.0)
            due = self._wall() + delay
            try:
                store.submit(
                    _UPDATE,
                    (
                        item.url,
                        _SET_RETRY,
                        (WAITING, retry.tries, due, result.status, result.reason),
                        captures,
                    ),
                )
            finally:
                self._waiting += 1
                self.scheduler.returned(lease, result)
                self.scheduler.delay(retry, delay)
        else:
            state = _FINAL_STATE[result.outcome]
            try:
                store.submit(
                    _UPDATE,
                    (item.url, _SET_FINISH, (state, result.status, result.reason), captures),
                )
            finally:
                if state == DONE:
                    self._done += 1
                elif state == FAILED:
                    self._failed += 1
                else:
                    self._skipped += 1
                self.scheduler.returned(lease, result)
                self.scheduler.finished()
        await store.backpressure()

    def give_back(self, lease: Lease) -> None:
        """Return a lease no worker started (a stopping crawl): to the front of its host's
        queue, no try counted, no host failure recorded."""
        self.scheduler.give_back(lease)

    async def join(self) -> None:
        await self.scheduler.join()

    def statistics(self) -> FrontierStats:
        return FrontierStats(
            queued=self._in_memory + self._on_disk + self._waiting,
            in_flight=self.scheduler.in_flight,
            done=self._done,
            failed=self._failed,
            skipped=self._skipped,
            seen=self._seen,
            hosts=len(self._hosts),
        )

    def set_host_delay(self, host: str, seconds: float) -> None:
        self.gate.set_crawl_delay(host, seconds)

    def reserve(self, host: str) -> float:
        return self.gate.reserve(host)

    # -- resume -----------------------------------------------------------------------------
    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        self._store.check()
        result: set[tuple[int, int]] = await self._store.run(self._db.committed, filename)
        return result

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        self._store.check()
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[int] = loop.create_future()

        def on_result(found: Any, error: BaseException | None) -> None:
            total = 0
            if error is None:
                for host_id, by_state in found.items():
                    hq = self._hosts_by_id[host_id]
                    count = sum(by_state.values())
                    total += count
                    self._done -= by_state.get(DONE, 0)
                    self._failed -= by_state.get(FAILED, 0)
                    self._skipped -= by_state.get(SKIPPED, 0)
                    self.scheduler.added(count)
                    self._spill(hq, count)
            if not answered.done():
                if error is not None:
                    answered.set_exception(error)
                else:
                    answered.set_result(total)

        self._store.submit(_CALL, (self._db.uncommit, (filename, offset)), on_result, commit=True)
        return await asyncio.shield(answered)

    # -- payload digests (SqliteDigestIndex) ------------------------------------------------
    async def digest_lookup(self, digest: str) -> Original | None:
        self._store.check()
        if not self._digests.might_contain(hash(digest) & _MASK64):
            return None  # never added: no need to ask the database
        row = await self._store.call(_DIGEST_GET, digest)
        return None if row is None else Original(row[0], row[1], row[2])

    def digest_add(self, digest: str, original: Original) -> None:
        self._store.check()
        self._digests.add(hash(digest) & _MASK64)
        self._store.submit(
            _DIGEST_ADD, (digest, original.record_id, original.target_uri, original.date)
        )


class SqliteDigestIndex:
    """Payload digests of this crawl in the frontier's database (a :class:`DigestIndex`).

    Within-crawl deduplication then survives a resume and costs no heap per digest. Entries are
    written in the frontier's operation order, after the capture that made them was written.
    Open the frontier first; closing this index leaves the frontier open.
    """

    def __init__(self, frontier: SqliteFrontier) -> None:
        self._frontier = frontier

    async def lookup(self, digest: str) -> Original | None:
        return await self._frontier.digest_lookup(digest)

    async def add(self, digest: str, original: Original) -> None:
        self._frontier.digest_add(digest, original)

    async def close(self) -> None:
        return None


__all__ = ["Bloom", "SqliteDigestIndex", "SqliteFrontier", "StoreStats"]
