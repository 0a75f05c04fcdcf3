"""ReplayWeb.page 2.5.3, offline in headless Chromium, opens a key-signed WACZ crawled with
``--text``: its archive information shows the signature (the observer's public key, which it
verified), and its page search finds a page by a word that is only in the page's text. A
browser page's text is what its DOM shows after scripts ran."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from archiver.sign.keys import write_new_key
from tests.conftest import run_crawl
from tests.sign.helpers import add_pages
from tests.support.replaywebpage import ReplayWebPageApp
from tests.support.site import SiteServer


async def test_replaywebpage_shows_the_signature_and_searches_the_text(tmp_path: Path) -> None:
    key = write_new_key(tmp_path / "archive.key")
    async with SiteServer() as site:
        add_pages(site)
        out = tmp_path / "crawl"
        result = await run_crawl(
            out, site.url("/"), wacz_sign_key=tmp_path / "archive.key", text=True
        )
    assert result.status == "completed", result.reason
    async with ReplayWebPageApp(out / "crawl.wacz", tmp_path / "rwp") as app:
        await app.open()
        shown = await app.wait_for(lambda text: "2 pages" in text and "Observer Public Key" in text)
        lines = shown.splitlines()
        assert lines[lines.index("Observer Public Key") + 1] == key.public_key
        assert "archiver/" in lines[lines.index("Created With") + 1]
        checks = {row["id"]: row for row in await app.verification()}
        assert checks["signature"]["matched"] is True  # ReplayWeb.page checked it (WebCrypto)
        assert checks["publicKey"]["expected"] == key.public_key
        # "quokkaberry" is in the text of /tides only: not in any URL or title
        await app.search("quokkaberry")
        found = await app.wait_for(lambda text: "1 page" in text.splitlines())
        assert site.url("/tides") in found
        assert site.url("/") not in found.splitlines()


async def test_a_browser_pages_text_is_its_rendered_dom(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_page(
            "/",
            "<html><head><title>Scripted</title></head><body><p id='x'>static words</p>"
            "<script>document.getElementById('x').textContent = 'zanzibarword from a script';"
            "</script></body></html>",
        )
        out = tmp_path / "crawl"
        result = await run_crawl(
            out, site.url("/"), wacz=True, text=True, browser="all", browser_tabs=1
        )
    assert result.status == "completed", result.reason
    with zipfile.ZipFile(out / "crawl.wacz") as zf:
        header, page = (json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines())
    assert header["hasText"] is True
    assert page["text"] == "zanzibarword from a script"
