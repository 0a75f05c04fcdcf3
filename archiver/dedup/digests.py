"""Payload-digest lookups for revisit records: the one protocol, and the indexes it layers.

A capture whose payload digest was already stored (same crawl, any URL; or an earlier completed
crawl's index) is written as an identical-payload-digest ``revisit`` (WARC 1.1 section 6.7.2).
Entries are registered only after the original was written and the frontier committed its lease
(:mod:`archiver.pipeline.recording`), so a revisit never points at data that might not exist,
nor at a record a resume cuts.
"""

from __future__ import annotations

from typing import Protocol

from archiver.models import Original


class DigestIndex(Protocol):
    """Where identical payloads are looked up: payload digest -> the original capture.

    First writer wins, and a ``lookup`` sees every ``add`` made before it in this process.
    :class:`MemoryDigestIndex` is here; the crawl's own index in the SQLite database and the one
    shared in Redis live with their frontier backend (``archiver.frontier.sqlite.services``,
    ``archiver.frontier.redis.services``, which satisfy this protocol structurally: the frontier
    does not import this stage), built by ``archiver.frontier.open_backend``.
    """

    async def lookup(self, digest: str) -> Original | None: ...

    async def add(self, digest: str, original: Original) -> None: ...

    async def close(self) -> None: ...


class MemoryDigestIndex:
    """A dict: fine for small crawls and tests."""

    def __init__(self) -> None:
        self._entries: dict[str, Original] = {}

    async def lookup(self, digest: str) -> Original | None:
        return self._entries.get(digest)

    async def add(self, digest: str, original: Original) -> None:
        self._entries.setdefault(digest, original)

    async def close(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class LayeredDigestIndex:
    """This crawl's own digest index first, then earlier crawls: a payload stored earlier in
    this run is referred to locally; new originals are added to this run's index only."""

    def __init__(self, own: DigestIndex, *earlier: DigestIndex) -> None:
        self.own = own
        self.earlier = earlier

    async def lookup(self, digest: str) -> Original | None:
        found = await self.own.lookup(digest)
        if found is not None:
            return found
        for index in self.earlier:
            found = await index.lookup(digest)
            if found is not None:
                return found
        return None

    async def add(self, digest: str, original: Original) -> None:
        await self.own.add(digest, original)

    async def close(self) -> None:
        await self.own.close()
        for index in self.earlier:
            await index.close()
