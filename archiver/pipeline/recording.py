"""Recording: an exchange becomes WARC records, and the single writer writes them.

Which records: a server-not-modified ``revisit`` for a ``304`` to a conditional request (WARC 1.1
section 6.7.3); an identical-payload-digest ``revisit`` when the payload was stored before, in
this crawl or an earlier one (section 6.7.2); else a ``response`` and its ``request``. A digest is
registered for later revisits only once its original was written, so a revisit never points at
a record that might not exist.
"""

from __future__ import annotations

import asyncio
import collections

from archiver import urls
from archiver.dedup.revalidation import Revalidation
from archiver.extract.links import HTML_TYPES
from archiver.models import Exchange, Original, WrittenCapture
from archiver.pipeline.counters import Counted
from archiver.pipeline.parts import Parts, RunContext
from archiver.warc import records
from archiver.warc.records import PendingCapture

#: the target URI prefix of a page's text record (Browsertrix Crawler's ``urn:text:``)
TEXT_PREFIX = "urn:text:"


def text_capture(factory: records.RecordFactory, url: str, text: str) -> PendingCapture:
    """A page's text as a ``resource`` record ``urn:text:URL`` (``--text-records``; the name
    Browsertrix Crawler gives the text it extracts), UTF-8 plain text."""
    return factory.resource(
        TEXT_PREFIX + url, "text/plain; charset=utf-8", text.encode("utf-8", "replace")
    )


class Recorder:
    """Writes the captures of one run; counts what each WARC file holds until committed."""

    def __init__(self, context: RunContext, parts: Parts) -> None:
        self._settings = context.settings
        self._stats = context.stats
        self._writer = parts.writer
        self._factory = parts.factory
        self._dedup = parts.dedup
        self._previous = parts.previous
        #: per WARC file: captures written whose lease outcome is not yet handed to the frontier
        self.uncommitted: collections.Counter[str] = collections.Counter()
        #: payload digests whose first copy is being written right now
        self._in_flight: dict[str, asyncio.Future[Original | None]] = {}

    def committed(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to was handed to the frontier."""
        for capture in captures:
            self.uncommitted[capture.filename] -= 1

    async def record(
        self, ex: Exchange, revalidation: Revalidation | None = None
    ) -> tuple[WrittenCapture, Counted]:
        """Records for the exchange (a revisit when the payload was already stored), written;
        and what they added to the crawl's figures.

        An identical payload being written right now by another worker is waited for, so two
        copies fetched at the same moment still become one response and one revisit.
        """
        capture: PendingCapture | None = None
        if revalidation is not None and ex.status == 304 and self._previous is not None:
            # a 304 to a conditional request: a server-not-modified revisit
            capture = self._previous.not_modified(self._factory, ex, revalidation)
        digest = ex.payload_digest
        pending: asyncio.Future[Original | None] | None = None
        if capture is None and self._dedupable(ex):
            in_flight = self._in_flight.get(digest)
            original = await asyncio.shield(in_flight) if in_flight else None
            if original is None:
                original = await self._dedup.lookup(digest)
            if original is not None:
                capture = self._factory.revisit(ex, original)
                self._stats.dedup_bytes_saved += ex.response_length
            else:
                pending = asyncio.get_running_loop().create_future()
                self._in_flight[digest] = pending
        if capture is None:
            capture = self._factory.capture(ex)
        revisit = capture.records[0].record_type == "revisit"
        written = await self._write(capture, digest, pending)
        return written, self._count(ex, revisit)

    async def write(self, capture: PendingCapture) -> WrittenCapture:
        """Write a capture the crawl made itself (a screenshot's resource record)."""
        written = await self._writer.write(capture)
        self.uncommitted[written.filename] += 1
        return written

    def _dedupable(self, ex: Exchange) -> bool:
        """A whole 200 whose payload is big enough to be worth a revisit (``--dedup-min-size``)."""
        return (
            self._settings.dedup
            and ex.status == 200
            and ex.truncated is None
            and ex.payload_length >= max(self._settings.dedup_min_size, 1)
        )

    async def _write(
        self,
        capture: PendingCapture,
        digest: str,
        pending: asyncio.Future[Original | None] | None,
    ) -> WrittenCapture:
        """Write, then register the payload's original for waiting and later copies."""
        try:
            written = await self._writer.write(capture)
            # not sealed (renamed from .open) until the frontier committed this capture
            self.uncommitted[written.filename] += 1
            primary = written.primary
            if pending is not None and primary is not None:
                original = Original(primary.record_id, primary.target_uri, primary.date)
                await self._dedup.add(digest, original)
                pending.set_result(original)
        finally:
            if pending is not None:
                if not pending.done():
                    pending.set_result(None)  # the write failed: waiters store their own copy
                self._in_flight.pop(digest, None)
        return written

    def _count(self, ex: Exchange, revisit: bool) -> Counted:
        self._stats.bytes_written = self._writer.stats.bytes
        return self._stats.capture(
            url=ex.target_uri,
            host=urls.host_port(ex.target_uri),
            status=ex.status,
            mime=records.cdx_mime(ex.header("Content-Type")) or None,
            size=ex.response_length,
            revisit=revisit,
            is_page=ex.content_type in HTML_TYPES and 200 <= ex.status < 300,
            truncated=ex.truncated.value if ex.truncated else None,
        )


__all__ = ["Recorder"]
