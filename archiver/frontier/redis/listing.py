"""The Redis frontier read from outside its crawl (:mod:`archiver.frontier.listing`): the counts
the scripts keep in ``P:counts``, and the URLs of the items Redis holds, a chunk at a time:
the host queues (``SCAN`` for ``P:q:*``, then ``LRANGE``), the retries waiting
(``P:delayed``), the leases (``HSCAN`` of ``P:lease``). Nothing is written, so a running crawl
is not disturbed; what moves between two chunks may be listed twice or missed, as any scan of
a live store.

Finished URLs are kept only as their 16-byte keys in ``P:seen`` (the seen set costs the same
whatever a URL's length): they are counted, not listed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any, cast

import redis
from redis.exceptions import RedisError

from archiver.errors import FrontierError
from archiver.frontier.listing import StateCounts
from archiver.frontier.redis.codec import decode_item
from archiver.urls import redact_url

#: Items read per round trip.
CHUNK = 1000


class RedisView:
    """A crawl's Redis frontier (its ``url`` and ``crawl_id``), read-only."""

    listable = frozenset({"queued", "in-flight"})

    def __init__(self, url: str, crawl_id: str) -> None:
        self._prefix = f"archiver:{{{crawl_id}}}:"
        self._where = f"crawl {crawl_id!r} in {redact_url(url)}"
        try:
            self._client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=10)
            exists = self._client.exists(self._prefix + "meta")
        except (RedisError, OSError, ValueError) as exc:
            raise FrontierError(f"cannot read {self._where}: {exc}") from None
        if not exists:
            raise FrontierError(f"no {self._where}")

    def counts(self) -> StateCounts:
        fields = ("queued", "leased", "d", "f", "s")
        try:
            raw = cast(list[Any], self._client.hmget(self._prefix + "counts", fields))
        except (RedisError, OSError) as exc:
            raise FrontierError(f"cannot read {self._where}: {exc}") from None
        queued, leased, done, failed, skipped = (int(value or 0) for value in raw)
        return StateCounts(queued, leased, done, failed, skipped)

    def urls(self, states: Collection[str]) -> Iterator[tuple[str, str]]:
        try:
            if "queued" in states:
                yield from self._queued()
            if "in-flight" in states:
                yield from self._leased()
        except (RedisError, OSError) as exc:
            raise FrontierError(f"cannot read {self._where}: {exc}") from None

    def _queued(self) -> Iterator[tuple[str, str]]:
        client, queues = self._client, self._prefix + "q:"
        for key in client.scan_iter(match=_glob(queues) + "*", count=CHUNK):
            start = 0
            while chunk := cast(list[bytes], client.lrange(key, start, start + CHUNK - 1)):
                for data in chunk:
                    yield "queued", decode_item(data).url
                start += CHUNK
        delayed = self._prefix + "delayed"
        start = 0
        while chunk := cast(list[bytes], client.zrange(delayed, start, start + CHUNK - 1)):
            for member in chunk:
                yield "queued", decode_item(member.split(b"\0", 1)[1]).url
            start += CHUNK

    def _leased(self) -> Iterator[tuple[str, str]]:
        for _, value in self._client.hscan_iter(self._prefix + "lease", count=CHUNK):
            yield "in-flight", decode_item(cast(bytes, value).split(b"\0", 2)[2]).url

    def close(self) -> None:
        self._client.close()


def _glob(text: str) -> str:
    """``text`` with the characters of Redis's glob patterns escaped (a crawl id may hold
    them)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


__all__ = ["RedisView"]
