"""What a browser crawl captured, recalled: :class:`Recall`'s claims (one caller captures a URL
while the others wait; a location reaches the store only once committed) and revisits answered
with the payload they refer to."""

from __future__ import annotations

import asyncio
from pathlib import Path

from archiver.dedup.captured import MemoryCapturedUrls
from archiver.pipeline.recall import Claim, Recall, Recalled
from tests.dedup.test_captured import CHUNKED, PLAIN, location, write


async def test_a_revisit_is_answered_with_the_payload_it_refers_to(tmp_path: Path) -> None:
    original, revisit = await write(
        tmp_path,
        (CHUNKED, b"body{ a}", "http://a.test/style.css"),
        (CHUNKED, b"body{ a}", "http://a.test/style.css?v=2"),
    )
    assert revisit.records[0].record_type == "revisit"
    store = MemoryCapturedUrls()
    recall = Recall(store, tmp_path, max_body=1 << 20)
    # the original is not known yet: the revisit alone cannot be answered
    assert await recall.recall("http://a.test/style.css?v=2") is None
    recall.captured("http://a.test/style.css?v=2", revisit)
    assert await recall.recall("http://a.test/style.css?v=2") is None
    recall.captured("http://a.test/style.css", original)
    found = await recall.recall("http://a.test/style.css?v=2")
    assert found is not None
    assert (found.response.record_type, found.response.payload) == ("revisit", b"body{ a}")
    ex = found.exchange()
    assert (ex.status, ex.body, ex.content_type) == (200, b"body{ a}", "text/css")


async def test_one_claim_per_url_and_the_store_only_gets_committed_captures(
    tmp_path: Path,
) -> None:
    (capture,) = await write(tmp_path, (PLAIN, b"gone", "http://a.test/missing"))
    store = MemoryCapturedUrls()
    recall = Recall(store, tmp_path, max_body=1 << 20)
    first = await recall.claim("http://a.test/missing")
    assert isinstance(first, Claim)
    waiter = asyncio.create_task(recall.claim("http://a.test/missing"))
    await asyncio.sleep(0.01)
    assert not waiter.done(), "a second caller must wait for the one capturing the URL"
    recall.captured("http://a.test/missing", capture)
    first.release()
    second = await waiter
    assert isinstance(second, Recalled)
    assert second.response.payload == b"gone"
    assert len(store) == 0, "not committed yet"
    await recall.committed([capture])
    assert await store.lookup("http://a.test/missing") == location(capture)
    # a claim released without a capture lets the next caller capture it
    other = await recall.claim("http://a.test/other")
    assert isinstance(other, Claim)
    waiting = asyncio.create_task(recall.claim("http://a.test/other"))
    await asyncio.sleep(0.01)
    other.release()
    assert isinstance(await waiting, Claim)
