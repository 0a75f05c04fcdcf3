"""Conditional recrawls: validators from an earlier capture, and what a ``304`` becomes.

A request for a URL an earlier crawl captured carries that capture's validators, as the server
sent them: ``ETag`` as ``If-None-Match`` (RFC 9110 section 13.1.2), ``Last-Modified`` as
``If-Modified-Since`` (section 13.1.3). A ``304 Not Modified`` answer is archived as a
server-not-modified ``revisit`` (WARC 1.1 section 6.7.3) that refers to the earlier capture; its
links and its page entry come from that original, read back from its WARC file.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from archiver import digest as digests
from archiver.dedup.sources import Capture, Source, SourceLookup, read_stored
from archiver.fetch.httpframe import dechunk
from archiver.models import Exchange, Original
from archiver.warc.records import (
    PROFILE_NOT_MODIFIED,
    PendingCapture,
    PendingRecord,
    RecordFactory,
)

#: The part of an original's body read back for link extraction after a 304.
MAX_BODY = 8 * 1024 * 1024
_LINK_TYPES = ("text/html", "application/xhtml+xml", "text/css")


@dataclass(frozen=True, slots=True)
class Revalidation:
    """What a conditional request needs, and what its ``304`` revisit refers to."""

    url: str
    headers: dict[str, str]  #: If-None-Match / If-Modified-Since, values as the server sent them
    original: Original  #: the earlier capture that holds the content
    payload_digest: str  #: the original's payload digest (a 304 has no payload of its own)
    content: Capture  #: where the original is stored
    source: Source  #: the source it was found through


def find_revalidation(lookups: Sequence[SourceLookup], url: str) -> Revalidation | None:
    """Conditional request headers for ``url`` from its newest capture in ``lookups``, or None.

    Only a capture that replays as a 200 with its content available qualifies, and only when
    the server gave a validator: ``ETag`` (sent back as ``If-None-Match``, RFC 9110 section
    13.1.2) and/or ``Last-Modified`` (``If-Modified-Since``, section 13.1.3), byte for byte.
    """
    best: tuple[SourceLookup, Capture] | None = None
    for lookup in lookups:
        capture = lookup.latest(url)
        if capture is not None and (best is None or capture.ts > best[1].ts):
            best = (lookup, capture)
    if best is None:
        return None
    lookup, latest = best
    found: tuple[Original, Capture] | None = None
    if latest.revisit and latest.status in (None, 200) and latest.digest:
        found = lookup.usable_original(latest.digest)  # stored earlier, maybe at another URL
    elif not latest.revisit and latest.status == 200 and latest.digest:
        details = lookup.details(latest, original=True)
        if details is not None:
            found = Original(details.record_id, url, details.date), latest
    if found is None:
        return None
    original, content = found
    validators = lookup.details(latest, original=False)
    if validators is None or not (validators.etag or validators.last_modified):
        # a server-not-modified revisit keeps no headers: the original's still hold
        validators = lookup.details(content, original=True)
    if validators is None or not (validators.etag or validators.last_modified):
        return None
    headers: dict[str, str] = {}
    if validators.etag:
        headers["If-None-Match"] = validators.etag
    if validators.last_modified:
        headers["If-Modified-Since"] = validators.last_modified
    assert content.digest is not None
    return Revalidation(url, headers, original, content.digest, content, lookup.source)


def not_modified_revisit(
    factory: RecordFactory, ex: Exchange, revalidation: Revalidation
) -> PendingCapture:
    """The server-not-modified revisit for a ``304`` answer to a conditional request.

    WARC 1.1 section 6.7.3 allows the block to be empty or the 304 response. It is empty:
    pywb replays a revisit with the HTTP headers of its own block when it has some, and any
    3xx status there as an empty body (``resolvingloader.py``, pywb#751), so a stored 304
    would replay as a 304. With no block pywb takes headers and body from the original,
    which it finds by ``WARC-Refers-To-Target-URI`` + ``WARC-Refers-To-Date`` + the CDX
    ``digest``: so ``WARC-Payload-Digest`` and the index line carry the
    *original's* payload digest (the 304 itself has no payload). The conditional request is
    kept, as sent, in the request record.
    """
    capture = factory.revisit(ex, revalidation.original, profile=PROFILE_NOT_MODIFIED)
    head = capture.records[0]
    empty_digest = digests.digest_bytes(factory.algorithm, b"")
    headers: list[tuple[str, str]] = []
    replaced = {
        "WARC-Block-Digest": empty_digest,
        "WARC-Payload-Digest": revalidation.payload_digest,
    }
    for name, value in head.headers:
        if name != "WARC-Truncated":  # nothing is kept, so nothing is truncated
            headers.append((name, replaced.get(name, value)))
    capture.records[0] = PendingRecord(head.record_type, headers, b"", 0)
    assert capture.index is not None
    # what cdxj-indexer writes for a revisit without HTTP headers: no status
    capture.index = dataclasses.replace(
        capture.index, status=None, digest=revalidation.payload_digest
    )
    capture.payload_digest = revalidation.payload_digest
    return capture


async def original_exchange(ex: Exchange, revalidation: Revalidation) -> Exchange:
    """``ex`` (a 304) as the original it stands for: its status, headers and, for HTML and
    CSS within :data:`MAX_BODY`, its body, so links are still discovered and the page is
    still listed. ``ex`` itself when the original cannot be read."""
    record = await asyncio.to_thread(read_stored, revalidation.content, body_limit=MAX_BODY)
    if record is None or record.http is None:
        return ex
    status = record.http.status
    headers = record.http.text_fields()
    content_type = (record.header("Content-Type") or "").split(";", 1)[0].strip().lower()
    body: bytes | None = None
    if record.body is not None and content_type in _LINK_TYPES:
        body = record.body
        if "chunked" in (record.header("Transfer-Encoding") or "").lower():
            body, error = dechunk(body)
            if error is not None:
                body = None
    return dataclasses.replace(ex, status=status, headers=headers, body=body)


__all__ = [
    "MAX_BODY",
    "Revalidation",
    "find_revalidation",
    "not_modified_revisit",
    "original_exchange",
]
