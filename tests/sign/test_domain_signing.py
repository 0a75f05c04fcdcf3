"""A crawl signed through authsign (run here, on 127.0.0.1, with a test CA and a local RFC 3161
time stamp authority): py-wacz's verification and authsign's ``/verify`` accept the package,
and ``archiver verify`` accepts it and names the domain. Signing servers that are down, slow,
answer garbage or sign as another domain: the crawl finishes its WARCs and index, the WACZ is
written unsigned, one error line, exit code 1."""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import socket
import urllib.request
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import web

from archiver.commands.exits import exit_code
from archiver.index.waczcheck import verify_wacz
from archiver.run.crawler import CrawlResult
from archiver.sign.certs import TrustedRoots
from tests.commands.test_cli import archiver
from tests.conftest import run_crawl
from tests.sign.helpers import add_pages, digest_of, flip_byte, rewrite_member
from tests.support.authsign import AuthsignServer, authsign_server
from tests.support.pki import TestCA
from tests.support.site import SiteServer
from tests.support.tools import run_tool
from tests.support.tsa import time_stamp_authority

#: the name the test CA certifies authsign for; the signing URL is reached under it
DOMAIN = "localhost"


@dataclass
class Signing:
    ca: TestCA
    authsign: AuthsignServer
    roots: Path  #: the test CA's root, as a PEM file for --trusted-roots

    @property
    def url(self) -> str:
        return self.authsign.sign_url.replace("127.0.0.1", DOMAIN)


@pytest.fixture
async def signing(tmp_path: Path) -> AsyncIterator[Signing]:
    ca = TestCA()
    async with (
        time_stamp_authority(ca, tmp_path / "tsa") as tsa_url,
        authsign_server(ca, tmp_path / "authsign", tsa_url, DOMAIN) as server,
    ):
        yield Signing(ca, server, ca.write_roots(tmp_path / "roots.pem"))


async def crawl(tmp_path: Path, sign_url: str, **settings: object) -> tuple[Path, CrawlResult]:
    async with SiteServer() as site:
        add_pages(site)
        out = tmp_path / "crawl"
        result = await run_crawl(out, site.url("/"), wacz_sign=sign_url, **settings)
    return out, result


def post_json(url: str, body: object) -> tuple[int, str]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_a_crawl_signed_through_authsign_verifies_everywhere(
    signing: Signing, tmp_path: Path
) -> None:
    out, result = await crawl(tmp_path, signing.url)
    assert result.status == "completed", result.reason
    wacz = out / "crawl.wacz"
    signed = digest_of(wacz)["signedData"]
    assert signed["domain"] == DOMAIN
    assert signed["software"].startswith("authsigner ")
    # authsign's own verifier
    status, body = await asyncio.to_thread(post_json, signing.authsign.verify_url, signed)
    assert status == 200, body
    assert json.loads(body)["observer"] == DOMAIN
    # py-wacz: hashes, datapackage digest, created, and the signature through authsign /verify
    proc = await asyncio.to_thread(
        run_tool,
        ["wacz", "validate", "-f", str(wacz), "--verify-auth",
         "--verifier-url", signing.authsign.verify_url],
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Successfully verified signature via: {signing.authsign.verify_url}" in proc.stdout
    # archiver: trusts the test CA only when told to
    run = await asyncio.to_thread(
        archiver, "verify", str(wacz), "--trusted-roots", str(signing.roots)
    )
    assert run.code == 0, run.out
    assert f"signed by domain {DOMAIN} (certificate sha-256 " in run.out
    assert "time-stamped " in run.out and "by archiver test TSA" in run.out
    untrusted = await asyncio.to_thread(archiver, "verify", str(wacz))
    assert untrusted.code == 1
    assert "chains to an untrusted root" in untrusted.out
    summary = json.loads((out / "summary.json").read_text())
    assert f"signed by domain {DOMAIN}" in summary["wacz_signed_by"]


async def test_a_tampered_time_stamp_fails(signing: Signing, tmp_path: Path) -> None:
    out, result = await crawl(tmp_path, signing.url)
    assert result.status == "completed"
    wacz = out / "crawl.wacz"

    def change(data: bytes) -> bytes:
        digest = json.loads(data)
        signed = digest["signedData"]
        raw = base64.b64decode(signed["timeSignature"])
        signed["timeSignature"] = base64.b64encode(flip_byte(raw, len(raw) - 20)).decode()
        return json.dumps(digest).encode()

    changed = tmp_path / "stamp.wacz"
    rewrite_member(wacz, changed, "datapackage-digest.json", change)
    run = await asyncio.to_thread(
        archiver, "verify", str(changed), "--trusted-roots", str(signing.roots)
    )
    assert run.code == 1
    assert "ERROR datapackage-digest.json: signature: timeSignature" in run.out


# ---------------------------------------------------------------------------- bad servers


def assert_unsigned_failure(out: Path, result: CrawlResult, expected: str) -> None:
    """The crawl's data is all there, the package unsigned, one clear error, status failed."""
    assert result.status == "failed"
    assert exit_code(result.status) == 1
    assert expected in (result.reason or "")
    assert list((out / "warcs").glob("*.warc.gz"))
    assert (out / "index.cdxj").read_text().strip()
    wacz = out / "crawl.wacz"
    with zipfile.ZipFile(wacz) as zf:
        assert "signedData" not in json.loads(zf.read("datapackage-digest.json"))
    errors = [
        json.loads(line)
        for line in (out / "crawl.log.jsonl").read_text().splitlines()
        if '"wacz-signing-error"' in line
    ]
    assert len(errors) == 1
    assert expected in errors[0]["error"]
    summary = json.loads((out / "summary.json").read_text())
    assert expected in summary["wacz_signing_error"]
    assert summary["status"] == "failed"


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Serve = Callable[[Handler], Awaitable[str]]


@pytest.fixture
async def local_server() -> AsyncIterator[Serve]:
    """Serves a handler at ``POST /sign`` on 127.0.0.1; gives its URL."""
    runners: list[web.AppRunner] = []

    async def serve(handler: Handler) -> str:
        app = web.Application()
        app.router.add_post("/sign", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{runner.addresses[0][1]}/sign"

    yield serve
    for runner in runners:
        await runner.cleanup()


async def test_a_signing_server_that_is_down(tmp_path: Path) -> None:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/sign"
        out, result = await crawl(tmp_path, url)
    assert_unsigned_failure(out, result, f"cannot reach the signing server {url}")


async def test_a_signing_server_that_is_slow(tmp_path: Path, local_server: Serve) -> None:
    answered = asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        while not answered.is_set():  # a byte now and then, never done
            await response.write(b" ")
            await asyncio.sleep(0.2)
        return response

    url = await local_server(slow)
    try:
        out, result = await crawl(tmp_path, url, wacz_sign_timeout=1.5)
    finally:
        answered.set()
    assert_unsigned_failure(out, result, "did not answer within 1.5 s")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"\x00\xffnot json", "answered something not JSON"),
        (b'{"hash": "sha256:00", "created": "x"}', "signed another hash or date than asked"),
        (b"[1, 2]", "answered JSON that is no object"),
    ],
)
async def test_a_signing_server_that_answers_garbage(
    tmp_path: Path, local_server: Serve, body: bytes, expected: str
) -> None:
    async def garbage(_: web.Request) -> web.StreamResponse:
        return web.Response(body=body, content_type="application/json")

    out, result = await crawl(tmp_path, await local_server(garbage))
    assert_unsigned_failure(out, result, expected)


async def test_a_signing_server_that_refuses(tmp_path: Path, local_server: Serve) -> None:
    async def refuse(_: web.Request) -> web.StreamResponse:
        return web.Response(status=403, text='{"detail":"Invalid auth token"}')

    out, result = await crawl(tmp_path, await local_server(refuse))
    assert_unsigned_failure(out, result, 'answered HTTP 403: {"detail":"Invalid auth token"}')


async def test_a_certificate_for_another_domain(tmp_path: Path) -> None:
    ca = TestCA()
    async with (
        time_stamp_authority(ca, tmp_path / "tsa") as tsa_url,
        authsign_server(ca, tmp_path / "authsign", tsa_url, "elsewhere.example") as server,
    ):
        url = server.sign_url.replace("127.0.0.1", DOMAIN)
        out, result = await crawl(tmp_path, url)
    assert_unsigned_failure(
        out,
        result,
        "the signature is by domain 'elsewhere.example', not by the signing server's 'localhost'",
    )


async def test_the_command_line_says_it_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/sign"
        async with SiteServer() as site:
            add_pages(site)
            out = tmp_path / "cli"
            run = await asyncio.to_thread(
                archiver, "crawl", site.url("/"), "-o", str(out), "--wacz-sign", url,
                "--quiet", "--robots", "ignore", "--per-host-delay", "0",
            )  # fmt: skip
    assert run.code == 1, run.err
    assert (out / "cli.wacz").is_file()
    assert "Traceback" not in run.err
    assert f"the WACZ is unsigned: cannot reach the signing server {url}" in run.err


async def test_the_token_is_sent_and_written_nowhere(
    tmp_path: Path, local_server: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ARCHIVER_WACZ_SIGN_TOKEN`` goes to the signing server as its bearer token, and into
    no file of the crawl (settings are written to warcinfo and crawl.json; it is no setting)."""
    seen: list[str | None] = []

    async def refuse(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers.get("Authorization"))
        return web.Response(status=403, text="no")

    token = "t0ken-Zq8vX3-never-in-a-file"
    monkeypatch.setenv("ARCHIVER_WACZ_SIGN_TOKEN", token)
    out, result = await crawl(tmp_path, await local_server(refuse))
    assert seen == [f"bearer {token}"]
    assert_unsigned_failure(out, result, "answered HTTP 403: no")
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                data = gzip.decompress(data)
            assert token.encode() not in data, path


async def test_damaged_signature_fields_are_findings_never_tracebacks(
    signing: Signing, tmp_path: Path
) -> None:
    """Bytes changed all over the certificates and the time stamp: each package fails with a
    signature finding (cryptography's errors on malformed certificates are mapped)."""
    out, result = await crawl(tmp_path, signing.url)
    assert result.status == "completed"
    wacz = out / "crawl.wacz"
    roots = TrustedRoots().with_file(signing.roots)
    assert verify_wacz(wacz, roots).ok
    signed = digest_of(wacz)["signedData"]
    changed = tmp_path / "changed.wacz"
    checked = 0
    for field in ("timeSignature", "domainCert", "timestampCert", "signature"):
        value: str = signed[field]
        for at in range(0, len(value), max(1, len(value) // 25)):
            replacement = "A" if value[at] != "A" else "B"
            if value[at] in "-\n ":
                continue  # the PEM armour: a changed label is still caught, but not a byte test
            damaged = dict(signed, **{field: value[:at] + replacement + value[at + 1 :]})

            def change(data: bytes, damaged: dict[str, str] = damaged) -> bytes:
                return json.dumps(dict(json.loads(data), signedData=damaged)).encode()

            rewrite_member(wacz, changed, "datapackage-digest.json", change)
            report = verify_wacz(changed, roots)
            assert not report.ok, (field, at)
            assert report.errors[0][0] == "datapackage-digest.json"
            assert report.errors[0][1].startswith("signature: "), report.errors
            checked += 1
    assert checked > 80
