"""The README's signing command lines, run as written (the site's and the signing server's URLs
and the working directory substituted): a key-signed crawl with text, and a crawl signed
through authsign verified against the CA that certified it."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.sign.helpers import add_pages
from tests.sign.test_domain_signing import DOMAIN
from tests.support.authsign import authsign_server
from tests.support.pki import TestCA
from tests.support.site import SiteServer
from tests.support.tools import REPO_ROOT
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


def run(line: str, cwd: Path, **urls: str) -> subprocess.CompletedProcess[str]:
    """``line`` as the README shows it, its example URLs replaced by local ones."""
    for shown, local in urls.items():
        line = line.replace(shown, local)
    words = shlex.split(line)
    assert words[0] == "archiver"
    return subprocess.run(
        [sys.executable, "-m", "archiver", *words[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def test_the_lines_are_the_readmes() -> None:
    readme = (REPO_ROOT / "README.md").read_text().splitlines()
    for line in (KEYGEN, KEY_CRAWL, VERIFY, SERVER_CRAWL, VERIFY_ROOTS):
        assert line in readme, line


async def test_key_signed_crawl_as_documented(tmp_path: Path) -> None:
    async with SiteServer() as site:
        add_pages(site)
        made = await asyncio.to_thread(run, KEYGEN, tmp_path)
        assert made.returncode == 0, made.stderr
        crawled = await asyncio.to_thread(
            run, KEY_CRAWL, tmp_path, **{"https://example.org/": site.url("/")}
        )
    assert crawled.returncode == 0, crawled.stderr
    checked = await asyncio.to_thread(run, VERIFY, tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert "signed anonymously by the key with sha-256 fingerprint " in checked.stdout
    assert checked.stdout.rstrip().endswith("VERIFY OK")


async def test_server_signed_crawl_as_documented(tmp_path: Path) -> None:
    ca = TestCA()
    ca.write_roots(tmp_path / "my-roots.pem")
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
        crawled = await asyncio.to_thread(run, SERVER_CRAWL, tmp_path, **urls)
    assert crawled.returncode == 0, crawled.stderr
    checked = await asyncio.to_thread(run, VERIFY_ROOTS, tmp_path)
    assert checked.returncode == 0, checked.stdout
    assert f"signed by domain {DOMAIN} " in checked.stdout
