"""The media URLs of a yt-dlp info dict: what a crawl fetches for a page yt-dlp resolved. (pure)

yt-dlp's format selection has already run in its child (the format spec of
:func:`format_spec`: the best video and audio within the rendition rule's bit-rate cap, as
:mod:`archiver.extract.media` picks renditions), so each video of the info dict carries its
``requested_formats`` (a video and an audio stream) or is itself the one format chosen
(``url``, ``protocol``). By protocol:

- ``http``, ``https``: the file at ``url``;
- ``m3u8``, ``m3u8_native`` (HLS): the media playlist at ``url`` and the master playlist at
  ``manifest_url`` (the crawl's HLS extractor lists the segments, within the page's media
  budget, when it reads the playlist);
- ``http_dash_segments`` (DASH): the manifest at ``manifest_url`` and the fragments yt-dlp
  listed (``fragment_base_url`` joined with each ``path``, or each ``url``);
- anything else (RTMP, F4M, ISM, WebSocket streams) cannot be fetched as HTTP requisites and
  is counted in :attr:`MediaUrls.unsupported`.

A playlist's entries (``_type`` ``playlist`` or ``multi_video``) are read the same way, and
each video's ``thumbnail``. URLs come out in order, each once, resolved against the page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archiver import urls

#: protocols fetched as one file
_FILE_PROTOCOLS = frozenset({"http", "https", ""})
_HLS_PROTOCOLS = frozenset({"m3u8", "m3u8_native"})
_DASH_PROTOCOLS = frozenset({"http_dash_segments", "http_dash_segments_generator"})


@dataclass(frozen=True, slots=True)
class MediaUrls:
    urls: tuple[str, ...]
    #: formats chosen whose protocol is not fetched over HTTP, by protocol
    unsupported: Mapping[str, int]
    #: True when ``max_urls`` cut the list
    truncated: bool = False


def format_spec(max_bitrate: int | None) -> str:
    """yt-dlp's format spec for the rendition rule: the best video (with or without audio)
    and the best audio within ``max_bitrate`` bits/s (formats that do not say their bit rate
    are accepted), else the best single file within it, else the best video or audio alone
    within it (a stream without an audio rendition), else the worst of all (the lowest, as the
    rule falls back to)."""
    if not max_bitrate:
        return "bv*+ba/b/bv*/ba"
    cap = f"[tbr<=?{max(max_bitrate // 1000, 1)}]"
    return f"bv*{cap}+ba{cap}/b{cap}/bv*{cap}/ba{cap}/wv*+wa/w/wv*/wa"


def media_urls(info: Mapping[str, Any], page: str, *, max_urls: int = 10_000) -> MediaUrls:
    """The URLs to fetch for ``info``, the info dict yt-dlp resolved for ``page``."""
    found: dict[str, None] = {}
    unsupported: Counter[str] = Counter()
    truncated = False
    for raw in _video_urls(info, unsupported):
        url = urls.resolve(page, raw) if isinstance(raw, str) and raw else None
        if url is None or url in found:
            continue
        if len(found) >= max_urls:
            truncated = True
            break
        found[url] = None
    return MediaUrls(tuple(found), dict(unsupported), truncated)


def _video_urls(info: Mapping[str, Any], unsupported: Counter[str]) -> Iterable[Any]:
    kind = info.get("_type", "video")
    if kind in ("playlist", "multi_video"):
        for entry in info.get("entries") or ():
            if isinstance(entry, Mapping):
                yield from _video_urls(entry, unsupported)
        return
    if kind != "video":
        return
    formats = info.get("requested_formats") or ([info] if info.get("url") else [])
    for chosen in formats:
        if isinstance(chosen, Mapping):
            yield from _format_urls(chosen, unsupported)
    yield info.get("thumbnail")


def _format_urls(chosen: Mapping[str, Any], unsupported: Counter[str]) -> Iterable[Any]:
    protocol = str(chosen.get("protocol") or "")
    if protocol in _FILE_PROTOCOLS:
        yield chosen.get("url")
    elif protocol in _HLS_PROTOCOLS:
        yield chosen.get("manifest_url")
        yield chosen.get("url")
    elif protocol in _DASH_PROTOCOLS:
        yield chosen.get("manifest_url")
        base = chosen.get("fragment_base_url")
        for fragment in chosen.get("fragments") or ():
            if not isinstance(fragment, Mapping):
                continue
            if fragment.get("url"):
                yield fragment["url"]
            elif fragment.get("path") and isinstance(base, str):
                yield urls.resolve(base, str(fragment["path"]))
    else:
        unsupported[protocol] += 1


__all__ = ["MediaUrls", "format_spec", "media_urls"]
