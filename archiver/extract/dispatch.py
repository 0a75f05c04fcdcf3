"""Which extractor reads a response, by its media type, and what it found. (pure)

Each extractor runs only on its content types, so the HTML and CSS path of every page costs what
it cost before the others existed: the media type is looked up in one table, and only generic
types (``text/xml``, ``application/xml``, ``text/plain``, ``application/octet-stream``) have the
first bytes of their body sniffed, for the feeds, manifests, playlists and PDFs servers send
under them. PDFs are read in a child process (:mod:`archiver.extract.isolated`), so
:func:`document_kind` names them and the caller awaits that; every other kind is read here,
synchronously, by :func:`extract_document`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from archiver.extract.dash import DASH_TYPES, extract_dash, is_mpd
from archiver.extract.decoding import decode_content
from archiver.extract.feeds import FEED_TYPES, XML_TYPES, extract_feed, looks_like_feed
from archiver.extract.found import MAX_LINKS, Extractor, Links, no_links
from archiver.extract.hls import HLS_TYPES, PlaylistLinks, extract_hls, is_playlist
from archiver.extract.jsondoc import extract_json, is_json_type
from archiver.extract.linkheader import link_header_links
from archiver.extract.links import CSS_TYPES, HTML_TYPES, MAX_DECODED, extract_css, extract_html
from archiver.extract.media import MediaLimits
from archiver.extract.pdf import PDF_TYPES, is_pdf
from archiver.extract.scripts import JS_TYPES, extract_script

#: types whose body is sniffed: servers send feeds, MPDs, playlists and PDFs under them
_GENERIC_TYPES = frozenset(
    {"text/plain", "application/octet-stream", "binary/octet-stream", "", *XML_TYPES}
)
_KINDS: dict[str, Extractor] = {
    **dict.fromkeys(HTML_TYPES, Extractor.HTML),
    **dict.fromkeys(CSS_TYPES, Extractor.CSS),
    **dict.fromkeys(FEED_TYPES, Extractor.FEED),
    **dict.fromkeys(PDF_TYPES, Extractor.PDF),
    **dict.fromkeys(JS_TYPES, Extractor.JS_MODULE),
    **dict.fromkeys(HLS_TYPES, Extractor.HLS),
    **dict.fromkeys(DASH_TYPES, Extractor.DASH),
}
_SNIFF_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """What the crawl's settings say about extraction."""

    max_links: int = MAX_LINKS
    max_decoded: int = MAX_DECODED
    #: relative path strings in scripts (speculative; off by default)
    js_relative: bool = False
    #: HLS and DASH playlists: the rendition rule's cap and the byte budget; None: not read
    media: MediaLimits | None = field(default_factory=MediaLimits)


@dataclass(frozen=True, slots=True)
class Extracted:
    links: Links
    #: what the crawl log should say about the document (a playlist cut at the media budget,
    #: a feed that is not well-formed): an event name and its fields, or None
    note: tuple[str, dict[str, Any]] | None = None


def document_kind(media_type: str, head: bytes, content_encoding: str | None) -> Extractor | None:
    """The extractor for a response of ``media_type`` (lowercased, no parameters), its body
    starting with ``head``; None when no extractor reads it."""
    kind = _KINDS.get(media_type)
    if kind is not None:
        return kind
    if is_json_type(media_type):
        return Extractor.JSON
    if media_type not in _GENERIC_TYPES:
        return None
    try:
        sample = decode_content(head[:_SNIFF_BYTES], content_encoding, limit=_SNIFF_BYTES)
    except ValueError:
        return None
    if is_playlist(sample):
        return Extractor.HLS
    if is_pdf(sample):
        return Extractor.PDF
    if media_type in XML_TYPES:
        if is_mpd(sample):
            return Extractor.DASH
        if looks_like_feed(sample):
            return Extractor.FEED
    return None


def extract_document(
    kind: Extractor, body: bytes, url: str, content_encoding: str | None, options: ExtractOptions
) -> Extracted:
    """The links of a body of ``kind`` (any but PDF). Raises
    :class:`~archiver.extract.decoding.ContentDecodingError` when the body cannot be decoded."""
    if kind in (Extractor.HLS, Extractor.DASH) and options.media is None:
        return Extracted(no_links(url, kind))
    data = decode_content(body, content_encoding, limit=options.max_decoded)
    max_links = options.max_links
    if kind is Extractor.HTML:
        return Extracted(
            extract_html(data, url, max_links=max_links, js_relative=options.js_relative)
        )
    if kind is Extractor.CSS:
        return Extracted(extract_css(data, url, max_links=max_links))
    if kind is Extractor.JS_MODULE:
        return Extracted(
            extract_script(data, url, max_links=max_links, relative=options.js_relative)
        )
    if kind is Extractor.JSON:
        return Extracted(extract_json(data, url, max_links=max_links))
    if kind is Extractor.FEED:
        feed = extract_feed(data, url, max_links=max_links)
        note = None
        if feed.error is not None:
            note = ("feed-error", {"kind": feed.kind, "error": feed.error})
        return Extracted(feed.links, note)
    if kind is Extractor.HLS or kind is Extractor.DASH:
        reader = extract_hls if kind is Extractor.HLS else extract_dash
        playlist = reader(data, url, limits=options.media, max_links=max_links)
        return Extracted(playlist.links, _media_note(playlist, options.media))
    return Extracted(no_links(url, kind))


def _media_note(
    playlist: PlaylistLinks, limits: MediaLimits | None
) -> tuple[str, dict[str, Any]] | None:
    if not playlist.over_budget or limits is None:
        return None
    return (
        "media-budget",
        {
            "kind": playlist.kind,
            "seconds": round(playlist.seconds, 3),
            "max_bytes": limits.max_bytes,
        },
    )


def header_links(values: Iterable[str], url: str, max_links: int = MAX_LINKS) -> Links:
    """The links of a response's ``Link`` header field values (RFC 8288)."""
    return link_header_links(values, url, max_links=max_links)


__all__ = [
    "ExtractOptions",
    "Extracted",
    "document_kind",
    "extract_document",
    "header_links",
]
