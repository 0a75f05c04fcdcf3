"""Recording: an exchange becomes WARC records, and the single writer writes them.

Which records: a server-not-modified ``revisit`` for a ``304`` to a conditional request (WARC 1.1
section 6.7.3); an identical-payload-digest ``revisit`` when the payload was stored before, in
this crawl or an earlier one (section 6.7.2); else a ``response`` and its ``request``.

A revisit must never point at a record that might not exist. A payload's original is known to
later copies in this process once it is written, and goes to the crawl's digest index (kept
across a resume, shared by a crawl's processes) only once the frontier committed the lease it
belongs to: a resume cuts the captures of a lease never committed (a crash, a login session
that ended: :mod:`archiver.run.resume`), and an index entry written before would have the
resumed crawl write revisits of a record that is gone. A withdrawn lease's originals are
forgotten at once.
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
    Browsertrix Crawler gives the text it extracts; a hash route's ``#`` escaped), UTF-8 plain
    text."""
    return factory.resource(
        urls.page_record_uri(TEXT_PREFIX, url),
        "text/plain; charset=utf-8",
        text.encode("utf-8", "replace"),
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
        #: originals written whose lease is not committed yet: digest -> original, for this
        #: process's later copies (the digest index learns them on commit)
        self._unsettled: dict[str, Original] = {}

    async def committed(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to was handed to the frontier: the originals among
        them go to the digest index."""
        for capture in captures:
            self.uncommitted[capture.filename] -= 1
        for capture in captures:
            digest, original = self._settle(capture)
            if original is not None:
                await self._dedup.add(digest, original)

    def withdrawn(self, captures: list[WrittenCapture]) -> None:
        """The lease these captures belong to is abandoned uncommitted (a resume cuts them):
        no later copy may refer to the originals among them."""
        for capture in captures:
            self._settle(capture)

    def _settle(self, capture: WrittenCapture) -> tuple[str, Original | None]:
        """The capture's payload digest and, when it is an unsettled original, that original
        (no longer unsettled)."""
        primary = capture.primary
        digest = primary.payload_digest if primary is not None else None
        if primary is None or digest is None or primary.record_type != "response":
            return "", None
        original = self._unsettled.get(digest)
        if original is None or original.record_id != primary.record_id:
            return digest, None
        del self._unsettled[digest]
        return digest, original

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
                original = self._unsettled.get(digest)
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
        """Write, then register the payload's original for waiting and later copies (the
        digest index learns it once its lease is committed: :meth:`committed`)."""
        try:
            written = await self._writer.write(capture)
            # not sealed (renamed from .open) until the frontier committed this capture
            self.uncommitted[written.filename] += 1
            primary = written.primary
            if pending is not None and primary is not None:
                original = Original(primary.record_id, primary.target_uri, primary.date)
                self._unsettled[digest] = original
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
