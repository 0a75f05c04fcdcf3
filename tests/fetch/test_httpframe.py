"""archiver.fetch.httpframe: where a response ends on the wire, whatever pieces it arrives in
(RFC 9112 section 6.3), and a stored body de-chunked (section 7.1)."""

from __future__ import annotations

from archiver.fetch.httpframe import ResponseFramer, State, dechunk


def test_framer_splits_exact_boundaries_any_chunking() -> None:
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n"
    for step in range(1, len(wire) + 1):
        payload: list[bytes] = []

        def on_body(m: memoryview, sink: list[bytes] = payload) -> None:
            sink.append(bytes(m))

        framer = ResponseFramer(on_body=on_body)
        used = 0
        data = wire + b"NEXT"
        for i in range(0, len(data), step):
            used += framer.feed(data[i : i + step])
        assert framer.state is State.DONE and used == len(wire)
        assert b"".join(payload) == b"abc"


def test_framer_interim_and_no_body_statuses() -> None:
    framer = ResponseFramer()
    framer.feed(
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
        b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n"
    )
    assert framer.state is State.DONE and framer.status == 304
    head = ResponseFramer(method="HEAD")
    head.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
    assert head.state is State.DONE


def test_dechunk_errors() -> None:
    assert dechunk(b"3\r\nabc\r\n0\r\n\r\n") == (b"abc", None)
    assert dechunk(b"3\r\nab")[1] is not None
    assert dechunk(b"ZZ\r\n")[1] is not None
