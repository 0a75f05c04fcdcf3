"""Which engine should N crawler processes share their queue in: Redis or SQLite (WAL)?

    scripts/bench --engines            (or: python scripts/benchlib/engines.py [--urls N])

A measurement of the frontier alone, no HTTP: N processes (1, then 2) take every URL of a crawl
from one shared queue, "process" it (nothing), report it done and add what it links to, until
the queue is empty. Each processed URL puts its children in a 20-ary tree (every URL is reached
exactly once) plus 10 links to URLs already seen (what every page's navigation does), so each
URL costs one claim, one acknowledgement and 30 seen-set lookups, as in the latency benchmark's
site. Both engines batch the same way: up to 64 claims and 64 acknowledgements per round trip
or transaction.

* **redis**: the real :class:`~archiver.frontier.redis.RedisFrontier` (Lua CLAIM and ACK, its
  pump pipelining every call of 64 worker coroutines) on a private redis-server over a Unix
  socket, with the append-only file on (``appendfsync everysec``), as ``--processes N`` runs it.
* **sqlite**: the smallest shared SQLite frontier that is correct for several processes: one
  database in WAL mode (``synchronous=NORMAL``, ``busy_timeout`` 10 s), a ``seen`` table (URL
  -> state) and a ``queue`` table; a claim is ``BEGIN IMMEDIATE``, take the first 64 queued
  rows, mark them leased to this process, ``COMMIT``; an acknowledgement is ``BEGIN IMMEDIATE``,
  mark the 64 URLs done, ``INSERT OR IGNORE`` their links into ``seen`` and queue the new ones,
  ``COMMIT``. It has no per-host politeness, leases or digests: a floor for what a real
  multi-process SQLite frontier would cost.

Figures: URLs per second over the whole run (wall), and CPU per URL in the crawler processes
(what a CPU-bound crawler loses to the frontier) and in redis-server (Redis only). Each worker
runs as its own process, measured from outside by ``wait4()``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FANOUT = 20
DUPLICATES = 10
BATCH = 64
HOSTS = 50
#: CPU per URL that stands for the crawler's own work (fetch, parse, WARC): the latency
#: benchmark's one process spends ~0.84 ms per URL, of which the frontier is ~0.2 ms
WORK_MS = 0.6


def burn(ms: float) -> None:
    """Spend ``ms`` of CPU in this process (a crawler's own work on one URL)."""
    if ms <= 0:
        return
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def url_of(n: int) -> str:
    return f"http://h{n % HOSTS}.example/p/{n}"


def links(n: int, total: int) -> list[int]:
    children = [c for c in range(n * FANOUT + 1, n * FANOUT + FANOUT + 1) if c < total]
    dups = [(n * 7919 + k * 104729) % (n + 1) for k in range(DUPLICATES)]
    return children + dups


async def drain(frontier: Any, total: int, work: float) -> int:
    """Take every URL of the tree from ``frontier`` with :data:`BATCH` worker coroutines, each
    URL costing ``work`` seconds of CPU and reporting its links, as a crawler's workers do;
    the URLs this process took."""
    from archiver.models import CrawlItem, Outcome, TaskResult  # noqa: PLC0415

    await frontier.open()
    await frontier.put(CrawlItem(url=url_of(0)))
    done = 0

    async def one() -> None:
        nonlocal done
        while True:
            lease = await frontier.get()
            n = int(lease.item.url.rsplit("/", 1)[1])
            burn(work)
            await frontier.put_many(CrawlItem(url=url_of(c)) for c in links(n, total))
            await frontier.task_done(lease, TaskResult(Outcome.DONE))
            done += 1

    workers = [asyncio.create_task(one()) for _ in range(BATCH)]
    await frontier.join()
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    await frontier.close()
    return done


# -- the Redis worker -------------------------------------------------------------------------


async def redis_worker(url: str, total: int, name: str, work: float) -> int:
    from archiver.frontier.redis import RedisFrontier  # noqa: PLC0415
    from archiver.policy.politeness import HostGate  # noqa: PLC0415

    frontier = RedisFrontier(
        url,
        "engines",
        gate=HostGate(concurrency=10**6, delay=0.0),
        lease_timeout=600,
        max_claim=BATCH,
        process_id=name,
    )
    return await drain(frontier, total, work)


# -- the SQLite worker ------------------------------------------------------------------------

SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS seen (key BLOB PRIMARY KEY, state INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue (id INTEGER PRIMARY KEY AUTOINCREMENT, item BLOB NOT NULL,
                                  owner TEXT);
CREATE INDEX IF NOT EXISTS queued ON queue(owner, id);
"""


def sqlite_connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def sqlite_worker(path: Path, total: int, name: str, work: float) -> int:
    """Claim up to BATCH, work on each, acknowledge them with their links: items stored as the
    Redis frontier stores them (BLAKE2b key + JSON), so both pay the same encoding."""
    from archiver.frontier.redis.codec import decode_item, encode_item, url_key  # noqa: PLC0415
    from archiver.models import CrawlItem  # noqa: PLC0415

    db = sqlite_connect(path)
    done = 0
    while True:
        db.execute("BEGIN IMMEDIATE")
        rows = db.execute(
            "SELECT id, item FROM queue WHERE owner IS NULL ORDER BY id LIMIT ?", (BATCH,)
        ).fetchall()
        if rows:
            db.executemany("UPDATE queue SET owner = ? WHERE id = ?", [(name, i) for i, _ in rows])
        db.execute("COMMIT")
        if not rows:
            if db.execute("SELECT count(*) FROM seen WHERE state != 2").fetchone()[0] == 0:
                return done
            time.sleep(0.001)
            continue
        items = [decode_item(data) for _, data in rows]
        new_items = []
        for item in items:
            burn(work)
            n = int(item.url.rsplit("/", 1)[1])
            new_items += [CrawlItem(url=url_of(c)) for c in links(n, total)]
        db.execute("BEGIN IMMEDIATE")
        db.executemany("DELETE FROM queue WHERE id = ?", [(i,) for i, _ in rows])
        db.executemany(
            "UPDATE seen SET state = 2 WHERE key = ?", [(url_key(i.url),) for i in items]
        )
        fresh = []
        for item in new_items:
            key = url_key(item.url)
            if db.execute("INSERT OR IGNORE INTO seen VALUES (?, 1)", (key,)).rowcount:
                fresh.append((encode_item(item, key),))
        db.executemany("INSERT INTO queue (item) VALUES (?)", fresh)
        db.execute("COMMIT")
        done += len(rows)


async def archiver_sqlite_worker(path: Path, total: int, work: float) -> int:
    """archiver's own SQLite frontier (one process only: it keeps its queues in memory), for
    what one process pays today."""
    from archiver.frontier.sqlite import SqliteFrontier  # noqa: PLC0415
    from archiver.policy.politeness import HostGate  # noqa: PLC0415

    frontier = SqliteFrontier(path, HostGate(concurrency=10**6, delay=0.0))
    return await drain(frontier, total, work)


def sqlite_setup(path: Path) -> None:
    from archiver.frontier.redis.codec import encode_item, url_key  # noqa: PLC0415
    from archiver.models import CrawlItem  # noqa: PLC0415

    db = sqlite_connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO seen VALUES (?, 1)", (url_key(url_of(0)),))
    db.execute("INSERT INTO queue (item) VALUES (?)", (encode_item(CrawlItem(url=url_of(0))),))
    db.close()


# -- the driver -------------------------------------------------------------------------------


def _spawn(args: list[str]) -> int:
    return os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, __file__, *args])


def run_round(
    engine: str, processes: int, total: int, workdir: Path, work: float
) -> dict[str, Any]:
    """One measured round: ``processes`` workers of ``engine`` over ``total`` URLs, each URL
    costing ``work`` ms of CPU besides the frontier. ``engine``: redis, sqlite (the shared
    WAL database), or archiver-sqlite (today's one-process frontier, ``processes`` = 1)."""
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    class EverySecond(RedisServer):
        """The append-only file as ``--processes N`` keeps it (``appendfsync everysec``)."""

        def _args(self, port: int) -> list[str]:
            args = super()._args(port)
            return [*args[: args.index("--appendfsync") + 1], "everysec"]

    server: RedisServer | None = None
    fresh = Path(tempfile.mkdtemp(prefix=f"{engine}-{processes}-", dir=workdir))  # no old state
    if engine == "redis":
        server = EverySecond(fresh, persistent=True)
        server.start()
        target = server.url
    else:
        db = fresh / "frontier.sqlite"
        if engine == "sqlite":
            sqlite_setup(db)
        target = str(db)
    server_cpu_before = _cpu_of(server.pid) if server else 0.0
    start = time.monotonic()
    args = [engine, target, str(total), str(work)]
    pids = [_spawn(["worker", *args, f"w{n}"]) for n in range(processes)]
    cpu = 0.0
    for pid in pids:
        _, status, usage = os.wait4(pid, 0)
        if status != 0:
            raise RuntimeError(f"{engine} worker exited with status {status}")
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.monotonic() - start
    server_cpu = (_cpu_of(server.pid) - server_cpu_before) if server else 0.0
    if server is not None:
        server.cleanup()
    return {
        "engine": engine,
        "processes": processes,
        "work_ms": work,
        "urls": total,
        "wall_s": round(wall, 3),
        "urls_per_s": round(total / wall, 1),
        "client_cpu_ms_per_url": round(1000 * cpu / total, 4),
        "server_cpu_ms_per_url": round(1000 * server_cpu / total, 4),
    }


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(total: int, rounds: int, works: tuple[float, ...] = (0.0, WORK_MS)) -> dict[str, Any]:
    """Every engine with 1 and 2 processes, for each per-URL work; rounds interleaved."""
    cases = [("archiver-sqlite", 1)] + [
        (engine, n) for engine in ("redis", "sqlite") for n in (1, 2)
    ]
    results: list[dict[str, Any]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="engines-") as tmp:
        for _ in range(rounds):
            for work in works:
                for engine, processes in cases:
                    loads.append(os.getloadavg()[0])
                    results.append(run_round(engine, processes, total, Path(tmp), work))
    return {"kind": "engines", "urls": total, "rounds": rounds, "results": results,
            "load1": sorted(loads)[len(loads) // 2]}  # fmt: skip


def _median(rows: list[dict[str, Any]], key: str) -> float:
    values = sorted(float(r[key]) for r in rows)
    return values[len(values) // 2]


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"### Frontier engines, {report['urls']:,} URLs, {report['rounds']} round(s), "
        f"median 1-min load {report['load1']:.1f}",
        "",
        "| engine | work ms/URL | processes | URLs/s | x 1 process | crawler CPU ms/URL "
        "| redis-server CPU ms/URL |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    groups: dict[tuple[str, float, int], list[dict[str, Any]]] = {}
    for row in report["results"]:
        groups.setdefault((row["engine"], row["work_ms"], row["processes"]), []).append(row)
    for (engine, work, processes), rows in groups.items():
        rate = _median(rows, "urls_per_s")
        one = _median(groups.get((engine, work, 1), rows), "urls_per_s")
        client = _median(rows, "client_cpu_ms_per_url") - work
        server = _median(rows, "server_cpu_ms_per_url")
        lines.append(
            f"| {engine} | {work:g} | {processes} | {rate:,.0f} | {rate / one:.2f} "
            f"| {client:.3f} | {server:.3f} |"
        )
    lines.append("")
    lines.append(
        "crawler CPU ms/URL is the frontier's share in the crawler processes (their CPU per "
        "URL minus the work); archiver-sqlite is today's one-process frontier."
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["worker"]:
        engine, target, total = sys.argv[2], sys.argv[3], int(sys.argv[4])
        work, name = float(sys.argv[5]), sys.argv[6]
        if engine == "redis":
            done = asyncio.run(redis_worker(target, total, name, work))
        elif engine == "sqlite":
            done = sqlite_worker(Path(target), total, name, work)
        else:
            done = asyncio.run(archiver_sqlite_worker(Path(target), total, work))
        print(json.dumps({"done": done}))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    report = run(args.urls, args.rounds)
    print(format_report(report))
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
