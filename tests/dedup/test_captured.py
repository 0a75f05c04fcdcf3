"""URL-level dedup for browser crawls: captures read back from the WARC the writer wrote
(responses, chunked ones, revisits, files still ``.open``)."""

from __future__ import annotations

from pathlib import Path

from archiver.dedup.captured import read_response, response_parts
from archiver.index.cdxj import writer_journal
from archiver.models import Original, RecordLocation, WrittenCapture
from archiver.warc.records import RecordFactory
from archiver.warc.writer import Writer, WriterConfig
from tests.warc.test_records_writer import exchange

CHUNKED = (
    b"HTTP/1.1 200 Fine\r\nContent-Type: text/css\r\nTransfer-Encoding: chunked\r\n"
    b"X-Raw: caf\xe9\r\n\r\n5\r\nbody{\r\n3\r\n a}\r\n0\r\n\r\n"
)
PLAIN = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\ngone"


async def write(tmp_path: Path, *captures: tuple[bytes, bytes, str]) -> list[WrittenCapture]:
    """Write (response bytes, payload, url) captures; the second of an identical payload as a
    revisit, as the crawl's recorder does. The file stays ``.open`` (nothing committed)."""
    factory = RecordFactory()
    config = WriterConfig(directory=tmp_path, journal=writer_journal(tmp_path / "journals"))
    writer = Writer(config, factory, auto_seal=False)
    writer.start()
    written: list[WrittenCapture] = []
    originals: dict[bytes, Original] = {}
    for response, body, url in captures:
        ex = exchange(response, body=body, url=url)
        ex.status = int(response.split(b" ", 2)[1])
        first = originals.get(body)
        capture = factory.revisit(ex, first) if first else factory.capture(ex)
        result = await writer.write(capture)
        primary = result.primary
        assert primary is not None
        originals.setdefault(body, Original(primary.record_id, url, primary.date))
        written.append(result)
    await writer.close(drain=True)
    return written


def location(capture: WrittenCapture) -> RecordLocation:
    primary = capture.primary
    assert primary is not None
    return RecordLocation(primary.filename, primary.offset, primary.length)


async def test_responses_come_back_as_received_with_the_chunking_removed(tmp_path: Path) -> None:
    chunked, plain = await write(
        tmp_path,
        (CHUNKED, b"body{ a}", "http://a.test/style.css"),
        (PLAIN, b"gone", "http://a.test/missing"),
    )
    assert list(tmp_path.glob("*.open")), "read while the file is still being written"
    stored = read_response(tmp_path, location(chunked), max_body=1 << 20)
    assert stored is not None
    assert (stored.status, stored.reason, stored.payload) == (200, "Fine", b"body{ a}")
    assert ("X-Raw", "caf\xe9") in stored.headers  # latin-1: byte for byte
    assert stored.header("transfer-encoding") == "chunked"
    missing = read_response(tmp_path, location(plain), max_body=1 << 20)
    assert missing is not None and (missing.status, missing.payload) == (404, b"gone")
    too_large = read_response(tmp_path, location(chunked), max_body=4)
    assert too_large is not None
    assert (too_large.status, too_large.payload, too_large.too_large) == (200, None, True)
    nowhere = RecordLocation(location(plain).filename, location(plain).offset + 1, 10)
    assert read_response(tmp_path, nowhere, max_body=1 << 20) is None
    assert response_parts(CHUNKED) == (
        200,
        "Fine",
        [("Content-Type", "text/css"), ("Transfer-Encoding", "chunked"), ("X-Raw", "caf\xe9")],
        b"body{ a}",
    )


async def test_a_record_that_starts_with_interim_heads_is_read_as_its_final_response(
    tmp_path: Path,
) -> None:
    """archiver keeps interim 1xx heads out of its response records (a metadata record holds
    them), but a record written by another tool may start with them (RFC 9110 section 15.2):
    the browser must be answered with the final response, not with the 100."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
    (written,) = await write(tmp_path, (interim + PLAIN, b"gone", "http://a.test/late"))
    stored = read_response(tmp_path, location(written), max_body=1 << 20)
    assert stored is not None
    assert (stored.status, stored.reason, stored.payload) == (404, "Not Found", b"gone")
    assert stored.headers == [("Content-Type", "text/plain"), ("Content-Length", "4")]
