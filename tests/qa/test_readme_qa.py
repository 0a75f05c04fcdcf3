"""README's ``archiver qa`` lines, each as written, on crawls of the hard-to-replay site made in
``crawls/example`` (``https://example.org/about`` is its about page; ``~/.pywb`` is the suite's
tools venv and ``~/rwp/package`` the suite's ReplayWeb.page)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.conftest import run_crawl
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.support.hard_site import HardSite
from tests.support.tools import tools_venv

FAIL_ON_MISS = ".venv/bin/archiver qa crawls/example --fail-on-miss"
PATCH = ".venv/bin/archiver patch crawls/example"
PROVEN = ".venv/bin/archiver crawl https://example.org/ --output crawls/proven --browser auto --qa"
ONE_PAGE = ".venv/bin/archiver qa crawls/example --url https://example.org/about --follow-links 0"
PYWB = ".venv/bin/archiver qa crawls/example --replayer pywb --pywb-venv ~/.pywb --fresh"
RWP = (
    ".venv/bin/archiver qa crawls/example --replayer rwp --replaywebpage ~/rwp/package --live "
    "--follow-links 0"
)
RWP_PACKAGE = Path(__file__).resolve().parents[2] / ".venv-tools/replaywebpage-2.5.3/package"


def lines(crawl: Path) -> dict[str, dict[str, Any]]:
    text = (crawl / "qa.jsonl").read_text()
    return {line["url"]: line for line in map(json.loads, text.splitlines())}


@documents(ONE_PAGE, FAIL_ON_MISS, PATCH)
async def test_qa_of_a_static_crawl_as_written(
    doc: DocShell, tmp_path: Path, chromium_installed: None
) -> None:
    cwd = workdir(tmp_path)
    crawl = cwd / "crawls" / "example"
    async with HardSite() as site:
        assert (await run_crawl(crawl, site.url("/"))).status == "completed"
        about = {"https://example.org/about": site.url("/about.html")}
        one = await asyncio.to_thread(doc.run, ONE_PAGE, cwd=cwd, replace=about)
        assert one.returncode == 0, one.stderr
        assert list(lines(crawl)) == [site.url("/about.html")]
        strict = await asyncio.to_thread(doc.run, FAIL_ON_MISS, cwd=cwd)
        assert strict.returncode == 1, strict.stderr  # the home page stays incomplete
        checked = lines(crawl)
        assert len(checked) == 4 and checked[site.url("/")]["status"] == "incomplete"
        assert "4 pages: 1 complete, 2 incomplete, 1 unreplayable, 0 differ" in strict.stdout
        patched = await asyncio.to_thread(doc.run, PATCH, cwd=cwd)
    assert patched.returncode == 0, patched.stderr
    left = {m["url"] for line in lines(crawl).values() for m in line["misses"]}
    assert left == set()  # the POST search too: requested with the body the page sent
    assert "0 URLs missing" in patched.stdout


@documents(PYWB, RWP)
async def test_second_opinions_as_written(
    doc: DocShell, tmp_path: Path, chromium_installed: None
) -> None:
    cwd = workdir(tmp_path / "work")
    crawl = cwd / "crawls" / "example"
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pywb").symlink_to(tools_venv(), target_is_directory=True)
    async with HardSite() as site:
        done = await run_crawl(crawl, site.url("/"), browser="all", browser_tabs=2, wacz=True)
        assert done.status == "completed", done.reason
        pywb = await asyncio.to_thread(doc.run, PYWB, cwd=cwd, env={"HOME": str(home)})
        assert pywb.returncode == 0, pywb.stderr
        assert {line["replayer"] for line in lines(crawl).values()} == {"pywb"}
        (crawl / "qa.jsonl").unlink()
        rwp = await asyncio.to_thread(
            doc.run, RWP, cwd=cwd, replace={"~/rwp/package": str(RWP_PACKAGE)}
        )
    assert rwp.returncode == 0, rwp.stderr
    # ReplayWeb.page (the suite's copy, served on localhost to a Chromium that can resolve
    # nothing else) serves every page of the browser crawl's WACZ whole, with the text the
    # live page shows; nothing it failed to serve is in the archive
    checked = lines(crawl)
    assert len(checked) == 4
    for url, line in checked.items():
        assert line["replayer"] == "rwp" and line["reference"] == "live", url
        assert line["misses"] == [] and line["replayer_misses"] == [], url
    assert {line["status"] for line in checked.values()} == {"complete"}
    assert {line["text_similarity"] for line in checked.values()} == {1.0}


@documents(PROVEN)
async def test_a_crawl_with_qa_ends_proven(
    doc: DocShell, tmp_path: Path, chromium_installed: None
) -> None:
    """``--browser auto --qa`` in one command: each page checked as it is captured, what it
    lacks (the chunk and data only a click loads) captured in its lease, checked again;
    nothing is left missing, and nothing was left for after the crawl."""
    cwd = workdir(tmp_path)
    async with HardSite() as site:
        done = await asyncio.to_thread(
            doc.run, PROVEN, cwd=cwd, replace={"https://example.org/": site.url("/")}, timeout=600
        )
    assert done.returncode == 0, done.stderr
    assert "archiver: replay check (--qa): 4 pages: 3 complete, 0 incomplete" in done.stderr
    assert "archiver patch: " not in done.stderr  # every page was checked during the crawl
    checked = lines(cwd / "crawls" / "proven")
    assert len(checked) == 4
    assert {line["checked"] for line in checked.values()} == {"crawl"}
    assert [m for line in checked.values() for m in line["misses"]] == []
    app = checked[site.url("/app/")]
    assert app["navigations"] and app["patched"]  # the clicks were made, what they lacked fetched
    summary = json.loads((cwd / "crawls" / "proven" / "summary.json").read_text())
    assert summary["qa"]["missing_urls"] == 0 and summary["qa"]["pages"] == 4
