"""Tests for archiver.commands.verify: each rule fails on a hand-made defect and passes on good
files.

The WARC builders live in tests.warc.test_reader.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.commands.verify import RULES, VerifyReport, render, to_json, verify
from archiver.warc.reader import RecordInfo, iter_records, repair
from tests.warc.test_reader import (
    DATE,
    HTTP_REQUEST,
    HTTP_RESPONSE,
    NAME,
    WarcBuilder,
    gz,
    http_request,
    http_response,
    sha1_label,
    standard,
    warc_record,
)

PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def rules(report: VerifyReport) -> dict[str, int]:
    return dict(report.rule_counts)


def assert_clean(report: VerifyReport) -> None:
    assert report.findings == [], render(report)
    assert report.ok


# ----------------------------------------------------------------------------- good files
def test_good_file_passes_with_zero_findings(tmp_path: Path) -> None:
    path = standard().write(tmp_path)
    report = verify([tmp_path])
    assert_clean(report)
    assert report.files == 1
    assert report.bytes == path.stat().st_size
    assert dict(report.records) == {"warcinfo": 1, "response": 2, "request": 2, "metadata": 1}
    assert report.blocks_checked == 6
    assert report.blocks_failed == 0
    assert report.payloads_checked == 4  # responses and requests
    assert render(report).splitlines()[-1] == "VERIFY OK"
    json.dumps(to_json(report))


def test_warcio_written_file_passes(tmp_path: Path) -> None:
    """An independent writer (warcio, non-chunked bodies) agrees with our judge."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True, warc_version="1.1")
    writer.write_record(writer.create_warcinfo_record(NAME, {"software": "warcio"}))
    uri = "http://example.com/page"
    headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
    body = b"<html>hello</html>"
    resp = writer.create_warc_record(
        uri, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
    )
    req_headers = StatusAndHeaders(
        "GET /page HTTP/1.1", [("Host", "example.com")], is_http_request=True
    )
    req = writer.create_warc_record(
        uri, "request", payload=io.BytesIO(b""), length=0, http_headers=req_headers
    )
    writer.write_request_response_pair(req, resp)
    (tmp_path / NAME).write_bytes(buf.getvalue())
    report = verify([tmp_path])
    assert_clean(report)
    assert report.payloads_checked >= 1


def test_uncompressed_file_passes(tmp_path: Path) -> None:
    warc = standard("TEST-00000.warc")
    warc.write(tmp_path, compress=False)
    assert_clean(verify([tmp_path]))


def test_files_given_directly_and_nested_directories(tmp_path: Path) -> None:
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    path = standard().write(sub)
    assert_clean(verify([path]))
    assert verify([tmp_path]).files == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert rules(verify([empty])) == {"no-files": 1}


# ----------------------------------------------------------------------------- digests
def test_chunked_payload_digest_is_over_the_dechunked_body(tmp_path: Path) -> None:
    block, payload = http_response(b"", chunks=[b"<html>", b"hello ", b"chunked</html>"])
    warc = WarcBuilder()
    warc.capture("http://example.com/", block, payload)
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert_clean(report)

    raw_body = block.split(b"\r\n\r\n", 1)[1]  # what warcio would hash: the chunk framing too
    bad = WarcBuilder()
    bad.capture("http://example.com/", block, raw_body)
    bad.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"payload-digest": 1}
    assert report.payloads_failed == 1
    assert render(report).splitlines()[-1] == "VERIFY FAILED"


def test_chunked_request_body_payload(tmp_path: Path) -> None:
    warc = WarcBuilder()
    rid = warc.capture("http://example.com/form", request=False)
    request = (
        b"POST /form HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4\r\na=1&\r\n3\r\nb=2\r\n0\r\n\r\n"
    )
    for payload in (b"a=1&b=2", request.split(b"\r\n\r\n", 1)[1]):
        warc.add(
            "request",
            request,
            uri="http://example.com/form",
            payload=payload,
            content_type=HTTP_REQUEST,
            fields=[("WARC-Concurrent-To", rid)],
        )
    warc.write(tmp_path)
    # the second request is also an orphan: it does not follow the response
    assert rules(verify([tmp_path])) == {"payload-digest": 1, "orphan-request": 1}


def test_chunk_extension_and_trailer_are_not_payload(tmp_path: Path) -> None:
    block = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n"
    )
    warc = WarcBuilder()
    warc.capture("http://example.com/", block, b"hello world")
    warc.write(tmp_path)
    assert_clean(verify([tmp_path]))


def test_content_encoding_is_kept_in_the_payload(tmp_path: Path) -> None:
    compressed = gzip.compress(b"<html>" + b"x" * 500 + b"</html>", mtime=0)
    block, payload = http_response(
        compressed, headers=("Content-Type: text/html", "Content-Encoding: gzip")
    )
    assert payload == compressed
    warc = WarcBuilder()
    warc.capture("http://example.com/", block, payload)
    warc.write(tmp_path)
    assert_clean(verify([tmp_path]))

    decoded = WarcBuilder()
    decoded.capture("http://example.com/", block, gzip.decompress(compressed))
    decoded.write(tmp_path)
    assert rules(verify([tmp_path])) == {"payload-digest": 1}


def test_truncated_chunked_record_payload_is_the_dechunked_prefix(tmp_path: Path) -> None:
    full, _ = http_response(b"", chunks=[b"a" * 100, b"b" * 100])
    cut = full[: full.index(b"b" * 100) + 40]  # inside the second chunk
    warc = WarcBuilder()
    warc.capture(
        "http://example.com/",
        cut,
        b"a" * 100 + b"b" * 40,
        response_fields=[("WARC-Truncated", "length")],
    )
    warc.write(tmp_path)
    assert_clean(verify([tmp_path]))


def test_broken_chunking_payload_is_the_stored_body(tmp_path: Path) -> None:
    block = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nnot chunked at all"
    body = block.split(b"\r\n\r\n", 1)[1]
    warc = WarcBuilder()
    warc.capture("http://example.com/", block, body)
    warc.write(tmp_path)
    assert_clean(verify([tmp_path]))


def test_interim_100_continue_is_part_of_the_head(tmp_path: Path) -> None:
    final, body = http_response(b"the body")
    block = b"HTTP/1.1 100 Continue\r\n\r\n" + final
    warc = WarcBuilder()
    warc.capture("http://example.com/", block, body)
    warc.write(tmp_path)
    assert_clean(verify([tmp_path]))


def test_flipped_block_byte_fails_the_block_digest(tmp_path: Path) -> None:
    warc = standard()
    record = warc.records[1]
    at = record.index(b"<html>")
    warc.records[1] = record[:at] + b"<HTML>" + record[at + 6 :]
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"block-digest": 1, "payload-digest": 1}
    assert report.blocks_failed == 1
    finding = next(f for f in report.findings if f.rule == "block-digest")
    assert finding.offset == warc.extents()[1][0]
    assert verify([tmp_path], digest_checks=False).ok


def test_sha256_base16_digests_are_checked(tmp_path: Path) -> None:
    block, payload = http_response(b"sha256 body")
    warc = WarcBuilder()
    _, record = warc_record(
        "response",
        block,
        uri="http://example.com/",
        content_type=HTTP_RESPONSE,
        block_digest=False,
        fields=[
            ("WARC-Block-Digest", "sha256:" + hashlib.sha256(block).hexdigest()),
            ("WARC-Payload-Digest", "sha256:" + hashlib.sha256(payload).hexdigest()),
        ],
    )
    rid = re.search(rb"WARC-Record-ID: (\S+)", record)
    assert rid is not None
    warc.add_raw("response", record)
    warc.add(
        "request",
        http_request("http://example.com/"),
        uri="http://example.com/",
        content_type=HTTP_REQUEST,
        fields=[("WARC-Concurrent-To", rid.group(1).decode())],
    )
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert_clean(report)
    assert report.payloads_checked == 1


def test_digest_encodings_algorithms_and_syntax(tmp_path: Path) -> None:
    warc = WarcBuilder()
    for n, digest in enumerate(
        [
            "sha1:" + hashlib.sha1(b"a").hexdigest(),  # right digest, Base16: a warning
            "md5:" + hashlib.md5(b"b").hexdigest(),  # not checked: a warning
            "sha1:not-a-digest",
            "sha1:" + "A" * 32,  # decodes, does not match
        ]
    ):
        warc.add(
            "resource",
            b"ab"[n : n + 1] if n < 2 else b"c",
            uri=f"http://example.com/{n}",
            content_type="text/plain",
            block_digest=False,
            fields=[("WARC-Block-Digest", digest)],
        )
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {
        "digest-encoding": 1,
        "digest-algorithm": 1,
        "digest-syntax": 1,
        "block-digest": 1,
    }
    assert (report.blocks_checked, report.blocks_failed) == (3, 1)


def test_unreadable_payload_and_missing_payload_digest_are_warnings(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.capture("http://example.com/", b"HTTP/0.9-style body, no status line", b"x")
    block, _ = http_response(b"body")
    warc.capture("http://example.com/b", block, None)
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"payload-unreadable": 1, "payload-digest-missing": 1}
    assert report.ok
    assert render(report).splitlines()[-1] == "VERIFY OK"


# ----------------------------------------------------------------------------- damage and repair
def test_cut_tail_is_found_then_repaired_file_passes(tmp_path: Path) -> None:
    warc = standard()
    warc.capture("http://example.com/b")
    offset, length = warc.extents()[-2]  # the last response
    path = tmp_path / (NAME + ".open")
    path.write_bytes(warc.data()[: offset + length // 2])
    report = verify([tmp_path])
    assert rules(report) == {"not-closed": 1, "gzip-member-cut": 1}

    fixed = repair(path)
    assert fixed.kept_size == offset
    final = path.with_name(NAME)
    path.rename(final)
    assert_clean(verify([tmp_path]))


def test_garbage_appended_is_found_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / NAME
    path.write_bytes(standard().data() + b"\r\n\r\n")
    assert rules(verify([path])) == {"trailing-garbage": 1}
    repair(path, allow_closed=True)
    assert_clean(verify([path]))


def test_whole_file_gzip_is_reported(tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(gz(b"".join(standard().records)))
    assert rules(verify([tmp_path])) == {"gzip-multi-record": 1}


def test_corrupt_member_is_reported(tmp_path: Path) -> None:
    warc = standard()
    members = warc.members()
    bad = bytearray(members[1])
    bad[len(bad) // 2] ^= 0xFF
    (tmp_path / NAME).write_bytes(b"".join([members[0], bytes(bad), *members[2:]]))
    # the garbled header is parsed before zlib reaches the CRC: corruption is still the finding;
    # the walk goes on at the next member, the request whose response was lost
    assert rules(verify([tmp_path])) == {"gzip-member-corrupt": 1, "orphan-request": 1}


# ----------------------------------------------------------------------------- structure
def test_request_without_response_and_response_without_request(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.add(
        "request",
        http_request("http://example.com/x"),
        uri="http://example.com/x",
        payload=b"",
        content_type=HTTP_REQUEST,
        fields=[("WARC-Concurrent-To", "<urn:uuid:00000000-0000-0000-0000-000000000000>")],
    )
    warc.capture("http://example.com/", request=False)
    warc.capture("http://example.com/ok")
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"orphan-request": 1, "request-missing": 1}


def test_request_with_other_uri_or_date_is_a_mismatch(tmp_path: Path) -> None:
    warc = WarcBuilder()
    rid = warc.capture("http://example.com/", request=False)
    warc.add(
        "request",
        http_request("http://example.com/"),
        uri="http://example.com/other",
        date="2024-05-01T12:00:01Z",
        payload=b"",
        content_type=HTTP_REQUEST,
        fields=[("WARC-Concurrent-To", rid)],
    )
    warc.write(tmp_path)
    assert rules(verify([tmp_path])) == {"request-mismatch": 2}


def test_capture_split_across_files_is_flagged(tmp_path: Path) -> None:
    first = WarcBuilder("TEST-00000.warc.gz")
    rid = first.capture("http://example.com/", request=False)
    second = WarcBuilder("TEST-00001.warc.gz")
    second.add(
        "request",
        http_request("http://example.com/"),
        uri="http://example.com/",
        payload=b"",
        content_type=HTTP_REQUEST,
        fields=[("WARC-Concurrent-To", rid)],
    )
    first.write(tmp_path)
    second.write(tmp_path)
    assert rules(verify([tmp_path])) == {"request-missing": 1, "orphan-request": 1}


def test_warcinfo_missing_not_first_or_misnamed(tmp_path: Path) -> None:
    """A warcinfo first is archiver's rule (WARC 1.1 only recommends it): a file without one
    is not known to be archiver's, so only --archiver-rules judges it by that rule."""
    missing = WarcBuilder(warcinfo=False)
    missing.capture("http://example.com/")
    missing.write(tmp_path)
    assert rules(verify([tmp_path], archiver_rules=True)) == {"warcinfo-first": 1}
    assert rules(verify([tmp_path])) == {}

    late = WarcBuilder(warcinfo=False)
    late.capture("http://example.com/")
    late.records.append(WarcBuilder().records[0])
    late.write(tmp_path)
    assert rules(verify([tmp_path], archiver_rules=True)) == {"warcinfo-first": 1}

    misnamed = standard("OTHER-00000.warc.gz")
    (tmp_path / NAME).write_bytes(misnamed.data())
    report = verify([tmp_path])
    assert rules(report) == {"warcinfo-filename": 1}
    assert "OTHER-00000.warc.gz" in report.findings[0].message


def test_open_file_is_not_closed_but_its_filename_is_the_final_name(tmp_path: Path) -> None:
    standard().write(tmp_path, suffix=".open")
    assert rules(verify([tmp_path])) == {"not-closed": 1}


def test_fields_ids_dates_uris_and_version(tmp_path: Path) -> None:
    warc = WarcBuilder()
    rid = warc.capture("http://example.com/")
    warc.add(
        "resource",
        b"x",
        uri="<http://example.com/x>",
        record_id=rid,
        date="2024-05-01 12:00:00",
        content_type="text/plain",
        version="WARC/1.0",
    )
    warc.add("resource", b"y", uri="http://example.com/a b", content_type="text/plain")
    warc.add("resource", b"z", content_type="text/plain")
    warc.write(tmp_path)
    # the bracketed URI is WARC/1.0's grammar ("<" URI ">"): only the space is wrong
    assert rules(verify([tmp_path])) == {
        "record-id-duplicate": 1,
        "target-uri": 1,
        "date-syntax": 1,
        "version": 1,
        "mandatory-field": 1,
    }


def test_repeated_fields(tmp_path: Path) -> None:
    warc = WarcBuilder()
    warc.capture(
        "http://example.com/",
        response_fields=[("WARC-Protocol", "http/1.1"), ("WARC-Protocol", "tls/1.3")],
    )
    warc.add(
        "resource",
        b"x",
        uri="http://example.com/x",
        content_type="text/plain",
        fields=[("warc-date", DATE)],
    )
    warc.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"field-repeated": 1}
    assert "appears 2 times" in report.findings[0].message


def test_duplicate_record_ids_across_files(tmp_path: Path) -> None:
    first = standard("TEST-00000.warc.gz")
    first.write(tmp_path)
    second = WarcBuilder("TEST-00001.warc.gz")
    _, record = warc_record(
        "resource", b"x", uri="http://example.com/x", record_id=first.ids[1], content_type="a/b"
    )
    second.add_raw("resource", record)
    second.write(tmp_path)
    report = verify([tmp_path])
    assert rules(report) == {"record-id-duplicate": 1}
    assert "TEST-00000.warc.gz@" in report.findings[0].message


# ----------------------------------------------------------------------------- revisits
def revisit_file(
    tmp_path: Path, *, drop: Sequence[str] = (), digest_of: bytes | None = None
) -> Path:
    warc = WarcBuilder()
    block, payload = http_response(b"same body")
    assert payload is not None
    original = warc.capture("http://example.com/a", block, payload)
    head = block.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
    fields = {
        "WARC-Profile": PROFILE,
        "WARC-Refers-To": original,
        "WARC-Refers-To-Target-URI": "http://example.com/a",
        "WARC-Refers-To-Date": DATE,
        "WARC-Truncated": "length",
        "WARC-Payload-Digest": sha1_label(digest_of if digest_of is not None else payload),
    }
    for name in drop:
        del fields[name]
    date = "2024-05-01T12:00:05Z"
    rid = warc.add(
        "revisit",
        head,
        uri="http://example.com/b",
        date=date,
        content_type=HTTP_RESPONSE,
        fields=list(fields.items()),
    )
    warc.add(
        "request",
        http_request("http://example.com/b"),
        uri="http://example.com/b",
        date=date,
        payload=b"",
        content_type=HTTP_REQUEST,
        fields=[("WARC-Concurrent-To", rid)],
    )
    return warc.write(tmp_path)


def test_revisit_passes(tmp_path: Path) -> None:
    revisit_file(tmp_path)
    report = verify([tmp_path])
    assert_clean(report)
    assert report.records["revisit"] == 1


def test_revisit_without_refers_to_date_is_flagged(tmp_path: Path) -> None:
    revisit_file(tmp_path, drop=["WARC-Refers-To-Date"])
    report = verify([tmp_path])
    assert rules(report) == {"revisit-refers-missing": 1}  # archiver's rule: pywb needs it
    assert "WARC-Refers-To-Date" in report.findings[0].message


def test_revisit_without_truncated_or_with_another_digest(tmp_path: Path) -> None:
    revisit_file(tmp_path, drop=["WARC-Truncated"])
    assert rules(verify([tmp_path])) == {"revisit-truncated": 1}
    revisit_file(tmp_path, digest_of=b"another body")
    assert rules(verify([tmp_path])) == {"revisit-digest": 1}


def test_revisit_found_by_uri_and_date_without_refers_to(tmp_path: Path) -> None:
    revisit_file(tmp_path, drop=["WARC-Refers-To"], digest_of=b"another body")
    assert rules(verify([tmp_path])) == {"revisit-digest": 1}


# ----------------------------------------------------------------------------- index
def index_lines(warc: WarcBuilder, name: str = NAME) -> list[str]:
    """CDXJ lines for the response/revisit records of a builder (keys need not be SURTs)."""
    lines = []
    for (offset, length), record, kind in zip(
        warc.extents(), warc.records, warc.types, strict=True
    ):
        if kind not in ("response", "revisit"):
            continue
        uri_match = re.search(rb"WARC-Target-URI: (\S+)", record)
        digest_match = re.search(rb"WARC-Payload-Digest: (\S+)", record)
        assert uri_match is not None and digest_match is not None
        uri = uri_match.group(1).decode()
        entry = {
            "url": uri,
            "mime": "text/html" if kind == "response" else "warc/revisit",
            "status": "200",
            "digest": digest_match.group(1).decode(),
            "length": str(length),
            "offset": str(offset),
            "filename": name,
        }
        key = "com,example)/" + uri.split("/", 3)[3]
        lines.append(f"{key} {re.sub(r'[^0-9]', '', DATE)[:14]} {json.dumps(entry)}")
    return sorted(lines, key=lambda line: line.encode())


def write_index(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_good_index_passes(tmp_path: Path) -> None:
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    warc = standard()
    warc.write(warcs)
    index = write_index(tmp_path / "index.cdxj", index_lines(warc))
    report = verify([warcs], index=index)
    assert_clean(report)
    assert report.index_lines_checked == 2
    keyed = verify([warcs], index=index, urlkey=lambda url: "com,example)/" + url.split("/", 3)[3])
    assert_clean(keyed)
    assert rules(verify([warcs], index=index, urlkey=lambda url: url)) == {"index-key": 2}


def test_index_filenames_resolve_by_base_name_when_unique(tmp_path: Path) -> None:
    warcs = tmp_path / "out" / "warcs"
    warcs.mkdir(parents=True)
    warc = standard()
    warc.write(warcs)
    index = write_index(tmp_path / "index.cdxj", index_lines(warc))
    assert_clean(verify([tmp_path / "out"], index=index))


def test_unsorted_index_fails(tmp_path: Path) -> None:
    warc = standard()
    warc.write(tmp_path)
    index = write_index(tmp_path / "index.cdxj", index_lines(warc)[::-1])
    report = verify([tmp_path], index=index)
    assert rules(report) == {"index-sorted": 1}


def test_index_with_wrong_offset_fails(tmp_path: Path) -> None:
    warc = standard()
    warc.write(tmp_path)
    lines = index_lines(warc)
    entry = json.loads(lines[0].split(" ", 2)[2])
    entry["offset"] = str(int(entry["offset"]) + 1)
    lines[0] = " ".join([*lines[0].split(" ", 2)[:2], json.dumps(entry)])
    report = verify([tmp_path], index=write_index(tmp_path / "index.cdxj", lines))
    assert rules(report) == {"index-slice": 1, "index-missing": 1}
    assert report.index_lines_failed == 1


def test_index_pointing_at_a_request_or_with_wrong_fields_fails(tmp_path: Path) -> None:
    warc = standard()
    warc.write(tmp_path)
    lines = index_lines(warc)
    key, stamp, js = lines[0].split(" ", 2)
    entry = json.loads(js)
    req_offset, req_len = warc.extents()[2]
    entry.update(offset=str(req_offset), length=str(req_len))
    bad_fields = json.loads(lines[1].split(" ", 2)[2])
    bad_fields.update(url="http://example.com/zzz", digest="sha1:" + "A" * 32, status="404")
    lines = [
        f"{key} {stamp} {json.dumps(entry)}",
        f"{lines[1].split(' ')[0]} 20000101000000 {json.dumps(bad_fields)}",
    ]
    report = verify([tmp_path], index=write_index(tmp_path / "index.cdxj", sorted(lines)))
    # line 1 points at the request (same URL, empty-request digest); line 2 has wrong fields
    assert rules(report) == {
        "index-type": 1,
        "index-url": 1,
        "index-digest": 2,
        "index-status": 1,
        "index-timestamp": 1,
        "index-missing": 1,
    }


def test_index_missing_a_line_fails(tmp_path: Path) -> None:
    warc = standard()
    warc.write(tmp_path)
    index = write_index(tmp_path / "index.cdxj", index_lines(warc)[1:])
    report = verify([tmp_path], index=index)
    assert rules(report) == {"index-missing": 1}


def test_index_syntax_duplicates_and_unknown_files(tmp_path: Path) -> None:
    warc = standard()
    warc.write(tmp_path)
    lines = index_lines(warc)
    other = lines[1].replace(NAME, "nope.warc.gz")
    lines = sorted([*lines, lines[0], other, "zzz not-json {"], key=str.encode)
    report = verify([tmp_path], index=write_index(tmp_path / "index.cdxj", lines))
    assert rules(report) == {"index-duplicate": 1, "index-filename": 1, "index-syntax": 1}
    assert rules(verify([tmp_path], index=tmp_path / "absent.cdxj")) == {"index-file": 1}


def test_revisit_index_line(tmp_path: Path) -> None:
    revisit_file(tmp_path)
    lines = []
    for rec in iter_records(tmp_path / NAME):
        assert isinstance(rec, RecordInfo)
        if rec.record_type in ("response", "revisit"):
            entry = {
                "url": rec.target_uri,
                "digest": rec.get("WARC-Payload-Digest"),
                "offset": rec.offset,
                "length": rec.length,
                "filename": NAME,
            }
            stamp = re.sub(r"\D", "", rec.date or "")[:14]
            lines.append(f"k/{rec.target_uri} {stamp} {json.dumps(entry)}")
    report = verify([tmp_path], index=write_index(tmp_path / "i.cdxj", sorted(lines)))
    assert_clean(report)


# ----------------------------------------------------------------------------- output
def test_render_and_json_summarise_failures(tmp_path: Path) -> None:
    warc = WarcBuilder()
    for n in range(6):
        warc.capture(f"http://example.com/{n}", request=False)
    warc.write(tmp_path)
    report = verify([tmp_path])
    text = render(report)
    assert "ERROR request-missing (6)" in text
    assert "... and 3 more" in text
    assert text.splitlines()[-1] == "VERIFY FAILED"
    data = to_json(report)
    assert data["ok"] is False
    assert data["rules"] == {
        "request-missing": {"severity": "error", "kind": "archiver", "count": 6}
    }
    assert len(data["findings"]) == 6  # type: ignore[arg-type]
    json.dumps(data)
    assert set(report.rule_counts) <= set(RULES)
