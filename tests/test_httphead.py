"""archiver.httphead: the one parser of HTTP/1.x response heads (RFC 9112 sections 2-5).

Heads are byte literals as servers send them (bare LF, obs-fold, duplicates, Latin-1 octets,
interim 1xx responses); the framer that decides capture boundaries must read every one of them
as the parser does, in whatever pieces the bytes arrive.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.fetch.httpframe import ResponseFramer, State
from archiver.httphead import (
    StatusLine,
    field_values,
    head_end,
    parse_response_head,
    parse_status_line,
    split_head,
    start_line,
)


def test_a_head_with_crlf_lines() -> None:
    data = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi"
    head = parse_response_head(data)
    assert head is not None
    assert head.status_line == StatusLine((1, 1), 200, b"OK")
    assert head.fields == [(b"Content-Type", b"text/html"), (b"Content-Length", b"2")]
    assert data[head.end :] == b"hi"
    assert head.interim == ()
    assert head.status_line.protocol == "http/1.1"


def test_bare_lf_ends_lines_and_the_head() -> None:
    data = b"HTTP/1.0 404 Not Found\nServer: x\n\nbody"
    head = parse_response_head(data)
    assert head is not None
    assert (head.status, head.status_line.reason) == (404, b"Not Found")
    assert head.fields == [(b"Server", b"x")]
    assert data[head.end :] == b"body"


def test_a_mixed_line_end_before_the_empty_line() -> None:
    assert head_end(b"HTTP/1.1 200 OK\r\nA: b\n\r\nrest") == len(b"HTTP/1.1 200 OK\r\nA: b\n\r\n")


def test_folded_lines_join_the_field_before_them_with_one_space() -> None:
    head = parse_response_head(
        b"HTTP/1.1 200 OK\r\nX-Long: first\r\n   second\r\n\tthird\r\nNext: 1\r\n\r\n"
    )
    assert head is not None
    assert head.fields == [(b"X-Long", b"first second third"), (b"Next", b"1")]


def test_a_value_that_starts_on_a_folded_line_has_no_leading_space() -> None:
    """Found by the response fuzz target: ``Content-Length:`` folded onto `` 4`` is 4, as h11
    reads it, not an invalid `` 4``."""
    head = parse_response_head(b"HTTP/1.1 200 OK\r\nContent-Length:\r\n 4\r\n\r\n")
    assert head is not None
    assert head.fields == [(b"Content-Length", b"4")]


def test_duplicate_fields_keep_their_order_and_case() -> None:
    head = parse_response_head(
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n"
        b"Vary: x\r\nSET-COOKIE: c=3\r\n\r\n"
    )
    assert head is not None
    assert head.values(b"Set-Cookie") == [b"a=1", b"b=2", b"c=3"]
    assert [name for name, _ in head.fields] == [
        b"Set-Cookie",
        b"set-cookie",
        b"Vary",
        b"SET-COOKIE",
    ]
    assert field_values(head.fields, b"vary") == [b"x"]


def test_latin1_octets_survive_as_bytes_and_as_text() -> None:
    head = parse_response_head(
        b"HTTP/1.1 200 D\xe9j\xe0 vu\r\nContent-Disposition: caf\xe9\xff\r\n\r\n"
    )
    assert head is not None
    assert head.status_line.reason == b"D\xe9j\xe0 vu"
    assert head.fields == [(b"Content-Disposition", b"caf\xe9\xff")]
    assert head.text_fields() == [("Content-Disposition", "caf\u00e9\u00ff")]
    assert head.text_fields()[0][1].encode("latin-1") == b"caf\xe9\xff"


def test_interim_heads_are_skipped_and_located() -> None:
    first = b"HTTP/1.1 100 Continue\r\n\r\n"
    second = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
    final = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    data = first + second + final
    head = parse_response_head(data)
    assert head is not None
    assert head.status == 200
    assert head.fields == [(b"Content-Length", b"0")]
    assert head.end == len(data)
    assert head.interim == ((0, len(first)), (len(first), len(first) + len(second)))
    assert [data[a:b] for a, b in head.interim] == [first, second]


def test_101_is_a_final_head() -> None:
    head = parse_response_head(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
    assert head is not None and head.status == 101 and head.interim == ()


def test_a_line_without_a_colon_is_no_field() -> None:
    head = parse_response_head(b"HTTP/1.1 200 OK\r\nnot a field\r\nA: 1\r\n\r\n")
    assert head is not None and head.fields == [(b"A", b"1")]


def test_optional_whitespace_around_values_is_not_part_of_them() -> None:
    assert split_head(b"HTTP/1.1 200 OK\r\nA:  spaced \t\r\nB:tight\r\n") == (
        b"HTTP/1.1 200 OK",
        [(b"A", b"spaced"), (b"B", b"tight")],
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"HTTP/1.1 200 OK", StatusLine((1, 1), 200, b"OK")),
        (b"HTTP/1.0 204", StatusLine((1, 0), 204, b"")),
        (b"HTTP/1.1 404 ", StatusLine((1, 1), 404, b"")),
        (b"HTTP/1.1\t  500 Oops", StatusLine((1, 1), 500, b"Oops")),
        (b"HTTP/1.1 200 OK\r", StatusLine((1, 1), 200, b"OK")),
        (b"HTTP/1.1 302 Found here", StatusLine((1, 1), 302, b"Found here")),
        (b"HTTP/1.1 20", None),  # two digits
        (b"HTTP/1.1 2000", None),
        (b"HTTP/1.1 200OK", None),
        (b"HTTP/11 200 OK", None),
        (b"ICY 200 OK", None),
        (b"<html>", None),
        (b"", None),
    ],
)
def test_status_lines(line: bytes, expected: StatusLine | None) -> None:
    assert parse_status_line(line) == expected


def test_a_status_line_cut_short_keeps_what_it_has() -> None:
    """WARC-Protocol and verify read only the first bytes of a block."""
    assert parse_status_line(start_line(b"HTTP/1.1 404 Not Fou")) == StatusLine(
        (1, 1), 404, b"Not Fou"
    )


def test_no_head_when_the_bytes_do_not_start_with_one() -> None:
    assert parse_response_head(b"<html>\r\n\r\n") is None  # HTTP/0.9 or not HTTP
    assert parse_response_head(b"HTTP/1.1 200 OK\r\nA: 1\r\n") is None  # no empty line yet
    assert parse_response_head(b"HTTP/1.1 100 Continue\r\n\r\n") is None  # no final head yet
    data = b"HTTP/1.1 200 OK\r\nA: " + b"x" * 100 + b"\r\n\r\n"
    assert parse_response_head(data, stop=50) is None
    assert parse_response_head(data, stop=len(data)) is not None


def test_start_line() -> None:
    assert start_line(b"HTTP/1.1 200 OK\r\nA: b\r\n") == b"HTTP/1.1 200 OK"
    assert start_line(b"HTTP/1.1 200 OK\nA: b\n") == b"HTTP/1.1 200 OK"
    assert start_line(bytearray(b"no line end")) == b"no line end"


_NAME = st.sampled_from([b"Content-Type", b"X-A", b"set-cookie", b"Vary", b"X-\xe9"])
_VALUE = st.binary(max_size=12).map(
    lambda v: v.replace(b"\r", b"").replace(b"\n", b"").strip(b" \t")
)


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    """Response heads as servers write them: interim heads first, CRLF or LF, folded lines."""
    eol = draw(st.sampled_from([b"\r\n", b"\n"]))
    out = b""
    for status in draw(st.lists(st.sampled_from([100, 102, 103]), max_size=2)):
        out += b"HTTP/1.1 %d Interim" % status + eol + eol
    out += b"HTTP/1.1 %d " % draw(st.sampled_from([200, 204, 301, 404])) + b"Reason" + eol
    for name, value, fold in draw(st.lists(st.tuples(_NAME, _VALUE, st.booleans()), max_size=6)):
        out += name + b": " + value + eol
        if fold:
            out += b" more" + eol
    return out + b"Content-Length: 0" + eol + eol


@settings(max_examples=200, deadline=None)
@given(head=heads(), cuts=st.lists(st.integers(min_value=1, max_value=7), max_size=40))
def test_the_framer_reads_every_head_as_the_parser_does(head: bytes, cuts: list[int]) -> None:
    """Fed in any pieces, the capture's framer ends on the parser's head: same status, same
    fields, same body start, the same interim heads."""
    parsed = parse_response_head(head)
    assert parsed is not None
    framer = ResponseFramer()
    view, at, sizes = memoryview(head), 0, iter(cuts)
    for _ in range(len(head) + 10):  # each feed takes a byte at least, or the framer is done
        if at >= len(head) or framer.state not in (State.HEADERS, State.BODY):
            break
        at += framer.feed(view[at : at + next(sizes, len(head))])
    assert (framer.state, at) == (State.DONE, len(head))
    assert (framer.status, framer.headers, framer.header_length) == (
        parsed.status,
        parsed.fields,
        parsed.end,
    )
    assert framer.interim_ends == [end for _, end in parsed.interim]
