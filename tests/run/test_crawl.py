"""End to end: crawl a local site; the WARCs replay in pywb and index like cdxj-indexer.

The test site has pages, a link cycle, a redirect chain, two redirect chains meeting at one URL,
CSS with url() images, srcset, a <base href>, a 404, and a second local host (127.0.0.2) with a
page (not crawled: another host) and an image (a page requisite: crawled).
"""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from archiver.commands import verify
from archiver.commands.exits import exit_code
from archiver.pipeline.pipeline import Pipeline
from archiver.run.crawler import Crawler
from tests.conftest import fast_settings, run_crawl
from tests.support.pywb import PywbReplay
from tests.support.site import SiteServer
from tests.support.tools import reference_cdxj
from tests.support.warcs import read_records, responses

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def build_site(site: SiteServer, other: SiteServer) -> set[str]:
    """Populate the site; return the URLs a complete crawl must capture (exactly these)."""
    o = site.url
    site.add_page(
        "/",
        '<html><head><title>Home</title><link rel="stylesheet" href="/css/site.css">'
        '<link rel="icon" href="/favicon.ico"></head><body>'
        '<a href="/a.html">A</a> <a href="/chain1">chain</a> <a href="/meet-x">x</a> '
        '<a href="/meet-y">y</a> <a href="/missing.html">broken</a> '
        '<a href="mailto:someone@example.org">mail</a> <a href="javascript:void(0)">js</a> '
        f'<a href="{other.url("/elsewhere.html")}">elsewhere</a> '
        f'<img src="{other.url("/remote.png")}"> '
        '<img src="/img/a.png" srcset="/img/a-2x.png 2x, /img/a-3x.png 3x">'
        '<a href="/dir/page.html#section">with fragment</a>'
        "</body></html>",
    )
    site.add_page(
        "/a.html", '<html><body><a href="/b.html">B</a> <a href="/">home</a></body></html>'
    )
    site.add_page("/b.html", '<html><body><a href="/a.html">A again (cycle)</a></body></html>')
    site.add_redirect("/chain1", "/chain2", 301)
    site.add_redirect("/chain2", o("/chain3"), 302)
    site.add_redirect("/chain3", "/final.html", 307)
    site.add_page("/final.html", "<html><body>end of the chain</body></html>")
    site.add_redirect("/meet-x", "/meet", 301)
    site.add_redirect("/meet-y", "/meet", 301)
    site.add_page("/meet", "<html><body>two chains meet here</body></html>")
    site.add_file(
        "/css/site.css",
        b"@import 'more.css'; body { background: url(../img/bg.png) }"
        b" h1 { background: url('/img/h1.png') }",
        "text/css",
    )
    site.add_file("/css/more.css", b".x { background: url(x.png) }", "text/css")
    site.add_file("/css/x.png", PNG + b"x", "image/png")
    site.add_file("/img/bg.png", PNG + b"bg", "image/png")
    site.add_file("/img/h1.png", PNG + b"h1", "image/png")
    site.add_file("/img/a.png", PNG + b"a1", "image/png")
    site.add_file("/img/a-2x.png", PNG + b"a2", "image/png")
    site.add_file("/img/a-3x.png", PNG + b"a3", "image/png")
    site.add_file("/favicon.ico", b"\x00\x00\x01\x00icon", "image/x-icon")
    site.add_page(
        "/dir/page.html",
        '<html><head><base href="/base/"></head><body><a href="rel.html">relative to base</a>'
        '<img src="pic.png"></body></html>',
    )
    site.add_page("/base/rel.html", "<html><body>resolved against base href</body></html>")
    site.add_file("/base/pic.png", PNG + b"base", "image/png")
    other.add_page("/elsewhere.html", "<html><body>another host</body></html>")
    other.add_file("/remote.png", PNG + b"remote", "image/png")
    paths = [
        "/",
        "/a.html",
        "/b.html",
        "/chain1",
        "/chain2",
        "/chain3",
        "/final.html",
        "/meet-x",
        "/meet-y",
        "/meet",
        "/missing.html",
        "/css/site.css",
        "/css/more.css",
        "/css/x.png",
        "/img/bg.png",
        "/img/h1.png",
        "/img/a.png",
        "/img/a-2x.png",
        "/img/a-3x.png",
        "/favicon.ico",
        "/dir/page.html",
        "/base/rel.html",
        "/base/pic.png",
    ]
    return {o(p) for p in paths} | {other.url("/remote.png")}


@pytest.fixture
async def crawled(tmp_path: Path) -> AsyncIterator[tuple[Path, SiteServer, SiteServer, set[str]]]:
    async with SiteServer() as site, SiteServer(host="127.0.0.2") as other:
        expected = build_site(site, other)
        out = tmp_path / "out"
        result = await run_crawl(out, site.url("/"), allow_private=True, workers=4)
        assert result.status == "completed", result.reason
        assert exit_code(result.status) == 0
        yield out, site, other, expected


async def test_exactly_the_expected_urls_each_once(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]],
) -> None:
    out, site, other, expected = crawled
    captured = [r.uri or "(no WARC-Target-URI)" for r in responses(out / "warcs")]
    assert sorted(captured) == sorted(expected)  # every URL, none twice
    assert len(captured) == len(set(captured))
    # the server saw each URL once: "meet" was reached by two chains but fetched once
    assert site.counters.count("/meet") == 1
    assert site.counters.count("/a.html") == 1
    assert other.counters.count("/elsewhere.html") == 0
    for hop in ("/chain1", "/chain2", "/chain3"):
        (rec,) = responses(out / "warcs", site.url(hop))
        assert rec.block.split(b"\r\n", 1)[0].split(b" ")[1] in (b"301", b"302", b"307")


async def test_output_files_and_summary(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]],
) -> None:
    out, _, _, expected = crawled
    assert (out / "index.cdxj").exists()
    assert (out / "crawl.log.jsonl").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["captures"] == len(expected)
    assert summary["status"] == "completed"
    assert summary["by_status"]["404"] == 1
    events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
    fetches = [e for e in events if e["event"] == "fetch"]
    assert len(fetches) == len(expected)
    for field in (
        "url",
        "status",
        "size",
        "mime",
        "duration",
        "depth",
        "via",
        "retries",
        "outcome",
    ):
        assert all(field in e for e in fetches), field
    assert not list((out / "warcs").glob("*.open"))


async def test_records_are_well_formed(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]],
) -> None:
    out, _, _, _ = crawled
    records = read_records(out / "warcs")
    assert records[0].type == "warcinfo"
    info = records[0].block.decode()
    for field in (
        "software: archiver/",
        "format: WARC File Format 1.1",
        "digest-policy:",
        "robots:",
        "crawl-settings:",
    ):
        assert field in info
    assert records[0].get("WARC-Filename") == records[0].file
    for i, rec in enumerate(records):
        assert rec.get(
            "WARC-Record-ID",
        ).startswith("<urn:uuid:")  # type: ignore[union-attr]
        if rec.type in ("response", "revisit"):
            request = records[i + 1]
            assert request.type == "request"
            assert request.get("WARC-Concurrent-To") == rec.get("WARC-Record-ID")
            assert request.get("WARC-Date") == rec.get("WARC-Date")
            assert request.get("WARC-Target-URI") == rec.get("WARC-Target-URI")
            assert rec.get("WARC-IP-Address") in ("127.0.0.1", "127.0.0.2")
            assert rec.get("WARC-Warcinfo-ID") == records[0].get("WARC-Record-ID")
            date = rec.get("WARC-Date") or ""
            assert len(date) == len("2026-01-01T00:00:00.000000Z")
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


def warcio_digest_check(path: Path) -> list[tuple[str, str, bool | None]]:
    """Every record of ``path`` read to its end by warcio with ``check_digests="raise"``:
    (type, record id, whether a digest was checked and passed). A wrong block or payload digest
    raises ArchiveLoadFailed. warcio checks only what is read (the default ``True`` mode only
    notes problems on the record, which nothing here looked at before)."""
    found = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh, check_digests="raise"):
            record.content_stream().read()  # the payload, then the rest of the block
            record.raw_stream.read()
            found.append(
                (
                    record.rec_type,
                    record.rec_headers.get_header("WARC-Record-ID"),
                    record.digest_checker.passed,
                )
            )
    return found


def corrupt_one_payload_byte(source: Path, target: Path, uri: str) -> None:
    """A copy of ``source`` with one byte of ``uri``'s response body changed, its gzip member
    recompressed (so the file stays readable) and its headers and digests left as they were."""
    data = source.read_bytes()
    with open(source, "rb") as fh:
        iterator = ArchiveIterator(fh)
        for record in iterator:
            if (
                record.rec_type == "response"
                and record.rec_headers.get_header("WARC-Target-URI") == uri
            ):
                record.raw_stream.read()
                start, length = iterator.get_record_offset(), iterator.get_record_length()
                break
        else:
            raise AssertionError(f"no response for {uri}")
    member = bytearray(gzip.decompress(data[start : start + length]))
    at = len(member) - 5  # the body's last byte, before the record's closing CRLF CRLF
    member[at] ^= 0x01
    target.write_bytes(data[:start] + gzip.compress(bytes(member)) + data[start + length :])


async def test_warcio_and_fastwarc_read_every_record(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]], tmp_path: Path
) -> None:
    out, site, _, _ = crawled
    (path,) = sorted((out / "warcs").glob("*.warc.gz"))
    checked = warcio_digest_check(path)
    with open(path, "rb") as fh:
        fast_ids = [
            (r.headers["WARC-Type"], r.headers["WARC-Record-ID"])
            for r in FastArchiveIterator(fh, parse_http=False)
        ]
    assert [(kind, rid) for kind, rid, _ in checked] == fast_ids
    assert len(checked) == len(read_records(path))
    # every record had its digests checked by warcio, and they held (warcio skips revisits;
    # the site serves no chunked body, where warcio's payload digest is not WARC 1.1's)
    assert {kind for kind, _, _ in checked} >= {"warcinfo", "response", "request"}
    for kind, rid, passed in checked:
        assert passed is (None if kind == "revisit" else True), (kind, rid)
    # and the check can fail: one changed byte in a copy is caught
    broken = tmp_path / path.name
    corrupt_one_payload_byte(path, broken, site.url("/a.html"))
    with pytest.raises(ArchiveLoadFailed, match="digest failed"):
        warcio_digest_check(broken)


async def test_a_sha256_crawl_writes_base16_sha256_digests(tmp_path: Path) -> None:
    """README: "sha1 Base32 (``--digest sha256`` for Base16 sha256)". Every digest of the
    crawl is ``sha256:`` and 64 lowercase hex digits, and equals hashlib's over the block and
    over the payload (the body after the HTTP head: the site sends no chunked body); verify
    passes and the index is cdxj-indexer's."""
    async with SiteServer() as site, SiteServer(host="127.0.0.2") as other:
        expected = build_site(site, other)
        out = tmp_path / "out"
        result = await run_crawl(out, site.url("/"), allow_private=True, workers=4, digest="sha256")
    assert result.status == "completed", result.reason
    records = read_records(out / "warcs")
    assert {r.uri for r in records if r.type == "response"} == expected
    base16 = re.compile(r"sha256:[0-9a-f]{64}")
    kinds: collections.Counter[str] = collections.Counter()
    for rec in records:
        block_digest = rec.get("WARC-Block-Digest")
        assert block_digest is not None and base16.fullmatch(block_digest), rec.type
        assert block_digest == "sha256:" + hashlib.sha256(rec.block).hexdigest(), rec.type
        payload_digest = rec.get("WARC-Payload-Digest")
        if rec.type in ("response", "request"):
            assert payload_digest is not None and base16.fullmatch(payload_digest)
            body = rec.block.split(b"\r\n\r\n", 1)[1]
            assert payload_digest == "sha256:" + hashlib.sha256(body).hexdigest()
        kinds[rec.type] += 1
    assert kinds["response"] == kinds["request"] == len(expected)
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    assert report.payloads_checked >= 2 * len(expected)
    assert (out / "index.cdxj").read_text().splitlines() == reference_cdxj(out / "warcs")
    assert "digest-policy:" in records[0].block.decode()


async def test_index_equals_cdxj_indexer(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]],
) -> None:
    out, _, _, _ = crawled
    ours = (out / "index.cdxj").read_text().splitlines()
    assert ours == sorted(ours, key=lambda line: line.encode())
    assert ours == reference_cdxj(out / "warcs")
    for line in ours:
        fields = json.loads(line.split(" ", 2)[2])
        with open(out / "warcs" / fields["filename"], "rb") as fh:
            fh.seek(int(fields["offset"]))
            member = fh.read(int(fields["length"]))
        record = gzip.decompress(member)
        assert record.startswith(b"WARC/1.1\r\n")
        assert f"WARC-Target-URI: {fields['url']}\r\n".encode() in record
        assert record.count(b"WARC/1.1\r\nWARC-Type:") == 1


async def test_pywb_replays_every_capture_byte_identical(
    crawled: tuple[Path, SiteServer, SiteServer, set[str]], tmp_path: Path
) -> None:
    out, _, _, expected = crawled
    warcs = sorted((out / "warcs").glob("*.warc.gz"))
    lines = (out / "index.cdxj").read_text().splitlines()
    with PywbReplay(
        tmp_path / "pywb", warcs, cdxj=out / "index.cdxj", warc_root=out / "warcs"
    ) as replay:
        for line in lines:
            _, timestamp, data = line.split(" ", 2)
            url = json.loads(data)["url"]
            replayed = await replay.aget_id(url, timestamp)
            live_status, live_headers, live_body = await _fetch_live(url)
            assert replayed.status == live_status, url
            if 300 <= live_status < 400:
                assert replayed.location == live_headers.get("Location"), url
            else:
                assert replayed.body == live_body, url
            assert replayed.memento_datetime is not None, url
    assert len(lines) == len(expected)


async def _fetch_live(url: str) -> tuple[int, dict[str, str], bytes]:
    """What the site serves now (the site runs on this test's event loop: fetch async)."""
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(url, allow_redirects=False) as resp,
    ):
        return resp.status, dict(resp.headers), await resp.read()


async def test_concurrency_never_exceeds_workers(tmp_path: Path) -> None:
    async with SiteServer() as site:
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(40))
        site.add_page("/", f"<html><body>{links}</body></html>")
        for i in range(40):
            site.add_page(f"/p{i}", "<html><body>leaf</body></html>")
        site.delay = 0.05
        result = await run_crawl(
            tmp_path / "out", site.url("/"), workers=3, per_host_concurrency=10
        )
        assert result.status == "completed"
        assert site.counters.max_in_flight == 3
        assert result.summary["captures"] == 41


async def test_a_bug_in_a_worker_stops_the_crawl_cleanly(tmp_path: Path) -> None:
    class BuggyPipeline(Pipeline):
        async def _capture(self, capturer, admitted):  # type: ignore[no-untyped-def]
            fetched = await super()._capture(capturer, admitted)
            if capturer.lease.item.url.endswith("/p3"):  # the capture is written: a bug after it
                raise RuntimeError("simulated bug after the capture was written")
            return fetched

    class Buggy(Crawler):
        pipeline_class = BuggyPipeline

    async with SiteServer() as site:
        site.add_page("/", "".join(f'<a href="/p{i}">{i}</a>' for i in range(10)))
        for i in range(10):
            site.add_page(f"/p{i}", f'<a href="/q{i}">q</a>')
            site.add_page(f"/q{i}", "leaf")
        out = tmp_path / "out"
        result = await Buggy(fast_settings(out, site.url("/"), workers=2)).run()
    assert result.status == "failed"
    assert exit_code(result.status) == 1
    assert "simulated bug" in (result.reason or "")
    assert not list((out / "warcs").glob("*.open"))
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
    assert any(e["event"] == "internal-error" and "Traceback" in e["traceback"] for e in events)


async def test_bad_input_never_kills_the_crawl(tmp_path: Path) -> None:
    async with SiteServer() as site:
        hundred_k = "".join(f'<a href="/many/{i}">x</a>' for i in range(100_000))
        site.add_page(
            "/",
            '<a href="/latin1">l</a><a href="/malformed">m</a><a href="/many">many</a>'
            '<a href="/with space/é?q=ü ö">sp</a><a href="http://127.0.0.1:1/refused">r</a>',
        )
        site.add_file(
            "/latin1",
            "<html><a href='/caf\xe9'>café</a></html>".encode("latin-1"),
            "text/html; charset=iso-8859-1",
        )
        site.add_page("/malformed", "<html><body><a href=/deep><<<div></p></b><a href='/x'")
        site.add_page("/many", hundred_k)
        result = await run_crawl(
            tmp_path / "out",
            site.url("/"),
            allow_private=True,
            max_tries=1,
            max_links_per_page=1000,
            exclude=("/many/",),
        )
    assert result.status == "completed"
    out = tmp_path / "out"
    uris = {r.uri for r in responses(out / "warcs")}
    assert site.url("/with%20space/%C3%A9?q=%C3%BC%20%C3%B6") in uris
    assert site.url("/caf%C3%A9") in uris or site.url("/caf%E9") in uris
    assert result.summary["failures"].get("connect-error") == 1
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


async def test_identical_payloads_fetched_at_once_become_one_response(tmp_path: Path) -> None:
    image = PNG + b"same image" * 500
    async with SiteServer() as site:
        site.add_page("/", "".join(f'<img src="/img/{i}.png">' for i in range(5)))
        for i in range(5):
            site.add_file(f"/img/{i}.png", image, "image/png")
        site.delay = 0.05  # all five are in flight together
        out = tmp_path / "out"
        result = await run_crawl(out, site.url("/"), workers=8, per_host_concurrency=8)
    assert result.status == "completed"
    kinds = sorted(r.type for r in responses(out / "warcs") if r.uri and r.uri.endswith(".png"))
    assert kinds == ["response"] + ["revisit"] * 4
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


async def test_a_crawl_that_captured_nothing_because_every_fetch_failed_fails(
    tmp_path: Path,
) -> None:
    """A scheduled run whose site is down must not exit 0 with an empty archive; a site that
    answers, even with an error status, is a completed crawl."""
    with socket.socket() as probe:  # a port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    down = await run_crawl(tmp_path / "down", f"http://127.0.0.1:{closed}/", max_tries=1)
    assert (down.status, exit_code(down.status)) == ("failed", 1)
    assert down.reason is not None
    assert down.reason.startswith("nothing was captured: every fetch failed (connect-error: 1)")
    assert json.loads((tmp_path / "down" / "summary.json").read_text())["status"] == "failed"

    async with SiteServer() as site:  # every URL is a 404
        answered = await run_crawl(tmp_path / "answered", site.url("/missing"), max_tries=1)
    assert (answered.status, exit_code(answered.status)) == ("completed", 0)
    assert answered.summary["captures"] == 1
