"""The frontier conformance suite: memory, SQLite and Redis held to one behaviour.

Every test here runs on the three backends: seen set, FIFO per host, per-host slots, politeness
delay and robots.txt Crawl-delay, the host verdict's backoff, ``reserve``, retry delays, join,
cancelled and given-back leases, committed captures, and the payload-digest index each backend
brings (through :func:`archiver.frontier.open_backend`). The Redis backend runs against a real
redis-server (tests/support/redis_server.py).

Time differs by backend, so each test speaks in *units* of time through a :class:`Harness`. The
memory and SQLite frontiers take their time from the gate's clock: a fake one that moves only
when a test advances it, so the test can also check that nothing is handed out a moment before a
delay ends. The Redis frontier takes its time from the Redis server (one clock for every
process), so there a unit is a fraction of a real second and the checks are lower bounds on real
time: a URL is never handed out before its delay (no upper bound on how late: the machine may be
loaded).

The backend-specific tests are test_sqlite_frontier.py and test_redis_frontier.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from archiver.config.assemble import frontier_config
from archiver.config.settings import Settings
from archiver.dedup.captured import CapturedUrls, MemoryCapturedUrls
from archiver.dedup.digests import DigestIndex, MemoryDigestIndex
from archiver.frontier import Backend, FrontierConfig, MemoryFrontier, open_backend
from archiver.frontier.base import Frontier
from archiver.frontier.local import LocalFrontier
from archiver.frontier.redis import RedisFrontier
from archiver.frontier.sqlite import SqliteFrontier
from archiver.models import (
    FrontierStats,
    Hop,
    Original,
    Outcome,
    RecordLocation,
    TaskResult,
    WrittenCapture,
)
from archiver.policy.politeness import Backoff, HostGate
from archiver.policy.seeds import MemorySeedStore, SeedStore
from tests.frontier.common import DONE, FakeClock, item
from tests.support.redis_server import RedisServer

BACKENDS = ["memory", "sqlite", "redis"]
#: Seconds of real time per unit of test time on the Redis server's clock.
REDIS_UNIT = 0.05
#: Upper bound for anything that should happen "soon" (a hang guard, not a measurement).
WAIT = 15.0

_crawl_ids = itertools.count()


class Harness:
    """One backend under test, and how time passes for it."""

    def __init__(self, name: str, tmp_path: Path, redis: RedisServer | None) -> None:
        self.name = name
        self.clock = FakeClock()
        #: the backend's time is a fake clock: "not yet, a moment before the delay" is testable
        self.exact = name != "redis"
        self.unit = REDIS_UNIT if name == "redis" else 1.0
        self._tmp_path = tmp_path
        self._redis = redis
        self.opened: list[Frontier] = []

    async def make(self, **gate_options: Any) -> Any:
        """An opened frontier; ``gate_options`` are HostGate's (times already in seconds)."""
        options = {"concurrency": 4, "delay": 0.0, **gate_options}
        frontier: Frontier
        if self.name == "redis":
            assert self._redis is not None
            frontier = RedisFrontier(
                self._redis.url,
                f"conformance-{next(_crawl_ids)}",
                gate=HostGate(**options),
                process_id=f"conformance-{len(self.opened)}",
                lease_timeout=60.0,
                poll_interval=0.05,
            )
        else:
            gate = HostGate(clock=self.clock, **options)
            if self.name == "memory":
                frontier = MemoryFrontier(gate)
            else:
                frontier = SqliteFrontier(self._tmp_path / f"f-{len(self.opened)}.sqlite", gate)
        await frontier.open()
        self.opened.append(frontier)
        return frontier

    def seconds(self, units: float) -> float:
        return units * self.unit

    def now(self) -> float:
        return self.clock.now if self.exact else time.monotonic()

    async def advance(self, frontier: Frontier, units: float) -> None:
        """Let ``units`` of time pass on a fake clock (and tell the dispatcher). On the Redis
        server's clock time passes by itself while the test waits for what it expects next:
        sleeping here would make every "not before" check true by construction."""
        if self.exact:
            assert isinstance(frontier, LocalFrontier)
            self.clock.advance(self.seconds(units))
            frontier.scheduler.dispatch()
            await self.settle(frontier)

    async def settle(self, frontier: Frontier) -> None:
        """Let the frontier act on everything so far without time passing: a few turns of the
        loop in process; for Redis, every call so far sent and answered, and, while a ``get``
        waits, two claims tried after this point."""
        if self.exact:
            for _ in range(5):
                await asyncio.sleep(0)
            return
        assert isinstance(frontier, RedisFrontier)
        pump = frontier.pump
        await frontier.flush()
        await frontier.flush()  # what settling the first round queued (a lease given back)
        target = pump.claims + 2
        while pump.claims < target and pump.waiting:  # noqa: ASYNC110 - a counter, no event
            await asyncio.sleep(0.005)

    async def stats(self, frontier: Frontier) -> FrontierStats:
        """``statistics()`` once everything so far reached the backend."""
        await self.settle(frontier)
        return frontier.statistics()

    async def drain(self, frontier: Frontier, result: TaskResult = DONE) -> list[str]:
        """Get and finish everything queued, in the order handed out."""
        urls = []
        while (await self.stats(frontier)).queued:
            lease = await asyncio.wait_for(frontier.get(), WAIT)
            urls.append(lease.item.url)
            await frontier.task_done(lease, result)
        return urls


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(params=BACKENDS)
async def h(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    redis = request.getfixturevalue("redis_server") if request.param == "redis" else None
    harness = Harness(request.param, tmp_path, redis)
    yield harness
    for frontier in harness.opened:
        await frontier.close()


# ================================================================================ the queue
async def test_is_a_frontier(h: Harness) -> None:
    frontier = await h.make()
    assert isinstance(frontier, Frontier)
    assert frontier.persistent is (h.name != "memory")


async def test_put_queues_a_url_once(h: Harness) -> None:
    frontier = await h.make()
    assert await frontier.put(item("/a")) is True
    assert await frontier.put(item("/a")) is False
    assert await frontier.put(item("/a", tries=3)) is False  # the URL is the key
    batch = [item("/b"), item("/a"), item("/c"), item("/b"), item("/d"), item("/", "b.example")]
    new = await frontier.put_many(batch)
    assert [i.url for i in new] == [
        "http://a.example/b",
        "http://a.example/c",
        "http://a.example/d",
        "http://b.example/",
    ]
    stats = await h.stats(frontier)
    assert (stats.queued, stats.seen, stats.hosts, stats.in_flight) == (5, 5, 2, 0)


async def test_a_url_stays_seen_after_it_is_done(h: Harness) -> None:
    frontier = await h.make()
    await frontier.put(item("/a"))
    assert await h.drain(frontier) == ["http://a.example/a"]
    assert await frontier.put(item("/a")) is False
    assert (await h.stats(frontier)).done == 1


async def test_fifo_within_a_host_and_items_intact(h: Harness) -> None:
    frontier = await h.make()
    # the extractor's name, the extra-hops count and the page come back as put, whichever is set
    items = [
        item(
            f"/{n}",
            "a.example:8080",
            redirects_left=n % 5,
            depth=n,
            hops="LE" * n,
            via="v/",
            extra=n % 3,
            found_by=("", "feed", "js-module")[n % 4 % 3],
            page=("", "http://a.example:8080/page")[n % 5 % 2],
            seed=(n % 4) << 44,  # 0 (the crawl's own rules) and three seeds' keys
        )
        for n in range(30)
    ]
    await frontier.put_many(items)
    leased = []
    for _ in items:
        lease = await asyncio.wait_for(frontier.get(), WAIT)
        assert lease.host == "a.example:8080"  # the politeness key keeps the port
        leased.append(lease.item)
        await frontier.task_done(lease, DONE)
    assert leased == items
    stats = await h.stats(frontier)
    assert (stats.queued, stats.done, stats.in_flight) == (0, 30, 0)


async def test_a_busy_host_does_not_block_another(h: Harness) -> None:
    frontier = await h.make(concurrency=1)
    await frontier.put_many([item("/1"), item("/2"), item("/1", host="b.example")])
    leases = {lease.host: lease for lease in [await frontier.get(), await frontier.get()]}
    assert set(leases) == {"a.example", "b.example"}  # no waiting behind a.example's queue
    waiting = asyncio.create_task(frontier.get())
    await h.settle(frontier)
    assert not waiting.done()  # a.example's only slot is taken; b.example has nothing left
    await frontier.task_done(leases["a.example"], DONE)
    third = await asyncio.wait_for(waiting, WAIT)
    assert third.item.url == "http://a.example/2"
    await frontier.task_done(leases["b.example"], DONE)
    await frontier.task_done(third, DONE)
    await asyncio.wait_for(frontier.join(), WAIT)


async def test_links_put_by_a_lease_keep_join_open(h: Harness) -> None:
    frontier = await h.make()
    await frontier.put(item("/"))
    joined = asyncio.create_task(frontier.join())
    lease = await frontier.get()
    await frontier.put_many([lease.item.child("http://a.example/child", Hop.LINK)])
    await frontier.task_done(lease, DONE)
    await h.settle(frontier)
    assert not joined.done()
    assert await h.drain(frontier) == ["http://a.example/child"]
    await asyncio.wait_for(joined, WAIT)


async def test_join_waits_for_children_found_by_concurrent_workers(h: Harness) -> None:
    """Workers put a page's links before finishing it: join never returns while any of them
    is queued, leased or still to be found."""
    frontier = await h.make()
    tree = {
        "http://a.example/": ["http://a.example/1", "http://b.example/1"],
        "http://a.example/1": ["http://a.example/2", "http://a.example/"],
        "http://b.example/1": ["http://c.example/1"],
    }
    await frontier.put(item("/"))
    processed: list[str] = []

    async def work() -> None:
        while True:
            lease = await frontier.get()
            processed.append(lease.item.url)
            await asyncio.sleep(0)  # the fetch
            links = [lease.item.child(url, Hop.LINK) for url in tree.get(lease.item.url, [])]
            await frontier.put_many(links)
            await frontier.task_done(lease, DONE)

    workers = [asyncio.create_task(work()) for _ in range(4)]
    try:
        await asyncio.wait_for(frontier.join(), WAIT)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    assert sorted(processed) == sorted(
        [
            "http://a.example/",
            "http://a.example/1",
            "http://b.example/1",
            "http://a.example/2",
            "http://c.example/1",
        ]
    )
    stats = await h.stats(frontier)
    assert (stats.done, stats.queued, stats.in_flight) == (5, 0, 0)


async def test_join_waits_for_queued_and_leased_urls(h: Harness) -> None:
    frontier = await h.make()
    await asyncio.wait_for(frontier.join(), WAIT)  # nothing queued: joins at once
    await frontier.put_many([item("/1"), item("/2"), item("/3")])
    joined = asyncio.create_task(frontier.join())
    first, second, third = [await frontier.get() for _ in range(3)]
    await frontier.task_done(first, TaskResult(Outcome.FAILED, reason="connect-error"))
    await frontier.task_done(second, TaskResult(Outcome.SKIPPED, reason="robots"))
    await h.settle(frontier)
    assert not joined.done()  # the third is still leased
    await frontier.task_done(third, DONE)
    await asyncio.wait_for(joined, WAIT)
    stats = await h.stats(frontier)
    assert (stats.done, stats.failed, stats.skipped, stats.queued) == (1, 1, 1, 0)


# ================================================================================ politeness
async def test_politeness_delay_spaces_the_starts_of_a_host(h: Harness) -> None:
    frontier = await h.make(concurrency=4, delay=h.seconds(10))
    await frontier.put_many([item("/1"), item("/2"), item("/1", host="b.example")])
    started = h.now()
    leases = {lease.host: lease for lease in [await frontier.get(), await frontier.get()]}
    assert {lease.item.url for lease in leases.values()} == {
        "http://a.example/1",
        "http://b.example/1",
    }
    await frontier.task_done(leases["a.example"], DONE)
    waiting = asyncio.create_task(frontier.get())
    await h.advance(frontier, 9.9)
    if h.exact:
        assert not waiting.done()  # a.example's next start is 10 units after the first
    await h.advance(frontier, 0.1)
    lease = await asyncio.wait_for(waiting, WAIT)
    assert lease.item.url == "http://a.example/2"
    assert h.now() - started >= h.seconds(10)


async def test_a_lease_that_sent_nothing_gives_its_delay_back(h: Harness) -> None:
    """A URL dropped before any request (an exclusion added later, a budget, a robots.txt
    verdict from the cache, a capture recalled from the records) costs its host no delay: the
    next URL of the host is handed out at once, not a delay later. A later booking (another
    lease, a reserve) keeps its spacing."""
    frontier = await h.make(concurrency=1, delay=h.seconds(1000))
    await frontier.put_many([item("/1"), item("/2"), item("/3"), item("/4")])
    skipped = TaskResult(Outcome.SKIPPED, reason="ignored", unsent=True)
    for expected in ("/1", "/2", "/3"):
        lease = await asyncio.wait_for(frontier.get(), WAIT)
        assert lease.item.url == "http://a.example" + expected
        await frontier.task_done(lease, skipped)
    # a lease that did send its request keeps the delay for the next one
    await frontier.put_many([item("/5")])
    lease = await asyncio.wait_for(frontier.get(), WAIT)
    assert lease.item.url == "http://a.example/4"
    await frontier.task_done(lease, DONE)
    waiting = asyncio.create_task(frontier.get())
    await h.settle(frontier)
    await h.advance(frontier, 500)
    assert not waiting.done()
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting


async def test_crawl_delay_from_robots_spaces_a_host(h: Harness) -> None:
    frontier = await h.make(delay=0.0)
    frontier.set_host_delay("a.example", h.seconds(5))
    await frontier.put_many([item("/1"), item("/2")])
    started = h.now()
    await frontier.task_done(await frontier.get(), DONE)
    waiting = asyncio.create_task(frontier.get())
    await h.advance(frontier, 4.9)
    if h.exact:
        assert not waiting.done()
    await h.advance(frontier, 0.1)
    assert (await asyncio.wait_for(waiting, WAIT)).item.url == "http://a.example/2"
    assert h.now() - started >= h.seconds(5)


async def test_a_seed_delay_spaces_its_host_instead_of_the_crawls(h: Harness) -> None:
    """Per-seed rules: a seed's ``per_host_delay`` spaces its hosts instead of the crawl's
    delay, shorter (a.example) or longer (b.example); a host two seeds give delays keeps the
    longest; another host keeps the crawl's delay."""
    frontier = await h.make(concurrency=4, delay=h.seconds(10))
    frontier.set_host_spacing("a.example", h.seconds(2))
    frontier.set_host_spacing("b.example", h.seconds(1))
    frontier.set_host_spacing("b.example", h.seconds(20))
    frontier.set_host_spacing("b.example", h.seconds(3))  # the longest stays
    await frontier.put_many([item("/1"), item("/2"), item("/1", "b.example")])
    await frontier.put_many([item("/2", "b.example"), item("/1", "c.example")])
    await frontier.put_many([item("/2", "c.example")])
    started = h.now()
    for _ in range(3):
        await frontier.task_done(await asyncio.wait_for(frontier.get(), WAIT), DONE)
    handed: dict[str, float] = {}
    for _ in range(3):
        getter = asyncio.create_task(frontier.get())
        while not getter.done():
            await h.advance(frontier, 0.5)
            if not h.exact:
                await asyncio.wait({getter}, timeout=h.seconds(0.5))
        lease = getter.result()
        handed[lease.host] = h.now() - started
        await frontier.task_done(lease, DONE)
    assert list(handed) == ["a.example", "c.example", "b.example"]  # 2, then 10, then 20
    assert handed["a.example"] >= h.seconds(2)
    assert handed["c.example"] >= h.seconds(10)
    assert handed["b.example"] >= h.seconds(20)
    if h.exact:
        assert handed == {"a.example": 2.0, "c.example": 10.0, "b.example": 20.0}


async def test_reserve_books_a_start_inside_a_lease(h: Harness) -> None:
    """The page fetched after its robots.txt in one lease: ``reserve`` says how long to wait,
    and the host's next lease is spaced behind that reserved start."""
    frontier = await h.make(concurrency=4, delay=h.seconds(10))
    await frontier.put_many([item("/1"), item("/2")])
    started = h.now()
    lease = await frontier.get()
    wait = frontier.reserve(lease.host)
    assert 0 < wait <= h.seconds(10)
    assert wait >= h.seconds(10) - (h.now() - started)  # counted from this lease's start
    waiting = asyncio.create_task(frontier.get())
    await h.advance(frontier, 19.9)
    if h.exact:
        assert not waiting.done()  # two spacings: the reserved start, then this one
    await h.advance(frontier, 0.1)
    other = await asyncio.wait_for(waiting, WAIT)
    assert other.item.url == "http://a.example/2"
    assert h.now() - started >= h.seconds(20)
    await frontier.task_done(lease, DONE)
    await frontier.task_done(other, DONE)


async def test_a_host_that_keeps_failing_is_paused_with_backoff(h: Harness) -> None:
    """The host verdict, whatever the backend: three failures in a row pause the host (here
    10 units); a success ends the streak."""
    backoff = Backoff(threshold=3, first=h.seconds(10), factor=2.0)
    frontier = await h.make(concurrency=4, backoff=backoff)
    await frontier.put_many([item(f"/{n}", "down.example") for n in range(6)])
    failed = TaskResult(Outcome.FAILED, reason="connect-error")
    for _ in range(3):
        lease = await asyncio.wait_for(frontier.get(), WAIT)  # no pause after 1 or 2
        paused = h.now()
        await frontier.task_done(lease, failed)
    waiting = asyncio.create_task(frontier.get())
    await h.advance(frontier, 9.9)
    if h.exact:
        assert not waiting.done()
    await h.advance(frontier, 0.1)
    lease = await asyncio.wait_for(waiting, WAIT)
    assert lease.item.url == "http://down.example/3"
    assert h.now() - paused >= h.seconds(10)
    await frontier.task_done(lease, DONE)  # the host answered: the streak ends
    lease = await asyncio.wait_for(frontier.get(), WAIT)
    await frontier.task_done(lease, failed)  # one failure after a success: no pause
    waiting = asyncio.create_task(frontier.get())
    await h.settle(frontier)
    if h.exact:
        assert waiting.done()  # handed out with no time passing
    assert (await asyncio.wait_for(waiting, WAIT)).item.url == "http://down.example/5"


# ================================================================================ outcomes
async def test_retry_goes_back_after_its_delay_and_keeps_join_open(h: Harness) -> None:
    frontier = await h.make()
    await frontier.put_many([item("/r"), item("/x")])
    lease = await frontier.get()
    assert lease.item.url == "http://a.example/r"
    retried_at = h.now()
    retry = TaskResult(Outcome.RETRY, retry_after=h.seconds(30), reason="timeout")
    await frontier.task_done(lease, retry)
    stats = await h.stats(frontier)
    assert (stats.queued, stats.in_flight, stats.done, stats.failed) == (2, 0, 0, 0)
    other = await asyncio.wait_for(frontier.get(), WAIT)
    assert other.item.url == "http://a.example/x"  # the retry went to the back, not ahead
    await frontier.task_done(other, DONE)
    joined = asyncio.create_task(frontier.join())
    waiting = asyncio.create_task(frontier.get())
    await h.settle(frontier)
    assert not joined.done()
    if h.exact:
        assert not waiting.done()
    await h.advance(frontier, 30)
    retried = await asyncio.wait_for(waiting, WAIT)
    assert retried.item == item("/r", tries=1)
    assert h.now() - retried_at >= h.seconds(30)
    await h.settle(frontier)
    assert not joined.done()  # still unfinished: it is leased again
    await frontier.task_done(retried, DONE)
    await asyncio.wait_for(joined, WAIT)
    assert (await h.stats(frontier)).done == 2


async def test_a_cancelled_get_does_not_lose_its_url(h: Harness) -> None:
    frontier = await h.make()
    getter = asyncio.create_task(frontier.get())
    await h.settle(frontier)
    await frontier.put(item("/only"))  # handed to the waiting getter (at once, or soon)...
    getter.cancel()  # ...which is cancelled before it could run
    with pytest.raises(asyncio.CancelledError):
        await getter
    assert (await h.stats(frontier)).in_flight == 0
    lease = await asyncio.wait_for(frontier.get(), WAIT)
    assert lease.item.url == "http://a.example/only"
    await frontier.task_done(lease, DONE)
    await asyncio.wait_for(frontier.join(), WAIT)


async def test_many_waiting_workers_each_get_one_url(h: Harness) -> None:
    frontier = await h.make(concurrency=8)
    getters = [asyncio.create_task(frontier.get()) for _ in range(5)]
    await h.settle(frontier)
    await frontier.put_many([item(f"/{n}") for n in range(3)])
    await h.settle(frontier)
    done = [g for g in getters if g.done()]
    assert sorted(g.result().item.url for g in done) == [f"http://a.example/{n}" for n in range(3)]
    assert (await h.stats(frontier)).in_flight == 3
    for g in getters:
        g.cancel()
    await asyncio.gather(*getters, return_exceptions=True)


async def test_a_lease_given_back_goes_first_without_a_try(h: Harness) -> None:
    frontier = await h.make(concurrency=1)
    await frontier.put_many([item("/1"), item("/2")])
    lease = await frontier.get()
    frontier.give_back(lease)
    stats = await h.stats(frontier)
    assert (stats.queued, stats.in_flight) == (2, 0)
    again = await asyncio.wait_for(frontier.get(), WAIT)
    assert again.item == lease.item  # first again, tries unchanged
    assert again.token != lease.token  # a new lease
    await frontier.task_done(again, DONE)
    assert await h.drain(frontier) == ["http://a.example/2"]


async def test_committed_captures_and_uncommit(h: Harness) -> None:
    """A persistent frontier keeps the captures each outcome committed, so resume can cut an
    ``.open`` WARC back to them and re-queue what it cut; a memory frontier commits none."""
    frontier = await h.make()
    await frontier.put_many([item("/1"), item("/2"), item("/3")])
    for start, end in ((100, 200), (200, 300)):  # one host's queue is FIFO: /1, then /2
        lease = await frontier.get()
        capture = WrittenCapture("F.warc.gz", start, end)
        await frontier.task_done(lease, TaskResult(Outcome.DONE, captures=(capture,)))
    await frontier.flush()
    committed = await frontier.committed_captures("F.warc.gz")
    if not frontier.persistent:
        assert committed == set()
        assert await frontier.uncommit_captures("F.warc.gz", 0) == 0
        return
    assert committed == {(100, 200), (200, 300)}
    assert await frontier.committed_captures("other.warc.gz") == set()
    assert await frontier.uncommit_captures("F.warc.gz", 200) == 1  # /2 was cut
    assert await frontier.committed_captures("F.warc.gz") == {(100, 200)}
    stats = await h.stats(frontier)
    assert (stats.done, stats.queued) == (1, 2)
    assert sorted(await h.drain(frontier)) == ["http://a.example/2", "http://a.example/3"]
    assert (await h.stats(frontier)).done == 3


# ================================================================================ the backend
def config_for(h: Harness, tmp_path: Path, redis: RedisServer | None) -> FrontierConfig:
    """The config a crawl of ``h``'s backend builds from its settings."""
    backend = "redis://127.0.0.1:6379/0" if h.name == "redis" else h.name
    settings = Settings(seeds=("http://a.example/",), frontier=backend, crawl_id="digests")
    config = frontier_config(settings, state_db=tmp_path / "frontier.sqlite", process_id="p-1")
    if redis is not None:  # the test server listens on a Unix socket
        crawl_id = f"digests-{next(_crawl_ids)}"
        config = dataclasses.replace(config, backend=redis.url, crawl_id=crawl_id)
    return config


@pytest.fixture
async def backend(
    h: Harness, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Backend]:
    redis = request.getfixturevalue("redis_server") if h.name == "redis" else None
    opened = open_backend(config_for(h, tmp_path, redis))
    await opened.frontier.open()
    yield opened
    await opened.frontier.close()


async def test_open_backend_brings_what_lives_in_the_store(h: Harness, backend: Backend) -> None:
    frontier = backend.frontier
    expected = {"memory": MemoryFrontier, "sqlite": SqliteFrontier, "redis": RedisFrontier}
    assert type(frontier) is expected[h.name]
    assert (backend.digests is None) is (h.name == "memory")  # the crawler keeps those in memory
    assert (backend.robots_cache is None) is (h.name != "redis")  # shared by processes only
    if h.name == "redis":
        assert not backend.is_last  # not known before the frontier closed
        await frontier.close()
    assert backend.is_last  # the only process of its crawl


async def test_the_digest_index_of_every_backend(h: Harness, backend: Backend) -> None:
    """Payload digest -> original: first writer wins, and an add is seen by the next lookup in
    this process; the index is the crawler's (dedup's DigestIndex)."""
    index: DigestIndex = backend.digests or MemoryDigestIndex()
    first = Original("<urn:uuid:1>", "http://a.example/x", "2024-01-01T00:00:00Z")
    assert await index.lookup("sha1:AAAA") is None
    await index.add("sha1:AAAA", first)
    await index.add("sha1:AAAA", Original("<urn:uuid:2>", "http://a.example/y", "2025"))
    assert await index.lookup("sha1:AAAA") == first
    assert await index.lookup("sha1:BBBB") is None
    none_id = Original(None, "http://a.example/z", "2024-01-02T00:00:00Z")
    await index.add("sha1:CCCC", none_id)  # a record id may be unknown (an earlier crawl's)
    assert await index.lookup("sha1:CCCC") == none_id
    await index.close()


async def test_the_captured_urls_of_every_backend(h: Harness, backend: Backend) -> None:
    """URL -> where its latest capture is: a later capture replaces it, an add is seen by the
    next lookup in this process; the store is the browser stage's (dedup's CapturedUrls)."""
    assert (backend.captured is None) is (h.name == "memory")  # the crawler keeps those itself
    captured: CapturedUrls = backend.captured or MemoryCapturedUrls()
    url = "http://a.example/static/app.js"
    assert await captured.lookup(url) is None
    await captured.add(url, RecordLocation("crawl-00000.warc.gz", 1234, 567))
    assert await captured.lookup(url) == RecordLocation("crawl-00000.warc.gz", 1234, 567)
    await captured.add(url, RecordLocation("crawl-00001.warc.gz", 0, 89))  # a retry's 200
    assert await captured.lookup(url) == RecordLocation("crawl-00001.warc.gz", 0, 89)
    assert await captured.lookup("http://a.example/static/other.js") is None
    await captured.close()


async def test_the_seed_store_of_every_backend(
    h: Harness, backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Seed key -> the seed's table of rules: what a resumed run, or another process of the
    crawl, judges a queued URL by before it has read that seed itself (policy.seeds)."""
    assert (backend.seeds is None) is (h.name == "memory")  # the crawler keeps those itself
    store: SeedStore = backend.seeds or MemorySeedStore()
    assert await store.seed_specs([1, 2]) == {}
    await store.keep_seeds({1: '{"url": "http://a.example/", "max_depth": 2}'})
    await store.keep_seeds({2 << 40: '{"url": "http://b.example/"}', 1: '{"url": "x"}'})
    await store.keep_seeds({})
    expected = {1: '{"url": "x"}', 2 << 40: '{"url": "http://b.example/"}'}  # a later one wins
    assert await store.seed_specs([1, 2 << 40, 3]) == expected
    if h.name == "memory":
        return
    # kept in the store itself: a second process (Redis) or the next run (SQLite) reads them
    await backend.frontier.close()
    redis = request.getfixturevalue("redis_server") if h.name == "redis" else None
    config = config_for(h, tmp_path, redis)
    if h.name == "redis":
        assert isinstance(backend.frontier, RedisFrontier)
        config = dataclasses.replace(config, crawl_id=backend.frontier.link.crawl_id)
    again = open_backend(config)
    await again.frontier.open()
    try:
        assert again.seeds is not None
        assert await again.seeds.seed_specs([2 << 40, 1]) == expected
    finally:
        await again.frontier.close()
