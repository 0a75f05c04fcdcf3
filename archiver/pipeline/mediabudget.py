"""The per-page media byte budget (``--media-max-bytes``): all the playlists, renditions,
segments and media files one page uses, together.

A page's media are many frontier items, leased by any worker of any process: the page's
``<video>`` source, the master playlist it names, the media playlists the rendition rule
chose, their segments, and what yt-dlp resolved for it. Each carries its page
(:attr:`archiver.models.CrawlItem.page_url`: the page whose requisites led to it, however
many playlists deep), and one counter per page holds the media bytes captured for it so far,
where the frontier keeps its state (:class:`MediaBytes`: memory, the SQLite database, or a
Redis hash that every process adds to with one atomic ``HINCRBY``).

- **Counted**: the payload bytes (WARC 1.1 section 6.3.2: the entity body, content coding
  kept) of every capture of a page's requisite that is media: found by a media extractor
  (``hls``, ``dash``, ``yt-dlp``), or whose response is audio, video or a playlist by its
  media type (a ``<video src>`` file found in the HTML, a segment reached through a redirect).
  Whatever asked for it, the crawl's lease or a browser's request.
- **Cut**: a requisite found by a media extractor is not fetched once its page's count has
  reached the budget (skipped, reason ``media-budget``); and a playlist read for a page lists
  its segments only while their estimated size (bandwidth times duration,
  :mod:`archiver.extract.media`) fits in what the page has left.

Concurrent fetches of one page's segments are each admitted against the count as it stands,
so a page may end over its budget by what was in flight when it was reached: at most one
segment per worker. A media file the HTML names directly is never cut (the page shows it
whole or not at all) but is counted, so the playlists after it get what is left.
"""

from __future__ import annotations

from typing import Protocol

from archiver.extract.dash import DASH_TYPES
from archiver.extract.found import Extractor
from archiver.extract.hls import HLS_TYPES
from archiver.models import CrawlItem, Exchange

#: the extractors whose requisites are media and may be cut by the budget
MEDIA_EXTRACTORS = frozenset({Extractor.HLS, Extractor.DASH, Extractor.YT_DLP})
#: media types counted as media whoever found them (besides ``audio/*`` and ``video/*``)
_PLAYLIST_TYPES = HLS_TYPES | DASH_TYPES


class MediaBytes(Protocol):
    """Where the media bytes of each page are counted (the frontier's store)."""

    async def spent(self, page: str) -> int: ...

    async def add(self, page: str, size: int) -> None: ...


class MemoryMediaBytes:
    """The count in memory: a crawl with the memory frontier (nothing else to resume)."""

    def __init__(self) -> None:
        self._pages: dict[str, int] = {}

    async def spent(self, page: str) -> int:
        return self._pages.get(page, 0)

    async def add(self, page: str, size: int) -> None:
        self._pages[page] = self._pages.get(page, 0) + size


def is_media_type(media_type: str) -> bool:
    """Audio, video, or an HLS or DASH playlist (a media type without parameters)."""
    return media_type.startswith(("audio/", "video/")) or media_type in _PLAYLIST_TYPES


class MediaBudget:
    """The budget of every page of one run (``limit`` None: counted nowhere, cut never)."""

    def __init__(self, limit: int | None, store: MediaBytes) -> None:
        self.limit = limit
        self._store = store

    async def over(self, item: CrawlItem) -> bool:
        """Whether ``item`` is a media extractor's requisite whose page has spent its budget."""
        if self.limit is None or not item.is_requisite or item.found_by not in MEDIA_EXTRACTORS:
            return False
        return await self._store.spent(item.page_url) >= self.limit

    async def left(self, item: CrawlItem) -> int | None:
        """What ``item``'s page has left to spend (None: no budget)."""
        if self.limit is None:
            return None
        return max(self.limit - await self._store.spent(item.page_url), 0)

    async def spend(self, item: CrawlItem, exchange: Exchange) -> None:
        """Count a capture made for ``item`` when it is one of its page's media."""
        if self.limit is None or not item.is_requisite or exchange.payload_length <= 0:
            return
        if item.found_by in MEDIA_EXTRACTORS or is_media_type(exchange.content_type):
            await self._store.add(item.page_url, exchange.payload_length)


__all__ = [
    "MEDIA_EXTRACTORS",
    "MediaBudget",
    "MediaBytes",
    "MemoryMediaBytes",
    "is_media_type",
]
