"""Small pure pieces: URL normalisation, HTTP framing, digests, index lines, settings."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import surt
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import digest
from archiver.config.settings import default_config_text, load_settings, parse_duration, parse_size
from archiver.errors import SettingsError
from archiver.fetch.httpframe import ResponseFramer, State, dechunk
from archiver.index import cdxj as index
from archiver.models import FailReason, Outcome, TaskResult, WrittenRecord
from archiver.policy import challenge
from archiver.policy.netguard import AddressPolicy, classify
from archiver.run.log import crawl_logger
from archiver.run.output import cut_torn_line
from archiver.urls import _SIMPLE_REF, _resolve_general, _resolve_simple, normalize_url, resolve
from archiver.warc.records import cdx_mime


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a/../b/./c?x=1#frag", "http://example.com/b/c?x=1"),
        ("http://faß.de/café?q=é", "http://xn--fa-hia.de/caf%C3%A9?q=%C3%A9"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f.1:8080/x", "http://127.0.0.1:8080/x"),
        ("http://017700000001/", "http://127.0.0.1/"),
        ("http://[0:0:0:0:0:0:0:1]:80/", "http://[::1]/"),
        ("https://a.b/%7e/%zz/100%", "https://a.b/%7e/%25zz/100%25"),
        ("http://a.b/p|q^r", "http://a.b/p%7Cq%5Er"),
        (" http://a.b/x\r\ny ", "http://a.b/xy"),
        ("http://user:pw@host.x/", "http://host.x/"),
        ("http://a.b", "http://a.b/"),
        ("https://a.b:443/x", "https://a.b/x"),
        ("http:\\\\a.b\\p?q=\\", "http://a.b/p?q=%5C"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("../img/x.png#f", "http://a.b/img/x.png"),
        ("javascript:void(0)", None),
        ("mailto:x@y", None),
        ("data:image/png;base64,xx", None),
        ("//other.c/x y", "http://other.c/x%20y"),
        ("?q=1", "http://a.b/dir/page.html?q=1"),
        ("#top", "http://a.b/dir/page.html"),
        ("\\\\other.c\\path", "http://other.c/path"),
        # found by fuzzing: a backslash is a slash only before the query (URL Standard)
        ("\\p\\q?a\\b#c\\d", "http://a.b/p/q?a%5Cb"),
        ("?x=\\y", "http://a.b/dir/page.html?x=%5Cy"),
        # found by fuzzing: what cutting the fragment leaves at the end is data, not stripped
        ("a #top", "http://a.b/dir/a%20"),
        ("a\x00#top", "http://a.b/dir/a%00"),
        ("?q= #top", "http://a.b/dir/page.html?q=%20"),
        # found by fuzzing: every slash before the host of an http(s) URL is skipped
        ("///other.c/x", "http://other.c/x"),
        ("http:////other.c", "http://other.c/"),
        ("https:///other.c/", "https://other.c/"),
        ("///", None),
        ("//[::1%25eth0]/", None),  # found by fuzzing: no IPv6 zone ids (URL Standard)
        ("//0x7fle/", "http://0x7fle/"),  # found by fuzzing: not a number, so a domain
        ("http://0x/a", "http://0.0.0.0/a"),  # found by fuzzing: the fast path took it as a name
        ("http://1.0x1a/", "http://1.0.0.26/"),
        ("https://a.b:84432/x", None),  # found by fuzzing: the fast path took any 5 digits
        # found by fuzzing: int() took a sign and '_' in IPv4 numbers; the URL Standard does not
        ("//+127.1/", None),
        ("//1_0.1/", None),
        ("%0D%0AWARC-Type:%20x", "http://a.b/dir/%0D%0AWARC-Type:%20x"),
    ],
)
def test_resolve(ref: str, expected: str | None) -> None:
    assert resolve("http://a.b/dir/page.html", ref) == expected


def test_normalised_urls_have_no_control_characters() -> None:
    for ref in ("/a\x00b", "/a\x7fb", "/a\tb\nc", "/ü\x01"):
        url = resolve("http://a.b/", ref)
        assert (
            url is not None and url.isascii() and not any(ord(c) < 33 or ord(c) == 127 for c in url)
        )


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


def test_digest_labels_and_parsing() -> None:
    value = digest.digest_bytes("sha1", b"hello")
    assert value == "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N"
    sha256 = digest.digest_bytes("sha256", b"hello")
    assert sha256 == "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert digest.parse_label(value)[0] == "sha1"
    assert digest.parse_label(sha256)[1].hex() == sha256.split(":")[1]


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


def test_address_policy() -> None:
    for ip in (
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a00:1",
    ):
        assert classify(ip) is not None, ip
    assert classify("93.184.216.34") is None
    policy = AddressPolicy(allowed=[("127.0.0.1", 8000)])
    assert policy.check("127.0.0.1", 8000) is None
    assert policy.check("127.0.0.1", 8001) is not None
    assert AddressPolicy(allow_private=True).check("10.0.0.1", 80) is None


def test_settings_parsing_and_errors(tmp_path: Path) -> None:
    assert (
        parse_size("1GB") == 10**9 and parse_size("512KiB") == 512 * 1024 and parse_size(0) is None
    )
    assert parse_duration("500ms") == 0.5 and parse_duration("2h") == 7200
    config = tmp_path / "c.toml"
    config.write_text('[crawl]\nworkers = 4\n[politeness]\nper_host_delay = "2s"\n')
    settings = load_settings(config, {"workers": "8"})
    assert settings.workers == 8 and settings.per_host_delay == 2.0
    config.write_text("[crawl]\nworker = 4\n")
    with pytest.raises(SettingsError, match=r"unknown setting \[crawl\] worker"):
        load_settings(config)
    with pytest.raises(SettingsError, match="--robots: must be one of obey, ignore"):
        load_settings(None, {"robots": "sometimes"})


def test_default_config_is_valid_toml_with_every_setting() -> None:
    text = default_config_text()
    setting_line = re.compile(r"^# [a-z_]+ = ")
    uncommented = "\n".join(
        line[2:] if setting_line.match(line) else line
        for line in text.splitlines()
        if not line.startswith("#") or setting_line.match(line)
    )
    data = tomllib.loads(uncommented)
    assert sum(len(table) for table in data.values()) >= 50


@given(
    ref=st.text(alphabet="ab./?#=&-_~:%@!$'()*+,;", max_size=24),
    base=st.sampled_from(
        ["http://a.b/", "http://a.b/dir/page.html", "https://a.b:8443/x/y/?q=1", "http://a.b/d/"]
    ),
)
@settings(max_examples=3000, deadline=None)
def test_resolve_fast_path_equals_general_path(ref: str, base: str) -> None:
    fast = _resolve_simple(base, ref) if _SIMPLE_REF.match(ref) and ref[:2] != "//" else None
    if fast is not None:
        assert fast == _resolve_general(base, ref), (base, ref)


@pytest.mark.parametrize(
    ("base", "ref", "expected"),
    [
        ("https://example.com/", "/a/%2e%2e/b", "https://example.com/b"),
        ("https://example.com/list?page=2", "?", "https://example.com/list?"),
        ("https://example.com/", "/a?", "https://example.com/a?"),
        ("http://a.b/x/", "http://A.B:80/y", "http://a.b/y"),
        ("http://a.b/x/", "http://a.b/y#z", "http://a.b/y"),
        ("http://a.b/x/", "https://127.1/", "https://127.0.0.1/"),
        ("http://a.b/x/y/z.html", "../../q.html?a=/../b", "http://a.b/q.html?a=/../b"),
        ("http://a.b/x/", "../../../q", "http://a.b/q"),
        ("http://a.b/x/y/", "./../z/./w", "http://a.b/x/z/w"),
        ("http://a.b/x/y/", "../", "http://a.b/x/"),
        ("http://a.b/x/y/", "../..", "http://a.b/"),
    ],
)
def test_resolve_edge_cases(base: str, ref: str, expected: str) -> None:
    assert resolve(base, ref) == expected


def test_crawler_start_does_not_load_surt_and_surt_keys_still_work() -> None:
    """SURT keys of normalised URLs are built by archiver.index.surtkey: a crawl never imports
    the surt package (nor tldextract and requests, which it pulls in) unless an odd URL needs
    it, and then the package answers."""
    code = (
        "import sys, archiver.commands.cli\n"
        "from archiver.index.surtkey import surt_key\n"
        "print(surt_key('http://www.example.org/B?b=2&a=1'))\n"
        "assert 'surt' not in sys.modules and 'requests' not in sys.modules, 'loaded early'\n"
        "print(surt_key('HTTP://www.Example.org/%42?b=2&a=1'))\n"
        "assert 'surt' in sys.modules, 'the package did not answer'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["org,example)/b?a=1&b=2", "org,example)/b?a=1&b=2"]


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b"", b""),
        (b'{"a":1}\n{"b":2}\n', b'{"a":1}\n{"b":2}\n'),
        (b'{"a":1}\n{"b":', b'{"a":1}\n'),
        (b'{"b":', b""),
        (b"x\n" + b"y" * 200_000, b"x\n"),  # a fragment longer than one backwards read
    ],
)
def test_cut_torn_line(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    assert cut_torn_line(path) == len(content) - len(kept)
    assert path.read_bytes() == kept
    assert cut_torn_line(tmp_path / "missing.jsonl") == 0


def test_a_killed_runs_half_line_does_not_break_the_next_runs_log(tmp_path: Path) -> None:
    path = tmp_path / "crawl.log.jsonl"
    path.write_bytes(b'{"event":"fetch","url":"http://a/"}\n{"event":"fetch","url":"http://')
    log = crawl_logger(path, quiet=True)
    log.logger.info("crawl-start", resumed=True)
    log.close()
    events = [json.loads(line) for line in path.read_text().splitlines()]  # every line parses
    assert [e["event"] for e in events] == ["fetch", "log-repaired", "crawl-start"]
    assert events[1]["removed_bytes"] == len(b'{"event":"fetch","url":"http://')


# -- bot challenges -------------------------------------------------------------------------


def _lookup(headers: dict[str, str]) -> Any:
    table = {k.lower(): v for k, v in headers.items()}
    return lambda name: table.get(name.lower())


CF_BODY = (
    b'<title>Just a moment...</title><script src="/cdn-cgi/challenge-platform/h/g/x"></script>'
)


@pytest.mark.parametrize(
    ("status", "headers", "body", "provider"),
    [
        (403, {"CF-Mitigated": "challenge"}, b"", "cloudflare"),
        (200, {"cf-mitigated": " Challenge "}, None, "cloudflare"),
        (503, {"Server": "cloudflare"}, CF_BODY, "cloudflare"),
        (202, {"x-amzn-waf-action": "challenge"}, b"", "aws-waf"),
        (405, {"x-amzn-waf-action": "captcha"}, b"", "aws-waf"),
        (429, {"x-vercel-mitigated": "challenge"}, b"", "vercel"),
        (
            403,
            {"X-DataDome": "protected"},
            b"<script src='https://ct.captcha-delivery.com/c.js'>",
            "datadome",
        ),
        # ordinary responses, even from the same providers, are not challenges
        (200, {"Server": "cloudflare"}, CF_BODY, None),  # a page that talks about the platform
        (403, {"Server": "cloudflare"}, b"<h1>Forbidden</h1>", None),
        (403, {"Server": "nginx"}, CF_BODY, None),
        (200, {"cf-mitigated": "block"}, b"", None),
        (200, {"Content-Security-Policy": "script-src https://cdnjs.cloudflare.com/"}, b"", None),
        (200, {"X-DataDome": "protected"}, b"captcha-delivery.com", None),
        (403, {"X-DataDome": "protected"}, b"<h1>Forbidden</h1>", None),
        (404, {}, None, None),
    ],
)
def test_challenge_detection(
    status: int, headers: dict[str, str], body: bytes | None, provider: str | None
) -> None:
    assert challenge.detect(status, _lookup(headers), body) == provider


def test_a_challenge_pauses_its_host_like_a_429() -> None:
    challenged = TaskResult(Outcome.RETRY, status=403, reason=FailReason.CHALLENGE.value)
    assert challenged.host_pause == 30.0
    assert TaskResult(Outcome.RETRY, status=202, reason="challenge", retry_after=4).host_pause == 4
    assert TaskResult(Outcome.RETRY, status=429, retry_after=2.5).host_pause == 2.5
    assert TaskResult(Outcome.DONE, status=403).host_pause is None
    assert TaskResult(Outcome.RETRY, status=500, reason="server-error").host_pause is None
