"""Once per URL, for crawls that use a browser: what the crawl captured is answered from its own
records, and what is being captured right now is waited for.

A static crawl fetches each URL once because the frontier hands each out once. A browser asks
for URLs the frontier never sees (a page's scripts, fonts, JSON) and for URLs the frontier also
holds (a stylesheet a static page linked), from several tabs at once. :class:`Recall` is where
both kinds of request meet, per process:

- :meth:`Recall.claim` looks a URL up: captured (by this process, not yet committed; or by any
  process of the crawl, committed, in the store of :mod:`archiver.dedup.captured`) -> the stored
  response, read back from its record; being captured now -> wait for it, then look again;
  otherwise the caller gets a :class:`Claim` and captures it, while every other caller waits;
- :meth:`Recall.captured` notes where a capture went as soon as it is written, so that other
  tabs are answered from it at once; :meth:`Recall.committed` hands it to the store once the
  frontier committed the lease it belongs to, so a location in the store never points at a
  record that a resume cuts from its file.

Only GET requests are recalled: a POST's answer depends on its body, and a page repeating one is
asking the server again.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from archiver.dedup.captured import (
    CapturedUrls,
    StoredResponse,
    read_payload,
    read_response,
)
from archiver.models import Exchange, RecordLocation, WrittenCapture
from archiver.spool import Spool
from archiver.timefmt import parse_w3c_datetime

RECALLED_METHODS = frozenset({"GET"})


@dataclass(frozen=True, slots=True)
class Recalled:
    """A URL's capture, read back from the crawl's records."""

    url: str
    response: StoredResponse
    location: RecordLocation

    def exchange(self) -> Exchange:
        """The capture as an :class:`~archiver.models.Exchange` for the pipeline's discovery
        and logging (no raw bytes: nothing of it is written again)."""
        stored = self.response
        payload = stored.payload
        return Exchange(
            target_uri=self.url,
            date=_warc_datetime(stored.date),
            request=b"",
            response=Spool.from_bytes(b""),
            response_length=0,
            status=stored.status,
            headers=list(stored.headers),
            block_digest="",
            payload_digest=stored.payload_digest or "",
            payload_length=len(payload) if payload is not None else 0,
            request_block_digest="",
            request_payload_digest="",
            body=payload,
        )


class Claim:
    """The right to capture one URL: every other caller waits until :meth:`release`."""

    def __init__(self, recall: Recall, url: str, done: asyncio.Future[None]) -> None:
        self._recall = recall
        self.url = url
        self._done = done

    def release(self) -> None:
        """The capture was written (and noted with :meth:`Recall.captured`) or failed."""
        self._recall.released(self.url, self._done)


class Recall:
    """Per process: the URLs captured, being captured and waiting to be committed."""

    def __init__(self, store: CapturedUrls, warcs: Path, *, max_body: int) -> None:
        self._store = store
        self._warcs = warcs
        self._max_body = max_body
        #: URL -> its capture written by this process, not yet committed by the frontier
        self._pending: dict[str, RecordLocation] = {}
        self._in_flight: dict[str, asyncio.Future[None]] = {}

    async def claim(self, url: str) -> Recalled | Claim:
        """The URL's capture read back, or the right to capture it (see the module doc)."""
        loop = asyncio.get_running_loop()
        while True:
            waiting = self._in_flight.get(url)
            if waiting is not None:
                await asyncio.shield(waiting)
                continue
            location = await self.location(url)
            if url in self._in_flight:
                continue  # claimed by another caller while this one looked
            if location is not None:
                recalled = await self._read(url, location)
                if recalled is not None:
                    return recalled
                if url in self._in_flight:
                    continue
            done: asyncio.Future[None] = loop.create_future()
            self._in_flight[url] = done
            return Claim(self, url, done)

    async def recall(self, url: str) -> Recalled | None:
        """The URL's capture read back, if there is one; never claims."""
        location = await self.location(url)
        return None if location is None else await self._read(url, location)

    async def location(self, url: str) -> RecordLocation | None:
        pending = self._pending.get(url)
        return pending if pending is not None else await self._store.lookup(url)

    def released(self, url: str, done: asyncio.Future[None]) -> None:
        """A :class:`Claim` ended: whoever waits for ``url`` looks again."""
        if self._in_flight.get(url) is done:
            del self._in_flight[url]
        if not done.done():
            done.set_result(None)

    def captured(self, url: str, written: WrittenCapture) -> None:
        """``url``'s capture was written (its lease not committed yet)."""
        primary = written.primary
        if primary is not None and primary.record_type in ("response", "revisit"):
            self._pending[url] = RecordLocation(primary.filename, primary.offset, primary.length)

    async def committed(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to was committed: they go to the store."""
        for capture in captures:
            primary = capture.primary
            if primary is None:
                continue
            location = self._pending.get(primary.target_uri)
            if (
                location is not None
                and location.offset == primary.offset
                and (location.filename == primary.filename)
            ):
                del self._pending[primary.target_uri]
                await self._store.add(primary.target_uri, location)

    async def _read(self, url: str, location: RecordLocation) -> Recalled | None:
        stored = await asyncio.to_thread(
            read_response, self._warcs, location, max_body=self._max_body
        )
        if stored is None:
            return None
        if stored.record_type == "revisit":
            stored = await self._revisited(stored)
            if stored is None:
                return None
        return Recalled(url, stored, location)

    async def _revisited(self, stored: StoredResponse) -> StoredResponse | None:
        """A revisit with the payload of the capture it refers to (WARC 1.1 section 6.7.2),
        when that capture is this crawl's and still has that payload."""
        if stored.refers_to is None:
            return None
        original = await self.location(stored.refers_to)
        if original is None:
            return None
        payload, too_large = await asyncio.to_thread(
            read_payload, self._warcs, original, stored.payload_digest, max_body=self._max_body
        )
        if payload is None and not too_large:
            return None
        return dataclasses.replace(stored, payload=payload, too_large=too_large)


def _warc_datetime(text: str) -> datetime:
    """A WARC-Date (``2024-01-02T03:04:05.123456Z``) as an aware datetime."""
    return parse_w3c_datetime(text) or datetime.now(UTC)


__all__ = ["RECALLED_METHODS", "Claim", "Recall", "Recalled"]
