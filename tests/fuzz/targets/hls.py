"""HLS playlists (:func:`~archiver.extract.hls.extract_hls`): master playlists through the
rendition rule, media playlists' segments, maps and keys (RFC 8216).

Oracles, on every input (the first byte chooses the bit-rate cap and a small link cap):

* nothing leaves the extractor; requisites only, normalised, each once, at most ``max_links``;
* on a playlist written in the grammar's plain form (every line a tag with an attribute list or
  a URI of plain characters), the m3u8 library (an independent parser) reads the same URLs:
  for a media playlist, every segment URI, and the ``EXT-X-MAP`` and ``EXT-X-KEY`` URIs of the
  segments (but ``skd:`` key ids and ``METHOD=NONE``, which names no key); for a master
  playlist, the variant the rendition rule picks from its
  bandwidths, the default (else first) rendition of the groups it names, and the session keys.
"""

from __future__ import annotations

import re

import m3u8

from archiver import urls
from archiver.extract.hls import extract_hls
from archiver.extract.media import MediaLimits, choose
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/video/master.m3u8"
_ATTRIBUTE = r'[A-Z-]+=(?:"[\w./:-]*"|[\w.-]+)'  # attributes are comma-separated (4.2)
_PLAIN_LINE = re.compile(
    r"#EXTM3U|#EXT-X-(?:VERSION|TARGETDURATION|MEDIA-SEQUENCE|ENDLIST|PLAYLIST-TYPE)(?::\w+)?"
    r"|#EXTINF:\d{1,4}(?:\.\d{1,6})?,[\w ]*"
    rf"|#EXT-X-(?:STREAM-INF|MEDIA|KEY|MAP|SESSION-KEY):(?:{_ATTRIBUTE}(?:,{_ATTRIBUTE})*,?)?"
    r"|[\w][\w./-]{0,60}"
)

_UNQUOTED_URI = re.compile(r'URI=(?!")')


def _plain(text: str) -> bool:
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return (
        bool(lines)
        and lines[0] == "#EXTM3U"
        and all(_PLAIN_LINE.fullmatch(line) for line in lines)
        and not _UNQUOTED_URI.search(text)  # malformed: the extractor leaves it out, m3u8 reads it
    )


def library_urls(text: str, max_bitrate: int) -> set[str] | None:
    try:
        playlist = m3u8.loads(text, uri=URL)
    except Exception:  # the oracle's own failures only mean "no opinion"
        return None
    refs: list[str] = []
    if playlist.is_variant:
        variants = list(playlist.playlists)
        rates = [v.stream_info.bandwidth for v in variants]
        chosen = choose(variants, rates, max_bitrate)
        if chosen is None:
            return None
        refs.append(chosen.uri)
        for kind, group in (
            ("AUDIO", chosen.stream_info.audio),
            ("SUBTITLES", chosen.stream_info.subtitles),
        ):
            members = [
                m for m in playlist.media if m.type == kind and m.group_id == group and m.uri
            ]
            if members:
                default = next((m for m in members if m.default == "YES"), members[0])
                refs.append(default.uri)
        refs += [k.uri for k in playlist.session_keys if k is not None and k.uri]
    elif "KEYFORMAT" in text:
        return None  # m3u8 keeps one key per segment; RFC 8216 4.3.2.4 one per KEYFORMAT
    else:
        for segment in playlist.segments:  # maps and keys as they apply to each segment
            refs.append(segment.uri)
            if segment.init_section is not None and segment.init_section.uri:
                refs.append(segment.init_section.uri)
            key = segment.key
            if key is not None and key.uri and key.method != "NONE":
                refs.append(key.uri)
    return {
        resolved
        for ref in refs
        if ref and not ref.startswith("skd:") and (resolved := urls.resolve(URL, ref))
    } - {urls.resolve(URL, "")}


def check(data: bytes) -> None:
    source = Bytes(data)
    mode = source.byte()
    max_bitrate = 2_000_000 if mode & 1 else 8_000_000
    max_links = 3 if mode & 2 else 10_000
    document = source.rest()
    limits = MediaLimits(max_bitrate=max_bitrate, max_bytes=10**15)
    found = extract_hls(document, URL, limits=limits, max_links=max_links)
    links = found.links
    agree(not links.pages, "pages from a playlist", links)
    agree(len(set(links.requisites)) == len(links.requisites), "duplicates", links)
    agree(len(links.requisites) <= max_links, "over max_links", links)
    for url in links.requisites:
        agree(urls.normalize_url(url) == url, "not normal", url)
    text = document.decode("utf-8", "replace")
    if links.truncated or not _plain(text):
        return
    expected = library_urls(text, max_bitrate)
    if expected is not None:
        agree(set(links.requisites) == expected, "differs from m3u8", links.requisites, expected)


TARGET = Target(
    name="hls",
    check=check,
    max_len=4096,
    summary="extract_hls (master: rendition rule, groups, session keys; media: segments, maps, "
    "keys); oracle: the m3u8 library on plain playlists",
    seed=lambda document: b"\x00" + document,
    dictionary=(
        b"#EXTM3U\n",
        b"#EXT-X-STREAM-INF:BANDWIDTH=",
        b',AUDIO="a"',
        b'#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",DEFAULT=YES,URI="',
        b"#EXTINF:4.0,\n",
        b'#EXT-X-MAP:URI="',
        b'#EXT-X-KEY:METHOD=AES-128,URI="',
        b'#EXT-X-SESSION-KEY:METHOD=AES-128,URI="',
        b"#EXT-X-ENDLIST\n",
        b"seg.ts\n",
        b"v/index.m3u8\n",
    ),
)
