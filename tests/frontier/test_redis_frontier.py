"""What only the Redis frontier does, against a real redis-server: several frontier instances
standing in for several processes, leases expiring and renewed, outages and restarts, the Lua
scripts (their declared arguments, the ACK script's host verdict), the shared digest index and
robots.txt cache, and the crawler on top. The behaviour every backend shares is
test_frontier.py's conformance suite, which runs on Redis too.

Each test uses its own crawl id on one server per module; the outage tests start their own
persistent server so they can stop and restart it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from archiver.config.assemble import frontier_config
from archiver.config.settings import Settings
from archiver.errors import FrontierError, FrontierUnavailableError
from archiver.frontier import Backend, open_backend
from archiver.frontier.redis import (
    RedisFrontier,
    decode_item,
    encode_item,
)
from archiver.frontier.redis.codec import URL_KEY_BYTES
from archiver.frontier.redis.lua import SCRIPTS, declared_argv
from archiver.models import (
    CachedRobots,
    CrawlItem,
    Exchange,
    Original,
    Outcome,
    TaskResult,
    WrittenCapture,
)
from archiver.policy.politeness import BACKOFF, Backoff, HostGate, host_verdict
from archiver.policy.robots import Robots
from archiver.run.crawler import Crawler
from archiver.spool import Spool
from tests.conftest import fast_settings
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer
from tests.support.spacing import assert_spaced
from tests.support.warcs import responses

DONE = TaskResult(Outcome.DONE, status=200)
WAIT = 15.0  # upper bound for anything that should happen "soon"

_ids = itertools.count()


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as srv:
        yield srv


@pytest.fixture
def crawl_id(request: pytest.FixtureRequest) -> str:
    return f"{request.node.name}-{next(_ids)}"


Factory = Callable[..., Awaitable[RedisFrontier]]


@pytest.fixture
async def make(server: RedisServer, crawl_id: str) -> AsyncIterator[Factory]:
    """Open frontiers on the test's crawl; each is a separate 'process' (its own id)."""
    opened: list[RedisFrontier] = []

    async def factory(
        *, url: str | None = None, crawl: str | None = None, **kwargs: Any
    ) -> RedisFrontier:
        gate = HostGate(
            concurrency=kwargs.pop("concurrency", 2),
            delay=kwargs.pop("delay", 0.0),
            max_pause=kwargs.pop("max_pause", 600.0),
            max_crawl_delay=kwargs.pop("max_crawl_delay", 30.0),
            backoff=kwargs.pop("backoff", BACKOFF),
        )
        kwargs.setdefault("process_id", f"proc-{len(opened)}")
        frontier = RedisFrontier(url or server.url, crawl or crawl_id, gate=gate, **kwargs)
        await frontier.open()
        opened.append(frontier)
        return frontier

    yield factory
    for frontier in opened:
        if frontier.pump.running:
            await frontier.close()


@pytest.fixture
async def client(server: RedisServer) -> AsyncIterator[aioredis.Redis]:
    c = aioredis.Redis.from_url(server.url)
    yield c
    await c.aclose()


async def reaped(client: aioredis.Redis, frontier: RedisFrontier) -> int:
    """How many leases the crawl's reaper requeued (expired, not handed back)."""
    value = await client.hget(frontier.prefix + "counts", "reaped")
    return int(value or 0)


def items(*urls: str) -> list[CrawlItem]:
    return [CrawlItem(url) for url in urls]


async def drain(
    frontier: RedisFrontier,
    *,
    workers: int = 4,
    seen: list[str] | None = None,
    children: dict[str, list[str]] | None = None,
) -> list[str]:
    """Run workers until the crawl joins; returns the URLs this frontier processed."""
    processed = seen if seen is not None else []

    async def work() -> None:
        while True:
            lease = await frontier.get()
            processed.append(lease.item.url)
            if children and lease.item.url in children:
                await frontier.put_many(items(*children[lease.item.url]))
            await frontier.task_done(lease, DONE)

    tasks = [asyncio.create_task(work()) for _ in range(workers)]
    try:
        async with asyncio.timeout(WAIT):
            await frontier.join()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert not frontier.pump.held  # every lease this process took was reported
    return processed


# -- the protocol -----------------------------------------------------------------------------


def test_items_round_trip() -> None:
    item = CrawlItem("http://a.test/é?q=1", redirects_left=3, depth=2, hops="LE", via="x", tries=1)
    assert decode_item(encode_item(item)) == item
    # the fields added later are written only when one of them is not 0: what a process
    # before them wrote (six fields, or seven with --extra-hops) reads back the same
    assert encode_item(item).endswith(b',"x",1]')
    for extra, seed in ((2, 0), (0, 1 << 47), (1, 5)):
        varied = dataclasses.replace(item, extra=extra, seed=seed)
        assert decode_item(encode_item(varied)) == varied
    assert encode_item(dataclasses.replace(item, seed=5)).endswith(b',"x",1,0,"","",5]')
    every = dataclasses.replace(item, found_by="feed", page="http://a.test/p", seed=7)
    assert decode_item(encode_item(every)) == every
    page_only = dataclasses.replace(item, page="http://a.test/p")
    assert encode_item(page_only).endswith(b',"x",1,0,"","http://a.test/p"]')
    assert decode_item(encode_item(page_only)) == page_only


@pytest.mark.parametrize(
    ("result", "next_urls"),
    [
        (TaskResult(Outcome.DONE, status=429, retry_after=0.5), {"http://a.test/2"}),
        # a bot challenge (a 403 here) asks every process to back off too; the URL is retried
        (
            TaskResult(Outcome.RETRY, status=403, reason="challenge", retry_after=0.5),
            {"http://a.test/1", "http://a.test/2"},
        ),
    ],
    ids=["429", "challenge"],
)
async def test_a_host_asking_to_back_off_is_paused_for_every_process(
    make: Factory, result: TaskResult, next_urls: set[str]
) -> None:
    one = await make(concurrency=4)
    two = await make(concurrency=4)
    await one.put_many(items("http://a.test/1", "http://a.test/2"))
    lease = await one.get()
    paused = time.monotonic()
    await one.task_done(lease, result)
    await one.flush()
    async with asyncio.timeout(WAIT):
        nxt = await two.get()
    assert time.monotonic() - paused >= 0.45
    assert nxt.item.url in next_urls
    await two.task_done(nxt, DONE)


async def test_failures_back_off_the_host(make: Factory, client: aioredis.Redis) -> None:
    frontier = await make(concurrency=4)
    await frontier.put_many(items(*(f"http://down.test/{i}" for i in range(4))))
    for _ in range(3):
        lease = await frontier.get()
        await frontier.task_done(lease, TaskResult(Outcome.FAILED, reason="connect-error"))
    await frontier.flush()
    paused, fails = await client.hmget(frontier.prefix + "host:down.test", ["pause", "fails"])
    now = float((await client.time())[0])
    assert fails is not None and paused is not None
    assert int(fails) == 3
    assert float(paused) - now > 3  # 5 s after the third failure in a row


async def test_crawl_delay_is_shared(make: Factory) -> None:
    one = await make(concurrency=4)
    two = await make(concurrency=4)
    one.set_host_delay("a.test", 0.3)
    await one.put_many(items("http://a.test/1", "http://a.test/2"))
    started = time.monotonic()  # before the first claim: the spacing counts from that claim
    first = await two.get()
    second = await two.get()
    assert time.monotonic() - started >= 0.3
    for lease in (first, second):
        await two.task_done(lease, DONE)


async def test_reserve_books_a_start_for_every_process(make: Factory) -> None:
    one = await make(concurrency=4, delay=0.3)
    two = await make(concurrency=4, delay=0.3)
    await one.put_many(items("http://a.test/1", "http://a.test/2"))
    started = time.monotonic()  # before the claim
    lease = await one.get()  # e.g. robots.txt fetched in this lease
    wait = one.reserve(lease.host)  # the page after it
    assert 0.3 - (time.monotonic() - started) <= wait <= 0.3  # counted from the claim
    async with asyncio.timeout(WAIT):
        other = await two.get()
    assert time.monotonic() - started >= 0.6  # spaced behind the reserved start
    await one.task_done(lease, DONE)
    await two.task_done(other, DONE)


async def test_server_errors_count_as_host_failures(make: Factory, client: aioredis.Redis) -> None:
    frontier = await make(concurrency=4)
    await frontier.put_many(items(*(f"http://five.test/{i}" for i in range(3))))
    for _ in range(3):
        lease = await frontier.get()
        await frontier.task_done(lease, TaskResult(Outcome.DONE, status=500))
    await frontier.flush()
    fails = await client.hget(frontier.prefix + "host:five.test", "fails")
    assert fails is not None and int(fails) == 3


# -- the scripts ------------------------------------------------------------------------------


def test_scripts_declare_their_arguments_and_calls_are_checked() -> None:
    assert set(SCRIPTS) == {
        "put", "claim", "ack", "release", "renew", "leave", "uncommit", "delay", "reserve",
        "politeness", "spacing",
    }  # fmt: skip
    assert SCRIPTS["spacing"].argv == ("conc", "host", "spacing")
    ack = SCRIPTS["ack"]
    assert ack.argv == (
        "conc", "max pause", "threshold", "first pause", "factor", "commits ttl"
    )  # fmt: skip
    assert ack.per_item == "outcome: record"
    assert SCRIPTS["leave"].per_item is None
    assert ack.args("P:meta", [1, 2, 3, 4, 5, 6], [b"r"])[1:] == [
        1,
        "P:meta",
        1,
        2,
        3,
        4,
        5,
        6,
        b"r",
    ]
    with pytest.raises(ValueError, match="script ack takes ARGV conc, max pause"):
        ack.args("P:meta", [1, 2])  # the backoff numbers missing
    with pytest.raises(ValueError, match="script leave"):
        SCRIPTS["leave"].args("P:meta", ["owner", 1.0], ["extra"])
    with pytest.raises(ValueError, match="one '-- ARGV:' line"):
        declared_argv("broken", "-- PUT: no argument line\nreturn 1")
    # the prelude's URL key length is the codec's (both are the state format)
    assert f"local KEY_BYTES = {URL_KEY_BYTES}\n" in SCRIPTS["put"].text


async def test_the_ack_script_applies_the_host_verdict(
    make: Factory, client: aioredis.Redis
) -> None:
    """The Lua ACK and politeness.host_verdict agree, outcome by outcome, on the failure count
    and the pause (numbers passed as arguments, here a backoff of its own). All leases are
    claimed first, so a pause never holds the next outcome back."""
    backoff = Backoff(threshold=2, first=7.0, factor=3.0)
    frontier = await make(concurrency=8, max_pause=100.0, backoff=backoff)
    results = [
        TaskResult(Outcome.FAILED, reason="connect-error"),
        TaskResult(Outcome.RETRY, status=503, retry_after=2.0),  # 2nd failure: 7 s > 2 s
        TaskResult(Outcome.DONE, status=500),  # 3rd: 21 s
        TaskResult(Outcome.DONE, status=200),  # healthy: the streak ends, the pause stays
        TaskResult(Outcome.DONE, status=429, retry_after=50.0),  # asked: 50 s
        TaskResult(Outcome.RETRY, status=403, reason="challenge"),  # neutral, asked 30 s
        TaskResult(Outcome.FAILED, reason="timeout"),
        TaskResult(Outcome.FAILED, reason="timeout"),  # 2nd again: 7 s
    ]
    await frontier.put_many(items(*(f"http://v.test/{n}" for n in range(len(results)))))
    leases = [await frontier.get() for _ in results]
    host_key = frontier.prefix + "host:v.test"

    async def server_time() -> float:
        seconds, micros = await client.time()
        return seconds + micros / 1e6

    failures, paused_until = 0, 0.0
    for lease, result in zip(leases, results, strict=True):
        failures, expected = host_verdict(result, failures, max_pause=100.0, backoff=backoff)
        before = await server_time()
        await frontier.task_done(lease, result)
        await frontier.flush()
        after = await server_time()
        fails, pause = await client.hmget(host_key, ["fails", "pause"])
        assert fails is not None and pause is not None
        assert int(fails) == failures
        if expected is None:
            assert float(pause) == paused_until
        else:  # applied at the ACK's time on the server, between before and after
            low = max(paused_until, before + expected)
            high = max(paused_until, after + expected)
            assert low <= float(pause) <= high, (result, expected, float(pause) - before)
            paused_until = float(pause)


# -- several processes ------------------------------------------------------------------------


async def test_two_processes_share_one_crawl(make: Factory) -> None:
    one = await make(concurrency=3)
    two = await make(concurrency=3)
    urls = [f"http://h{i % 5}.test/{i}" for i in range(200)]
    assert len(await one.put_many(items(*urls))) == 200
    assert await two.put_many(items(*urls)) == []  # the same seeds twice: harmless
    seen_one: list[str] = []
    seen_two: list[str] = []
    await asyncio.gather(drain(one, seen=seen_one), drain(two, seen=seen_two))
    assert seen_one and seen_two
    assert sorted(seen_one + seen_two) == sorted(urls)  # every URL once, across both
    assert one.statistics().done == two.statistics().done == 200


async def test_per_host_concurrency_holds_across_processes(make: Factory) -> None:
    frontiers = [await make(concurrency=2) for _ in range(3)]
    await frontiers[0].put_many(items(*(f"http://a.test/{i}" for i in range(30))))
    current = 0
    highest = 0

    async def work(frontier: RedisFrontier) -> None:
        nonlocal current, highest
        while True:
            lease = await frontier.get()
            current += 1
            highest = max(highest, current)
            # the "fetch": held while every process completes a round trip to Redis, so
            # their pending claims are answered while this lease is in flight
            await asyncio.gather(*(f.flush() for f in frontiers))
            current -= 1
            await frontier.task_done(lease, DONE)

    tasks = [asyncio.create_task(work(f)) for f in frontiers for _ in range(4)]
    try:
        async with asyncio.timeout(WAIT):
            await frontiers[1].join()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert highest == 2


async def test_round_trips_are_batched(make: Factory, client: aioredis.Redis) -> None:
    await client.config_resetstat()
    frontiers = [await make(concurrency=20) for _ in range(3)]
    urls = [f"http://h{i % 4}.test/{i}" for i in range(1500)]
    await frontiers[0].put_many(items(*urls))
    results = await asyncio.gather(*(drain(f, workers=8) for f in frontiers))
    assert sorted(itertools.chain(*results)) == sorted(urls)
    stats = await client.info("commandstats")
    calls = stats["cmdstat_evalsha"]["calls"]
    # unbatched, each URL costs a claim and an outcome (plus the put): 3000+ script calls
    assert calls < len(urls), calls


async def test_expired_lease_goes_to_another_process(make: Factory) -> None:
    dead = await make(lease_timeout=0.6)
    alive = await make(lease_timeout=0.6)
    await dead.put_many(items("http://a.test/1"))
    lost = await dead.get()
    await dead.abandon()  # kill -9: no outcome, no release, no heartbeat
    async with asyncio.timeout(WAIT):
        again = await alive.get()
    assert again.item == lost.item and again.token != lost.token
    await alive.task_done(again, DONE)
    async with asyncio.timeout(WAIT):
        await alive.join()
    assert alive.statistics().done == 1


async def test_late_outcome_counts_once(make: Factory) -> None:
    slow = await make(lease_timeout=0.6)
    other = await make(lease_timeout=0.6)
    await slow.put_many(items("http://a.test/1"))
    first = await slow.get()
    await slow.abandon()
    async with asyncio.timeout(WAIT):
        second = await other.get()  # the lease expired: fetched again
    # the first process was only slow: its outcome arrives late, then the second one's
    late = await make(process_id="proc-0-again", lease_timeout=0.6)
    await late.task_done(first, DONE)
    await late.flush()
    await other.task_done(second, DONE)
    # the late outcome alone ends the join: the second outcome is sent (and the counts read
    # back with it) by the flush, which the assertion below is about
    await other.flush()
    async with asyncio.timeout(WAIT):
        await other.join()
    stats = other.statistics()
    assert (stats.done, stats.in_flight, stats.queued) == (1, 0, 0)  # never marked done twice


async def test_heartbeat_keeps_slow_leases(make: Factory) -> None:
    worker = await make(lease_timeout=0.6)
    other = await make(lease_timeout=0.6)
    await worker.put_many(items("http://a.test/1", "http://a.test/2"))
    lease = await worker.get()
    other_lease = await other.get()
    assert other_lease.item != lease.item
    await other.task_done(other_lease, DONE)
    # three lease timeouts later the first lease is still ours: nobody was handed it
    stolen = asyncio.create_task(other.get())
    done, _ = await asyncio.wait({stolen}, timeout=1.8)
    assert not done
    stolen.cancel()
    await worker.task_done(lease, DONE)
    async with asyncio.timeout(WAIT):
        await worker.join()
    assert worker.statistics().done == 2


async def test_last_process_to_leave(make: Factory) -> None:
    one = await make()
    two = await make()
    await one.close()
    assert not one.last_to_leave
    await two.close()
    assert two.last_to_leave


async def test_close_hands_back_unfinished_leases(make: Factory, client: aioredis.Redis) -> None:
    one = await make()
    two = await make()
    await one.put_many(items("http://a.test/1"))
    lease = await one.get()
    await one.close()
    async with asyncio.timeout(WAIT):  # well inside the 120 s lease timeout
        again = await two.get()
    assert again.item == lease.item
    assert await reaped(client, two) == 0  # handed back by close, not reaped
    await two.task_done(again, DONE)


# -- resume bookkeeping -----------------------------------------------------------------------


def capture(filename: str, start: int, end: int) -> WrittenCapture:
    return WrittenCapture(filename=filename, start=start, end=end)


async def test_commits_of_a_closed_file_are_dropped(make: Factory) -> None:
    frontier = await make(concurrency=4)
    await frontier.put_many(items(*(f"http://a.test/{i}" for i in range(3))))
    for name in ("A.warc.gz", "B.warc.gz", "A.warc.gz"):  # the last outcome comes in late
        lease = await frontier.get()
        result = TaskResult(Outcome.DONE, captures=(capture(name, lease.token, 10**6),))
        await frontier.task_done(lease, result)
    await frontier.flush()
    assert len(await frontier.committed_captures("B.warc.gz")) == 1  # the file being written
    await frontier.forget_captures(["A.warc.gz", "B.warc.gz"])
    assert await frontier.committed_captures("B.warc.gz") == set()


async def test_a_restarted_process_with_the_same_id_frees_its_old_leases(
    make: Factory, client: aioredis.Redis
) -> None:
    old = await make(process_id="host-1", lease_timeout=60)
    await old.put_many(items("http://a.test/1"))
    lease = await old.get()
    await old.abandon()
    new = await make(process_id="host-1", lease_timeout=60)  # same host, same pid: old is dead
    async with asyncio.timeout(WAIT):  # well inside the 60 s lease timeout
        again = await new.get()
    assert again.item == lease.item
    assert await reaped(client, new) == 0  # recovered when the new process registered
    await new.task_done(again, DONE)


async def test_a_big_put_is_split_and_keeps_order(make: Factory) -> None:
    frontier = await make()
    urls = [f"http://h{i % 7}.test/{i}" for i in range(2500)] + ["http://h0.test/0"]
    new = await frontier.put_many(items(*urls))
    assert [item.url for item in new] == urls[:2500]
    await frontier.flush()
    assert frontier.statistics().seen == 2500


# -- failures -----------------------------------------------------------------------------------


async def test_unreachable_redis_is_a_clear_error() -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        frontier = RedisFrontier(f"redis://:secret@127.0.0.1:{port}/0", "x")
        with pytest.raises(FrontierUnavailableError) as info:
            await frontier.open()
    message = str(info.value)
    assert message.startswith(f"cannot reach Redis at redis://:***@127.0.0.1:{port}/0: ")
    assert "\n" not in message and "secret" not in message


async def test_lost_state_is_an_error_not_a_finished_crawl(
    make: Factory, client: aioredis.Redis
) -> None:
    frontier = await make()
    await frontier.put_many(items("http://a.test/1", "http://a.test/2"))
    lease = await frontier.get()
    keys = [k async for k in client.scan_iter(match=frontier.prefix + "*")]
    await client.delete(*keys)  # what a restart without persistence looks like
    await frontier.task_done(lease, DONE)
    with pytest.raises(FrontierError, match="state is gone"):
        async with asyncio.timeout(WAIT):
            await frontier.get()
    with pytest.raises(FrontierError):
        await frontier.task_done(lease, DONE)


async def test_outage_pauses_workers_and_loses_nothing(crawl_id: str) -> None:
    server = RedisServer(persistent=True)
    server.start()
    frontier = RedisFrontier(
        server.url, crawl_id, gate=HostGate(concurrency=3, delay=0.0), lease_timeout=2.0
    )
    try:
        await frontier.open()
        urls = [f"http://h{i % 3}.test/{i}" for i in range(30)]
        await frontier.put_many(items(*urls))
        processed: Counter[str] = Counter()
        proceed = asyncio.Event()
        blocked = asyncio.Event()
        holding = 0

        async def work() -> None:
            nonlocal holding
            while True:
                lease = await frontier.get()
                processed[lease.item.url] += 1
                if sum(processed.values()) > 10 and not proceed.is_set():
                    holding += 1
                    if holding == 3:
                        blocked.set()
                    await proceed.wait()  # in flight while Redis goes away
                await frontier.task_done(lease, DONE)

        tasks = [asyncio.create_task(work()) for _ in range(3)]
        async with asyncio.timeout(WAIT):
            await blocked.wait()
        await asyncio.to_thread(server.stop)
        proceed.set()  # outcomes reported during the outage are kept
        async with asyncio.timeout(WAIT):
            await frontier.wait_unavailable()
        assert not frontier.available
        await asyncio.to_thread(server.start)
        async with asyncio.timeout(WAIT):
            await frontier.wait_available()
            await frontier.join()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert sorted(processed) == sorted(urls)
        assert set(processed.values()) == {1}  # nothing fetched twice
        stats = frontier.statistics()
        assert (stats.done, stats.queued, stats.in_flight) == (30, 0, 0)
    finally:
        await frontier.close()
        server.cleanup()


async def test_outage_between_two_processes_keeps_leases(crawl_id: str) -> None:
    """After a restart every lease deadline may have passed: nobody reaps before each live
    process had a lease timeout to renew its own.

    Checked by order and by the crawl's counters, not by waiting a while for nothing to happen:
    the first claim after the restart hands out the other URL (a reap would have put the held
    one first); once the holder is back, its lease is renewed past the server's clock; and at
    the end the reaper has requeued nothing. The only timing left is the protocol's own: the
    holder reconnects (backoff capped at a quarter of the lease timeout) well within the lease
    timeout the other process waits after its own reconnection.
    """
    server = RedisServer(persistent=True)
    server.start()
    gate = HostGate(concurrency=4, delay=0.0)
    one = RedisFrontier(server.url, crawl_id, gate=gate, lease_timeout=2.0, process_id="one")
    two = RedisFrontier(server.url, crawl_id, gate=gate, lease_timeout=2.0, process_id="two")
    client = aioredis.Redis.from_url(server.url)
    try:
        await one.open()
        await two.open()
        await one.put_many(items("http://a.test/1", "http://a.test/2"))
        held = await one.get()
        await asyncio.to_thread(server.stop)
        down = time.monotonic()
        getter = asyncio.create_task(two.get())
        async with asyncio.timeout(WAIT):
            await one.wait_unavailable()  # its heartbeat failed
            await two.wait_unavailable()
        await asyncio.sleep(max(3.0 - (time.monotonic() - down), 0))  # outlast the lease timeout
        await asyncio.to_thread(server.start)
        async with asyncio.timeout(WAIT):
            other = await getter
        assert other.item != held.item  # the held lease was not reaped into the queue's front
        async with asyncio.timeout(WAIT):
            await one.wait_available()
            await one.flush()  # its first round trip since: the renewal went with it
        deadline = await client.zscore(one.prefix + "leases", str(held.token))
        seconds, micros = await client.time()
        assert deadline is not None and deadline > seconds + micros / 1e6  # renewed
        await one.task_done(held, DONE)
        await two.task_done(other, DONE)
        async with asyncio.timeout(WAIT):
            await one.join()
        assert one.statistics().done == 2
        assert await reaped(client, one) == 0  # nothing was reaped, at any point
    finally:
        await client.aclose()
        await one.close()
        await two.close()
        server.cleanup()


# -- the crawler on top ---------------------------------------------------------------------


def redis_backend(
    settings: Settings, server: RedisServer, crawl_id: str, *, process_id: str | None = None
) -> Backend:
    """The backend a crawl with ``settings`` builds, on the test server's Unix socket (which
    ``--frontier`` does not take)."""
    config = frontier_config(settings, state_db=Path("unused.sqlite"), process_id=process_id)
    return open_backend(dataclasses.replace(config, backend=server.url, crawl_id=crawl_id))


async def test_a_crawl_through_redis_obeys_robots_and_crawl_delay(
    server: RedisServer, crawl_id: str, tmp_path: Path
) -> None:
    """The real crawler on the Redis frontier: robots.txt archived and obeyed, its
    Crawl-delay applied to every start (set_host_delay, reserve)."""
    async with SiteServer() as site:
        site.add_file(
            "/robots.txt", b"User-agent: *\nDisallow: /private\nCrawl-delay: 0.5\n", "text/plain"
        )
        site.add_page("/", '<a href="/a">a</a> <a href="/b">b</a> <a href="/private/x">x</a>')
        site.add_page("/a", '<a href="/b">b</a>')
        site.add_page("/b", "leaf")
        settings = fast_settings(
            tmp_path / "out", site.url("/"), robots="obey", per_host_concurrency=4
        )
        backend = redis_backend(settings, server, crawl_id)
        frontier = backend.frontier
        result = await Crawler(settings, backend=backend).run()
        assert result.status == "completed", result.reason
        hits = sorted(site.counters.hits, key=lambda hit: hit.started)
    assert [hit.path for hit in hits][:2] == ["/robots.txt", "/"]
    assert sorted(hit.path for hit in hits) == ["/", "/a", "/b", "/robots.txt"]
    assert_spaced((hit.started for hit in hits), 0.5)
    assert frontier.statistics().done == 3 and frontier.statistics().skipped == 1


async def test_two_crawlers_on_one_redis_crawl_store_a_shared_payload_as_revisits(
    server: RedisServer, crawl_id: str, tmp_path: Path
) -> None:
    """Dedup digests go through each process's pump (lookups wait for their reply, adds ride
    the next round trip): across two crawlers of one crawl, 30 images with one payload are
    stored in full at most once per crawler, every other copy a revisit that points at a
    stored response."""
    image = b"\x89PNG\r\n\x1a\n" + b"one payload" * 300
    async with SiteServer() as site:
        pages = [f"/p{i}" for i in range(6)]
        site.add_page("/", "".join(f'<a href="{p}">{p}</a>' for p in pages))
        for n, page in enumerate(pages):
            site.add_page(page, "".join(f'<img src="/img/{n}-{i}.png">' for i in range(5)))
            for i in range(5):
                site.add_file(f"/img/{n}-{i}.png", image, "image/png")
        crawlers = []
        for name in ("one", "two"):
            # one worker each: a payload seen before is found in Redis, not among the
            # process's own fetches in flight
            settings = fast_settings(
                tmp_path / name, site.url("/"), workers=1, per_host_concurrency=2
            )
            backend = redis_backend(settings, server, crawl_id, process_id=f"test-{name}")
            crawlers.append(Crawler(settings, backend=backend))
        results = await asyncio.gather(*(crawler.run() for crawler in crawlers))
    assert [r.status for r in results] == ["completed", "completed"], results
    images = [
        record
        for name in ("one", "two")
        for record in responses(tmp_path / name / "warcs")
        if (record.uri or "").endswith(".png")
    ]
    assert len(images) == 30  # each image captured once, by one of the two
    stored = {r.get("WARC-Record-ID"): r for r in images if r.type == "response"}
    revisits = [r for r in images if r.type == "revisit"]
    assert 1 <= len(stored) <= 2 and len(revisits) == 30 - len(stored)
    for revisit in revisits:
        assert revisit.get("WARC-Refers-To") in stored
        original = stored[revisit.get("WARC-Refers-To")]
        assert revisit.get("WARC-Refers-To-Target-URI") == original.get("WARC-Target-URI")
        assert revisit.get("WARC-Payload-Digest") == original.get("WARC-Payload-Digest")


# -- shared services ------------------------------------------------------------------------


async def test_digest_index_first_writer_wins(make: Factory, client: aioredis.Redis) -> None:
    first, second = await make(), await make()
    one, two = first.digest_index(), second.digest_index()
    assert await one.lookup("sha1:AAA") is None
    await one.add("sha1:AAA", Original("<urn:uuid:1>", "http://a.test/", "2024-01-01T00:00:00Z"))
    await first.flush()  # an add goes with the pump's next round trip; flush waits for it
    assert await client.hexists(first.prefix + "digests", "sha1:AAA")
    await two.add("sha1:AAA", Original("<urn:uuid:2>", "http://b.test/", "2024-01-02T00:00:00Z"))
    found = await two.lookup("sha1:AAA")  # after its own add, in call order
    assert found == Original("<urn:uuid:1>", "http://a.test/", "2024-01-01T00:00:00Z")
    await one.add("sha1:BBB", Original("<urn:uuid:3>", "http://a.test/b", "2024-01-03T00:00:00Z"))
    assert await one.lookup("sha1:BBB") == Original(
        "<urn:uuid:3>", "http://a.test/b", "2024-01-03T00:00:00Z"
    )


async def test_media_bytes_are_one_count_per_page_for_every_process(
    make: Factory, client: aioredis.Redis
) -> None:
    """Two processes' frontiers add to one page's media bytes: each sees the other's."""
    first, second = await make(), await make()
    one, two = first.media_bytes(), second.media_bytes()
    page = "http://a.test/watch"
    assert await one.spent(page) == 0
    await one.add(page, 1_000)
    await two.add(page, 250)
    await two.add("http://a.test/other", 7)
    await first.flush()
    await second.flush()
    assert await one.spent(page) == await two.spent(page) == 1_250
    assert await client.hget(first.prefix + "media", page) == b"1250"
    assert await one.spent("http://a.test/other") == 7


async def test_robots_cache_round_trip_and_ttl(make: Factory, client: aioredis.Redis) -> None:
    frontier = await make()
    cache = frontier.robots_cache()
    assert await cache.get("http://a.test") is None
    entry = CachedRobots(
        b"User-agent: *\nDisallow: /x\n", 200, 1700000000.25, "http://a.test/robots.txt"
    )
    await cache.set("http://a.test", entry)
    await cache.set("http://b.test", CachedRobots(b"", None, 1700000001.0), ttl=60)
    assert await cache.get("http://a.test") == entry
    assert await cache.get("http://b.test") == CachedRobots(b"", None, 1700000001.0)
    ttl = await client.pttl(frontier.prefix + "robots:http://a.test")
    assert 23 * 3600 * 1000 < ttl <= 24 * 3600 * 1000
    assert await client.pttl(frontier.prefix + "robots:http://b.test") <= 60_000


async def test_processes_share_robots_txt_fetches(make: Factory) -> None:
    """Two processes of one crawl: the first fetches (and archives) robots.txt, the second
    parses the shared copy: same verdicts, the Crawl-delay applied, no second fetch."""
    one, two = await make(), await make()
    fetched: list[str] = []
    body = b"User-agent: *\nDisallow: /private\nCrawl-delay: 3\n"

    async def fetch(url: str) -> Exchange:
        fetched.append(url)
        response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        return Exchange(
            target_uri=url,
            date=datetime.now(UTC),
            request=b"",
            response=Spool.from_bytes(response),
            response_length=len(response),
            status=200,
            headers=[],
            block_digest="",
            payload_digest="",
            payload_length=len(body),
            request_block_digest="",
            request_payload_digest="",
            body=body,
        )

    delays: list[tuple[str, float]] = []
    first = Robots(shared=one.robots_cache(), set_host_delay=lambda h, d: delays.append((h, d)))
    second = Robots(shared=two.robots_cache(), set_host_delay=lambda h, d: delays.append((h, d)))
    page, private = CrawlItem("http://a.test/page"), CrawlItem("http://a.test/private/x")
    assert await first.allowed(page, fetch) and not await first.allowed(private, fetch)
    assert await second.allowed(page, fetch) and not await second.allowed(private, fetch)
    assert fetched == ["http://a.test/robots.txt"]
    assert delays == [("a.test", 3.0), ("a.test", 3.0)]
