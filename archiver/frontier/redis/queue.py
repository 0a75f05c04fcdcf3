"""The Redis frontier's queue: the :class:`~archiver.frontier.base.CrawlQueue` shared by every
process of a crawl (the package docstring has the data model and the protocol).

Calls become operations for the process's :class:`~.pump.Pump`: PUT (the seen set checked on
the server, atomically for every process), CLAIM for waiting ``get`` calls, ACK for outcomes
(with the lease's captures: the ledger is written in the same script), RELEASE for leases given
back. What only this process needs is kept here: a cache of URL keys known to be seen, so links
repeated on every page cost no round trip. The in-process
:class:`~archiver.frontier.local.HostScheduler` is not used: per-host limits must hold for every
process, so Redis decides.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable

from archiver.frontier.base import Lease, Outcomes
from archiver.frontier.redis.codec import ack_record, put_entry, url_key
from archiver.frontier.redis.ledger import RedisLedger
from archiver.frontier.redis.pump import Ack, Pump, Put
from archiver.models import CrawlItem, FrontierStats, TaskResult
from archiver.policy.politeness import HostGate, host_report

#: Items per PUT script call (a Lua script blocks the server while it runs).
PUT_CHUNK = 1000
#: URL keys remembered as seen in this process (one dict entry each, oldest dropped first).
KNOWN_URLS = 200_000


class RedisQueue:
    """The shared queue, for one process: its ``pump``, its mirror ``gate`` of the hosts it
    holds leases of, and the ``ledger`` its outcomes commit captures to."""

    def __init__(self, pump: Pump, gate: HostGate, ledger: RedisLedger) -> None:
        self.pump = pump
        self.gate = gate
        self._ledger = ledger
        self._known: OrderedDict[bytes, None] = OrderedDict()  # url-keys known to be seen

    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        self.pump.check()
        entries: list[tuple[bytes, str, bytes, CrawlItem]] = []
        batch: set[bytes] = set()
        for item in items:
            key = url_key(item.url)
            if key in batch or key in self._known:
                continue
            batch.add(key)
            host, data = put_entry(item, key)
            entries.append((key, host, data, item))
        if not entries:
            return []
        loop = asyncio.get_running_loop()
        chunks = [entries[i : i + PUT_CHUNK] for i in range(0, len(entries), PUT_CHUNK)]
        futures: list[asyncio.Future[list[int]]] = []
        for chunk in chunks:  # a script runs alone on the server: keep each one short
            futures.append(loop.create_future())
            self.pump.push(Put(chunk, futures[-1]), urgent=True)
        new: list[CrawlItem] = []
        for chunk, future in zip(chunks, futures, strict=True):
            new += [chunk[i][3] for i in await future]
        for key, *_ in entries:
            self._remember(key)
        return new

    async def get(self) -> Lease:
        self.pump.check()
        future = self.pump.claim()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.pump.give_back([future.result()])
            raise

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        self.pump.check()
        self.gate.release(lease.host, result)  # this process's mirror
        for capture in result.captures:
            self._ledger.note_file(capture.filename)
        record = ack_record(lease, result, int(host_report(result)))
        # a host asking us to slow down is told to every process at once
        self.pump.push(Ack(lease, record), urgent=result.host_pause is not None)
        await self.pump.wait_for_space()

    def give_back(self, lease: Lease) -> None:
        self.pump.give_back([lease])

    async def join(self) -> None:
        """Return when no URL is pending in any process. A fatal frontier error is raised by
        ``get``/``task_done`` (every worker calls them); ``join`` then simply keeps waiting."""
        while True:
            if await self.pump.read_unfinished() == 0:
                return

    def statistics(self) -> FrontierStats:
        c = self.pump.counts
        outcomes = Outcomes(done=c.get("d", 0), failed=c.get("f", 0), skipped=c.get("s", 0))
        return outcomes.stats(
            queued=c.get("queued", 0),
            in_flight=c.get("leased", 0),
            seen=c.get("seen", 0),
            hosts=c.get("hosts", 0),
        )

    def _remember(self, key: bytes) -> None:
        known = self._known
        known[key] = None
        if len(known) > KNOWN_URLS:
            known.popitem(last=False)
