"""End to end at the protocol's edges: odd framing, hostile names, limits, file names.

Each test crawls a :class:`tests.support.raw.RawServer` with the real crawler in this event loop,
so the server's request log and its own byte counts say exactly what crossed the connection, and
the server can look at the output directory *while* a response is still on the wire.

* **A chunk cut by a close (item 11).** What arrived is archived as it arrived, marked
  ``WARC-Truncated: disconnect``; the payload digest covers the de-chunked prefix (what the
  verifier recomputes), the reason is logged, and the crawl goes on.
* **2 MiB of headers (item 14).** Lines under the per-line limit and fewer than the header-count
  limit, so only the total (``max_header_size``) is broken: the fetch fails as
  ``headers-too-large`` without a record, and a server that never stops sending header lines
  cannot keep the crawler reading.
* **Hostile names (item 27).** A ``--warc-prefix`` or an output directory name full of ``../``,
  NUL, CR/LF, spaces and non-ASCII yields WARC files only in ``OUTPUT/warcs/``, with
  conservative names of at most 255 bytes, and nothing outside the output directory.
* **``.open`` while writing (item 28).** While a 20 MB response streams, the WARC file in use is
  ``*.warc.gz.open`` and its final name does not exist yet; after the crawl only the final name
  does.
* **robots.txt timing out (item 22).** RFC 9309 section 2.3.1.4: unreachable means complete
  disallow, so no page of the host is requested at all. There is no robots-specific timeout:
  robots.txt goes through the crawler's own fetch, so ``fetch_timeout`` bounds it.

No test waits for wall-clock time to pass or bounds how long something took: servers wait for
the client to close, and the tests wait on conditions (bytes sent, a file appearing), each
under a hang guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from archiver import digest
from archiver.commands import verify
from archiver.commands.exits import exit_code
from archiver.config.settings import Settings
from archiver.fetch.fetcher import FetchConfig
from archiver.run.crawler import CrawlResult
from tests.conftest import run_crawl
from tests.support.raw import RawServer
from tests.support.warcs import read_records, responses

#: The name every WARC file must have: ``{prefix}-{timestamp17}-{serial}-{host}.warc.gz`` made
#: only of ``[A-Za-z0-9.-]`` parts that do not start with a dot or a dash (what file systems and
#: ``^[A-Za-z0-9._-]+$`` tooling accept; archiver's own parts are stricter still).
WARC_NAME = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9.-]*-\d{17}-\d{5,}-[A-Za-z0-9][A-Za-z0-9.-]*\.warc\.gz"
)
#: Longest file name most filesystems accept (bytes).
NAME_MAX = 255
#: A hang guard on any one crawl here (they take a second or two). Tests that prove a limit
#: applies give every other timeout :data:`AN_HOUR`, so waiting for one of those hangs.
CRAWL_TIMEOUT = 60.0
AN_HOUR = 3600.0


# ============================================================================ helpers
def sha1(data: bytes) -> str:
    return digest.label("sha1", hashlib.sha1(data).digest())


def ok_response(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (
        len(body),
        body,
    )


def assert_verified(out: Path) -> verify.VerifyReport:
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)
    # archiver wrote them (its warcinfo says so): its own stricter rules judged them too
    assert report.files_archiver == report.files > 0
    return report


def log_events(out: Path, event: str | None = None) -> list[dict[str, Any]]:
    lines = (out / "crawl.log.jsonl").read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    return [e for e in events if event is None or e.get("event") == event]


def requested_paths(server: RawServer) -> list[str]:
    return [r.split(b" ", 2)[1].decode("latin-1") for r in server.requests]


async def crawl_raw(out: Path, server: RawServer, *paths: str, **overrides: Any) -> CrawlResult:
    """One crawl of ``paths``, each URL tried once, bounded by :data:`CRAWL_TIMEOUT`."""
    values: dict[str, Any] = {"scope": "page", "max_tries": 1, "workers": 2}
    values.update(overrides)
    async with asyncio.timeout(CRAWL_TIMEOUT):
        return await run_crawl(out, *(server.url(p) for p in paths), **values)


async def until_client_closes(reader: asyncio.StreamReader) -> None:
    """Hold a connection open, answering nothing more, until the crawler drops it."""
    with contextlib.suppress(ConnectionError):
        await reader.read()


# ============================================================================ item 11
@pytest.mark.parametrize(
    ("body", "prefix"),
    [
        (b"a\r\nhello", b"hello"),  # the brief's case: 10 bytes announced, 5 arrive
        (b"5\r\nhello\r\n7\r\n, wor", b"hello, wor"),  # cut inside the second chunk
        (b"5\r\nhello\r\n1", b"hello"),  # cut inside a chunk-size line
    ],
    ids=["first-chunk", "second-chunk", "size-line"],
)
async def test_chunk_cut_by_close_is_kept_as_received(
    tmp_path: Path, raw_server: RawServer, body: bytes, prefix: bytes
) -> None:
    wire = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    )
    after = ok_response(b"still crawling")
    raw_server.add("/cut", wire, close=True)
    raw_server.add("/after", after)
    out = tmp_path / "out"
    result = await crawl_raw(out, raw_server, "/cut", "/after", workers=1)

    assert result.status == "completed"
    (cut,) = responses(out / "warcs", raw_server.url("/cut"))
    assert cut.type == "response"
    assert cut.block == wire  # framing and all, exactly as received
    assert cut.get("WARC-Truncated") == "disconnect"
    assert cut.get("WARC-Block-Digest") == sha1(wire)
    assert cut.get("WARC-Payload-Digest") == sha1(prefix)  # the de-chunked prefix
    (event,) = [e for e in log_events(out, "fetch") if e["url"] == raw_server.url("/cut")]
    assert event["outcome"] == "captured"
    assert event["truncated"] == "disconnect"
    assert "connection closed" in event["protocol_error"]
    assert event["payload_size"] == len(prefix)
    # the next URL of the same server is captured whole (on a new connection)
    (following,) = responses(out / "warcs", raw_server.url("/after"))
    assert following.block == after and following.get("WARC-Truncated") is None
    assert requested_paths(raw_server) == ["/cut", "/after"]
    assert raw_server.connections == 2
    assert_verified(out)


# ============================================================================ item 14
LINE_LIMIT = FetchConfig().max_header_line
COUNT_LIMIT = FetchConfig().max_headers
#: one header line of 16 KiB: half the per-line limit
FILLER_LINE = b"X-Filler-%04d: " + b"f" * (16 * 1024 - 17) + b"\r\n"


def filler(i: int) -> bytes:
    return FILLER_LINE % i


async def test_two_mib_header_block_breaks_only_the_total_limit(
    tmp_path: Path, raw_server: RawServer
) -> None:
    lines = [filler(i) for i in range(128)] + [b"Content-Length: 0\r\n"]
    wire = b"HTTP/1.1 200 OK\r\n" + b"".join(lines) + b"\r\n"
    total_limit = Settings(seeds=("http://x.test/",)).max_header_size
    assert 2 * 1024 * 1024 <= len(wire) < 2 * 1024 * 1024 + 1024
    assert max(map(len, lines)) < LINE_LIMIT and len(lines) < COUNT_LIMIT
    assert len(wire) > total_limit  # only this limit is broken
    ok = ok_response(b"ok")
    raw_server.add("/headers", wire)
    raw_server.add("/ok", ok)
    out = tmp_path / "out"
    result = await crawl_raw(out, raw_server, "/headers", "/ok", workers=1)

    assert result.status == "completed"
    assert result.summary["failures"] == {"headers-too-large": 1}
    assert not responses(out / "warcs", raw_server.url("/headers"))
    assert all(r.uri != raw_server.url("/headers") for r in read_records(out / "warcs"))
    (failed,) = [e for e in log_events(out, "fetch") if e["url"] == raw_server.url("/headers")]
    assert failed["outcome"] == "failed" and failed["reason"] == "headers-too-large"
    assert f"header block larger than {total_limit} bytes" in failed["error"]
    (captured,) = responses(out / "warcs", raw_server.url("/ok"))
    assert captured.block == ok
    assert_verified(out)


async def test_an_unfinished_oversized_header_block_fails_at_once(
    tmp_path: Path, raw_server: RawServer
) -> None:
    """2 MiB of header lines, then silence with the connection held open: the total-size limit
    trips, the connection is closed at once, and the fetch fails as headers-too-large instead
    of waiting out the 60 s read timeout (which it did, logged as a timeout)."""

    async def silent_after_headers(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: bytes
    ) -> bool:
        try:
            writer.write(b"HTTP/1.1 200 OK\r\n" + b"".join(filler(i) for i in range(128)))
            await writer.drain()
        except ConnectionError:
            return False
        await until_client_closes(reader)
        return False

    raw_server.add_handler("/stalled", silent_after_headers)
    out = tmp_path / "out"
    # an hour to wait: a crawler that waited for the rest of the headers would hang (and
    # fail at crawl_raw's guard) instead of failing as headers-too-large
    result = await crawl_raw(
        out, raw_server, "/stalled", workers=1, read_timeout=AN_HOUR, fetch_timeout=AN_HOUR
    )

    assert result.summary["failures"] == {"headers-too-large": 1}
    assert not responses(out / "warcs", raw_server.url("/stalled"))


async def test_endless_header_lines_do_not_keep_the_crawler_reading(
    tmp_path: Path, raw_server: RawServer
) -> None:
    """A server that sends 16 KiB header lines for ever is cut off, and soon.

    The server stops on its own only after ``budget`` bytes (256 times the total limit) and then
    holds the connection open: a crawler that kept reading would take all of it and then sit
    out its read timeout (an hour here: it would hang). The bound on ``sent`` is loose on
    purpose: besides what the crawler read, it counts what the kernel buffered on both sides
    of the loopback connection.
    """
    budget = 64 * 1024 * 1024
    sent = 0
    cut_off = asyncio.Event()

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: bytes) -> bool:
        nonlocal sent
        try:
            writer.write(b"HTTP/1.1 200 OK\r\n")
            i = 0
            while sent < budget:
                line = filler(i % 10_000)
                writer.write(line)
                await writer.drain()
                sent += len(line)
                i += 1
        except ConnectionError:
            cut_off.set()
            return False
        await until_client_closes(reader)
        return False

    raw_server.add_handler("/endless", endless)
    raw_server.add("/ok", ok_response(b"ok"))
    out = tmp_path / "out"
    result = await crawl_raw(
        out, raw_server, "/endless", "/ok", workers=1, read_timeout=AN_HOUR, fetch_timeout=AN_HOUR
    )

    assert cut_off.is_set(), f"the crawler read all {sent} bytes the server had"
    assert sent < budget
    assert result.status == "completed"
    assert result.summary["failures"] == {"headers-too-large": 1}
    assert not responses(out / "warcs", raw_server.url("/endless"))
    assert responses(out / "warcs", raw_server.url("/ok"))
    assert_verified(out)


# ============================================================================ item 27
#: An output directory name an operator (or a script) might produce: leading dots and dash, CR/LF,
#: a tab, shell metacharacters and 2-byte UTF-8, 239 bytes in all.
HOSTILE_DIR = "-.. \u00e9vil\tname\r\nWARC-Type: x;$(id)|*?<>" + "\u00e9" * 100


@pytest.mark.parametrize(
    ("dir_name", "prefix"),
    [
        ("out", "../../evil/pre fix\u00e9/.."),
        ("out", "a\x00b/../../c"),
        ("out", "/" + "p" * 300),
        ("out", "../.."),  # nothing usable is left: the default prefix
        (HOSTILE_DIR, None),  # the prefix defaults to the directory's name
        (HOSTILE_DIR, "\u00e9/../\u00e9"),
    ],
    ids=["dotdot-space-unicode", "nul", "300-chars", "only-dots", "dir-name", "dir-and-prefix"],
)
async def test_hostile_prefix_and_directory_stay_inside_the_output(
    tmp_path: Path, raw_server: RawServer, dir_name: str, prefix: str | None
) -> None:
    raw_server.add("/", ok_response(b"page"))
    parent = tmp_path / "parent"
    out = parent / dir_name
    result = await crawl_raw(out, raw_server, "/", warc_prefix=prefix)
    assert result.status == "completed"

    # nothing beside the output directory, at any level created here
    assert [p.name for p in tmp_path.iterdir()] == ["parent"]
    assert [p.name for p in parent.iterdir()] == [dir_name]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(p.resolve().is_relative_to(out.resolve()) for p in written)
    assert not any(p.is_symlink() for p in out.rglob("*"))

    warcs = [p for p in written if ".warc.gz" in p.name and p.suffix != ".cdxj"]
    assert warcs and all(p.parent == out / "warcs" for p in warcs)
    assert sorted(p.name for p in (out / "warcs").iterdir()) == sorted(p.name for p in warcs)
    for path in warcs:
        assert WARC_NAME.fullmatch(path.name), path.name
        assert len(path.name.encode()) <= NAME_MAX
    for path in written:
        assert len(path.name.encode()) <= NAME_MAX
    (info,) = [r for r in read_records(out / "warcs") if r.type == "warcinfo"]
    assert info.get("WARC-Filename") == warcs[0].name
    # the directory's name reaches warcinfo (isPartOf) but cannot add fields or lines to it
    fields = info.block.decode("utf-8").split("\r\n")
    assert not any(line.startswith("WARC-Type") for line in fields)
    assert all(":" in line for line in fields if line)
    assert_verified(out)


# ============================================================================ item 28
async def test_warc_is_open_while_a_20_mb_response_streams(
    tmp_path: Path, raw_server: RawServer
) -> None:
    piece = os.urandom(64 * 1024)
    size = 20 * 1024 * 1024
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
    head += b"Content-Length: %d\r\n\r\n" % size
    warcs = tmp_path / "out" / "warcs"
    seen_mid_stream: list[str] = []

    def names() -> list[str]:
        return sorted(p.name for p in warcs.iterdir()) if warcs.is_dir() else []

    async def stream(_r: asyncio.StreamReader, writer: asyncio.StreamWriter, _q: bytes) -> bool:
        writer.write(head)
        for sent in range(0, size, len(piece)):
            if sent == size // 2:
                # halfway; with one worker /big was requested only after /small was written,
                # so the WARC file is open by now
                seen_mid_stream.extend(names())
            writer.write(piece)
            await writer.drain()
        return True

    raw_server.add("/small", ok_response(b"small"))
    raw_server.add_handler("/big", stream)
    out = tmp_path / "out"
    result = await crawl_raw(out, raw_server, "/small", "/big", workers=1)

    assert result.status == "completed"
    (open_name,) = seen_mid_stream
    assert open_name.endswith(".warc.gz.open")
    final_name = open_name.removesuffix(".open")
    assert final_name not in seen_mid_stream
    assert names() == [final_name]  # renamed, no .open left
    (big,) = responses(warcs, raw_server.url("/big"))
    assert big.file == final_name
    assert big.get("WARC-Truncated") is None
    assert len(big.block) == len(head) + size
    assert big.get("WARC-Payload-Digest") == sha1(piece * (size // len(piece)))
    assert responses(warcs, raw_server.url("/small"))
    assert_verified(out)


# ============================================================================ item 22
async def robots_silent(reader: asyncio.StreamReader, _w: asyncio.StreamWriter, _q: bytes) -> bool:
    """Accepts the request and never answers."""
    await until_client_closes(reader)
    return False


async def robots_stalls(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: bytes
) -> bool:
    """Starts a 200 whose body allows everything, then stops before its end."""
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\n"
        b"User-agent: *\nAllow: /\n"
    )
    await writer.drain()
    await until_client_closes(reader)
    return False


@pytest.mark.parametrize("handler", [robots_silent, robots_stalls], ids=["silent", "body-stalls"])
async def test_robots_txt_timing_out_means_no_page_is_requested(
    tmp_path: Path,
    raw_server: RawServer,
    handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Any],
) -> None:
    raw_server.add_handler("/robots.txt", handler)
    raw_server.add(
        "/",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 23\r\n\r\n"
        b"<a href='/page'>p</a>\r\n",
    )
    raw_server.add("/page", ok_response(b"page"))
    out = tmp_path / "out"
    # bounded by the 0.5 s fetch limit, nothing else: with an hour for the read timeout, a
    # robots.txt fetch that ignored the fetch limit would hang (and fail at crawl_raw's guard)
    result = await crawl_raw(
        out, raw_server, "/", "/page", robots="obey", fetch_timeout=0.5, read_timeout=AN_HOUR
    )

    # RFC 9309 section 2.3.1.4: complete disallow, so neither seed is fetched; the rules are
    # unknown, so both failed, and a crawl that archived nothing exits 1
    assert (result.status, exit_code(result.status)) == ("failed", 1)
    assert requested_paths(raw_server) == ["/robots.txt"]
    assert result.summary["failures"] == {"robots-unreachable": 2}
    assert result.summary["robots"]["fetches"] == 1
    assert result.summary["robots"]["unreachable"] == 1
    failed = {e["url"] for e in log_events(out, "fetch") if e["reason"] == "robots-unreachable"}
    assert failed == {raw_server.url("/"), raw_server.url("/page")}
    (report,) = log_events(out, "robots")
    assert report["verdict"] == "unreachable"
    robots_records = responses(out / "warcs", raw_server.url("/robots.txt"))
    if handler is robots_stalls:
        assert "cut short (time)" in report["error"]
        (record,) = robots_records  # what arrived of robots.txt is archived, marked
        assert record.get("WARC-Truncated") == "time"
        assert_verified(out)
    else:
        assert "no complete response within 0.5 s" in report["error"]
        assert not robots_records


async def test_a_read_timeout_is_reported_as_one(tmp_path: Path, raw_server: RawServer) -> None:
    """A server that stops sending mid-headers trips the read timeout, and the log says so (it
    used to name the whole-fetch timeout, which had not run out)."""

    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, _: bytes) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
        await writer.drain()
        await until_client_closes(reader)
        return False

    raw_server.add_handler("/stall", stall)
    out = tmp_path / "out"
    result = await crawl_raw(out, raw_server, "/stall", read_timeout=0.3, fetch_timeout=30.0)
    assert result.summary["failures"] == {"timeout": 1}
    (event,) = [e for e in log_events(out, "fetch") if e["url"] == raw_server.url("/stall")]
    assert event["error"] == "no complete response (nothing received for 0.3 s)"
