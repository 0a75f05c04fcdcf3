"""The replay and packaging fixtures themselves, with no archiver code involved.

A hand-made WARC/1.1 (warcio) must replay byte for byte in real pywb, through cdxj-indexer's
index and through pywb's own, and package into a WACZ that real py-wacz validates.
"""

from __future__ import annotations

import email.utils
import gzip
import io
import os
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import iso_date_to_timestamp
from warcio.warcwriter import WARCWriter

from tests.support.pywb import PywbReplay
from tests.support.tools import reference_cdxj, run_tool, wacz_validate


@dataclass(frozen=True)
class Capture:
    url: str
    date: str  # WARC-Date
    status: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def timestamp(self) -> str:
        return str(iso_date_to_timestamp(self.date))


CAPTURES = [
    Capture(
        "http://example.test/",
        "2024-01-02T03:04:05Z",
        "200 OK",
        [("Content-Type", "text/html; charset=utf-8")],
        b'<!doctype html><title>home</title><a href="/data.bin">data</a>\n',
    ),
    Capture(
        "http://example.test/data.bin",
        "2024-01-02T03:04:06.123456Z",  # WARC/1.1 allows fractions; replay keys on seconds
        "200 OK",
        [("Content-Type", "application/octet-stream")],
        bytes(range(256)) * 3,
    ),
    Capture(
        "http://example.test/old",
        "2024-01-02T03:04:07Z",
        "301 Moved Permanently",
        [("Location", "http://example.test/"), ("Content-Type", "text/plain")],
        b"moved to /\n",
    ),
]


def write_warc(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.1")
        info = {"software": "tests/test_support_replay.py", "format": "WARC File Format 1.1"}
        writer.write_record(writer.create_warcinfo_record(path.name, info))
        for cap in CAPTURES:
            http_headers = StatusAndHeaders(
                cap.status,
                [*cap.headers, ("Content-Length", str(len(cap.body)))],
                protocol="HTTP/1.1",
            )
            response = writer.create_warc_record(
                cap.url,
                "response",
                payload=io.BytesIO(cap.body),
                length=len(cap.body),  # known length: no temporary file left open by warcio
                http_headers=http_headers,
                warc_headers_dict={"WARC-Date": cap.date},
            )
            target = cap.url.removeprefix("http://example.test")
            request_headers = StatusAndHeaders(
                f"GET {target} HTTP/1.1",
                [("Host", "example.test"), ("User-Agent", "fixture-test")],
                is_http_request=True,
            )
            request = writer.create_warc_record(
                cap.url, "request", payload=io.BytesIO(), length=0, http_headers=request_headers
            )
            writer.write_request_response_pair(request, response)


def make_warc(tmp_path: Path) -> tuple[Path, Path]:
    """(WARC directory, WARC) with the WARC in a subdirectory, as CDXJ filenames may be."""
    warc_dir = tmp_path / "warcs"
    warc = warc_dir / "sub" / "TEST-20240102030405000-00000-example.test.warc.gz"
    write_warc(warc)
    return warc_dir, warc


def assert_process_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_reference_cdxj_is_sorted_and_relative_to_warc_dir(tmp_path: Path) -> None:
    warc_dir, _ = make_warc(tmp_path)
    lines = reference_cdxj(warc_dir)
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["test,example)/", "20240102030405"],
        ["test,example)/data.bin", "20240102030406"],
        ["test,example)/old", "20240102030407"],
    ]
    assert all(
        '"filename": "sub/TEST-20240102030405000-00000-example.test.warc.gz"' in line
        for line in lines
    )
    assert '"status": "301"' in lines[2]


@pytest.mark.parametrize("index", ["reference-cdxj", "pywb-indexer"])
def test_pywb_replays_every_capture_in_id_mode(tmp_path: Path, index: str) -> None:
    warc_dir, warc = make_warc(tmp_path)
    cdxj: Path | None = None
    if index == "reference-cdxj":
        cdxj = tmp_path / "index.cdxj"
        cdxj.write_text("".join(line + "\n" for line in reference_cdxj(warc_dir)))

    with PywbReplay(tmp_path / "pywb", [warc], cdxj=cdxj, warc_root=warc_dir) as replay:
        pid = replay.pid
        assert replay.base_url.startswith("http://127.0.0.1:")
        for cap in CAPTURES:
            resp = replay.get_id(cap.url, cap.timestamp)
            assert resp.status == int(cap.status.split()[0]), (cap.url, resp)
            assert resp.body == cap.body, cap.url
            assert resp.memento_datetime is not None, cap.url
            served = email.utils.parsedate_to_datetime(resp.memento_datetime)
            assert served == datetime.fromisoformat(cap.date).replace(microsecond=0)
        # id_ mode: an archived redirect comes back as archived (Location not rewritten), and
        # the client (this fixture) does not follow it.
        redirect = replay.get_id(CAPTURES[2].url, CAPTURES[2].timestamp)
        assert redirect.location == "http://example.test/"
        assert redirect.header("Content-Location") == (
            f"{replay.base_url}/crawl/{CAPTURES[2].timestamp}id_/{CAPTURES[2].url}"
        )
        # A timestamp miss is not an error: pywb serves the closest capture.
        closest = replay.get_id(CAPTURES[0].url, "20230101000000")
        assert closest.status == 200
        assert closest.memento_datetime == "Tue, 02 Jan 2024 03:04:05 GMT"
        # No capture of the URL at all: 404 and no Memento-Datetime.
        missing = replay.get_id("http://example.test/never", CAPTURES[0].timestamp)
        assert missing.status == 404
        assert missing.memento_datetime is None

    assert pid is not None
    assert replay.pid is None
    assert_process_gone(pid)


def test_wacz_create_then_validate_and_a_corrupted_copy_fails(tmp_path: Path) -> None:
    _, warc = make_warc(tmp_path)
    wacz = tmp_path / "test.wacz"
    created = run_tool(["wacz", "create", "-o", str(wacz), str(warc)], cwd=tmp_path)
    assert created.returncode == 0, created.stdout + created.stderr

    ok, out = wacz_validate(wacz)
    assert ok, out

    # Same ZIP with the WARC tampered with: one more (well-formed) gzip member appended, so
    # only its hash gives it away. (A flipped byte is caught too, but py-wacz then sometimes
    # dies in zlib with a traceback instead of reporting, depending on where the byte falls.)
    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(wacz) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.startswith("archive/"):
                data += gzip.compress(b"tampered")
            zout.writestr(info, data)
    ok, out = wacz_validate(bad)
    assert not ok, out
    assert "Validation failed" in out
