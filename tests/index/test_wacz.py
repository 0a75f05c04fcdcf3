"""WACZ 1.1.1 packaging (https://specs.webrecorder.net/wacz/1.1.1/): py-wacz validates it, and
its index is the crawl's CDXJ, line for line."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from archiver.errors import OutputError
from archiver.index import wacz
from archiver.run.finish import package_crawl
from tests.dedup.test_recrawl import ChangingSite, later, run_crawl
from tests.support.site import SiteServer
from tests.support.tools import wacz_validate

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def read_wacz(path: Path) -> tuple[zipfile.ZipFile, dict[str, Any]]:
    zf = zipfile.ZipFile(path)
    return zf, json.loads(zf.read("datapackage.json"))


def index_of(zf: zipfile.ZipFile) -> list[str]:
    """The CDXJ lines of a ZipNum index, block by block as the .idx points at them."""
    data = zf.read(wacz.INDEX_DATA)
    idx = zf.read(wacz.INDEX_IDX).decode().splitlines()
    meta = idx[0].split(" ", 2)
    assert meta[:2] == ["!meta", "0"]
    assert json.loads(meta[2]) == {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}
    lines: list[str] = []
    end = 0
    for entry in idx[1:]:
        key, ts, raw = entry.split(" ", 2)
        block = json.loads(raw)
        start, length = block["offset"], block["length"]
        assert start == end  # blocks are contiguous and cover the file
        member = data[start : start + length]
        assert block["digest"] == "sha256:" + hashlib.sha256(member).hexdigest()
        block_lines = gzip.decompress(member).decode().splitlines()
        assert block_lines[0].startswith(f"{key} {ts} ")
        lines += block_lines
        end = start + length
    assert end == len(data)
    return lines


@pytest.fixture
async def crawled(tmp_path: Path) -> Any:
    async with SiteServer() as site:
        ChangingSite(site)
        out = tmp_path / "site-crawl"
        result = await run_crawl(out, site.url("/"), wacz=True, description="A *test* crawl")
        assert result.status == "completed"
        yield site, out


async def test_wacz_validates_and_holds_the_crawl(crawled: Any) -> None:
    site, out = crawled
    path = out / "site-crawl.wacz"
    assert path.is_file()
    assert not list(out.glob("*.tmp"))
    ok, output = wacz_validate(path)
    assert ok, output
    zf, package = read_wacz(path)
    names = zf.namelist()
    warcs = sorted(p.name for p in (out / "warcs").glob("*.warc.gz"))
    assert sorted(n for n in names if n.startswith("archive/")) == [f"archive/{w}" for w in warcs]
    assert set(names) == {
        *(f"archive/{w}" for w in warcs),
        "indexes/index.cdx.gz",
        "indexes/index.idx",
        "pages/pages.jsonl",
        "datapackage.json",
        "datapackage-digest.json",
    }
    for info in zf.infolist():
        stored = info.filename.startswith("archive/") or info.filename.endswith(".cdx.gz")
        assert (info.compress_type == zipfile.ZIP_STORED) == stored, info.filename
    # the WARCs are the crawl's, byte for byte
    for w in warcs:
        assert zf.read(f"archive/{w}") == (out / "warcs" / w).read_bytes()
    # the index is the crawl's CDXJ
    assert index_of(zf) == (out / "index.cdxj").read_text().splitlines()

    assert package["profile"] == "data-package"
    assert package["wacz_version"] == "1.1.1"
    assert package["title"] == "site-crawl"
    assert package["description"] == "A *test* crawl"
    assert package["mainPageUrl"] == site.url("/")
    assert RFC3339.match(package["mainPageDate"]) and RFC3339.match(package["created"])
    assert package["software"].startswith("archiver/")
    listed = {r["path"]: r for r in package["resources"]}
    assert set(listed) == set(names) - {"datapackage.json", "datapackage-digest.json"}
    for name, resource in listed.items():
        data = zf.read(name)
        assert resource["bytes"] == len(data)
        assert resource["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
        assert resource["name"] == Path(name).name.lower()
    digest = json.loads(zf.read("datapackage-digest.json"))
    assert digest == {
        "path": "datapackage.json",
        "hash": "sha256:" + hashlib.sha256(zf.read("datapackage.json")).hexdigest(),
    }
    assert wacz.DEPENDS_KEY not in package  # a first crawl depends on nothing

    header, *pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]
    assert header == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    titles = {p["url"][len(site.origin) :]: p.get("title") for p in pages}
    assert titles == {
        "/": "Home v1",
        "/same.html": "Same",
        "/changed.html": "Changed v1",
        "/gone.html": "Gone",
        "/etag.html": "ETag page",
        "/lastmod.html": "Last-Modified page",
        "/deep.html": "Deep",
    }
    index_keys = {
        (json.loads(line.split(" ", 2)[2])["url"], line.split(" ", 2)[1])
        for line in (out / "index.cdxj").read_text().splitlines()
    }
    for page in pages:
        assert RFC3339.match(page["ts"]), page
        assert page["id"] and len({p["id"] for p in pages}) == len(pages)
        assert (page["url"], re.sub(r"\D", "", page["ts"])[:14]) in index_keys


async def test_zipnum_blocks_split_the_index(crawled: Any, monkeypatch: Any) -> None:
    _, out = crawled
    monkeypatch.setattr(wacz, "BLOCK_LINES", 3)
    path = package_crawl(out, out / "small-blocks.wacz")
    zf, _ = read_wacz(path)
    lines = index_of(zf)
    assert lines == (out / "index.cdxj").read_text().splitlines()
    assert len(zf.read(wacz.INDEX_IDX).decode().splitlines()) == 1 + -(-len(lines) // 3)
    ok, output = wacz_validate(path)
    assert ok, output


async def test_wacz_of_a_deduplicated_run_names_its_dependencies(tmp_path: Path) -> None:
    async with SiteServer() as site:
        changing = ChangingSite(site)
        run1, run2 = tmp_path / "run1", tmp_path / "run2"
        await run_crawl(run1, site.url("/"), wacz=True)
        changing.version = 2
        second = await run_crawl(
            run2,
            site.url("/"),
            clock=later(1),
            wacz=True,
            dedup_from=(run1,),
            revalidate_from=(run1,),
        )
    ok, output = wacz_validate(run2 / "run2.wacz")
    assert ok, output
    _, package = read_wacz(run2 / "run2.wacz")
    (dep,) = package[wacz.DEPENDS_KEY]
    assert dep == second.summary["depends_on"][0]
    (run1_warc,) = (run1 / "warcs").glob("*.warc.gz")
    assert dep["filename"] == run1_warc.name
    assert dep["wacz"] == str((run1 / "run1.wacz").resolve())
    # the 304'd page is still listed, with its title from the original
    zf, _ = read_wacz(run2 / "run2.wacz")
    pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert "ETag page" in {p.get("title") for p in pages}


def test_a_crawl_without_warcs_or_index_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="no WARC files"):
        package_crawl(tmp_path)
    (tmp_path / "warcs").mkdir()
    (tmp_path / "warcs" / "a.warc.gz").write_bytes(b"")
    with pytest.raises(OutputError, match=r"no index\.cdxj"):
        package_crawl(tmp_path)
    assert not list(tmp_path.glob("*.wacz*"))


@pytest.mark.parametrize("package", [False, True])
async def test_an_output_directory_with_a_255_byte_name_completes(
    tmp_path: Path, site: SiteServer, package: bool
) -> None:
    """The WACZ's name derives from the directory's: it is cut to fit a file name, so a long
    name neither breaks the end of the crawl (the summary looked for the WACZ) nor packaging."""
    site.add_page("/", "<p>long name</p>")
    out = tmp_path / ("d" * 250 + "\u00e9\u00e9")  # 254 bytes
    result = await run_crawl(out, site.url("/"), wacz=package, scope="page")
    assert result.status == "completed", result.reason
    assert (out / "summary.json").exists()
    waczs = list(out.glob("*.wacz"))
    if package:
        (path,) = waczs
        assert path.name == "d" * 246 + ".wacz"
        ok, output = wacz_validate(path)
        assert ok, output
    else:
        assert not waczs
