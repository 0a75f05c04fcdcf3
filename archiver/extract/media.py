"""The rendition rule and the media byte budget the playlist extractors share. (pure)

An adaptive stream offers the same media at several bit rates; a player picks one by its
bandwidth and screen, and a crawl that fetched every rendition would store the video five times.
So one rendition per kind of media is followed: **the highest bandwidth at or under
``max_bitrate``, else the lowest** (what a player on a good connection settles on, bounded by
what the operator is willing to store). The segments of what is chosen are requisites of the
playlist, up to a **media byte budget**: the playlist's own figures bound what its segments
weigh (a rendition's declared bandwidth is its peak bit rate: RFC 8216 section 4.3.4.2 for
HLS, ISO/IEC 23009-1 section 5.3.5.2 for DASH), so segments are listed while
``bandwidth * elapsed duration / 8`` stays within ``max_bytes``, and the rest are left out. When
a media playlist does not say its bandwidth (an HLS media playlist reached without its master),
``max_bitrate`` stands for it: the rule never picks more than that, unless the only rendition
is over it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

#: 8 Mbit/s: a 1080p stream; 4K renditions are left out by default
DEFAULT_MAX_BITRATE = 8_000_000
#: 500 MB of media per playlist: about 8 minutes at the default bit rate
DEFAULT_MAX_BYTES = 500_000_000


@dataclass(frozen=True, slots=True)
class MediaLimits:
    max_bitrate: int = DEFAULT_MAX_BITRATE
    max_bytes: int = DEFAULT_MAX_BYTES

    def seconds_for(self, bandwidth: int | None) -> float:
        """How many seconds of media at ``bandwidth`` bits/s the budget holds."""
        rate = bandwidth if bandwidth and bandwidth > 0 else self.max_bitrate
        return self.max_bytes * 8 / rate


T = TypeVar("T")


def choose(renditions: Sequence[T], bandwidth: Sequence[int | None], max_bitrate: int) -> T | None:
    """The rendition rule: the highest bandwidth at or under ``max_bitrate``, else the lowest;
    renditions without a bandwidth count as 0; the first wins a tie."""
    best: tuple[int, int] | None = None
    lowest: tuple[int, int] | None = None
    for index, value in enumerate(bandwidth):
        rate = value or 0
        if rate <= max_bitrate and (best is None or rate > best[0]):
            best = (rate, index)
        if lowest is None or rate < lowest[0]:
            lowest = (rate, index)
    pick = best or lowest
    return renditions[pick[1]] if pick is not None else None


__all__ = ["DEFAULT_MAX_BITRATE", "DEFAULT_MAX_BYTES", "MediaLimits", "choose"]
