"""DASH manifests (:func:`~archiver.extract.dash.extract_dash`): the rendition rule per
adaptation set, ``BaseURL`` resolution at every level, segment lists and templates, the budget.

Oracles, on every input (the first byte chooses the bit-rate cap and a small link cap):

* nothing leaves the extractor; requisites only, normalised, each once, at most ``max_links``;
* on a well-formed MPD without a DTD and without ``SegmentTemplate`` or inherited segment
  information, ElementTree's tree read by the rules written again here (per adaptation set the
  representation the rendition rule picks from its bandwidths; ``BaseURL`` resolved from the
  MPD down; ``Initialization@sourceURL`` and every ``SegmentURL@media`` of its
  ``SegmentList``, or the representation's own URL for ``SegmentBase`` or none) gives the same
  set of URLs.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from archiver import urls
from archiver.extract.dash import extract_dash
from archiver.extract.media import MediaLimits, choose
from tests.fuzz.harness import Bytes, Target, agree

URL = "http://example.com/video/manifest.mpd"


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [child for child in element if _local(child.tag) == name]


def _base(element: ET.Element, base: str) -> str:
    for child in _children(element, "BaseURL"):
        text = "".join(child.itertext()).strip()
        if text:
            return urls.resolve(base, text) or base
    return base


def _bandwidth(element: ET.Element) -> int | None:
    value = element.get("bandwidth", "")
    return int(value) if value.isdigit() and len(value) < 16 else None


def tree_urls(document: bytes, max_bitrate: int) -> set[str] | None:
    if b"<!" in document or b"SegmentTemplate" in document:
        return None
    try:
        root = ET.fromstring(document)
    except (ET.ParseError, LookupError, ValueError):
        return None
    if _local(root.tag) != "MPD":
        return None
    found: set[str] = set()
    mpd_base = _base(root, URL)
    for period in _children(root, "Period"):
        if _children(period, "SegmentList") or _children(period, "SegmentBase"):
            return None  # inherited segment information: not written again here
        period_base = _base(period, mpd_base)
        for adaptation in _children(period, "AdaptationSet"):
            if _children(adaptation, "SegmentList") or _children(adaptation, "SegmentBase"):
                return None
            set_base = _base(adaptation, period_base)
            reps = _children(adaptation, "Representation")
            chosen = choose(reps, [_bandwidth(r) for r in reps], max_bitrate)
            if chosen is None:
                continue
            base = _base(chosen, set_base)
            kinds = [c for c in chosen if _local(c.tag) in ("SegmentList", "SegmentBase")]
            if len(kinds) > 1:
                return None  # the schema allows one: which wins is not the oracle's to say
            lists = _children(chosen, "SegmentList")
            if not lists:
                for segment_base in _children(chosen, "SegmentBase"):
                    for init in _children(segment_base, "Initialization"):
                        if init.get("sourceURL"):
                            found.add(urls.resolve(base, init.get("sourceURL", "")) or "")
                found.add(urls.resolve(base, "") or "")
                continue
            segment_list = lists[-1]
            for init in _children(segment_list, "Initialization"):
                if init.get("sourceURL"):
                    found.add(urls.resolve(base, init.get("sourceURL", "")) or "")
            for segment in _children(segment_list, "SegmentURL"):
                if segment.get("media"):
                    found.add(urls.resolve(base, segment.get("media", "")) or "")
    found.discard("")
    found.discard(urls.resolve(URL, "") or "")
    return found


def check(data: bytes) -> None:
    source = Bytes(data)
    mode = source.byte()
    max_bitrate = 1_000_000 if mode & 1 else 8_000_000
    max_links = 3 if mode & 2 else 10_000
    document = source.rest()
    limits = MediaLimits(max_bitrate=max_bitrate, max_bytes=10**15)
    found = extract_dash(document, URL, limits=limits, max_links=max_links)
    links = found.links
    agree(not links.pages, "pages from a manifest", links)
    agree(len(set(links.requisites)) == len(links.requisites), "duplicates", links)
    agree(len(links.requisites) <= max_links, "over max_links", links)
    for url in links.requisites:
        agree(urls.normalize_url(url) == url, "not normal", url)
    if links.truncated:
        return
    expected = tree_urls(document, max_bitrate)
    if expected is not None and found.kind is not None:
        agree(set(links.requisites) == expected, "differs from the tree", links, expected)


TARGET = Target(
    name="dash",
    check=check,
    max_len=4096,
    summary="extract_dash (rendition rule, BaseURL levels, SegmentList/Base, templates); "
    "oracle: the rules over ElementTree's tree for template-free MPDs",
    seed=lambda document: b"\x00" + document,
    dictionary=(
        b'<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" '
        b'mediaPresentationDuration="PT8S">',
        b"<Period>",
        b"<AdaptationSet>",
        b'<Representation id="r" bandwidth="',
        b"<BaseURL>",
        b"</BaseURL>",
        b'<SegmentList duration="2">',
        b'<Initialization sourceURL="',
        b'<SegmentURL media="',
        b'<SegmentTemplate timescale="1000" duration="2000" media="$Number%05d$.m4s" '
        b'initialization="$RepresentationID$/init.mp4"/>',
        b'<SegmentTimeline><S t="0" d="1000" r="3"/></SegmentTimeline>',
        b"<SegmentBase/>",
    ),
)
