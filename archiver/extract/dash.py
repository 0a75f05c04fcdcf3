"""Links in DASH manifests (ISO/IEC 23009-1, the MPD). (pure)

For each adaptation set (a kind of media: video, an audio language, subtitles) one
representation is chosen by the rendition rule of :mod:`archiver.extract.media`, and its
initialization segment and media segments are requisites, by whichever of the three ways the
MPD gives them (section 5.3.9): ``SegmentBase`` (one file, the representation's ``BaseURL``),
``SegmentList`` (``Initialization@sourceURL`` and ``SegmentURL@media``) or ``SegmentTemplate``
(``@initialization`` and ``@media`` with ``$RepresentationID$``, ``$Number$``, ``$Time$``,
``$Bandwidth$``, ``%0Nd`` widths and ``$$``, section 5.3.9.4.4; segment times from
``SegmentTimeline`` or from ``@duration`` over the period's duration). ``BaseURL`` elements at
every level resolve in turn against the one above (section 5.6). Segment information is
inherited from the period and the adaptation set (section 5.3.9.1). The media byte budget is
shared by the chosen representations: segments are listed while ``(sum of their bandwidths) *
elapsed time / 8`` is within it. A live manifest (``type="dynamic"``) names segments by
wall-clock time a recording cannot replay, so only its initialization segments are listed.

The document is read by :func:`archiver.extract.xmlstream.read_xml` (streaming, no DTD).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from archiver import urls
from archiver.extract.found import MAX_LINKS, Collector, Extractor
from archiver.extract.hls import PlaylistLinks
from archiver.extract.media import MediaLimits, choose
from archiver.extract.xmlstream import XmlError, local_name, read_xml

DASH_TYPES = frozenset({"application/dash+xml"})
NS = "urn:mpeg:dash:schema:mpd:2011"
_TEMPLATE_ID = re.compile(
    r"\$(RepresentationID|Number|Time|Bandwidth|SubNumber)(%0(\d{1,2})d)?\$|\$\$"
)
# xs:duration as MPDs write it: PnYnMnDTnHnMnS (years and months are not used in practice)
_DURATION = re.compile(
    r"^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)
#: segments listed per representation at most, whatever the budget (a timeline's repeat count
#: could otherwise name billions)
MAX_SEGMENTS = 100_000
#: the elements that carry a BaseURL and segment information (ISO/IEC 23009-1 5.3, 5.6)
_LEVELS = ("MPD", "Period", "AdaptationSet", "Representation")
#: the level each level's element is a child of in the MPD schema (ISO/IEC 23009-1 5.3)
_PARENT_LEVEL = {
    "MPD": "",
    "Period": "MPD",
    "AdaptationSet": "Period",
    "Representation": "AdaptationSet",
}
#: the name kept for an element of a level found out of its place (it matches no level)
_FOREIGN = "(misplaced)"


def is_mpd(body: bytes) -> bool:
    """A body whose root element is ``MPD`` (within the first 2 KB)."""
    return b"<MPD" in body[:2048]


def parse_duration(text: str | None) -> float | None:
    """Seconds of an ``xs:duration`` such as ``PT1M30.5S``; None when unreadable."""
    if not text:
        return None
    match = _DURATION.match(text.strip())
    if match is None:
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


@dataclass(slots=True)
class _Segments:
    """Segment information at one level: the attributes of SegmentTemplate / SegmentList /
    SegmentBase, and the children that matter."""

    kind: str  # "template", "list" or "base"
    attrs: dict[str, str]
    timeline: list[tuple[int | None, int, int]] = field(default_factory=list)  # (t, d, r)
    media: list[str] = field(default_factory=list)  # SegmentURL@media
    initialization: str | None = None  # Initialization@sourceURL


@dataclass(slots=True)
class _Level:
    base: str
    segments: _Segments | None = None
    base_seen: bool = False


@dataclass(slots=True)
class _Representation:
    id: str
    bandwidth: int | None
    base: str
    segments: _Segments | None
    period_seconds: float | None


class _MpdReader:
    def __init__(self, url: str, max_bitrate: int) -> None:
        self.max_bitrate = max_bitrate
        self.levels: list[_Level] = [_Level(url)]
        self.names: list[str] = []
        self.dynamic = False
        self.total: float | None = None
        self.period_seconds: float | None = None
        self.adaptation: list[_Representation] | None = None
        self.representation: tuple[str, int | None] | None = None
        self.chosen: list[_Representation] = []
        self.text: list[str] | None = None
        self.root_seen = False

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = local_name(name)
        if not self.root_seen:
            self.root_seen = True
            if local != "MPD":
                raise XmlError(f"not a DASH manifest: the root element is <{local}>")
            self.dynamic = attrs.get("type") == "dynamic"
            self.total = parse_duration(attrs.get("mediaPresentationDuration"))
        if (
            local in _PARENT_LEVEL
            and (self.names[-1] if self.names else "") != _PARENT_LEVEL[local]
        ):
            # a level where the schema puts none (an adaptation set in an adaptation set, a
            # manifest in a period): a foreign element, nothing in it is read
            self.names.append(_FOREIGN)
            return
        self.names.append(local)
        parent = self.levels[-1]
        if local in ("Period", "AdaptationSet", "Representation"):
            self.levels.append(_Level(parent.base, parent.segments))
            if local == "Period":
                self.period_seconds = parse_duration(attrs.get("duration")) or self.total
            elif local == "AdaptationSet":
                self.adaptation = []
            else:
                bandwidth = attrs.get("bandwidth", "")
                self.representation = (
                    attrs.get("id", ""),
                    int(bandwidth) if bandwidth.isdigit() and len(bandwidth) < 16 else None,
                )
        elif local == "BaseURL" and self._in(*_LEVELS):
            self.text = []
        else:
            self._segment_information(local, attrs, parent)

    def _segment_information(self, local: str, attrs: dict[str, str], parent: _Level) -> None:
        """Segment information where the schema puts it: ``SegmentTemplate``, ``SegmentList``
        or ``SegmentBase`` in a period, an adaptation set or a representation; their
        ``Initialization``, ``SegmentURL`` and timeline ``S`` inside them."""
        if local in ("SegmentTemplate", "SegmentList", "SegmentBase"):
            if not self._in(*_LEVELS[1:]):
                return
            inherited = parent.segments
            merged = dict(inherited.attrs) if inherited is not None else {}
            merged.update(attrs)
            kind = {"SegmentTemplate": "template", "SegmentList": "list"}.get(local, "base")
            declared = _Segments(kind, merged)
            if inherited is not None and inherited.kind == kind:
                declared.timeline = list(inherited.timeline)
                declared.initialization = inherited.initialization
            parent.segments = declared
            return
        segments = parent.segments
        if segments is None:
            return
        if local == "S" and self._in("SegmentTimeline"):
            segments.timeline.append(_timeline_entry(attrs))
        elif local == "Initialization" and self._in("SegmentList", "SegmentBase"):
            segments.initialization = attrs.get("sourceURL") or segments.initialization
        elif local == "SegmentURL" and self._in("SegmentList") and attrs.get("media"):
            segments.media.append(attrs["media"])
            del segments.media[MAX_SEGMENTS:]

    def _in(self, *parents: str) -> bool:
        """Whether the element just started is a child of one of ``parents``."""
        return len(self.names) >= 2 and self.names[-2] in parents

    def end(self, _name: str) -> None:
        local = self.names.pop()
        if local == "BaseURL" and self.text is not None:
            level = self.levels[-1]
            text = "".join(self.text).strip()
            self.text = None
            if text and not level.base_seen:
                level.base_seen = True  # the first BaseURL of a level (others are mirrors)
                level.base = urls.resolve(level.base, text) or level.base
        elif local == "Representation":
            level = self.levels.pop()
            if self.representation is not None and self.adaptation is not None:
                rep_id, bandwidth = self.representation
                self.adaptation.append(
                    _Representation(
                        rep_id,
                        bandwidth,
                        level.base,
                        level.segments,
                        self.period_seconds,
                    )
                )
            self.representation = None
        elif local == "AdaptationSet":
            self.levels.pop()
            reps = self.adaptation or []
            pick = choose(reps, [r.bandwidth for r in reps], self.max_bitrate)
            if pick is not None:
                self.chosen.append(pick)
            self.adaptation = None
        elif local == "Period":
            self.levels.pop()

    def text_data(self, data: str) -> None:
        if self.text is not None and sum(map(len, self.text)) < 16_384:
            self.text.append(data)


def _timeline_entry(attrs: dict[str, str]) -> tuple[int | None, int, int]:
    def number(name: str, default: int | None) -> int | None:
        value = attrs.get(name, "")
        if value.lstrip("-").isdigit() and len(value) < 20:
            return int(value)
        return default

    return number("t", None), number("d", 0) or 0, number("r", 0) or 0


def _substitute(template: str, rep: _Representation, number: int, time: int) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        value: str | int
        if name == "RepresentationID":
            return rep.id
        if name == "Bandwidth":
            value = rep.bandwidth or 0
        elif name == "Time":
            value = time
        else:
            value = number
        width = match.group(3)
        return str(value).zfill(int(width)) if width else str(value)

    return _TEMPLATE_ID.sub(one, template)


def _segment_times(
    segments: _Segments, period: float | None, dynamic: bool
) -> list[tuple[float, int, int]]:
    """(start seconds, number, time) of each media segment of a template or list."""
    attrs = segments.attrs
    timescale = int(attrs.get("timescale", "1")) if attrs.get("timescale", "").isdigit() else 1
    timescale = max(timescale, 1)
    start_number = attrs.get("startNumber", "1")
    number = int(start_number) if start_number.isdigit() and len(start_number) < 16 else 1
    out: list[tuple[float, int, int]] = []
    if segments.timeline:
        time = 0
        for t, d, r in segments.timeline:
            if t is not None:
                time = t
            repeat = r
            if repeat < 0:  # until the end of the period (section 5.3.9.6)
                repeat = math.ceil(period * timescale / d) - 1 if period and d > 0 else 0
            for _ in range(min(repeat, MAX_SEGMENTS) + 1):
                out.append((time / timescale, number, time))
                number += 1
                time += d
                if len(out) >= MAX_SEGMENTS:
                    return out
        return out
    if dynamic:
        return out
    duration_text = attrs.get("duration", "")
    duration = int(duration_text) if duration_text.isdigit() and len(duration_text) < 16 else 0
    if segments.kind == "list":
        step = duration / timescale if duration else 0.0
        return [(n * step, number + n, 0) for n in range(len(segments.media))]
    if duration <= 0 or not period:
        return out
    count = min(math.ceil(period * timescale / duration), MAX_SEGMENTS)
    return [(n * duration / timescale, number + n, n * duration) for n in range(count)]


def extract_dash(
    body: bytes, url: str, *, limits: MediaLimits | None = None, max_links: int = MAX_LINKS
) -> PlaylistLinks:
    """The requisites of a DASH manifest fetched from ``url`` (already content-decoded)."""
    limits = limits or MediaLimits()
    collect = Collector(url, url, max_links, Extractor.DASH)
    reader = _MpdReader(url, limits.max_bitrate)
    reader_handler = _Handler(reader)
    try:
        read_xml(body, reader_handler)
    except XmlError:
        if not reader.root_seen or not reader.chosen:
            return PlaylistLinks(collect.links(), None)
    chosen = reader.chosen
    _initializations(chosen, collect)
    seconds, over = _media_segments(
        chosen,
        collect,
        limits.seconds_for(sum(r.bandwidth or limits.max_bitrate for r in chosen)),
        dynamic=reader.dynamic,
    )
    return PlaylistLinks(collect.links(), "mpd", seconds, over)


def _initializations(chosen: list[_Representation], collect: Collector) -> None:
    """Initialization segments (and single-file representations) first: nothing plays
    without them."""
    for rep in chosen:
        segments = rep.segments
        if segments is None or segments.kind == "base":
            if segments is not None and segments.initialization:
                collect.add_requisite_ref(rep.base, segments.initialization)
            collect.add_requisite_ref(rep.base, "")  # the representation's one file
        elif segments.kind == "template":
            init = segments.attrs.get("initialization")
            if init:
                collect.add_requisite_ref(rep.base, _substitute(init, rep, 0, 0))
        elif segments.initialization:
            collect.add_requisite_ref(rep.base, segments.initialization)


def _media_segments(
    chosen: list[_Representation], collect: Collector, budget: float, *, dynamic: bool
) -> tuple[float, bool]:
    """Media segments interleaved in time, as a player asks for them, while ``budget``
    seconds last: (seconds listed, whether the budget cut them)."""
    seconds = 0.0
    timelines = []
    for rep in chosen:
        segments = rep.segments
        if segments is None or segments.kind == "base":
            continue
        for start, number, time in _segment_times(segments, rep.period_seconds, dynamic):
            timelines.append((start, rep, segments, number, time))
    timelines.sort(key=lambda entry: entry[0])
    for start, rep, segments, number, time in timelines:
        if start >= budget:
            return seconds, True
        seconds = max(seconds, start)
        if segments.kind == "template":
            media = segments.attrs.get("media")
            if not media:
                continue
            ref = _substitute(media, rep, number, time)
        else:
            index = number - _start_number(segments)
            if not 0 <= index < len(segments.media):
                continue
            ref = segments.media[index]
        collect.add_requisite_ref(rep.base, ref)
        if collect.truncated:
            break
    return seconds, False


def _start_number(segments: _Segments) -> int:
    value = segments.attrs.get("startNumber", "1")
    return int(value) if value.isdigit() and len(value) < 16 else 1


class _Handler:
    """Adapts the reader to :class:`archiver.extract.xmlstream.Handler`."""

    def __init__(self, reader: _MpdReader) -> None:
        self.start = reader.start
        self.end = reader.end
        self.text = reader.text_data


__all__ = ["DASH_TYPES", "extract_dash", "is_mpd", "parse_duration"]
