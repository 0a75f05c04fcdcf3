"""The head of an HTTP/1.x response (its status line and header fields), parsed in one place.

archiver reads response heads in the bytes it captures (:mod:`archiver.fetch.httpframe` decides
where a message ends from them, RFC 9112 section 6.3), in the records it wrote and in earlier
crawls' records (the WARC-Protocol field and a revisit's block, validators for conditional
requests, a browser's requests answered from what was captured, the verifier's payload
boundaries) and in a proxy's reply to CONNECT. They all read it here, with the grammar the
capture used, so a head stored by archiver is read back exactly as it was read on the wire:

* a line ends with CRLF or a bare LF (RFC 9112 section 2.2 lets a recipient accept LF), and the
  head ends with an empty line;
* ``status-line = HTTP-version SP status-code [ SP reason-phrase ]`` (section 4), with spaces or
  tabs between the version and the code, as browsers accept;
* a field line is ``name ":" OWS value OWS`` (section 5); name and value are kept as bytes in
  their order, duplicates and case, the value's octets whatever they are (section 5.5: obs-text,
  commonly Latin-1); a line that starts with a space or tab continues the field before it
  (obs-fold, section 5.2) and is joined to it with one space; a line without a colon is kept
  in the stored bytes but is no field;
* an interim ``1xx`` response (section 15.2; not 101, which ends the HTTP exchange) comes before
  the final one: :func:`parse_response_head` skips each and says where it was.

Nothing here does I/O, and it imports only the standard library (a leaf: fetch, warc and dedup,
which do not import each other, all use it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The end of the last line of a head and the empty line after it: CRLF CRLF, or bare LFs
#: (RFC 9112 section 2.2).
HEAD_END = re.compile(rb"\r?\n\r?\n")
_STATUS_LINE = re.compile(rb"HTTP/(\d)\.(\d)[ \t]+(\d{3})(?:[ \t]([^\r\n]*))?\r?\Z")
#: Bytes searched for the end of a head, unless the caller says otherwise.
MAX_HEAD = 1 << 20

Fields = list[tuple[bytes, bytes]]


@dataclass(frozen=True, slots=True)
class StatusLine:
    """A response's status line (RFC 9112 section 4)."""

    version: tuple[int, int]
    status: int
    reason: bytes  #: as sent, possibly empty

    @property
    def protocol(self) -> str:
        """``http/1.1``: the version as WARC-Protocol names it (the IANA ALPN identifier)."""
        return f"http/{self.version[0]}.{self.version[1]}"


@dataclass(frozen=True, slots=True)
class ResponseHead:
    """The final head at the start of some bytes, and the interim heads before it."""

    status_line: StatusLine
    fields: Fields
    #: where the body starts: the offset just after the head's empty line
    end: int
    #: ``(start, end)`` of each interim 1xx head before this one, in order
    interim: tuple[tuple[int, int], ...] = ()

    @property
    def status(self) -> int:
        return self.status_line.status

    def values(self, name: bytes) -> list[bytes]:
        """Every value of the field ``name`` (any case), in order."""
        return field_values(self.fields, name)

    def text_fields(self) -> list[tuple[str, str]]:
        """The fields as text: each octet one character (ISO-8859-1, what RFC 9110 section 5.5
        says recipients historically assumed), so every byte survives."""
        return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in self.fields]


def start_line(data: bytes | bytearray | memoryview) -> bytes:
    """The first line of ``data``, without its line end (LF, and any CR before it)."""
    return bytes(data).split(b"\n", 1)[0].rstrip(b"\r")


def parse_status_line(line: bytes) -> StatusLine | None:
    """The status line ``line`` (without its line end; a line cut short keeps what it has of
    the reason), or None when it is not one."""
    match = _STATUS_LINE.match(line)
    if match is None:
        return None
    version = (int(match.group(1)), int(match.group(2)))
    return StatusLine(version, int(match.group(3)), match.group(4) or b"")


def head_end(data: bytes | bytearray, start: int = 0, stop: int = MAX_HEAD) -> int | None:
    """Where the head that starts at ``start`` ends (just after its empty line), if it ends
    within the first ``stop`` bytes of ``data``; None otherwise."""
    match = HEAD_END.search(data, start, stop)
    return None if match is None else match.end()


def parse_fields(lines: list[bytes]) -> Fields:
    """The header fields of a head split at LF, its first line (the start line) skipped."""
    fields: Fields = []
    for raw in lines[1:]:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if not line:
            continue
        if line[0] in (32, 9) and fields:  # obs-fold (RFC 9112 section 5.2)
            # the fold becomes one space of the value, whose leading and trailing whitespace
            # is no part of it (section 5): a value that starts on the next line has no space
            name, value = fields[-1]
            fields[-1] = (name, b" ".join(part for part in (value, line.strip()) if part))
            continue
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        fields.append((name.strip(), value.strip()))
    return fields


def split_head(head: bytes) -> tuple[bytes, Fields]:
    """The start line and the header fields of one head (of a response or a request)."""
    lines = head.split(b"\n")
    return start_line(lines[0]), parse_fields(lines)


def field_values(fields: Fields, name: bytes) -> list[bytes]:
    """Every value of the field ``name`` (any case), in order."""
    lname = name.lower()
    return [value for key, value in fields if key.lower() == lname]


def is_interim(status: int) -> bool:
    """A 1xx response other than 101: another response follows it (RFC 9110 section 15.2)."""
    return 100 <= status < 200 and status != 101


def parse_response_head(data: bytes, stop: int = MAX_HEAD) -> ResponseHead | None:
    """The final response head at the start of ``data``, interim 1xx heads skipped; None when
    ``data`` does not start with a status line, or a head does not end before ``stop``."""
    start = 0
    interim: list[tuple[int, int]] = []
    while True:
        end = head_end(data, start, stop)
        if end is None:
            return None
        line, fields = split_head(data[start:end])
        status_line = parse_status_line(line)
        if status_line is None:
            return None
        if not is_interim(status_line.status):
            return ResponseHead(status_line, fields, end, tuple(interim))
        interim.append((start, end))
        start = end


__all__ = [
    "HEAD_END",
    "MAX_HEAD",
    "Fields",
    "ResponseHead",
    "StatusLine",
    "field_values",
    "head_end",
    "is_interim",
    "parse_fields",
    "parse_response_head",
    "parse_status_line",
    "split_head",
    "start_line",
]
