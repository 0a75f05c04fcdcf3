"""What the processes of a shared crawl share besides the queue: payload digests (revisits across
processes, WARC 1.1 section 6.7.2), the URLs captured (a browser's requests answered from any
process's records), robots.txt fetches (RFC 9309 section 2.4 caching), the cookie jar (RFC
6265: one user agent's cookies, whichever process received them), the media bytes each page's
requisites took (one per-page budget, whichever process fetched them) and the rules of the
seeds that have their own (a URL one process queued is judged by its seed's rules in every
other).

Each satisfies the protocol of the stage that uses it structurally
(:class:`archiver.dedup.digests.DigestIndex`, :class:`archiver.dedup.captured.CapturedUrls`,
:class:`archiver.policy.robots.RobotsCache`, :class:`archiver.fetch.cookies.CookieStore`,
:class:`archiver.policy.seeds.SeedStore`): the frontier does not import those stages. The
digests, the captured URLs, the cookie jar and the seeds ride the frontier's
:class:`~.pump.Pump` (one pipelined round trip for everything pending); the robots.txt cache
uses the connection directly (its values are large and rare).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import cast

import redis.asyncio as aioredis

from archiver.frontier.redis.link import RedisLink
from archiver.frontier.redis.pump import Pump
from archiver.models import CachedRobots, Original, RecordLocation

#: RFC 9309 section 2.4: a cached robots.txt SHOULD NOT be used for more than 24 hours.
ROBOTS_TTL = 24 * 3600.0


class RedisDigestIndex:
    """The payload digests of a crawl shared in Redis (``P:digests``): digest -> the original
    capture (record id, URI, date), first writer wins (``HSETNX``).

    Both calls ride the frontier's pump (one pipelined round trip for everything pending)
    instead of a round trip each: per capture that was ~15 % of a Redis crawl's CPU. An ``add``
    is sent with the next round trip without waiting, and a ``lookup`` after it in this process
    is sent after it (read your writes); another process may miss a digest for a few
    milliseconds and store that payload in full: a missed revisit, never a revisit pointing at
    nothing (``add`` follows the write).
    """

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        self._key = pump.link.key("digests")

    async def lookup(self, digest: str) -> Original | None:
        raw = await self._pump.ask("HGET", self._key, digest)
        if raw is None:
            return None
        record_id, uri, date = json.loads(raw)
        return Original(record_id, uri, date)

    async def add(self, digest: str, original: Original) -> None:
        value = json.dumps([original.record_id, original.target_uri, original.date])
        self._pump.send("HSETNX", self._key, digest, value)

    async def close(self) -> None:
        """Nothing to close: the frontier owns the connection (and flushes on close)."""


class RedisCapturedUrls:
    """The URLs a crawl shared in Redis captured (``P:captured``): URL -> ``"WARC-FILE OFFSET
    LENGTH"`` of its latest primary record (``HSET``: a later capture replaces it). Commands
    ride the frontier's pump, as the digests' do; another process reads the record from the
    crawl's WARC directory (on another machine without it, the URL is fetched again)."""

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        self._key = pump.link.key("captured")

    async def lookup(self, url: str) -> RecordLocation | None:
        raw = await self._pump.ask("HGET", self._key, url)
        if raw is None:
            return None
        return RecordLocation.decode(_text(raw))

    async def add(self, url: str, location: RecordLocation) -> None:
        self._pump.send("HSET", self._key, url, location.encode())

    async def close(self) -> None:
        """Nothing to close: the frontier owns the connection (and flushes on close)."""


class RedisMediaBytes:
    """Page -> the media bytes captured for its requisites so far (``P:media``, a hash added
    to with ``HINCRBY``, atomic on the server): the per-page media budget of
    :mod:`archiver.pipeline.mediabudget`, whichever process captured the page's segments.
    Commands ride the frontier's pump; an ``add`` is seen by this process's next ``spent``
    and by the other processes' within a round trip."""

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        self._key = pump.link.key("media")

    async def spent(self, page: str) -> int:
        raw = await self._pump.ask("HGET", self._key, page)
        return 0 if raw is None else int(raw)

    async def add(self, page: str, size: int) -> None:
        self._pump.send("HINCRBY", self._key, page, size)


class RedisRobotsCache:
    """robots.txt per origin in ``P:robots:ORIGIN`` with a TTL (24 hours by default): one
    process fetches (and archives) an origin's robots.txt, the others parse the cached copy.
    Stored as ``"STATUS FETCHED_AT URL\\n" + body`` in one string key."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link

    async def get(self, origin: str) -> CachedRobots | None:
        key = self.link.key("robots:" + origin)

        async def read(client: aioredis.Redis) -> bytes | None:
            return cast(bytes | None, await client.get(key))

        raw = await self.link.call(read)
        if raw is None:
            return None
        head, _, body = raw.partition(b"\n")
        status, fetched, url = head.decode("utf-8").split(" ", 2)
        return CachedRobots(body, int(status) if status != "-" else None, float(fetched), url)

    async def set(self, origin: str, entry: CachedRobots, ttl: float = ROBOTS_TTL) -> None:
        key = self.link.key("robots:" + origin)
        status = "-" if entry.status is None else str(entry.status)
        value = f"{status} {entry.fetched_at!r} {entry.url}\n".encode() + entry.body

        async def write(client: aioredis.Redis) -> None:
            await client.set(key, value, px=max(int(ttl * 1000), 1))

        await self.link.call(write)


class RedisCookieStore:
    """The cookie jar of a crawl shared in Redis: ``P:cookies`` (HASH: one field per cookie,
    holding its cookies.txt line, both opaque here) and ``P:cookies:v`` (a counter bumped
    after every change).

    A process reads the counter before each fetch and the whole hash only when it moved, so the
    jar costs one small read per fetch. A change is written, then the counter bumped, in one
    process's command order: whoever sees the new count reads the new cookies. The fetcher
    publishes a response's cookies before its links are queued, so any process that leases
    those links has the cookies first. Commands ride the frontier's pump, like the digests.
    """

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        self._key = pump.link.key("cookies")
        self._version_key = pump.link.key("cookies:v")

    async def load(self) -> dict[str, str]:
        raw = await self._pump.ask("HGETALL", self._key)
        pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
        return {_text(name): _text(value) for name, value in pairs}

    async def version(self) -> int | None:
        raw = await self._pump.ask("GET", self._version_key)
        return int(raw) if raw is not None else 0

    async def update(self, changes: Mapping[str, str | None]) -> int | None:
        stored = [
            item for name, value in changes.items() if value is not None for item in (name, value)
        ]
        deleted = [name for name, value in changes.items() if value is None]
        if stored:
            self._pump.send("HSET", self._key, *stored)
        if deleted:
            self._pump.send("HDEL", self._key, *deleted)
        return int(await self._pump.ask("INCR", self._version_key))

    async def close(self) -> None:
        """Nothing to close: the frontier owns the connection (and flushes on close)."""


def _text(value: bytes | str) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


class RedisSeedStore:
    """Seed key -> the seed's table of rules (JSON text), in ``P:seeds``. A process keeps its
    seeds before it queues their URLs, and waits for the write: any process that leases one of
    those URLs then finds the rules."""

    def __init__(self, pump: Pump) -> None:
        self._pump = pump
        self._key = pump.link.key("seeds")

    async def keep_seeds(self, specs: Mapping[int, str]) -> None:
        if specs:
            pairs = [part for key, spec in specs.items() for part in (str(key), spec)]
            await self._pump.ask("HSET", self._key, *pairs)

    async def seed_specs(self, keys: Collection[int]) -> dict[int, str]:
        wanted = list(keys)
        if not wanted:
            return {}
        found = await self._pump.ask("HMGET", self._key, *map(str, wanted))
        return {
            key: raw.decode() if isinstance(raw, bytes) else str(raw)
            for key, raw in zip(wanted, found, strict=True)
            if raw is not None
        }
