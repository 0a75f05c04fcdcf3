"""Configured credentials (README, "Credentials"): a crawl run with
``--header "Authorization: …"`` sends it only to the seeds' hosts, never to a host whose
certificate failed verification, and publishes it nowhere but in the request records (the
documented policy): not in warcinfo, crawl.json, logs, summary, index, pages or the WACZ's
metadata.
"""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

from aiohttp import web

from archiver.config.assemble import warcinfo_fields
from archiver.config.settings import Settings
from archiver.policy.credentials import (
    credential_scope,
    is_credential_header,
    may_send_credentials,
)
from archiver.urls import redact_url
from tests.conftest import run_crawl
from tests.support.site import SiteServer
from tests.support.tls import self_signed_server
from tests.support.warcs import read_records

AUTH = "Bearer CANARY-AUTH-1"
COOKIE = "sid=CANARY-COOKIE-2"
API_KEY = "CANARY-KEY-3"
SECRETS = ("CANARY-AUTH-1", "CANARY-COOKIE-2", "CANARY-KEY-3")
HEADERS = (
    ("Authorization", AUTH),
    ("Cookie", COOKIE),
    ("X-Api-Key", API_KEY),
    ("X-Archive-Run", "visible-run-4"),  # not a credential: every host gets it
)


def _leaks(data: bytes) -> list[str]:
    return [secret for secret in SECRETS if secret.encode() in data]


async def test_credentials_go_only_to_the_seed_host_and_are_published_nowhere(
    tmp_path: Path,
) -> None:
    async with SiteServer() as site, SiteServer() as cdn:
        base, cdn_base = f"http://site.test:{site.port}", f"http://cdn.test:{cdn.port}"
        site.add_page(
            "/",
            f'<title>Members</title><img src="{cdn_base}/logo.png">'
            f'<script src="{cdn_base}/app.js"></script><img src="/moved.png">'
            '<a href="/inside.html">inside</a>',
        )
        site.add_page("/inside.html", "<p>members only</p>")
        site.add_redirect("/moved.png", f"{cdn_base}/moved.png", status=302)
        for path in ("/logo.png", "/moved.png"):
            cdn.add_file(path, b"\x89PNG fake image " + path.encode(), "image/png")
        cdn.add_file("/app.js", b"console.log(1)", "application/javascript")
        out = tmp_path / "out"
        result = await run_crawl(
            out,
            base + "/",
            header=HEADERS,
            resolve=(("site.test", "127.0.0.1"), ("cdn.test", "127.0.0.1")),
            allow_private=True,  # the second host is on loopback too
            wacz=True,
        )
        assert result.status == "completed"

        # Sending: the seed's host got every configured header, the other host only the
        # non-credential one (requisites and a redirect target alike).
        site_paths = sorted(hit.path for hit in site.counters.hits)
        assert site_paths == ["/", "/inside.html", "/moved.png"]
        for hit in site.counters.hits:
            assert hit.headers.get("Authorization") == AUTH
            assert hit.headers.get("Cookie") == COOKIE
            assert hit.headers.get("X-Api-Key") == API_KEY
        cdn_paths = sorted(hit.path for hit in cdn.counters.hits)
        assert cdn_paths == ["/app.js", "/logo.png", "/moved.png"]
        for hit in cdn.counters.hits:
            assert hit.headers.get("X-Archive-Run") == "visible-run-4"
            assert not {"Authorization", "Cookie", "X-Api-Key"} & set(hit.headers), hit

    # Publishing: request records to the seed's host hold the request as sent (the policy the
    # warcinfo states); no other record, and no other file, holds a secret.
    records = read_records(out / "warcs")
    for record in records:
        uri = record.uri or ""
        if record.type == "request" and uri.startswith(base):
            assert set(_leaks(record.block)) == set(SECRETS), uri
            continue
        assert not _leaks(record.block), (record.type, uri)
        assert not _leaks(repr(record.headers).encode()), (record.type, uri)
    warcinfo = next(r for r in records if r.type == "warcinfo").block.decode()
    assert "request-records: as sent, not redacted" in warcinfo
    settings = json.loads(warcinfo.split("crawl-settings: ", 1)[1].splitlines()[0])
    assert ["X-Archive-Run", "visible-run-4"] in settings["header"]
    assert ["Authorization", "<redacted>"] in settings["header"]

    checked = 0
    for written in sorted(out.rglob("*")):
        if not written.is_file() or written.name.endswith((".warc.gz", ".wacz", ".sqlite")):
            continue
        data = written.read_bytes()
        if written.suffix == ".gz":
            data = gzip.decompress(data)
        assert not _leaks(data), written
        checked += 1
    assert checked >= 6  # crawl.json, crawl.log.jsonl, summary.json, index.cdxj, pages, ...
    with zipfile.ZipFile(out / "out.wacz") as wacz:
        for name in wacz.namelist():
            if name.startswith("archive/"):
                continue  # the WARC files, checked record by record above
            data = wacz.read(name)
            if name.endswith(".gz"):
                data = gzip.decompress(data)
            assert not _leaks(data), name


async def test_no_credentials_for_a_host_whose_certificate_failed(tmp_path: Path) -> None:
    """Capture-anyway mode still fetches the page, without the configured secrets."""
    seen: list[dict[str, str]] = []

    async def page(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(text="<p>self-signed</p>", content_type="text/html")

    async with self_signed_server(page) as url:
        result = await run_crawl(tmp_path / "out", url, header=HEADERS, scope="page")
    assert result.status == "completed" and result.summary["captures"] == 1
    assert len(seen) == 1
    assert seen[0].get("X-Archive-Run") == "visible-run-4"
    assert not {"Authorization", "Cookie", "X-Api-Key"} & set(seen[0])


def test_settings_published_with_secrets_redacted() -> None:
    settings = Settings(
        seeds=("https://user:CANARY-SEED-5@example.org/",),
        frontier="redis://:CANARY-REDIS-6@127.0.0.1:6379/0",
        header=HEADERS,
    )
    published = json.dumps(settings.to_json()) + repr(warcinfo_fields(settings, "crawl"))
    for secret in (*SECRETS, "CANARY-SEED-5", "CANARY-REDIS-6"):
        assert secret not in published
    assert "https://user:***@example.org/" in published
    assert "redis://:***@127.0.0.1:6379/0" in published
    assert "visible-run-4" in published


def test_which_headers_are_credentials_and_where_they_may_go() -> None:
    for name in ("Authorization", "proxy-authorization", "Cookie", "X-Api-Key", "X-Auth-Token"):
        assert is_credential_header(name), name
    for name in ("Accept-Language", "X-Archive-Run", "Referer"):
        assert not is_credential_header(name), name
    scope = credential_scope(
        ["http://a.example/", "https://b.example/x", "ftp://c.example/"],
        ["CDN.example", "faß.example"],
    )
    assert may_send_credentials(scope, "http", "a.example")
    assert may_send_credentials(scope, "https", "a.example")  # an http site that upgrades
    assert may_send_credentials(scope, "https", "b.example")
    assert not may_send_credentials(scope, "http", "b.example")  # never downgraded to http
    assert may_send_credentials(scope, "https", "cdn.example")
    assert may_send_credentials(scope, "https", "xn--fa-hia.example")  # as URLs are requested
    assert not may_send_credentials(scope, "https", "c.example")
    assert not may_send_credentials(scope, "https", "evil.example")
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
