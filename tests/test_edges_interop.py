"""Edges and interoperability, end to end: redirect limits in a real crawl, the classic CDX-11
index (OpenWayback), what ``warcio check`` says about our WARCs, and our index against
cdxj-indexer's for responses that are legal but odd.

Every case crawls a real local server (RawServer or SiteServer on 127.0.0.1) with the real
crawler, then judges the output with independent readers: warcio's ArchiveIterator, zlib, and
the ``warcio check`` command itself.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import re
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from archiver.models import MAX_REDIRECTS
from tests.conftest import fast_settings, run_crawl
from tests.support.pywb import PywbReplay
from tests.support.raw import RawServer
from tests.support.site import SiteServer
from tests.support.tools import REPO_ROOT, reference_cdxj
from tests.support.warcs import Rec, read_records, responses, warc_paths

WARCIO = Path(sys.executable).parent / "warcio"
CDX11_LEGEND = " CDX N b a m s k r M S V g"


def log_events(out: Path, event: str) -> list[dict[str, object]]:
    lines = (out / "crawl.log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == event]


def summary(out: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((out / "summary.json").read_text())
    return loaded


def redirect(location: str) -> bytes:
    return f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()


def ok(body: bytes, content_type: str = "text/html") -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


# -- redirects at crawl level (checklist item 16) ---------------------------------------------

CHAIN = 30


async def test_redirect_chain_loop_and_foreign_schemes(
    tmp_path: Path, raw_server: RawServer
) -> None:
    """A chain of 30 stops at the hop limit, a loop fetches each end once, and non-http(s)
    Locations are never fetched; every skip is logged and counted in summary.json."""
    out = tmp_path / "out"
    assert fast_settings(out).max_redirects == MAX_REDIRECTS  # the default is what we test
    for i in range(CHAIN):
        raw_server.add(f"/r{i}", redirect(f"/r{i + 1}"))
    raw_server.add(f"/r{CHAIN}", ok(b"<p>end of the chain</p>"))
    raw_server.add("/a", redirect(raw_server.url("/b")))
    raw_server.add("/b", redirect("/a"))
    raw_server.add("/file", redirect("file:///etc/passwd"))
    raw_server.add("/ftp", redirect("ftp://127.0.0.1/x"))
    seeds = ("/r0", "/a", "/file", "/ftp")
    result = await run_crawl(out, *(raw_server.url(p) for p in seeds), max_tries=1)
    assert result.status == "completed"

    # the seed has MAX_REDIRECTS hops left: /r0 .. /r10 are fetched, /r11 never is
    hops = [f"/r{i}" for i in range(MAX_REDIRECTS + 1)]
    requested = [r.split(b" ", 2)[1].decode() for r in raw_server.requests]
    assert sorted(requested) == sorted([*hops, "/a", "/b", "/file", "/ftp"])  # each once
    assert not raw_server.requests_for(f"/r{MAX_REDIRECTS + 1}")

    # every fetched hop is archived as its own response record, with its own 302
    for path in [*hops, "/a", "/b", "/file", "/ftp"]:
        (record,) = responses(out / "warcs", raw_server.url(path))
        assert record.type == "response"
        assert record.block.startswith(b"HTTP/1.1 302 Found\r\n"), path
    assert len(responses(out / "warcs")) == len(hops) + 4

    skips = {(e["via"], e["url"], e["reason"]) for e in log_events(out, "skip")}
    assert skips == {
        (raw_server.url(hops[-1]), raw_server.url(f"/r{MAX_REDIRECTS + 1}"), "redirect-limit"),
        (raw_server.url("/file"), "file:///etc/passwd", "scheme"),
        (raw_server.url("/ftp"), "ftp://127.0.0.1/x", "scheme"),
    }
    assert len(log_events(out, "skip")) == 3
    assert summary(out)["skips"] == {"redirect-limit": 1, "scheme": 2}
    assert result.summary["skips"] == {"redirect-limit": 1, "scheme": 2}


# -- CDX-11 end to end (checklist item 34) ----------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


@dataclass(frozen=True)
class Cdx11Line:
    key: str
    timestamp: str
    url: str
    mime: str
    status: str
    digest: str
    length: int
    offset: int
    filename: str


def parse_cdx11(text: str) -> tuple[str, list[str], list[Cdx11Line]]:
    """The legend, the raw data lines and their parsed fields (11 space-separated fields)."""
    legend, *rows = text.splitlines()
    parsed = []
    for row in rows:
        fields = row.split(" ")
        assert len(fields) == 11, row
        n, b, a, m, s, k, r, meta, size, offset, g = fields
        assert (r, meta) == ("-", "-"), row
        parsed.append(Cdx11Line(n, b, a, m, s, k, int(size), int(offset), g))
    return legend, rows, parsed


def check_cdx11(out: Path, cdx: Path) -> list[Cdx11Line]:
    """What an OpenWayback-style consumer relies on: the legend, byte order (it binary-searches
    the file as `LC_ALL=C sort` would order it), one line per response/revisit record, and each
    (offset, length, filename) slice being exactly one gzip member holding that capture."""
    legend, rows, lines = parse_cdx11(cdx.read_text(encoding="utf-8"))
    assert legend == CDX11_LEGEND
    assert rows == sorted(rows, key=str.encode)  # byte order of whole lines (index.write_cdx11)
    captures = [r for r in read_records(out / "warcs") if r.type in ("response", "revisit")]
    assert sorted((line.filename, line.offset) for line in lines) == sorted(
        (r.file, r.offset) for r in captures
    )
    for line in lines:
        with open(out / "warcs" / line.filename, "rb") as fh:
            fh.seek(line.offset)
            member = fh.read(line.length)
        assert len(member) == line.length
        inflate = zlib.decompressobj(wbits=31)  # gzip
        data = inflate.decompress(member)
        assert inflate.eof and inflate.unused_data == b"", line  # exactly one whole member
        records = list(ArchiveIterator(io.BytesIO(data)))
        assert len(records) == 1, line
        headers = records[0].rec_headers
        assert records[0].rec_type in ("response", "revisit")
        assert headers.get_header("WARC-Target-URI") == line.url
        assert headers.get_header("WARC-Payload-Digest") == "sha1:" + line.digest
    return lines


def archiver(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO_ROOT,
    )


def cdx_site(site: SiteServer) -> set[str]:
    """Pages, a redirect, a 404, a stylesheet, and an image served twice (one revisit); /Page
    and /page share a SURT key, so the sort has ties on the key to break."""
    site.add_page(
        "/",
        '<html><head><link rel="stylesheet" href="/s.css"></head><body>'
        '<a href="/Page">P</a> <a href="/page">p</a> <a href="/old">old</a> '
        '<a href="/missing">404</a> <img src="/img/a.png"> <img src="/img/copy.png"></body></html>',
    )
    site.add_page("/Page", "<html><body>upper</body></html>")
    site.add_page("/page", "<html><body>lower</body></html>")
    site.add_redirect("/old", "/page")
    site.add_file("/s.css", b"body { color: black }", "text/css")
    site.add_file("/img/a.png", PNG, "image/png")
    site.add_file("/img/copy.png", PNG, "image/png")
    paths = ["/", "/Page", "/page", "/old", "/missing", "/s.css", "/img/a.png", "/img/copy.png"]
    return {site.url(p) for p in paths}


def test_cdx11_from_crawl_and_from_index_command(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    with SiteServer().running_in_thread() as site:
        expected = cdx_site(site)
        run = archiver(
            "crawl", site.url("/"), "-o", str(out), "--cdx11", "--frontier", "memory",
            "--robots", "ignore", "--sitemaps", "off", "--per-host-delay", "0",
            "--per-host-concurrency", "1",
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = check_cdx11(out, out / "index.cdx")
    assert {line.url for line in lines} == expected
    assert len(lines) == len(expected)
    assert sorted(line.mime for line in lines if line.url.endswith(".png")) == [
        "image/png",
        "warc/revisit",
    ]
    assert len({line.key for line in lines}) == len(lines) - 1  # /Page and /page: one key
    by_url = {line.url: line for line in lines}
    assert by_url[site.url("/old")].status == "301"
    assert by_url[site.url("/missing")].status == "404"
    # the same 11 fields as the CDXJ index, digest without its "sha1:" label
    cdxj = (out / "index.cdxj").read_text().splitlines()
    assert len(cdxj) == len(lines)
    for row in cdxj:
        key, ts, data = row.split(" ", 2)
        fields = json.loads(data)
        line = by_url[fields["url"]]
        assert (line.key, line.timestamp, line.status) == (key, ts, fields["status"])
        assert (line.length, line.offset) == (int(fields["length"]), int(fields["offset"]))
        assert (line.filename, "sha1:" + line.digest) == (fields["filename"], fields["digest"])

    # `archiver index --cdx11` rebuilds the same CDX-11 from the crawl directory
    again = archiver("index", str(out), "-o", str(tmp_path / "again.cdxj"), "--cdx11")
    assert again.returncode == 0, again.stderr
    assert f"wrote {len(expected)} index lines" in again.stdout
    rebuilt = tmp_path / "again.cdx"
    assert rebuilt.read_text() == (out / "index.cdx").read_text()
    check_cdx11(out, rebuilt)


# -- warcio check (checklist items 1 and 3) ---------------------------------------------------


async def warcio_check(paths: list[Path]) -> tuple[int, list[str]]:
    """Run the `warcio check` command of the test venv; its exit code and stdout lines."""
    proc = await asyncio.create_subprocess_exec(
        str(WARCIO),
        "check",
        *map(str, paths),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await proc.communicate()
    assert stderr == b"", stderr.decode()
    assert proc.returncode is not None
    return proc.returncode, stdout.decode().splitlines()


def http_head(record: Rec) -> bytes:
    return record.block.split(b"\r\n\r\n", 1)[0].lower()


async def test_warcio_check_passes_a_content_length_site(tmp_path: Path, site: SiteServer) -> None:
    expected = cdx_site(site)
    out = tmp_path / "out"
    result = await run_crawl(out, site.url("/"), per_host_concurrency=1)
    assert result.status == "completed"
    records = read_records(out / "warcs")
    captured = [r for r in records if r.type in ("response", "revisit")]
    assert {r.uri for r in captured} == expected
    assert "revisit" in {r.type for r in captured}  # revisits are part of what is checked
    for record in captured:  # the premise: no response is chunked
        assert b"content-length:" in http_head(record)
        assert b"transfer-encoding" not in http_head(record)
    # warcinfo first, with the media type WARC 1.1 section 6.2 gives it
    assert records[0].type == "warcinfo"
    assert records[0].get("Content-Type") == "application/warc-fields"
    assert [r.type for r in records].count("warcinfo") == len(warc_paths(out / "warcs"))

    code, lines = await warcio_check(warc_paths(out / "warcs"))
    assert (code, lines) == (0, [])


CHUNKED_WIRE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;name=value\r\nhello\r\n7\r\n, chunk\r\n6\r\ny body\r\n0\r\nX-Trailer: yes\r\n\r\n"
)


async def test_warcio_check_flags_only_the_chunked_payload_digest(
    tmp_path: Path, raw_server: RawServer
) -> None:
    """The documented divergence (README, "Digests per the spec"): warcio hashes the chunked
    framing, we digest the de-chunked body as WARC 1.1 section 6.3.2 says. Exactly the chunked
    response's payload digest is reported, nothing else."""
    raw_server.add(
        "/",
        ok(b'<a href="/chunked">c</a> <a href="/plain.txt">p</a> <img src="/i.png">'),
    )
    raw_server.add("/chunked", CHUNKED_WIRE)
    raw_server.add("/plain.txt", ok(b"plain text", "text/plain"))
    raw_server.add("/i.png", ok(PNG, "image/png"))
    out = tmp_path / "out"
    result = await run_crawl(out, raw_server.url("/"), max_tries=1)
    assert result.status == "completed"
    records = read_records(out / "warcs")
    assert {r.uri for r in records if r.type == "response"} == {
        raw_server.url(p) for p in ("/", "/chunked", "/plain.txt", "/i.png")
    }
    (chunked,) = responses(out / "warcs", raw_server.url("/chunked"))
    assert chunked.block == CHUNKED_WIRE
    dechunked = hashlib.sha1(b"hello, chunky body").digest()
    assert chunked.get("WARC-Payload-Digest") == "sha1:" + base64.b32encode(dechunked).decode()
    (warc,) = warc_paths(out / "warcs")

    code, lines = await warcio_check([warc])
    assert code == 1
    assert lines[:2] == [
        str(warc),
        f"  offset {chunked.offset} WARC-Record-ID {chunked.get('WARC-Record-ID')} response",
    ]
    # warcio 1.8 words it "failed:" or "failed", depending on where the payload ends
    failed = r"    payload digest failed:? " + re.escape(str(chunked.get("WARC-Payload-Digest")))
    assert len(lines) == 3 and re.fullmatch(failed, lines[2]), lines


# -- odd but legal responses: our index equals cdxj-indexer's -----------------------------

ODD_RESPONSES = {
    "no-reason": b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
    "bare-lf": b"HTTP/1.1 200 OK\nContent-Type: text/plain\nContent-Length: 2\n\nok",
    "http10": b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>x</html>",
    "no-content": b"HTTP/1.1 204 No Content\r\n\r\n",
    "not-modified": b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n",
    "type-params": b'HTTP/1.1 200 OK\r\nContent-Type: TEXT/HTML ; charset="utf-8"\r\n'
    b"Content-Length: 2\r\n\r\nok",
    "no-type": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "empty-type": b"HTTP/1.1 200 OK\r\nContent-Type:\r\nContent-Length: 2\r\n\r\nok",
    "params-only-type": b"HTTP/1.1 200 OK\r\nContent-Type: ;charset=utf-8\r\n"
    b"Content-Length: 2\r\n\r\nok",
    "two-types": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Type: image/png\r\n"
    b"Content-Length: 2\r\n\r\nok",
    "relative-redirect": b"HTTP/1.1 302 Found\r\nLocation: ../x?a=1#f\r\nContent-Length: 0\r\n\r\n",
    "folded": b"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
    "unknown-status": b"HTTP/1.1 999 Weird\r\nContent-Length: 2\r\n\r\nok",
    "latin1-header": b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok",
    "chunk-extension": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
    b"Content-Type: text/plain\r\n\r\n2;a=b\r\nok\r\n0\r\n\r\n",
}


async def test_odd_responses_are_indexed_as_cdxj_indexer_indexes_them(
    tmp_path: Path, raw_server: RawServer
) -> None:
    """Each indexed exactly as cdxj-indexer indexes it, and replayed by pywb with that status
    and the body served. Found this way: an empty ``Content-Type:`` is ``"mime": ""`` for
    cdxj-indexer, and our index left the field out."""
    for name, wire in ODD_RESPONSES.items():  # the HTTP/1.0 body ends when the server closes
        raw_server.add("/" + name, wire, close=name == "http10")
    seeds = [raw_server.url("/" + name) for name in ODD_RESPONSES]
    out = tmp_path / "out"
    result = await run_crawl(out, *seeds, scope="page", max_tries=1, workers=2)
    assert result.status == "completed"
    assert result.summary["captures"] >= len(ODD_RESPONSES)  # and the redirect's target
    ours = sorted((out / "index.cdxj").read_text().splitlines(), key=str.encode)
    assert ours == reference_cdxj(out / "warcs")
    fields = [json.loads(line.split(" ", 2)[2]) for line in ours]
    mimes = {field["url"]: field.get("mime") for field in fields}
    assert mimes[raw_server.url("/empty-type")] == ""
    assert mimes[raw_server.url("/params-only-type")] == ""
    assert mimes[raw_server.url("/no-type")] is None
    # and pywb replays each with the status in the index and the body that was served
    bodies = {"http10": b"<html>x</html>", "no-content": b"", "not-modified": b""}
    bodies["relative-redirect"] = b""
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    with PywbReplay(tmp_path / "pywb", warcs, cdxj=out / "index.cdxj") as replay:
        for line, field in zip(ours, fields, strict=True):
            name = field["url"].rsplit("/", 1)[1]
            if name not in ODD_RESPONSES:
                continue  # the redirect's target (a 404 from the raw server)
            shown = await asyncio.to_thread(replay.get_id, field["url"], line.split(" ")[1])
            assert (shown.status, shown.body) == (int(field["status"]), bodies.get(name, b"ok"))
