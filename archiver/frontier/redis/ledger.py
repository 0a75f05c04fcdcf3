"""The Redis frontier's ledger of committed captures: the
:class:`~archiver.frontier.base.CaptureLedger` in ``P:commits:FILE``.

The queue writes it: ACK (``scripts/ack.lua``) records a lease's captures in the same script as
its outcome, so a capture is committed exactly when its lease is, for every process. What is
here reads it for resume (which ranges of an ``.open`` WARC file were committed; the URLs whose
captures the repair cut, put back in the queue by UNCOMMIT) and forgets the records of files
that were closed whole, which only a crash repair would need.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable
from typing import cast

import redis.asyncio as aioredis

from archiver.frontier.redis.pump import Barrier, Command, Pump
from archiver.policy.politeness import HostGate

#: WARC file names remembered (to notice a rotation), oldest dropped first.
KNOWN_FILES = 1000


class RedisLedger:
    """The committed captures of a crawl shared in Redis, for one process."""

    persistent = True

    def __init__(self, pump: Pump, gate: HostGate) -> None:
        self._pump = pump
        self._link = pump.link
        self._gate = gate
        self._current_file: str | None = None
        self._files: OrderedDict[str, None] = OrderedDict()  # WARC names seen, oldest first

    def note_file(self, filename: str) -> None:
        """An outcome committed a capture in ``filename``. A file never seen before means the
        writer rotated: the previous file was closed whole, so its commit record (only needed
        to repair an ``.open`` file) can go. An outcome for an older file arriving late never
        moves this back."""
        if filename in self._files:
            return
        self._files[filename] = None
        if len(self._files) > KNOWN_FILES:
            self._files.popitem(last=False)
        if self._current_file is not None:
            self._pump.push(Command(("DEL", self._link.key("commits:" + self._current_file))))
        self._current_file = filename

    async def flush(self) -> None:
        """Wait until every call made so far (puts, outcomes, host delays) is in Redis, and the
        counters (``statistics()``) are read back."""
        self._pump.check()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pump.push(Barrier(future), urgent=True)
        await future

    async def forget_captures(self, filenames: Iterable[str]) -> None:
        """Drop the commit records of WARC files that were closed whole (call after the
        writer closed cleanly; otherwise they expire after 7 days)."""
        keys = [self._link.key("commits:" + name) for name in filenames]
        if keys:

            async def delete(client: aioredis.Redis) -> None:
                await client.delete(*keys)

            await self._link.call(delete)

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        key = self._link.key("commits:" + filename)

        async def fields(client: aioredis.Redis) -> list[bytes]:
            return cast(list[bytes], await client.hkeys(key))

        found: set[tuple[int, int]] = set()
        for raw in await self._link.call(fields):
            start, end = raw.split(b" ")
            found.add((int(start), int(end)))
        return found

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        fixed = [self._gate.concurrency, filename, offset]
        return int(await self._link.script("uncommit", fixed))
