"""Heritrix crawl.log lines: the 12-field layout, field by field, for a known crawl.

The lines are parsed here independently of archiver.run.heritrix: split on runs of spaces into
exactly twelve fields, as Heritrix's own readers (and crawl-log tools) do.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archiver.run import heritrix
from tests.conftest import run_crawl
from tests.support.site import SiteServer

PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8  # > dedup_min_size, so the copy is a revisit

LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FETCH_TIME = re.compile(r"^(\d{17})\+(\d+)$")
SHA1 = re.compile(r"^sha1:[A-Z2-7]{32}$")


def parse(line: str) -> dict[str, str]:
    fields = line.split()
    assert len(fields) == 12, f"{len(fields)} fields in {line!r}"
    names = (
        "logged",
        "status",
        "size",
        "url",
        "path",
        "via",
        "mime",
        "worker",
        "fetch",
        "digest",
        "source",
        "annotations",
    )
    return dict(zip(names, fields, strict=True))


# -- the formatter, event by event ------------------------------------------------------------

BASE_EVENT: dict[str, Any] = {
    "event": "fetch",
    "url": "http://example.org/a.html",
    "depth": 1,
    "hops": "L",
    "via": "http://example.org/",
    "retries": 0,
    "status": 200,
    "size": 1299,
    "mime": "text/html",
    "duration": 0.078,
    "digest": "sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV",
    "record": "response",
    "outcome": "captured",
    "timestamp": "2024-01-02T03:04:05.678Z",
}


def line_for(**changes: Any) -> str:
    event = {**BASE_EVENT, **changes}
    event = {k: v for k, v in event.items() if v is not ...}
    line = heritrix.format_event(event)
    assert line is not None
    return line


def test_a_capture_field_by_field() -> None:
    line = line_for()
    assert line == (
        "2024-01-02T03:04:05.678Z   200       1299 http://example.org/a.html L "
        "http://example.org/ text/html #000 20240102030405600+78 "
        "sha1:YIUOKDGOLGI5JYHDTXRFFQ5FF4N2EJRV - -"
    )


def test_payload_size_fetch_start_and_worker_when_the_event_has_them() -> None:
    f = parse(
        line_for(payload_size=1000, fetch_began="2024-01-02T03:04:05.500123Z", worker="worker-7")
    )
    assert (f["size"], f["worker"], f["fetch"]) == ("1000", "#007", "20240102030405500+78")
    assert parse(line_for(worker=12))["worker"] == "#012"


def test_seed_has_dashes_for_path_and_via_and_missing_mime_is_no_type() -> None:
    f = parse(line_for(hops="", via=None, mime=None))
    assert (f["path"], f["via"], f["mime"]) == ("-", "-", "no-type")


def test_long_discovery_path_keeps_the_last_50_hops() -> None:
    hops = "L" * 12 + "RE" * 25
    assert parse(line_for(hops=hops))["path"] == "12+" + "RE" * 25


def test_annotations() -> None:
    f = parse(line_for(record="revisit", truncated="length", retries=2))
    assert f["annotations"] == "duplicate:digest,lenTrunc,3t"
    assert parse(line_for(truncated="time"))["annotations"] == "timeTrunc"
    assert parse(line_for(truncated="disconnect"))["annotations"] == "truncated:disconnect"


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("dns-error", -6),
        ("connect-error", -2),
        ("timeout", -4),
        ("disconnect", -3),
        ("bad-response", -3),
        ("robots-unreachable", -61),
        ("blocked-address", -5001),
        ("internal-error", -5),
        ("something-new", -5),
    ],
)
def test_failures_get_heritrix_negative_codes(reason: str, code: int) -> None:
    failed = {
        k: v
        for k, v in BASE_EVENT.items()
        if k not in ("status", "size", "digest", "duration", "mime")
    }
    line = heritrix.format_event({**failed, "outcome": "failed", "reason": reason, "retries": 2})
    assert line is not None
    f = parse(line)
    assert int(f["status"]) == code
    assert (f["size"], f["fetch"], f["digest"], f["mime"]) == ("-", "-", "-", "no-type")
    assert f["annotations"] == "3t"


def test_what_heritrix_does_not_log() -> None:
    assert heritrix.format_event({**BASE_EVENT, "outcome": "retry"}) is None
    assert heritrix.format_event({"event": "skip", "url": "http://x/", "reason": "scope"}) is None
    assert heritrix.format_event({"event": "crawl-start"}) is None


def test_robots_and_budget_skips() -> None:
    skip = {
        "event": "skip",
        "url": "http://x/p",
        "via": "http://x/",
        "timestamp": "2024-01-02T03:04:05.678Z",
    }
    assert parse(heritrix.format_event({**skip, "reason": "robots"}) or "")["status"] == "-9998"
    assert parse(heritrix.format_event({**skip, "reason": "budget"}) or "")["status"] == "-5003"


def test_a_hostile_url_cannot_add_fields() -> None:
    f = parse(line_for(url="http://example.org/a b\nc", via="http://x/\t"))
    assert f["url"] == "http://example.org/a%20b%0Ac"
    assert f["via"] == "http://x/%09"


# -- a real crawl -----------------------------------------------------------------------------


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port that refuses connections: bound, never listening, held for the whole test."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def build_site(site: SiteServer, refused: str) -> None:
    site.add_page(
        "/",
        '<html><head><title>Home</title></head><body><a href="/a.html">a</a>'
        '<a href="/old">old</a><a href="/missing.html">missing</a>'
        f'<a href="{refused}">refused</a><img src="/img/photo.png"></body></html>',
    )
    site.add_page("/a.html", '<html><body><img src="/img/copy.png"></body></html>')
    site.add_redirect("/old", "/a.html")
    site.add_file("/img/photo.png", PHOTO, "image/png")
    site.add_file("/img/copy.png", PHOTO, "image/png")


MS = timedelta(milliseconds=1)


def events_of(output: Path) -> list[dict[str, Any]]:
    with open(output / "crawl.log.jsonl", encoding="utf-8") as fh:
        return list(heritrix.events_from_jsonl(fh))


async def test_crawl_log_of_a_known_crawl(
    tmp_path: Path, site: SiteServer, closed_port: int
) -> None:
    refused = f"http://127.0.0.1:{closed_port}/nothing-here"
    build_site(site, refused)
    out = tmp_path / "crawl"
    # one fetch at a time, so the copy of the photo is fetched after the original is written
    crawl_began = datetime.now(UTC)
    result = await run_crawl(
        out, site.url("/"), allow_private=True, max_tries=1, workers=1, per_host_concurrency=1
    )
    crawl_ended = datetime.now(UTC)
    assert result.status == "completed"
    events = events_of(out)
    log_path = tmp_path / "crawl.log"
    with heritrix.HeritrixLog(log_path) as log:
        for event in events:
            log.write_event(event)
    lines = log_path.read_text(encoding="utf-8").splitlines()
    by_url = {f["url"]: f for f in map(parse, lines)}
    fetches = {e["url"]: e for e in events if e.get("event") == "fetch"}
    u = site.url
    assert set(by_url) == {
        u("/"),
        u("/a.html"),
        u("/old"),
        u("/missing.html"),
        u("/img/photo.png"),
        u("/img/copy.png"),
        refused,
    }

    for url, f in by_url.items():
        event = fetches[url]
        assert LOG_TIME.match(f["logged"]), f
        assert f["worker"].startswith("#") and len(f["worker"]) == 4, f
        assert f["source"] == "-"
        logged = datetime.strptime(f["logged"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert f["logged"] == event["timestamp"]
        if url == refused:
            continue
        assert int(f["status"]) == event["status"]
        assert f["size"] == str(event.get("payload_size", event["size"]))
        assert SHA1.match(f["digest"]) and f["digest"] == event["digest"]
        match = FETCH_TIME.match(f["fetch"])
        assert match, f
        began = datetime.strptime(match.group(1), "%Y%m%d%H%M%S%f").replace(tzinfo=UTC)
        took = timedelta(milliseconds=int(match.group(2)))
        assert took == timedelta(milliseconds=round(event["duration"] * 1000))
        # the fetch began during the crawl and was logged once it had ended (milliseconds,
        # truncated or rounded: one of slack each way); no bound on how long it took
        assert crawl_began - MS <= began <= began + took <= logged + 2 * MS
        assert logged <= crawl_ended + MS

    seed, page, old = by_url[u("/")], by_url[u("/a.html")], by_url[u("/old")]
    assert (seed["status"], seed["path"], seed["via"], seed["mime"]) == (
        "200",
        "-",
        "-",
        "text/html",
    )
    assert (old["status"], old["path"], old["via"]) == ("301", "L", u("/"))
    assert (page["status"], page["path"], page["via"]) in {
        ("200", "L", u("/")),
        ("200", "LR", u("/old")),
    }
    missing = by_url[u("/missing.html")]
    assert (missing["status"], missing["path"]) == ("404", "L")
    photo, copy = by_url[u("/img/photo.png")], by_url[u("/img/copy.png")]
    assert (photo["path"], photo["mime"], photo["annotations"]) == ("E", "image/png", "-")
    assert copy["path"] in ("LE", "LRE") and copy["mime"] == "image/png"
    assert copy["annotations"] == "duplicate:digest"
    assert copy["digest"] == photo["digest"]
    failed = by_url[refused]
    assert (failed["status"], failed["size"], failed["fetch"]) == ("-2", "-", "-")
    assert (failed["path"], failed["via"], failed["digest"]) == ("L", u("/"), "-")


async def test_convert_a_crawl_log_jsonl(
    tmp_path: Path, site: SiteServer, closed_port: int
) -> None:
    build_site(site, f"http://127.0.0.1:{closed_port}/")
    out = tmp_path / "crawl"
    await run_crawl(out, site.url("/"), allow_private=True, max_tries=1, workers=1)
    with open(out / "crawl.log.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"event": "fetch", "url": "http://cut')  # a crawl killed mid-line
    count = heritrix.convert(out / "crawl.log.jsonl", tmp_path / "crawl.log")
    lines = (tmp_path / "crawl.log").read_text(encoding="utf-8").splitlines()
    assert count == len(lines) == 7
    expected = [heritrix.format_event(e) for e in events_of(out)]
    assert lines == [line for line in expected if line is not None]


def test_cli_heritrix_log(tmp_path: Path) -> None:
    with SiteServer().running_in_thread() as site:
        build_site(site, site.url("/also-missing"))
        out = tmp_path / "crawl"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "archiver",
                "crawl",
                site.url("/"),
                "-o",
                str(out),
                "--frontier",
                "memory",
                "--robots",
                "ignore",
                "--per-host-delay",
                "0",
                "--heritrix-log",
                "--workers",
                "1",
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    lines = (out / "crawl.log").read_text(encoding="utf-8").splitlines()
    fields = [parse(line) for line in lines]
    assert {f["url"] for f in fields} >= {site.url("/"), site.url("/a.html"), site.url("/old")}
    events = [e for e in events_of(out) if heritrix.fetch_status(e) is not None]
    assert len(lines) == len(events)
    for f, event in zip(fields, events, strict=True):
        assert f["url"] == event["url"]
        assert f["worker"] == heritrix.worker_id(event.get("worker"))
        assert f["size"] == str(event.get("payload_size", event.get("size", "-")))
    assert json.loads((out / "summary.json").read_text())["captures"] >= 6
