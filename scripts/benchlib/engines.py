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


def url_of(n: int) -> str:
    return f"http://h{n % HOSTS}.example/p/{n}"


def links(n: int, total: int) -> list[int]:
    children = [c for c in range(n * FANOUT + 1, n * FANOUT + FANOUT + 1) if c < total]
    dups = [(n * 7919 + k * 104729) % (n + 1) for k in range(DUPLICATES)]
    return children + dups


# -- the Redis worker -------------------------------------------------------------------------


async def redis_worker(url: str, total: int, name: str) -> int:
    from archiver.frontier.redis import RedisFrontier  # noqa: PLC0415
    from archiver.models import CrawlItem, Outcome, TaskResult  # noqa: PLC0415
    from archiver.policy.politeness import HostGate  # noqa: PLC0415

    frontier = RedisFrontier(
        url,
        "engines",
        gate=HostGate(concurrency=10**6, delay=0.0),
        lease_timeout=600,
        max_claim=BATCH,
        process_id=name,
    )
    await frontier.open()
    await frontier.put(CrawlItem(url=url_of(0)))
    done = 0

    async def work() -> None:
        nonlocal done
        while True:
            lease = await frontier.get()
            n = int(lease.item.url.rsplit("/", 1)[1])
            await frontier.put_many(CrawlItem(url=url_of(c)) for c in links(n, total))
            await frontier.task_done(lease, TaskResult(Outcome.DONE))
            done += 1

    workers = [asyncio.create_task(work()) for _ in range(BATCH)]
    await frontier.join()
    for task in workers:
        task.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    await frontier.close()
    return done


# -- the SQLite worker ------------------------------------------------------------------------

SCHEMA = """
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS seen (url TEXT PRIMARY KEY, state INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS queue (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL,
                                  owner TEXT);
CREATE INDEX IF NOT EXISTS queued ON queue(owner, id);
"""


def sqlite_connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def sqlite_worker(path: Path, total: int, name: str) -> int:
    db = sqlite_connect(path)
    done = 0
    idle = 0
    while True:
        db.execute("BEGIN IMMEDIATE")
        rows = db.execute(
            "SELECT id, url FROM queue WHERE owner IS NULL ORDER BY id LIMIT ?", (BATCH,)
        ).fetchall()
        if rows:
            db.executemany("UPDATE queue SET owner = ? WHERE id = ?", [(name, i) for i, _ in rows])
        db.execute("COMMIT")
        if not rows:
            remaining = db.execute("SELECT count(*) FROM seen WHERE state != 2").fetchone()[0]
            if remaining == 0:
                return done
            idle += 1
            time.sleep(0.001)
            continue
        new_links = [url_of(c) for _, url in rows for c in links(int(url.rsplit("/", 1)[1]), total)]
        db.execute("BEGIN IMMEDIATE")
        db.executemany("DELETE FROM queue WHERE id = ?", [(i,) for i, _ in rows])
        db.executemany("UPDATE seen SET state = 2 WHERE url = ?", [(u,) for _, u in rows])
        fresh = []
        for link in new_links:
            if db.execute("INSERT OR IGNORE INTO seen VALUES (?, 1)", (link,)).rowcount:
                fresh.append((link,))
        db.executemany("INSERT INTO queue (url) VALUES (?)", fresh)
        db.execute("COMMIT")
        done += len(rows)


def sqlite_setup(path: Path) -> None:
    db = sqlite_connect(path)
    db.executescript(SCHEMA)
    db.execute("INSERT INTO seen VALUES (?, 1)", (url_of(0),))
    db.execute("INSERT INTO queue (url) VALUES (?)", (url_of(0),))
    db.close()


# -- the driver -------------------------------------------------------------------------------


def _spawn(args: list[str]) -> int:
    return os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, __file__, *args])


def run_round(engine: str, processes: int, total: int, workdir: Path) -> dict[str, Any]:
    """One measured round: ``processes`` workers of ``engine`` over ``total`` URLs."""
    from tests.support.redis_server import RedisServer  # noqa: PLC0415

    class EverySecond(RedisServer):
        """The append-only file as ``--processes N`` keeps it (``appendfsync everysec``)."""

        def _args(self, port: int) -> list[str]:
            args = super()._args(port)
            return [*args[: args.index("--appendfsync") + 1], "everysec"]

    server: RedisServer | None = None
    target = ""
    if engine == "redis":
        server = EverySecond(workdir / f"redis-{processes}", persistent=True)
        server.start()
        target = server.url
    else:
        db = workdir / f"frontier-{processes}.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(str(db) + suffix).unlink(missing_ok=True)
        sqlite_setup(db)
        target = str(db)
    server_cpu_before = _cpu_of(server.pid) if server else 0.0
    start = time.monotonic()
    pids = [_spawn(["worker", engine, target, str(total), f"w{n}"]) for n in range(processes)]
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
        "urls": total,
        "wall_s": round(wall, 3),
        "urls_per_s": round(total / wall, 1),
        "client_cpu_ms_per_url": round(1000 * cpu / total, 4),
        "server_cpu_ms_per_url": round(1000 * server_cpu / total, 4),
    }


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(total: int, rounds: int) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="engines-") as tmp:
        for _ in range(rounds):
            for engine in ("redis", "sqlite"):
                for processes in (1, 2):
                    results.append(run_round(engine, processes, total, Path(tmp)))
    return {"kind": "engines", "urls": total, "rounds": rounds, "results": results,
            "load1": os.getloadavg()[0]}  # fmt: skip


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"### Frontier engines, {report['urls']:,} URLs, {report['rounds']} round(s), "
        f"load {report['load1']:.1f}",
        "",
        "| engine | processes | URLs/s | x 1 process | crawler CPU ms/URL | redis-server CPU ms/URL |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    by_key: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in report["results"]:
        by_key.setdefault((row["engine"], row["processes"]), []).append(row)
    for (engine, processes), rows in by_key.items():
        rate = sorted(r["urls_per_s"] for r in rows)[len(rows) // 2]
        one = sorted(r["urls_per_s"] for r in by_key[(engine, 1)])[len(rows) // 2]
        client = sorted(r["client_cpu_ms_per_url"] for r in rows)[len(rows) // 2]
        server = sorted(r["server_cpu_ms_per_url"] for r in rows)[len(rows) // 2]
        lines.append(
            f"| {engine} | {processes} | {rate:,.0f} | {rate / one:.2f} | {client:.3f} | "
            f"{server:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    if sys.argv[1:2] == ["worker"]:
        engine, target, total, name = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        if engine == "redis":
            done = asyncio.run(redis_worker(target, total, name))
        else:
            done = sqlite_worker(Path(target), total, name)
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
