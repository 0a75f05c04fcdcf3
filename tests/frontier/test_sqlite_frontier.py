"""What only the SQLite frontier does (the behaviour every backend shares is test_frontier.py's).

Persistence across close/open, resume bookkeeping (in-flight URLs, committed captures), an exact
seen set beyond its caches, a killed process leaving a prefix of the issued operations, a full
database failing loudly, bounded memory for a large enqueue, and the seen-set Bloom filter.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archiver.errors import FrontierError
from archiver.frontier.listing import STATES
from archiver.frontier.sqlite import Bloom, SqliteFrontier, codec, sql
from archiver.frontier.sqlite.listing import SqliteView
from archiver.models import (
    CrawlItem,
    Hop,
    Original,
    Outcome,
    RecordLocation,
    TaskResult,
    WrittenCapture,
)
from archiver.policy.politeness import HostGate
from tests.frontier.common import DONE, FakeClock, item

REPO = Path(__file__).resolve().parents[2]


async def drain(frontier: SqliteFrontier, result: TaskResult = DONE) -> list[str]:
    """Get and finish everything queued, in the order handed out."""
    urls = []
    while frontier.statistics().queued:
        lease = await frontier.get()
        urls.append(lease.item.url)
        await frontier.task_done(lease, result)
    return urls


def sqlite_frontier(
    path: Path, clock: FakeClock | None = None, max_pause: float = 600.0, **options: Any
) -> SqliteFrontier:
    gate = HostGate(concurrency=4, delay=0.0, clock=clock or FakeClock(), max_pause=max_pause)
    return SqliteFrontier(path, gate, **options)


def test_bloom_filter_never_forgets_as_it_grows() -> None:
    mask = (1 << 64) - 1
    keys = [f"http://a.example/{n}" for n in range(20_000)]
    bloom = Bloom(100, max_bytes=1 << 20)
    bloom.add_many(hash(k) for k in keys[:10_000])  # signed hashes, across layer growth
    for key in keys[10_000:]:
        bloom.add(hash(key) & mask)
    assert all(bloom.might_contain(hash(k) & mask) for k in keys)
    strangers = sum(
        bloom.might_contain(hash(f"http://b.example/{n}") & mask) for n in range(10_000)
    )
    assert strangers < 300  # ~1 % false positives at most
    capped = Bloom(100, max_bytes=256)  # past the cap the last layer saturates: still no misses
    capped.add_many(hash(k) for k in keys)
    assert capped.nbytes <= 256
    assert all(capped.might_contain(hash(k) & mask) for k in keys)


async def test_state_survives_close_and_open(tmp_path: Path) -> None:
    db = tmp_path / "f.sqlite"
    wall = [5000.0]
    frontier = sqlite_frontier(db, wall_clock=lambda: wall[0])
    info = await frontier.open()
    assert (info.resumed, info.queued, info.done) == (False, 0, 0)
    # every field survives the disk, per-seed rules' seed and --extra-hops' count included
    items = [
        item(f"/{n}", depth=n, hops="L" * n, via="http://a.example/", extra=n % 2, seed=n << 40)
        for n in range(8)
    ]
    await frontier.put_many(items)
    done, retried, in_flight = [await frontier.get() for _ in range(3)]
    await frontier.task_done(done, DONE)
    await frontier.task_done(retried, TaskResult(Outcome.RETRY, retry_after=60.0))
    await frontier.close()

    wall[0] += 61.0  # the retry is due when the crawl resumes
    again = sqlite_frontier(db, wall_clock=lambda: wall[0])
    info = await again.open()
    assert (info.resumed, info.requeued_in_flight, info.queued, info.done) == (True, 1, 7, 1)
    stats = again.statistics()
    assert (stats.queued, stats.done, stats.seen, stats.in_flight) == (7, 1, 8, 0)
    assert await again.put_many(items) == []  # every URL is still seen
    leased = []
    while again.statistics().queued:
        lease = await asyncio.wait_for(again.get(), 1)
        leased.append(lease.item)
        await again.task_done(lease, DONE)
    # the lease that was in flight comes back first (FIFO, tries unchanged); the retry after
    # its due time with one more try
    assert leased[0] == in_flight.item
    assert sorted(leased, key=lambda i: i.url) == sorted(
        [*items[2:], items[1].retry()], key=lambda i: i.url
    )
    await asyncio.wait_for(again.join(), 1)
    await again.close()


async def test_fifo_holds_across_window_refills(tmp_path: Path) -> None:
    frontier = sqlite_frontier(tmp_path / "f.sqlite", window=4, memory_items=6)
    await frontier.open()
    a = [item(f"/{n}", seed=n) for n in range(60)]  # refills read every column back
    b = [item(f"/{n}", host="b.example") for n in range(40)]
    for k in range(10):  # interleaved puts, like pages discovering links
        await frontier.put_many(a[k * 6 : k * 6 + 6] + b[k * 4 : k * 4 + 4])
    assert frontier.statistics().queued == 100
    order = await drain(frontier)
    assert [u for u in order if "//a." in u] == [i.url for i in a]
    assert [u for u in order if "//b." in u] == [i.url for i in b]
    assert frontier.statistics().done == 100
    await asyncio.wait_for(frontier.join(), 1)
    await frontier.close()


async def test_seen_set_is_exact_beyond_its_caches(tmp_path: Path) -> None:
    # a tiny recent-URL cache and a saturated Bloom filter: every check goes to the database
    frontier = sqlite_frontier(
        tmp_path / "f.sqlite", recent_urls=8, bloom_capacity=8, bloom_max_bytes=8
    )
    await frontier.open()
    urls = [item(f"/{n}") for n in range(500)]
    assert len(await frontier.put_many(urls)) == 500
    assert await frontier.put_many(urls[::-1]) == []
    # concurrent puts of overlapping URLs: each URL is new exactly once
    batches = [[item(f"/n{(k * 7 + j) % 90}") for j in range(40)] for k in range(6)]
    results = await asyncio.gather(*(frontier.put_many(batch) for batch in batches))
    new = [i.url for result in results for i in result]
    assert sorted(new) == sorted({i.url for batch in batches for i in batch})
    for batch, result in zip(batches, results, strict=True):  # returned in the order given
        positions = [batch.index(i) for i in result]
        assert positions == sorted(positions)
    expected = 500 + len({i.url for batch in batches for i in batch})
    assert (frontier.statistics().seen, frontier.statistics().queued) == (expected, expected)
    await frontier.close()


@pytest.mark.parametrize("seed", range(4))
async def test_random_work_hands_out_every_url_once(tmp_path: Path, seed: int) -> None:
    """Workers put links, retry, finish, and get cancelled while waiting, through tiny windows
    and caches (every seen check and most refills go to the database): every URL put is handed
    out until it finishes, exactly once apart from its retries, and the crawl joins."""
    rng = random.Random(seed)
    frontier = sqlite_frontier(
        tmp_path / "f.sqlite",
        max_pause=0.0,  # retries count as host failures: no backoff on a clock that stands still
        window=3,
        memory_items=5,
        recent_urls=4,
        bloom_capacity=4,
        bloom_max_bytes=8,
        commit_interval=0.001,
    )
    await frontier.open()
    universe = [f"http://h{n % 3}.example/{n}" for n in range(300)]
    await frontier.put(CrawlItem(universe[0]))
    leased: collections.Counter[str] = collections.Counter()
    finished: set[str] = set()
    retried_by_canceller: set[str] = set()

    async def worker() -> None:
        while True:
            lease = await frontier.get()
            leased[lease.item.url] += 1
            assert lease.item.url not in finished
            await asyncio.sleep(0)
            links = [lease.item.child(rng.choice(universe), Hop.LINK) for _ in range(6)]
            await frontier.put_many(links)
            if rng.random() < 0.1 and lease.item.tries < 2 and lease.item.url not in finished:
                await frontier.task_done(lease, TaskResult(Outcome.RETRY, retry_after=0.0))
            else:
                finished.add(lease.item.url)
                await frontier.task_done(lease, DONE)

    async def canceller() -> None:  # getters that give up: their URLs must not be lost
        for _ in range(200):
            getter = asyncio.create_task(frontier.get())
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            getter.cancel()
            try:
                lease = await getter
            except asyncio.CancelledError:
                continue
            leased[lease.item.url] -= 1  # it got a URL before the cancel: give it back
            await frontier.task_done(lease, TaskResult(Outcome.RETRY, retry_after=0.0))
            retried_by_canceller.add(lease.item.url)

    tasks = [asyncio.create_task(worker()) for _ in range(5)]
    tasks.append(asyncio.create_task(canceller()))
    await asyncio.wait_for(frontier.join(), 30)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    stats = frontier.statistics()
    assert (stats.queued, stats.in_flight) == (0, 0)
    assert stats.done == stats.seen == len(finished)
    assert all(1 <= leased[url] <= 3 for url in finished if url not in retried_by_canceller)
    await frontier.close()
    conn = sqlite3.connect(tmp_path / "f.sqlite")
    states = dict(conn.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
    conn.close()
    assert states == {2: len(finished)}


async def test_committed_captures_and_uncommit(tmp_path: Path) -> None:
    db = tmp_path / "f.sqlite"
    frontier = sqlite_frontier(db)
    await frontier.open()
    await frontier.put_many([item("/a"), item("/b"), item("/c"), item("/d")])
    name = "crawl-20240101000000000-00000-host.warc.gz"
    spans = {"/a": [(100, 250), (250, 400)], "/b": [(400, 600)], "/c": [(600, 700)]}
    for _ in range(4):
        lease = await frontier.get()
        path = lease.item.url.removeprefix("http://a.example")
        captures = tuple(WrittenCapture(name, s, e) for s, e in spans.get(path, []))
        if path == "/c":  # a 500 captured, then a retry later
            result = TaskResult(Outcome.RETRY, captures=captures, retry_after=60.0, status=500)
        else:
            result = TaskResult(Outcome.DONE, captures=captures, status=200)
        await frontier.task_done(lease, result)
    assert await frontier.committed_captures(name) == {
        (100, 250),
        (250, 400),
        (400, 600),
        (600, 700),
    }
    assert await frontier.committed_captures("other.warc.gz") == set()
    await frontier.close()

    again = sqlite_frontier(db)
    await again.open()
    assert again.statistics().done == 3
    # resume cut the file at 400: /b is fetched again; /c is pending anyway; /a keeps its data
    assert await again.uncommit_captures(name, 400) == 1
    assert await again.committed_captures(name) == {(100, 250), (250, 400)}
    stats = again.statistics()
    assert (stats.done, stats.queued) == (2, 2)
    lease = await asyncio.wait_for(again.get(), 1)
    assert lease.item.url == "http://a.example/b"
    await again.task_done(lease, DONE)
    assert await again.uncommit_captures(name, 0) == 1  # /a now (/b has no capture left)
    assert await again.uncommit_captures("never-written.warc.gz", 0) == 0
    await again.close()


async def test_digest_index_persists(tmp_path: Path) -> None:
    db = tmp_path / "f.sqlite"
    frontier = sqlite_frontier(db)
    await frontier.open()
    index = frontier.digest_index()
    original = Original("<urn:uuid:1>", "http://a.example/x", "2024-01-01T00:00:00Z")
    assert await index.lookup("sha1:AAAA") is None
    await index.add("sha1:AAAA", original)
    await index.add("sha1:AAAA", Original("<urn:uuid:2>", "http://a.example/y", "2025"))
    assert await index.lookup("sha1:AAAA") == original  # the first stays
    await index.close()
    await frontier.close()
    again = sqlite_frontier(db)
    await again.open()
    assert await again.digest_index().lookup("sha1:AAAA") == original
    assert await again.digest_index().lookup("sha1:BBBB") is None
    await again.close()


async def test_media_bytes_per_page_persist(tmp_path: Path) -> None:
    """A resumed crawl goes on with what each page has spent of its media budget."""
    db = tmp_path / "f.sqlite"
    frontier = sqlite_frontier(db)
    await frontier.open()
    media = frontier.media_bytes()
    await media.add("http://a.example/watch", 1_000)
    await media.add("http://a.example/watch", 250)
    assert await media.spent("http://a.example/watch") == 1_250
    await frontier.close()
    again = sqlite_frontier(db)
    await again.open()
    assert await again.media_bytes().spent("http://a.example/watch") == 1_250
    assert await again.media_bytes().spent("http://a.example/other") == 0
    await again.close()


async def test_captured_urls_persist(tmp_path: Path) -> None:
    db = tmp_path / "f.sqlite"
    frontier = sqlite_frontier(db)
    await frontier.open()
    location = RecordLocation("crawl-20240101000000000-00000-h.warc.gz", 99, 1000)
    await frontier.captured_urls().add("http://a.example/app.js", location)
    await frontier.close()
    again = sqlite_frontier(db)
    await again.open()
    assert await again.captured_urls().lookup("http://a.example/app.js") == location
    assert await again.captured_urls().lookup("http://a.example/other.js") is None
    await again.close()


async def test_closed_frontier_refuses_work(tmp_path: Path) -> None:
    frontier = sqlite_frontier(tmp_path / "f.sqlite")
    with pytest.raises(FrontierError):
        await frontier.put(item("/a"))  # not open yet
    await frontier.open()
    await frontier.close()
    await frontier.close()  # idempotent
    with pytest.raises(FrontierError):
        await frontier.put(item("/a"))


async def test_a_full_database_fails_loudly_and_keeps_a_prefix(tmp_path: Path) -> None:
    db = tmp_path / "f.sqlite"
    frontier = sqlite_frontier(db, max_pages=40, commit_interval=0.0)
    await frontier.open()
    with pytest.raises(FrontierError, match="full"):
        for n in range(200):
            lease = None
            if frontier.statistics().queued:
                lease = await frontier.get()
            parent = lease.item if lease else item("/")
            await frontier.put_many(
                [
                    parent.child(f"http://a.example/{n}/{k}/" + "x" * 200, Hop.LINK)
                    for k in range(20)
                ]
            )
            if lease is not None:
                await frontier.task_done(lease, DONE)
            await frontier.flush()
    with pytest.raises(FrontierError):
        await frontier.close()
    assert_prefix_invariant(db, children_of=lambda url: [])
    again = sqlite_frontier(db)
    info = await again.open()
    assert info.resumed and info.queued > 0
    await again.close()


def assert_prefix_invariant(db: Path, children_of: Callable[[str], list[str]]) -> None:
    """Every finished URL's children are in the database (they were put before task_done),
    and the tables agree with each other."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        urls = {u: s for u, s in conn.execute("SELECT url, state FROM urls")}
        hosts = {h for (h,) in conn.execute("SELECT id FROM hosts")}
        assert {h for (h,) in conn.execute("SELECT DISTINCT host FROM urls")} <= hosts
        for url, state in urls.items():
            if state == 2:
                missing = [c for c in children_of(url) if c not in urls]
                assert not missing, f"{url} is done but its links {missing[:3]} were lost"
    finally:
        conn.close()


CRASH_URLS = 600


def crash_children(url: str) -> list[str]:
    """The links of a page of the crash test's imaginary site (a few hosts, shared pages)."""
    n = int(url.rsplit("/", 1)[1])
    found = (2 * n + 1, 2 * n + 2, n * 7 % CRASH_URLS)
    return [f"http://h{c % 3}.example/{c}" for c in found if c < CRASH_URLS]


def crash_child(db: str, seed: str, kill_after: str) -> None:
    """Crawl the imaginary site with 8 workers; SIGKILL this process after ``kill_after``
    URLs (run in a subprocess by the test below)."""
    rng = random.Random(int(seed))

    async def main() -> None:
        gate = HostGate(concurrency=8, delay=0.0)
        frontier = SqliteFrontier(Path(db), gate, commit_interval=0.005, window=8, recent_urls=64)
        await frontier.open()
        await frontier.put(CrawlItem("http://h0.example/0"))
        steps = 0

        async def worker() -> None:
            nonlocal steps
            while True:
                lease = await frontier.get()
                await asyncio.sleep(rng.random() * 0.002)  # the fetch
                kids = [lease.item.child(u, Hop.LINK) for u in crash_children(lease.item.url)]
                await frontier.put_many(kids)
                await asyncio.sleep(0)
                await frontier.task_done(lease, DONE)
                steps += 1
                if steps >= int(kill_after):
                    os.kill(os.getpid(), signal.SIGKILL)

        workers = [asyncio.create_task(worker()) for _ in range(8)]
        await frontier.join()
        for task in workers:
            task.cancel()
        await frontier.close()

    asyncio.run(main())


def test_a_killed_process_leaves_a_prefix_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "crash.sqlite"
    codes = []
    for round_, kill_after in enumerate((40, 90, 150, 10_000)):
        code = (
            "from tests.frontier.test_sqlite_frontier import crash_child as c; "
            "c(*__import__('sys').argv[1:])"
        )
        args = [str(db), str(round_), str(kill_after)]
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        codes.append(proc.returncode)
        assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
        assert_prefix_invariant(db, crash_children)
    assert codes == [-signal.SIGKILL] * 3 + [0]  # killed thrice; the last run finished
    conn = sqlite3.connect(db)
    states = dict(conn.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
    conn.close()
    assert set(states) == {2}  # every URL reached is done


async def test_memory_stays_bounded_for_a_large_enqueue(tmp_path: Path) -> None:
    """200,000 queued URLs: the SQLite frontier keeps a bounded heap (SQLite's own page cache
    is outside tracemalloc and capped by PRAGMA cache_size)."""
    frontier = sqlite_frontier(tmp_path / "big.sqlite")
    await frontier.open()
    nav = [item(f"/nav/{n}") for n in range(30)]
    await frontier.put_many(nav)
    tracemalloc.start()
    try:
        made = 0
        while made < 200_000:
            links = [
                item(f"/page/{made + k}/index.html", host=f"h{k % 4}.example") for k in range(20)
            ]
            made += 20
            await frontier.put_many(links + nav)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    stats = frontier.statistics()
    assert stats.queued == 200_030
    # a MemoryFrontier holds ~60 MB of Python objects for this; the window (4 hosts x 1,024),
    # the recent-URL cache (2 x 65,536 strings) and the Bloom filter stay far below
    assert peak < 40_000_000, f"peak traced memory {peak / 1e6:.1f} MB"
    await frontier.close()


def test_every_statement_of_the_sql_files_compiles_against_the_schema(tmp_path: Path) -> None:
    """scripts/queries.sql is read by name, with the states and the batch-sized parts filled
    in: each statement, filled the way database.py fills it, must prepare against the tables
    of scripts/schema.sql (a misspelt column or placeholder fails here, not mid-crawl)."""
    conn = sqlite3.connect(tmp_path / "f.sqlite")
    for statement in sql.schema_statements():
        conn.execute(statement)
    # the add-*-column statements upgrade a database written before their columns existed
    upgrades = ("add-extra-column", "add-found-by-column", "add-page-column", "add-seed-column")
    before = sqlite3.connect(tmp_path / "old.sqlite")
    before.execute("CREATE TABLE urls (id INTEGER PRIMARY KEY)")
    for name in upgrades:
        before.execute(sql.QUERIES[name])
    columns = [row[1] for row in before.execute("PRAGMA table_info(urls)")]
    assert columns == ["id", "extra", "found_by", "page", "seed"]
    before.close()
    sized = {
        "host-insert": {"rows": sql.values(2, 2)},
        "url-seen": {"marks": sql.marks(2)},
        "url-insert": {"rows": sql.values(2, codec.URL_COLUMN_COUNT)},
        "url-update": {"sets": "state = v.column2", "rows": sql.values(2, 2)},
        "capture-insert": {"rows": sql.values(2, 4)},
        "digest-insert": {"rows": sql.values(2, 4)},
        "digest-get": {"marks": sql.marks(2)},
        "refill": {"parts": " UNION ALL ".join([sql.QUERIES["refill-part"]] * 2)},
        "windowed": {"marks": sql.marks(2)},
        "list-urls": {"marks": sql.marks(2)},
    }
    assert set(sized) <= set(sql.QUERIES)
    for name, statement in sql.QUERIES.items():
        if name in upgrades:
            continue  # run above, on a table without the columns
        text = sql.sized(statement, **sized.get(name, {}))
        assert "$" not in text, name
        conn.execute("EXPLAIN " + text, [None] * text.count("?"))
    conn.close()


def test_the_queries_file_names_each_statement_once() -> None:
    text = "-- name: one\nSELECT 1\n-- a comment\n-- name: two\nSELECT $QUEUED\n"
    assert sql.parse_queries(text) == {"one": "SELECT 1", "two": "SELECT 0"}
    with pytest.raises(ValueError, match="names 'one' twice"):
        sql.parse_queries(text + "-- name: one\nSELECT 2\n")


def test_a_listing_reads_the_database_as_it_goes(tmp_path: Path) -> None:
    """``archiver queue`` over 200,000 URLs: the counts are the table's, every URL comes out,
    and the heap holds a page of rows at a time (a list of the URLs would take ~25 MB)."""
    db = tmp_path / "f.sqlite"
    conn = sqlite3.connect(db)
    for statement in sql.schema_statements():
        conn.execute(statement)
    conn.execute("INSERT INTO hosts VALUES (1, 'a.example')")
    states = (codec.QUEUED, codec.WINDOWED, codec.DONE, codec.FAILED, codec.WAITING)
    conn.executemany(
        "INSERT INTO urls (url, host, state, seq, tries, redirects_left, depth, hops) "
        "VALUES (?, 1, ?, ?, 0, 10, 1, 'L')",
        (
            (f"http://a.example/section/{n // 1000}/page-{n}.html", states[n % 5], n)
            for n in range(200_000)
        ),
    )
    conn.commit()
    conn.close()
    view = SqliteView(db)
    try:
        counts = view.counts()
        assert (counts.queued, counts.done, counts.failed, counts.in_flight) == (
            120_000,
            40_000,
            40_000,
            0,
        )
        tracemalloc.start()
        try:
            seen = collections.Counter(state for state, _ in view.urls(STATES))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert seen == {"queued": 120_000, "done": 40_000, "failed": 40_000}
        assert peak < 2_000_000, f"peak traced memory {peak / 1e6:.1f} MB"
        first = next(iter(view.urls(["failed"])))
        assert first == ("failed", "http://a.example/section/0/page-3.html")  # id order
    finally:
        view.close()
