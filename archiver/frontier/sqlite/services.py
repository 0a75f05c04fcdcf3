"""What else this crawl keeps in the SQLite frontier's database: payload digests (WARC 1.1
section 6.7.2: what an identical-payload-digest revisit refers to), the URLs captured with
their records' places (what a browser's requests are answered from), the media bytes each
page's requisites took (the per-page media budget) and the rules of the seeds that have their
own (:mod:`archiver.policy.seeds`: what a resumed crawl judges the URLs it queued by).

Within-crawl deduplication then survives a resume and costs no heap per entry. The classes
satisfy :class:`archiver.dedup.digests.DigestIndex`,
:class:`archiver.dedup.captured.CapturedUrls` and :class:`archiver.policy.seeds.SeedStore`
structurally (the frontier does not import those stages). Each queues its work on the
frontier's :class:`~.store.Store`, in issue order with the frontier's own operations; the
frontier owns the database and closes it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from archiver.frontier.sqlite.bloom import MASK64, Bloom
from archiver.frontier.sqlite.ops import CALL, DIGEST_ADD, DIGEST_GET
from archiver.frontier.sqlite.store import Store
from archiver.models import Original, RecordLocation


class SqliteDigestIndex:
    """Payload digest -> the original capture, first writer wins (``INSERT OR IGNORE``).

    Entries are written in the frontier's operation order, after the capture that made them was
    written, and a lookup is answered after every operation issued before it (an ``add`` in this
    process is seen by the next ``lookup``). A Bloom filter of the stored digests answers "never
    added" without a query; the frontier's ``open`` hands it the one built from the database
    (:meth:`restore`). Closing this index leaves the frontier open.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._filter = Bloom(1, max_bytes=64)

    def restore(self, stored: Bloom) -> None:
        """The filter of the digests the database holds (built when the frontier opens)."""
        self._filter = stored

    async def lookup(self, digest: str) -> Original | None:
        store = self._store
        store.check()
        if not self._filter.might_contain(hash(digest) & MASK64):
            return None  # never added: no need to ask the database
        row = await store.call(DIGEST_GET, digest)
        return None if row is None else Original(row[0], row[1], row[2])

    async def add(self, digest: str, original: Original) -> None:
        store = self._store
        store.check()
        self._filter.add(hash(digest) & MASK64)
        store.submit(DIGEST_ADD, (digest, original.record_id, original.target_uri, original.date))

    async def close(self) -> None:
        """Nothing to close: the frontier owns the database."""


class SqliteCapturedUrls:
    """URL -> its latest capture's primary record, in the ``captured`` table (a later capture
    of a URL replaces the earlier one). Adds and lookups are operations of the frontier's store,
    in issue order, like the digest index's."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def lookup(self, url: str) -> RecordLocation | None:
        self._store.check()
        raw = await self._store.run(self._store.db.captured_get, url)
        return None if raw is None else RecordLocation.decode(raw)

    async def add(self, url: str, location: RecordLocation) -> None:
        self._store.check()
        self._store.submit(CALL, (self._store.db.captured_add, (url, location.encode())))

    async def close(self) -> None:
        """Nothing to close: the frontier owns the database."""


class SqliteMediaBytes:
    """Page -> the media bytes captured for its requisites so far, in the ``media_bytes``
    table (:class:`archiver.pipeline.mediabudget.MediaBytes`): a resumed crawl goes on with
    what each page has spent. Operations of the frontier's store, in issue order."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def spent(self, page: str) -> int:
        self._store.check()
        return int(await self._store.run(self._store.db.media_get, page))

    async def add(self, page: str, size: int) -> None:
        self._store.check()
        self._store.submit(CALL, (self._store.db.media_add, (page, size)))


class SqliteSeedStore:
    """Seed key -> the seed's table of rules (JSON text), in the ``seeds`` table; operations
    of the frontier's store, in issue order: a seed kept before its URLs were queued is found
    by whoever leases them."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def keep_seeds(self, specs: Mapping[int, str]) -> None:
        if specs:
            self._store.check()
            self._store.submit(CALL, (self._store.db.seeds_add, dict(specs)))

    async def seed_specs(self, keys: Collection[int]) -> dict[int, str]:
        self._store.check()
        found: dict[int, str] = await self._store.run(self._store.db.seeds_get, list(keys))
        return found
