"""Payload digests of this crawl in the SQLite frontier's database (WARC 1.1 section 6.7.2:
what an identical-payload-digest revisit refers to).

Within-crawl deduplication then survives a resume and costs no heap per digest. It satisfies
:class:`archiver.dedup.digests.DigestIndex` structurally (the frontier does not import the
dedup stage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.frontier.sqlite.bloom import MASK64
from archiver.frontier.sqlite.ops import DIGEST_ADD, DIGEST_GET
from archiver.models import Original

if TYPE_CHECKING:
    from archiver.frontier.sqlite.frontier import SqliteFrontier


class SqliteDigestIndex:
    """Payload digest -> the original capture, first writer wins (``INSERT OR IGNORE``).

    Entries are written in the frontier's operation order, after the capture that made them was
    written, and a lookup is answered after every operation issued before it (an ``add`` in this
    process is seen by the next ``lookup``). A Bloom filter of the stored digests answers "never
    added" without a query. Open the frontier first; closing this index leaves the frontier open.
    """

    def __init__(self, frontier: SqliteFrontier) -> None:
        self._frontier = frontier

    async def lookup(self, digest: str) -> Original | None:
        store = self._frontier.store
        store.check()
        if not self._frontier.digest_filter.might_contain(hash(digest) & MASK64):
            return None  # never added: no need to ask the database
        row = await store.call(DIGEST_GET, digest)
        return None if row is None else Original(row[0], row[1], row[2])

    async def add(self, digest: str, original: Original) -> None:
        store = self._frontier.store
        store.check()
        self._frontier.digest_filter.add(hash(digest) & MASK64)
        store.submit(DIGEST_ADD, (digest, original.record_id, original.target_uri, original.date))

    async def close(self) -> None:
        """Nothing to close: the frontier owns the database."""
