"""How the Redis frontier writes URLs and items into Redis values (the ``archiver-redis/1``
state format).

A URL is known by its key: 16 bytes of BLAKE2b, so the seen set costs the same whatever the
URL's length. A queued item is ``url-key + JSON`` of the :class:`~archiver.models.CrawlItem`;
the key comes first so the scripts can check a URL's state without parsing JSON. Fields inside
one script argument are separated by NUL, which neither a host nor a number nor a WARC file name
contains (the item goes last: its binary key may).
"""

from __future__ import annotations

import hashlib
import json

from archiver.frontier.base import Lease
from archiver.models import CrawlItem, Outcome, TaskResult
from archiver.urls import host_port

#: Size of the URL key (BLAKE2b digest): 128 bits, collision-free for any crawl. The Lua
#: prelude's KEY_BYTES is the same number.
URL_KEY_BYTES = 16

#: An outcome's letter in ``P:seen`` (q is pending) and in the ACK record.
OUTCOME_CODES = {
    Outcome.DONE: "d",
    Outcome.FAILED: "f",
    Outcome.SKIPPED: "s",
    Outcome.RETRY: "r",
}


def url_key(url: str) -> bytes:
    """The URL's key in the seen set: 16 bytes of BLAKE2b, whatever the URL's length."""
    return hashlib.blake2b(url.encode("utf-8"), digest_size=URL_KEY_BYTES).digest()


def item_json(item: CrawlItem) -> bytes:
    """``[url, redirects_left, depth, hops, via, tries]``, then ``extra`` (``--extra-hops``),
    ``found_by`` (the extractor), ``page`` (a requisite's page) and ``seed`` (per-seed rules),
    each only when it or one after it is set: items written before they existed read back
    unchanged, and an item of a seed, of the crawl's own rules, found by no named extractor
    costs no byte more."""
    fields: list[object] = [item.url, item.redirects_left, item.depth, item.hops, item.via]
    fields.append(item.tries)
    if item.extra or item.found_by or item.page or item.seed:
        fields.append(item.extra)
    if item.found_by or item.page or item.seed:
        fields.append(item.found_by)
    if item.page or item.seed:
        fields.append(item.page)
    if item.seed:
        fields.append(item.seed)
    body = json.dumps(fields, separators=(",", ":"), ensure_ascii=False)
    return body.encode("utf-8")


def encode_item(item: CrawlItem, key: bytes | None = None) -> bytes:
    """``url-key + JSON``: the key first, so scripts can check the URL's state without JSON."""
    return (key or url_key(item.url)) + item_json(item)


def decode_item(data: bytes) -> CrawlItem:
    url, redirects_left, depth, hops, via, tries, *rest = json.loads(data[URL_KEY_BYTES:])
    return CrawlItem(
        url=url,
        redirects_left=redirects_left,
        depth=depth,
        hops=hops,
        via=via,
        tries=tries,
        extra=rest[0] if rest else 0,
        found_by=rest[1] if len(rest) > 1 else "",
        page=rest[2] if len(rest) > 2 else "",
        seed=rest[3] if len(rest) > 3 else 0,
    )


def put_entry(item: CrawlItem, key: bytes) -> tuple[str, bytes]:
    """The item's host and its PUT argument: ``url-key HOST \\0 item-json``."""
    host = host_port(item.url)
    return host, key + host.encode() + b"\0" + item_json(item)


def ack_record(lease: Lease, result: TaskResult, report: int) -> bytes:
    """One outcome as an ACK argument (its fields are listed in ``scripts/ack.lua``); a RETRY
    carries the item with one more try."""
    outcome = result.outcome
    pause = result.host_pause
    item = lease.item.retry() if outcome is Outcome.RETRY else lease.item
    parts = [
        str(lease.token),
        OUTCOME_CODES[outcome],
        str(report),
        repr(-1.0 if pause is None else pause),
        repr(result.retry_after or 0.0),
        "0" if result.unsent else "1",
        str(len(result.captures)),
        lease.host,
    ]
    for capture in result.captures:
        parts += [capture.filename, str(capture.start), str(capture.end)]
    return "\0".join(parts).encode() + b"\0" + encode_item(item)


def decode_lease(raw: bytes) -> Lease:
    """A lease from CLAIM's reply: ``token \\0 HOST \\0 item``."""
    token, host, data = raw.split(b"\0", 2)
    return Lease(item=decode_item(data), host=host.decode(), token=int(token))
