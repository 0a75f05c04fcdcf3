"""The README's signing command lines, run as written (the site's and the signing server's
URLs replaced by local ones): a key-signed crawl with text, and a crawl signed through
authsign verified against the CA that certified it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.sign.helpers import add_pages
from tests.sign.test_domain_signing import DOMAIN
from tests.support.authsign import authsign_server
from tests.support.pki import TestCA
from tests.support.site import SiteServer
from tests.support.tsa import time_stamp_authority

KEYGEN = "archiver keygen archive.key"
KEY_CRAWL = (
    "archiver crawl https://example.org/ -o crawls/example --text --wacz-sign-key archive.key"
)
VERIFY = "archiver verify crawls/example/example.wacz"
SERVER_CRAWL = (
    "archiver crawl https://example.org/ -o crawls/example --wacz-sign "
    "https://signer.example.org/sign"
)
VERIFY_ROOTS = "archiver verify crawls/example/example.wacz --trusted-roots my-roots.pem"


@documents(KEYGEN, KEY_CRAWL, VERIFY)
async def test_key_signed_crawl_as_documented(doc: DocShell, tmp_path: Path) -> None:
    cwd = workdir(tmp_path)
    async with SiteServer() as site:
        add_pages(site)
        made = await asyncio.to_thread(doc.run, KEYGEN, cwd=cwd)
        assert made.returncode == 0, made.stderr
        assert (cwd / "archive.key").is_file() and (cwd / "archive.key.pub").is_file()
        crawled = await asyncio.to_thread(
            doc.run, KEY_CRAWL, cwd=cwd, replace={"https://example.org/": site.url("/")}
        )
    assert crawled.returncode == 0, crawled.stderr
    checked = await asyncio.to_thread(doc.run, VERIFY, cwd=cwd)
    assert checked.returncode == 0, checked.stdout
    assert "signed anonymously by the key with sha-256 fingerprint " in checked.stdout
    assert checked.stdout.rstrip().endswith("VERIFY OK")


@documents(SERVER_CRAWL, VERIFY_ROOTS)
async def test_server_signed_crawl_as_documented(doc: DocShell, tmp_path: Path) -> None:
    cwd = workdir(tmp_path / "work")
    ca = TestCA()
    ca.write_roots(cwd / "my-roots.pem")
    async with (
        SiteServer() as site,
        time_stamp_authority(ca, tmp_path / "tsa") as tsa_url,
        authsign_server(ca, tmp_path / "authsign", tsa_url, DOMAIN) as server,
    ):
        add_pages(site)
        urls = {
            "https://example.org/": site.url("/"),
            "https://signer.example.org/sign": server.sign_url.replace("127.0.0.1", DOMAIN),
        }
        crawled = await asyncio.to_thread(doc.run, SERVER_CRAWL, cwd=cwd, replace=urls)
    assert crawled.returncode == 0, crawled.stderr
    checked = await asyncio.to_thread(doc.run, VERIFY_ROOTS, cwd=cwd)
    assert checked.returncode == 0, checked.stdout
    assert f"signed by domain {DOMAIN} " in checked.stdout
