"""The CDXJ of WARC files without a journal, read back by the one WARC reader.

A crawl indexes from its writer's journals; ``archiver index`` reads foreign WARC files (and the
files a dead process left) record by record. Either way the lines must be cdxj-indexer's, so
these tests compare with cdxj-indexer run on the same files, as its own tests compare exact CDXJ
text.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
from pathlib import Path

import pytest
import surt
from cdxj_indexer.main import CDXJIndexer

from archiver.commands.cli import main
from archiver.index import cdxj as index
from archiver.index.cdxj import scan_warc
from archiver.models import WrittenRecord
from archiver.run.finish import index_paths
from archiver.warc.records import cdx_mime
from tests.conftest import run_crawl
from tests.support.site import SiteServer
from tests.support.tools import reference_cdxj


def record(kind: str, uri: str, block: bytes, content_type: str, *extra: str) -> bytes:
    fields = [
        "WARC/1.1",
        f"WARC-Type: {kind}",
        f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{len(block):012d}>",
        "WARC-Date: 2024-01-02T03:04:05.123456Z",
        f"WARC-Target-URI: {uri}",
        f"Content-Type: {content_type}",
        "WARC-Payload-Digest: sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
        *extra,
        f"Content-Length: {len(block)}",
    ]
    return "\r\n".join(fields).encode() + b"\r\n\r\n" + block + b"\r\n\r\n"


HTTP = "application/http;msgtype=response"


def response(uri: str, block: bytes) -> bytes:
    return record("response", uri, block, HTTP)


#: Legal but odd records: ways the HTTP head can be spelled that change a CDXJ field. (A status
#: that is not a number is left out, where cdxj-indexer copies it: the index's status is a code.)
ODD = [
    response("http://a.test/1", b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\nhi"),
    response("http://a.test/2", b"HTTP/1.1  404   Not Found\r\ncontent-type:text/plain\r\n\r\n"),
    response(
        "http://a.test/3", b"HTTP/1.1 200 OK\r\nX: y\r\n z\r\nContent-Type:\r\n  text/css\r\n\r\n"
    ),
    response(
        "http://a.test/4", b"HTTP/1.1 200 OK\r\nContent-Type;x\r\nContent-Type : a/b \r\n\r\n"
    ),
    response(
        "http://a.test/5", b"HTTP/1.0 302\nLocation: /x\nContent-Type: \xe9t\xe9/html\n\nbody"
    ),
    response("http://a.test/6", b"\r\nContent-Type: text/html\r\n\r\n"),
    response("http://a.test/7", b"no-HTTP-head-at-all;" * 10),
    response(
        "http://a.test/8",
        b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n \t \r\nContent-Type: c/d\r\n\r\n",
    ),
    response("<http://a.test/9 with space>", b"HTTP/1.1 200 OK\r\n\r\n"),
    record(
        "response", "dns:a.test", b"20240102030405\r\na.test. 300 IN A 192.0.2.1\r\n", "text/dns"
    ),
    record("revisit", "http://a.test/1", b"", HTTP, "WARC-Profile: x"),
    record("revisit", "http://a.test/2", b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n", HTTP),
    record("resource", "file:///x.txt", b"hello", "text/plain; charset=x"),
    record("resource", "http://a.test/res", b"HTTP/1.1 200 OK\r\n\r\n", "text/plain"),
    record("request", "http://a.test/1", b"GET /1 HTTP/1.1\r\n\r\n", "application/http"),
    record("metadata", "http://a.test/1", b"via: x\r\n", "application/warc-fields"),
    record("metadata", "http://a.test/1", b"notes", "text/plain"),
    record("resource", "http://a.test/1", b"k: v\r\n", "application/warc-fields"),
    response("https://a.test/12", b"HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n\tc\r\n\r\n"),
    response(
        "https://a.test/13", b"HTTP/1.1 200 OK\r\nContent-Type: x/y\x0c\r\n\x0c\r\nX: z\r\n\r\n"
    ),
]


def cdxj_indexer(path: Path) -> list[str]:
    out = io.StringIO()
    CDXJIndexer(out, [str(path)], dir_root=str(path.parent)).process_all()
    return out.getvalue().splitlines()


@pytest.mark.parametrize("compressed", [True, False], ids=["gzip per record", "uncompressed"])
def test_odd_records_are_scanned_as_cdxj_indexer_reads_them(
    tmp_path: Path, compressed: bool
) -> None:
    path = tmp_path / ("odd.warc.gz" if compressed else "odd.warc")
    path.write_bytes(b"".join(gzip.compress(r) if compressed else r for r in ODD))
    assert scan_warc(path) == cdxj_indexer(path)


def test_a_damaged_member_ends_the_scan(tmp_path: Path) -> None:
    """cdxj-indexer indexes the record of a gzip member cut short; the scan keeps the whole
    records before it only (the cut one cannot be replayed)."""
    path = tmp_path / "cut.warc.gz"
    members = [gzip.compress(r) for r in ODD[:6]]
    path.write_bytes(b"".join(members[:5]) + members[5][:-7])
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(b"".join(members[:5]))
    assert scan_warc(path, "whole.warc.gz") == cdxj_indexer(whole)
    assert len(cdxj_indexer(path)) == 6


async def test_index_of_loose_warcs_equals_cdxj_indexer(tmp_path: Path) -> None:
    """``archiver index DIR/warcs`` reads every record back (no journal is used)."""
    async with SiteServer() as site:
        site.add_page("/", '<a href="/a">a</a><a href="/gone">g</a><img src="/i.png">')
        site.add_page("/a", "<title>a</title>" + "text " * 2000)
        site.add_file("/i.png", b"\x89PNG\r\n\x1a\n" + bytes(3000), "image/png")
        site.add_redirect("/r", "/a")
        result = await run_crawl(tmp_path / "out", site.url("/"), site.url("/r"))
    assert result.status == "completed"
    warcs = tmp_path / "out" / "warcs"
    count, output = index_paths([warcs], tmp_path / "scanned.cdxj")
    scanned = output.read_text().splitlines()
    assert scanned == reference_cdxj(warcs)
    assert count == len(scanned) == len((tmp_path / "out" / "index.cdxj").read_text().splitlines())
    assert main(["index", str(warcs), "-o", str(tmp_path / "cli.cdxj")]) == 0
    assert (tmp_path / "cli.cdxj").read_text() == output.read_text()
    statuses = {json.loads(line.split(" ", 2)[2]).get("status") for line in scanned}
    assert {"200", "301", "404"} <= statuses


def test_cdxj_line_matches_cdxj_indexer_conventions() -> None:
    record = WrittenRecord(
        record_type="response",
        record_id="<urn:uuid:x>",
        target_uri="http://www.Example.org/B?b=2&a=1",
        date="2026-11-22T10:00:00.123456Z",
        filename="f.warc.gz",
        offset=10,
        length=20,
        status=200,
        mime=None,
        payload_digest="sha1:ABC",
    )
    line = index.cdxj_line(record)
    key, ts, data = line.split(" ", 2)
    assert key == surt.surt("http://www.Example.org/B?b=2&a=1")
    assert ts == "20261122100000"
    assert list(json.loads(data)) == ["url", "status", "digest", "length", "offset", "filename"]
    assert index.cdx11_line(line).split(" ") == [
        key,
        ts,
        "http://www.Example.org/B?b=2&a=1",
        "-",
        "200",
        "ABC",
        "-",
        "-",
        "20",
        "10",
        "f.warc.gz",
    ]
    # "Content-Type:" with no media type: cdxj-indexer writes "mime": ""; CDX-11 needs a "-"
    empty = index.cdxj_line(dataclasses.replace(record, mime=""))
    assert list(json.loads(empty.split(" ", 2)[2]))[:2] == ["url", "mime"]
    assert index.cdx11_line(empty).split(" ")[3] == "-"
    assert [cdx_mime(v) for v in (None, "", " ; charset=x", "Text/HTML; q=1")] == [
        None,
        "",
        "",
        "Text/HTML",
    ]


def test_external_sort_is_byte_order() -> None:
    lines = [f"k{i % 97:03d},é {i}" for i in range(2000)] + ["a", "Z", "é", "~"]
    assert list(index.sorted_lines(lines, chunk=37)) == sorted(lines, key=str.encode)
