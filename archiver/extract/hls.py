"""Links in HLS playlists (RFC 8216, HTTP Live Streaming). (pure)

A ``<video>`` fed by HLS replays as a black box unless the playlists and segments were captured.
A master playlist (section 4.3.4) lists variant streams; one is chosen by the rendition rule of
:mod:`archiver.extract.media` and its media playlist is a requisite, with the renditions its
``AUDIO`` and ``SUBTITLES`` groups name (``EXT-X-MEDIA``, section 4.3.4.1: the group's
``DEFAULT=YES`` rendition, else its first) and any ``EXT-X-SESSION-KEY``. A media playlist
(section 4.3.3) lists segments: their URIs (each after its ``EXTINF``, which section 4.3.2.1
requires of a segment), the ``EXT-X-MAP`` initialization sections and the
``EXT-X-KEY`` keys (those that apply to a segment listed) are requisites, in order, while the
media byte budget lasts (each segment's
``EXTINF`` duration, section 4.3.2.1, counted at the rendition's bandwidth). I-frame playlists
(``EXT-X-I-FRAME-STREAM-INF``) serve trick play only and are left out; so are LL-HLS partial
segments and preload hints (a player asks for whole segments when it plays a recording).

A playlist must start with ``#EXTM3U`` (section 4.3.1.1); anything else has no links. Lines are
read one at a time, so a playlist of a hundred thousand segments costs its links, and the
caller's ``max_links`` caps them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.media import MediaLimits, choose

HLS_TYPES = frozenset(
    {
        "application/vnd.apple.mpegurl",
        "application/x-mpegurl",
        "audio/mpegurl",
        "audio/x-mpegurl",
        "application/mpegurl",
    }
)

# section 4.2: AttributeName=AttributeValue, comma-separated; a quoted-string holds no quote,
# CR or LF (and may hold commas)
_DECIMAL = re.compile(r"(\d{1,15})(?:\.\d*)?")
_ATTRIBUTE = re.compile(r'\s*([A-Z0-9-]+)=("[^"\r\n]*"|[^",\s]*)\s*(?:,|$)')


@dataclass(frozen=True, slots=True)
class PlaylistLinks:
    links: Links
    #: "master" or "media"; None when the document is not a playlist
    kind: str | None
    #: media seconds listed, and whether the budget left segments out
    seconds: float = 0.0
    over_budget: bool = False


def is_playlist(body: bytes) -> bool:
    """A body that starts with ``#EXTM3U`` (after a BOM or whitespace)."""
    return body[:64].lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"#EXTM3U")


def attributes(text: str) -> dict[str, str]:
    """An attribute list (section 4.2), quotes removed; the first of a repeated name wins. A
    ``URI`` is a quoted-string wherever the RFC defines one (sections 4.3.2.4, 4.3.2.5, 4.3.4.1,
    4.3.4.2, 4.3.4.5): an unquoted value is malformed and left out, as players do."""
    found: dict[str, str] = {}
    for match in _ATTRIBUTE.finditer(text):
        name, value = match.groups()
        quoted = value.startswith('"') and value.endswith('"') and len(value) >= 2
        if quoted:
            value = value[1:-1]
        elif name == "URI":
            continue
        found.setdefault(name, value)
    return found


def _lines(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        line = raw.strip()
        if line:
            yield line


def _bandwidth(attrs: dict[str, str]) -> int | None:
    """``BANDWIDTH``, a decimal-integer (section 4.3.4.2); one written with a fraction
    (``4000000.0``) is read as players read it (hls.js's ``parseInt``), not as none."""
    match = _DECIMAL.fullmatch(attrs.get("BANDWIDTH", ""))
    return int(match.group(1)) if match else None


@dataclass(frozen=True, slots=True)
class _Variant:
    uri: str
    bandwidth: int | None
    audio: str | None
    subtitles: str | None


def extract_hls(
    body: bytes, url: str, *, limits: MediaLimits | None = None, max_links: int = MAX_LINKS
) -> PlaylistLinks:
    """The requisites of an HLS playlist fetched from ``url`` (already content-decoded)."""
    limits = limits or MediaLimits()
    collect = Collector(url, url, max_links, Extractor.HLS)
    if not is_playlist(body):
        return PlaylistLinks(collect.links(), None)
    text = body.decode("utf-8", "replace")
    if "#EXT-X-STREAM-INF" in text:
        _master(text, collect, limits)
        return PlaylistLinks(collect.links(), "master")
    seconds, over = _media(text, collect, limits)
    return PlaylistLinks(collect.links(), "media", seconds, over)


def _master(text: str, collect: Collector, limits: MediaLimits) -> None:
    variants: list[_Variant] = []
    groups: dict[tuple[str, str], list[tuple[bool, str]]] = {}
    pending: dict[str, str] | None = None
    for line in _lines(text):
        if line.startswith("#"):
            tag, _, rest = line.partition(":")
            if tag == "#EXT-X-STREAM-INF":
                pending = attributes(rest)
            elif tag == "#EXT-X-MEDIA":
                attrs = attributes(rest)
                uri, group = attrs.get("URI"), attrs.get("GROUP-ID")
                if uri and group:
                    key = (attrs.get("TYPE", ""), group)
                    groups.setdefault(key, []).append((attrs.get("DEFAULT") == "YES", uri))
            elif tag == "#EXT-X-SESSION-KEY":
                uri = attributes(rest).get("URI")
                if uri and not uri.startswith("skd:"):
                    collect.requisite(uri)
            continue
        if pending is not None:  # the URI line after EXT-X-STREAM-INF
            variants.append(
                _Variant(line, _bandwidth(pending), pending.get("AUDIO"), pending.get("SUBTITLES"))
            )
            pending = None
    chosen = choose(variants, [v.bandwidth for v in variants], limits.max_bitrate)
    if chosen is None:
        return
    collect.requisite(chosen.uri)
    for kind, group in (("AUDIO", chosen.audio), ("SUBTITLES", chosen.subtitles)):
        renditions = groups.get((kind, group or ""))
        if renditions:
            default = next((uri for is_default, uri in renditions if is_default), None)
            collect.requisite(default or renditions[0][1])


def _media(text: str, collect: Collector, limits: MediaLimits) -> tuple[float, bool]:
    """Segments, maps and keys in order while the budget lasts: (seconds listed, over it)."""
    budget = limits.seconds_for(None)
    seconds = 0.0
    duration: float | None = None  # the EXTINF before the next URI: None when there is none
    # maps and keys, listed with the first segment they apply to; a later tag of the same kind
    # (a key of the same KEYFORMAT) replaces one no segment used (RFC 8216 4.3.2.4, 4.3.2.5)
    pending: dict[str, str | None] = {}
    for line in _lines(text):
        if line.startswith("#"):
            tag, _, rest = line.partition(":")
            if tag == "#EXTINF":
                value = rest.split(",", 1)[0].strip()
                try:
                    duration = max(float(value), 0.0) if len(value) < 32 else 0.0
                except ValueError:
                    duration = 0.0
            elif tag in ("#EXT-X-MAP", "#EXT-X-KEY"):
                attrs = attributes(rest)
                uri = attrs.get("URI")
                slot = tag if tag == "#EXT-X-MAP" else tag + attrs.get("KEYFORMAT", "identity")
                # skd: is a FairPlay key id, no URL; METHOD=NONE names no key (4.3.2.4)
                usable = uri and not uri.startswith("skd:") and attrs.get("METHOD") != "NONE"
                pending[slot] = uri if usable else None
            continue
        if duration is None:
            continue  # a URI without its EXTINF is no media segment (section 4.3.2.1)
        if seconds + duration > budget and seconds > 0:
            return seconds, True
        seconds += duration
        duration = None
        for uri in pending.values():
            if uri:
                collect.requisite(uri)
        pending.clear()
        collect.requisite(line)
        if collect.truncated:
            break
    return seconds, False


__all__ = ["HLS_TYPES", "PlaylistLinks", "attributes", "extract_hls", "is_playlist"]
