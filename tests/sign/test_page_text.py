"""``--text``: each page's text in pages.jsonl and the WACZ (``hasText``, as ReplayWeb.page
needs to search it), capped per page; ``--text-records`` writes it as ``urn:text:`` resource
records too."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from archiver.commands import verify
from tests.conftest import run_crawl
from tests.sign.helpers import add_pages
from tests.support.site import SiteServer
from tests.support.warcs import read_records


def wacz_pages(wacz: Path) -> list[dict[str, object]]:
    with zipfile.ZipFile(wacz) as zf:
        return [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]


async def test_static_pages_text_goes_to_the_page_list_and_the_warc(tmp_path: Path) -> None:
    async with SiteServer() as site:
        add_pages(site)
        out = tmp_path / "crawl"
        result = await run_crawl(out, site.url("/"), wacz=True, text=True, text_records=True)
    assert result.status == "completed", result.reason
    header, *pages = wacz_pages(out / "crawl.wacz")
    assert header["hasText"] is True
    texts = {page["url"]: page["text"] for page in pages}
    assert texts[site.url("/")] == "Harbour notes\nThe lighthouse keeper logs every ship.\ntides"
    assert "quokkaberry" in str(texts[site.url("/tides")])
    assert "scriptword" not in str(texts[site.url("/tides")])
    records = {
        rec.get("WARC-Target-URI"): rec
        for rec in read_records(out / "warcs")
        if rec.type == "resource"
    }
    tides = records[f"urn:text:{site.url('/tides')}"]
    assert tides.get("Content-Type") == "text/plain; charset=utf-8"
    assert tides.block.decode() == texts[site.url("/tides")]
    assert f"urn:text:{site.url('/')}" in records
    report = verify.verify([out / "warcs"], index=out / "index.cdxj")
    assert report.ok, verify.render(report)


async def test_text_is_capped_and_off_by_default(tmp_path: Path) -> None:
    async with SiteServer() as site:
        add_pages(site)
        capped = await run_crawl(tmp_path / "capped", site.url("/"), wacz=True, text=True,
                                 text_max=7)  # fmt: skip
        plain = await run_crawl(tmp_path / "plain", site.url("/"), wacz=True)
    assert capped.status == plain.status == "completed"
    _, *pages = wacz_pages(tmp_path / "capped" / "capped.wacz")
    assert {page["text"] for page in pages} == {"Harbour", "Spring"}
    header, *pages = wacz_pages(tmp_path / "plain" / "plain.wacz")
    assert "hasText" not in header
    assert all("text" not in page for page in pages)
    assert not [r for r in read_records(tmp_path / "plain" / "warcs") if r.type == "resource"]
