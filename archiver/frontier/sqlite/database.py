"""The SQLite frontier's statements at work, on the store's thread only (the connection never
leaves it): opening (resume bookkeeping), a batch of operations as set-based statements, and the
ledger's and the captured URLs' queries. The statements themselves are in ``scripts/*.sql``
(:mod:`.sql`).

Few statements, many rows: the operations of one batch are coalesced per kind and their rows
travel as bound parameters of one statement per chunk, padded to a power of two so that a few
statement texts stay prepared. The reason is the GIL: the sqlite3 module releases it around
every step, and behind a busy event loop each re-acquisition waits up to the switch interval
(5 ms), so one statement per row managed a few hundred rows a second under load, where a
statement per batch keeps up with tens of thousands.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.errors import FrontierError
from archiver.frontier.sqlite import sql
from archiver.frontier.sqlite.bloom import BLOOM_CAPACITY, BLOOM_MAX_BYTES, Bloom
from archiver.frontier.sqlite.codec import (
    IN_FLIGHT,
    QUEUED,
    URL_COLUMN_COUNT,
    WINDOWED,
    waiting_item,
)
from archiver.frontier.sqlite.ops import (
    CALL,
    COLUMNS,
    DIGEST_ADD,
    DIGEST_GET,
    HOST,
    INSERT,
    MAYBE,
    REFILL,
    UPDATE,
    Callback,
    Op,
    Results,
    StoreStats,
)
from archiver.models import CrawlItem

SCHEMA_VERSION = 1
#: Rows per set-based statement at most (a power of two; also capped by SQLite's variable limit).
CHUNK_ROWS = 1024
Q = sql.QUERIES
_REFILL_CHUNK = 64  #: hosts per refill statement (a power of two; SQLite allows 500 terms)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _padded_size(count: int) -> int:
    """Rows are padded to a power of two (NULL rows, filtered out by the statement) so that a
    few statement texts repeat and stay prepared in the sqlite3 statement cache."""
    return max(8, 1 << (count - 1).bit_length())


class Batch:
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
        self.rows: list[tuple[tuple[Any, ...], bool]] = []  # (row, from a MAYBE op)
        self.maybe: list[tuple[Callback | None, int]] = []  # per MAYBE op: its row count
        self.updates: dict[str, dict[str, Any]] = {}
        self.captures: list[tuple[str, int, int, str]] = []
        self.digests: list[tuple[str, str | None, str, str]] = []
        self.digest_gets: list[tuple[str, Callback | None]] = []
        self.refills: list[tuple[int, int, Callback | None]] = []

    def add(self, kind: int, payload: Any, callback: Callback | None) -> None:
        if kind == UPDATE:
            url, columns, values, captures = payload
            update = self.updates.get(url)
            if update is None:
                self.updates[url] = dict(zip(columns, values, strict=True))
            else:
                update.update(zip(columns, values, strict=True))
            for name, start, end in captures:
                self.captures.append((name, start, end, url))
        elif kind == INSERT:
            self.rows.extend((row, False) for row in payload)
        elif kind == MAYBE:
            self.rows.extend((row, True) for row in payload)
            self.maybe.append((callback, len(payload)))
        elif kind == HOST:
            self.hosts.append(payload)
        elif kind == REFILL:
            self.refills.append((payload[0], payload[1], callback))
        elif kind == DIGEST_ADD:
            self.digests.append(payload)
        elif kind == DIGEST_GET:
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


@dataclass(slots=True)
class OpenState:
    """What :meth:`Database.open` found, handed to the loop once."""

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


class Database:
    """The statements at work, on the store's thread only (the connection never leaves it)."""

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

    def open(self, _: Any) -> OpenState:
        """Create or check the schema; in-flight and windowed URLs become queued again."""
        began = time.perf_counter()
        x = self._x
        for statement in sql.schema_statements():
            x(statement)
        columns = {r[1] for r in x("PRAGMA table_info(urls)")}
        if "extra" not in columns:
            x(Q["add-extra-column"])
        if "found_by" not in columns:
            x(Q["add-found-by-column"])
        if "page" not in columns:
            x(Q["add-page-column"])
        if "seed" not in columns:
            x(Q["add-seed-column"])
        row = x(Q["schema-version"]).fetchone()
        if row is None:
            x(Q["schema-version-set"], (str(SCHEMA_VERSION),))
        elif row[0] != str(SCHEMA_VERSION):
            raise FrontierError(
                f"{self.path}: frontier schema {row[0]}, this archiver reads {SCHEMA_VERSION}"
            )
        counts = dict(x(Q["state-counts"]).fetchall())
        requeued = counts.pop(IN_FLIGHT, 0)
        windowed = counts.pop(WINDOWED, 0)
        if requeued or windowed:
            x(Q["open-requeue"])
            counts[QUEUED] = counts.get(QUEUED, 0) + requeued + windowed
        hosts = [(int(i), str(h)) for i, h in x(Q["hosts"])]
        queued_by_host = dict(x(Q["queued-by-host"]))
        max_seq = x(Q["max-seq"]).fetchone()[0] or 0
        waiting = [waiting_item(row) for row in x(Q["waiting"])]
        total = sum(counts.values())
        seen = Bloom(max(self.bloom_capacity, total * 2), max_bytes=self.bloom_max_bytes)
        seen.add_many(hash(url) for (url,) in x(Q["seen-urls"]))
        ndigests = x(Q["digest-count"]).fetchone()[0]
        digests = Bloom(max(self.bloom_capacity // 4, ndigests * 2), max_bytes=self.bloom_max_bytes)
        digests.add_many(hash(digest) for (digest,) in x(Q["digest-all"]))
        self._files = {str(n): int(i) for i, n in x(Q["files"])}
        return OpenState(
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
    def apply(self, ops: list[Op], results: Results) -> None:
        """Apply a batch in issue order; answers go to ``results`` (refills last: their
        callbacks must see the counts that earlier answers, e.g. new queued URLs, adjust)."""
        batch = Batch()
        late: Results = []
        for kind, payload, callback, _ in ops:
            if kind == CALL:  # runs alone, after everything before it
                if batch:
                    self._flush(batch, results, late)
                    batch = Batch()
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

    def _flush(self, b: Batch, results: Results, late: Results) -> None:
        """Inserts first (a URL's later updates need its row), then updates, captures,
        digests; reads last, so they see every write of the batch."""
        if b.hosts:
            for size, params in self._chunks(b.hosts, 2):
                statement = self._statement(
                    "host-insert",
                    size,
                    lambda n: sql.sized(Q["host-insert"], rows=sql.values(n, 2)),
                )
                self._x(statement, params)
        if b.rows:
            self._insert(b, results)
        if b.updates:
            self._update(b.updates)
        if b.captures:
            self._captures(b.captures)
        if b.digests:
            for size, params in self._chunks(b.digests, 4):
                statement = self._statement(
                    "digest-insert",
                    size,
                    lambda n: sql.sized(Q["digest-insert"], rows=sql.values(n, 4)),
                )
                self._x(statement, params)
        if b.digest_gets:
            found: dict[str, tuple[str | None, str, str]] = {}
            for size, params in self._chunks([d for d, _ in b.digest_gets], 1):
                statement = self._statement(
                    "digest-get", size, lambda n: sql.sized(Q["digest-get"], marks=sql.marks(n))
                )
                found.update((d, (r, u, t)) for d, r, u, t in self._json(statement, params))
            for digest, callback in b.digest_gets:
                if callback is not None:
                    results.append((callback, found.get(digest), None))
        if b.refills:
            self._refill(b.refills, late)

    def _insert(self, b: Batch, results: Results) -> None:
        maybe_urls = [row[0] for row, maybe in b.rows if maybe]
        existing: set[str] = set()
        for size, params in self._chunks(maybe_urls, 1):
            statement = self._statement(
                "url-seen", size, lambda n: sql.sized(Q["url-seen"], marks=sql.marks(n))
            )
            existing.update(self._json(statement, params))
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
        for size, params in self._chunks(fresh, URL_COLUMN_COUNT):
            statement = self._statement(
                "url-insert",
                size,
                lambda n: sql.sized(Q["url-insert"], rows=sql.values(n, URL_COLUMN_COUNT)),
            )
            self._x(statement, params)
        start = 0
        for callback, count in b.maybe:
            if callback is not None:
                results.append((callback, answers[start : start + count], None))
            start += count

    def _update(self, updates: dict[str, dict[str, Any]]) -> None:
        groups: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        for url, values in updates.items():
            columns = tuple(c for c in COLUMNS if c in values)
            groups.setdefault(columns, []).append((url, *(values[c] for c in columns)))
        for columns, rows in groups.items():
            width = len(columns) + 1
            sets = ", ".join(f"{c} = v.column{n}" for n, c in enumerate(columns, 2))

            def build(n: int, sets: str = sets, width: int = width) -> str:
                return sql.sized(Q["url-update"], sets=sets, rows=sql.values(n, width))

            for size, params in self._chunks(rows, width):
                self._x(self._statement("update:" + ",".join(columns), size, build), params)

    def _captures(self, captures: list[tuple[str, int, int, str]]) -> None:
        names = sorted({name for name, _, _, _ in captures if name not in self._files})
        if names:
            listed = _dumps(names)
            self._x(Q["file-insert"], (listed,))
            for file_id, name in self._json(Q["file-ids"], (listed,)):
                self._files[name] = int(file_id)
        rows = [(self._files[name], start, end, url) for name, start, end, url in captures]
        for size, params in self._chunks(rows, 4):
            statement = self._statement(
                "capture-insert",
                size,
                lambda n: sql.sized(Q["capture-insert"], rows=sql.values(n, 4)),
            )
            self._x(statement, params)

    def _refill(self, refills: list[tuple[int, int, Callback | None]], late: Results) -> None:
        """Each host's oldest queued URLs, marked WINDOWED (now held in memory)."""
        for i in range(0, len(refills), _REFILL_CHUNK):
            chunk = refills[i : i + _REFILL_CHUNK]
            size = min(_padded_size(len(chunk)), _REFILL_CHUNK)
            params: list[Any] = [v for host_id, count, _ in chunk for v in (host_id, count)]
            params.extend([-1, 0] * (size - len(chunk)))  # no host has id -1
            statement = self._statement(
                "refill",
                size,
                lambda n: sql.sized(Q["refill"], parts=" UNION ALL ".join([Q["refill-part"]] * n)),
            )
            rows = self._json(statement, params)
            for size_ids, ids in self._chunks([r[0] for r in rows], 1):
                statement = self._statement(
                    "windowed", size_ids, lambda n: sql.sized(Q["windowed"], marks=sql.marks(n))
                )
                self._x(statement, ids)
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
        rows = self._x(Q["committed"], (file_id,))
        return {(int(s), int(e)) for s, e in rows}

    def captured_add(self, pair: tuple[str, str]) -> None:
        """Remember where a URL's latest capture is (``captured``: URL, location)."""
        self._x(Q["captured-add"], pair)

    def captured_get(self, url: str) -> str | None:
        row = self._x(Q["captured-get"], (url,)).fetchone()
        return None if row is None else str(row[0])

    def media_add(self, pair: tuple[str, int]) -> None:
        """Add media bytes captured for a page (``media_bytes``: page, bytes)."""
        self._x(Q["media-add"], pair)

    def media_get(self, page: str) -> int:
        row = self._x(Q["media-get"], (page,)).fetchone()
        return 0 if row is None else int(row[0])

    def seeds_add(self, specs: dict[int, str]) -> None:
        """Keep seeds' tables of rules by key (``seeds``: a later table of a key replaces)."""
        assert self.conn is not None
        self.stats.statements += 1
        self.conn.executemany(Q["seeds-add"], list(specs.items()))

    def seeds_get(self, keys: list[int]) -> dict[int, str]:
        row = self._x(Q["seeds-get"], (json.dumps(keys),)).fetchone()
        return {int(key): str(spec) for key, spec in json.loads(row[0] or "[]")}

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
        ids = _dumps([r[0] for r in x(Q["uncommit-urls"], (file_id, offset))])
        x(Q["uncommit-captures"], (file_id, offset))
        rows = x(Q["uncommit-counts"], (ids,)).fetchall()
        x(Q["uncommit-requeue"], (ids,))
        found: dict[int, dict[int, int]] = {}
        for host, state, count in rows:
            found.setdefault(int(host), {})[int(state)] = int(count)
        return found

    def noop(self, _: Any) -> None:
        return None
