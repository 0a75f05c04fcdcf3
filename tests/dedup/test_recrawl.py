"""Issue 6: revisits within a crawl, against earlier crawls, and for 304s; replayed by real pywb.

The changing site serves version 1 for the first run and version 2 for the second: some pages
the same, some changed, one gone, one new, one page with an ETag and one with Last-Modified
(both answer 304 to a matching conditional request), and a page linked only from the ETag page,
so that discovery through a 304 is proven too.
"""

from __future__ import annotations

import email.utils
import json
import random
import re
import sqlite3
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from archiver.commands import verify
from archiver.dedup.previous import PreviousCrawls, open_previous
from archiver.dedup.sources import LOOKUP_NAME, open_source
from archiver.errors import OutputError, SettingsError
from archiver.run.crawler import Crawler, CrawlResult
from archiver.timefmt import Clock, utcnow
from archiver.warc.records import PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED
from tests.conftest import fast_settings
from tests.support.pywb import PywbReplay
from tests.support.site import SiteServer
from tests.support.tools import reference_cdxj
from tests.support.warcs import Rec, read_records, responses


def later(seconds: int) -> Clock:
    """A clock ``seconds`` ahead of the wall clock, for a later run of a test.

    CDX timestamps have one-second resolution and runs are told apart by them; a run started
    after the previous one ended, with a clock one second further ahead, dates every capture in
    a later second than all of that run's, without waiting for the wall clock to get there."""
    ahead = timedelta(seconds=seconds)
    return lambda: datetime.now(UTC) + ahead


async def run_crawl(
    output: Path, *seeds: str, clock: Clock = utcnow, **overrides: Any
) -> CrawlResult:
    return await Crawler(fast_settings(output, *seeds, **overrides), clock=clock).run()


ETAG = '"etag-v1"'
LAST_MODIFIED = "Wed, 01 Jan 2025 00:00:00 GMT"


def _filler(name: str, size: int) -> str:
    """Text that is different per page and does not compress to nothing."""
    rng = random.Random(name)
    words = ["archive", "crawl", "revisit", "payload", "digest", "record", "replay", "index"]
    return " ".join(f"{rng.choice(words)}{rng.randrange(10_000)}" for _ in range(size // 10))


class ChangingSite:
    """The test site, version 1 or 2 (see the module docstring)."""

    def __init__(self, site: SiteServer) -> None:
        self.site = site
        self.version = 1
        self.logo = random.Random("logo").randbytes(40_000)
        self._page("/same.html", "Same", '<a href="/">home</a>', _filler("same", 3000))
        self._page("/deep.html", "Deep", '<a href="/etag.html">up</a>', _filler("deep", 2000))
        site.add_file("/img/logo.png", self.logo, "image/png")
        site.add_handler("/", self._home)
        site.add_handler("/changed.html", self._changed)
        site.add_handler("/gone.html", self._gone)
        site.add_handler("/new.html", self._new)
        site.add_handler("/etag.html", self._etag)
        site.add_handler("/lastmod.html", self._lastmod)

    def _page(self, path: str, title: str, links: str, text: str) -> None:
        self.site.add_page(path, self.html(title, links, text))

    @staticmethod
    def html(title: str, links: str, text: str) -> str:
        return f"<html><head><title>{title}</title></head><body>{links}<p>{text}</p></body></html>"

    def home(self) -> str:
        extra = (
            '<a href="/gone.html">gone</a>' if self.version == 1 else '<a href="/new.html">n</a>'
        )
        links = (
            '<a href="/same.html">same</a> <a href="/changed.html">changed</a> '
            '<a href="/etag.html">etag</a> <a href="/lastmod.html">lastmod</a> '
            f'<img src="/img/logo.png"> {extra}'
        )
        return self.html(f"Home v{self.version}", links, _filler(f"home{self.version}", 1500))

    async def _home(self, _: web.Request) -> web.StreamResponse:
        return web.Response(text=self.home(), content_type="text/html")

    async def _changed(self, _: web.Request) -> web.StreamResponse:
        text = _filler(f"changed{self.version}", 3000)
        return web.Response(
            text=self.html(f"Changed v{self.version}", "", text), content_type="text/html"
        )

    async def _gone(self, _: web.Request) -> web.StreamResponse:
        if self.version != 1:
            return web.Response(status=404, text="gone")
        body = self.html("Gone", "", _filler("gone", 3000))
        return web.Response(text=body, content_type="text/html")

    async def _new(self, _: web.Request) -> web.StreamResponse:
        if self.version != 2:
            return web.Response(status=404, text="not yet")
        body = self.html("New", "", _filler("new", 3000))
        return web.Response(text=body, content_type="text/html")

    def etag_body(self) -> str:
        return self.html("ETag page", '<a href="/deep.html">deep</a>', _filler("etag", 2000))

    async def _etag(self, request: web.Request) -> web.StreamResponse:
        """Chunked: links found through its 304 come from a de-chunked stored body."""
        if request.headers.get("If-None-Match") == ETAG:
            return web.Response(status=304, headers={"ETag": ETAG})
        response = web.StreamResponse(headers={"ETag": ETAG, "Content-Type": "text/html"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        body = self.etag_body().encode()
        for start in range(0, len(body), 700):
            await response.write(body[start : start + 700])
        await response.write_eof()
        return response

    async def _lastmod(self, request: web.Request) -> web.StreamResponse:
        since = request.headers.get("If-Modified-Since")
        if since is not None and email.utils.parsedate_to_datetime(
            since
        ) >= email.utils.parsedate_to_datetime(LAST_MODIFIED):
            return web.Response(status=304, headers={"Last-Modified": LAST_MODIFIED})
        body = self.html("Last-Modified page", "", _filler("lastmod", 2000))
        return web.Response(
            text=body, content_type="text/html", headers={"Last-Modified": LAST_MODIFIED}
        )


def by_uri(records: list[Rec]) -> dict[str, Rec]:
    return {r.uri or "": r for r in records if r.type in ("response", "revisit")}


def index_lines(path: Path) -> list[tuple[str, str, dict[str, str]]]:
    out = []
    for line in path.read_text().splitlines():
        key, ts, data = line.split(" ", 2)
        out.append((key, ts, json.loads(data)))
    return out


def merged_index(tmp: Path, *crawls: Path) -> Path:
    lines: list[str] = []
    for crawl in crawls:
        lines += (crawl / "index.cdxj").read_text().splitlines()
    merged = tmp / "merged.cdxj"
    merged.write_text("".join(line + "\n" for line in sorted(lines, key=str.encode)))
    return merged


def warc_bytes(crawl: Path) -> int:
    return sum(p.stat().st_size for p in (crawl / "warcs").glob("*.warc.gz"))


async def fetch_live(url: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(url, allow_redirects=False) as resp,
    ):
        return resp.status, await resp.read()


def memento_ts(value: str | None) -> str:
    assert value is not None
    return email.utils.parsedate_to_datetime(value).strftime("%Y%m%d%H%M%S")


async def assert_replays_latest(
    tmp: Path, crawls: list[Path], name: str = "pywb"
) -> list[tuple[str, str]]:
    """Every capture of the last crawl replays at its own timestamp with what the site serves
    now, from a pywb collection holding all the crawls."""
    warcs = [p for crawl in crawls for p in sorted((crawl / "warcs").glob("*.warc.gz"))]
    checked = []
    async with PywbReplay(tmp / name, warcs, cdxj=merged_index(tmp, *crawls)) as replay:
        for _, ts, fields in index_lines(crawls[-1] / "index.cdxj"):
            url = fields["url"]
            replayed = await replay.aget_id(url, ts)
            live_status, live_body = await fetch_live(url)
            assert replayed.status == live_status == 200, (url, replayed.status, replayed.body)
            assert memento_ts(replayed.memento_datetime) == ts, url
            assert replayed.body == live_body, url
            checked.append((url, ts))
    return checked


# -------------------------------------------------------------------------------- within a crawl


async def test_same_image_at_five_urls_is_one_response_and_four_revisits(tmp_path: Path) -> None:
    image = random.Random(5).randbytes(20_000)
    async with SiteServer() as site:
        paths = [f"/img/copy{i}.png" for i in range(5)]
        for path in paths:
            site.add_file(path, image, "image/png")
        site.add_page("/", "".join(f'<img src="{p}">' for p in paths))
        out = tmp_path / "out"
        result = await run_crawl(out, site.url("/"), workers=1)
        assert result.status == "completed"
        images = [r for r in responses(out / "warcs") if ".png" in (r.uri or "")]
        assert [r.type for r in images].count("response") == 1
        assert [r.type for r in images].count("revisit") == 4
        (original,) = [r for r in images if r.type == "response"]
        for rev in (r for r in images if r.type == "revisit"):
            assert rev.get("WARC-Profile") == PROFILE_IDENTICAL
            assert rev.get("WARC-Payload-Digest") == original.get("WARC-Payload-Digest")
            assert rev.get("WARC-Refers-To") == original.get("WARC-Record-ID")
            assert rev.get("WARC-Refers-To-Target-URI") == original.uri
            assert rev.get("WARC-Refers-To-Date") == original.get("WARC-Date")
            assert rev.get("WARC-Truncated") == "length"
            assert rev.block.startswith(b"HTTP/1.1 200 OK\r\n")
            assert rev.block.endswith(b"\r\n\r\n") and image not in rev.block
        assert result.summary["revisits"] == 4
        lines = index_lines(out / "index.cdxj")
        assert sorted(f.get("mime", "") for _, _, f in lines if ".png" in f["url"]) == [
            "image/png",
            *["warc/revisit"] * 4,
        ]
        assert (out / "index.cdxj").read_text().splitlines() == reference_cdxj(out / "warcs")
        report = verify.verify([out / "warcs"], index=out / "index.cdxj")
        assert report.ok, verify.render(report)
        warcs = sorted((out / "warcs").glob("*.warc.gz"))
        async with PywbReplay(tmp_path / "pywb", warcs, cdxj=out / "index.cdxj") as replay:
            for _, ts, fields in lines:
                if ".png" not in fields["url"]:
                    continue
                replayed = await replay.aget_id(fields["url"], ts)
                assert replayed.status == 200
                assert replayed.body == image, fields["url"]
                assert memento_ts(replayed.memento_datetime) == ts


async def test_tiny_payloads_are_stored_in_full(tmp_path: Path) -> None:
    async with SiteServer() as site:
        site.add_page("/", '<img src="/a.gif"><img src="/b.gif"><img src="/c.gif">')
        for name in "abc":
            site.add_file(f"/{name}.gif", b"GIF89a" + b"\x00" * 30, "image/gif")
        out = tmp_path / "out"
        await run_crawl(out, site.url("/"), dedup_min_size=1024)
    assert [r.type for r in responses(out / "warcs") if r.uri and r.uri.endswith(".gif")] == [
        "response"
    ] * 3


# -------------------------------------------------------------------------------- across crawls


@pytest.fixture
async def two_runs(tmp_path: Path) -> Any:
    """Run 1 on version 1, run 2 on version 2 with --dedup-from and --revalidate-from run 1."""
    async with SiteServer() as site:
        changing = ChangingSite(site)
        run1, run2 = tmp_path / "run1", tmp_path / "run2"
        first = await run_crawl(run1, site.url("/"))
        assert first.status == "completed", first.reason
        changing.version = 2
        hits_before = len(site.counters.hits)
        second = await run_crawl(
            run2, site.url("/"), clock=later(1), dedup_from=(run1,), revalidate_from=(run1,)
        )
        assert second.status == "completed", second.reason
        yield site, changing, run1, run2, first, second, site.counters.hits[hits_before:]


async def test_second_run_stores_only_what_changed(two_runs: Any) -> None:
    site, changing, run1, run2, _, second, hits = two_runs
    o = site.url
    records = by_uri(read_records(run2 / "warcs"))
    kinds = {url[len(site.origin) :]: (r.type, r.get("WARC-Profile")) for url, r in records.items()}
    assert kinds == {
        "/": ("response", None),
        "/changed.html": ("response", None),
        "/new.html": ("response", None),
        "/same.html": ("revisit", PROFILE_IDENTICAL),
        "/deep.html": ("revisit", PROFILE_IDENTICAL),  # found through the 304'd /etag.html
        "/img/logo.png": ("revisit", PROFILE_IDENTICAL),
        "/etag.html": ("revisit", PROFILE_NOT_MODIFIED),
        "/lastmod.html": ("revisit", PROFILE_NOT_MODIFIED),
    }
    sent = {hit.path: hit.headers for hit in hits}
    assert sent["/etag.html"].get("If-None-Match") == ETAG
    assert "If-Modified-Since" not in sent["/etag.html"]
    assert sent["/lastmod.html"].get("If-Modified-Since") == LAST_MODIFIED
    assert (
        "If-None-Match" not in sent["/same.html"] and "If-Modified-Since" not in sent["/same.html"]
    )
    assert "/gone.html" not in sent

    originals = by_uri(read_records(run1 / "warcs"))
    for path in ("/same.html", "/deep.html", "/img/logo.png", "/etag.html", "/lastmod.html"):
        rev, orig = records[o(path)], originals[o(path)]
        assert orig.type == "response"
        assert rev.get("WARC-Payload-Digest") == orig.get("WARC-Payload-Digest"), path
        assert rev.get("WARC-Refers-To") == orig.get("WARC-Record-ID"), path
        assert rev.get("WARC-Refers-To-Target-URI") == orig.uri, path
        assert rev.get("WARC-Refers-To-Date") == orig.get("WARC-Date"), path
    for path in ("/etag.html", "/lastmod.html"):
        rev = records[o(path)]
        assert rev.block == b"" and rev.get("Content-Length") == "0"
        assert rev.get("WARC-Truncated") is None
    for path in ("/same.html", "/deep.html", "/img/logo.png"):
        assert records[o(path)].get("WARC-Truncated") == "length"
    assert b"Transfer-Encoding: chunked\r\n" in originals[o("/etag.html")].block
    # the 304 and its conditional request are kept as sent
    requests = [r for r in read_records(run2 / "warcs") if r.type == "request"]
    etag_request = next(r for r in requests if r.uri == o("/etag.html"))
    assert f"If-None-Match: {ETAG}\r\n".encode() in etag_request.block

    index = {f["url"][len(site.origin) :]: f for _, _, f in index_lines(run2 / "index.cdxj")}
    first_index = {f["url"][len(site.origin) :]: f for _, _, f in index_lines(run1 / "index.cdxj")}
    for path in ("/etag.html", "/lastmod.html"):
        assert index[path]["mime"] == "warc/revisit"
        assert index[path]["digest"] == first_index[path]["digest"]  # what pywb looks up
    assert (run2 / "index.cdxj").read_text().splitlines() == reference_cdxj(run2 / "warcs")
    report = verify.verify([run2 / "warcs"], index=run2 / "index.cdxj")
    assert report.ok, verify.render(report)

    # smaller by the unchanged bytes: what run 1 stored for the unchanged URLs is not stored again
    unchanged = ("/same.html", "/deep.html", "/img/logo.png", "/etag.html", "/lastmod.html")
    stored_before = sum(int(first_index[p]["length"]) for p in unchanged)
    revisits_now = sum(int(index[p]["length"]) for p in unchanged)
    assert revisits_now < stored_before / 5
    saved = warc_bytes(run1) - warc_bytes(run2)
    assert saved >= stored_before - revisits_now - 2048, (saved, stored_before, revisits_now)
    assert saved >= len(changing.logo)

    summary = second.summary
    assert summary["dedup_sources"] == [str(run1.resolve())]
    (dep,) = summary["depends_on"]
    (run1_warc,) = sorted((run1 / "warcs").glob("*.warc.gz"))
    assert dep["warc"] == str(run1_warc.resolve())
    assert dep["crawl"] == str(run1.resolve())
    assert dep["revisits"] == 5
    pages = [json.loads(line) for line in (run2 / "state" / "pages.jsonl").read_text().splitlines()]
    assert {p["url"][len(site.origin) :]: p["title"] for p in pages}["/etag.html"] == "ETag page"


async def test_pywb_replays_the_second_run_as_served(two_runs: Any, tmp_path: Path) -> None:
    site, _, run1, run2, _, _, _ = two_runs
    checked = await assert_replays_latest(tmp_path, [run1, run2])
    assert {url[len(site.origin) :] for url, _ in checked} == {
        "/",
        "/changed.html",
        "/new.html",
        "/same.html",
        "/deep.html",
        "/img/logo.png",
        "/etag.html",
        "/lastmod.html",
    }


async def test_third_run_inherits_originals_through_the_second(
    two_runs: Any, tmp_path: Path
) -> None:
    """Run 3 names only run 2, whose unchanged pages are revisits: their originals are found
    in run 1 through run 2's own sources, so run 3 still stores nothing unchanged."""
    site, _, run1, run2, _, _, _ = two_runs
    run3 = tmp_path / "run3"
    third = await run_crawl(
        run3, site.url("/"), clock=later(2), dedup_from=(run2,), revalidate_from=(run2,)
    )
    assert third.status == "completed"
    kinds = {r.uri: r.type for r in responses(run3 / "warcs")}
    assert set(kinds.values()) == {"revisit"}
    (run1_warc,) = sorted((run1 / "warcs").glob("*.warc.gz"))
    (run2_warc,) = sorted((run2 / "warcs").glob("*.warc.gz"))
    deps = {d["warc"]: d for d in third.summary["depends_on"]}
    assert set(deps) == {str(run1_warc.resolve()), str(run2_warc.resolve())}
    assert deps[str(run1_warc.resolve())]["via"] == str(run2.resolve())
    assert deps[str(run1_warc.resolve())]["revisits"] == 5  # unchanged since run 1
    assert deps[str(run2_warc.resolve())]["revisits"] == 3  # /, /changed.html, /new.html
    checked = await assert_replays_latest(tmp_path, [run1, run2, run3], name="pywb3")
    assert len(checked) == 8


async def test_inherited_originals_that_are_gone_are_not_referred_to(
    two_runs: Any, tmp_path: Path
) -> None:
    """Run 1 is no longer usable: run 3 (against run 2) must not point into it, whether its
    WARC files are gone (a cached lookup still names them) or it is no longer completed."""
    site, _, run1, run2, _, _, _ = two_runs
    changed_in_run2 = {site.url(p) for p in ("/", "/changed.html", "/new.html")}
    set_status(run1, "interrupted")
    (run2 / "state" / LOOKUP_NAME).unlink(missing_ok=True)  # built now: run 1 is refused
    previous = await open_previous([run2])
    await previous.close()
    assert len(previous.warnings) == 1 and "status 'interrupted'" in previous.warnings[0]
    set_status(run1, "completed")
    (run2 / "state" / LOOKUP_NAME).unlink()
    await (await open_previous([run2])).close()  # inherits from run 1 again...
    for warc in (run1 / "warcs").glob("*.warc.gz"):
        warc.unlink()  # ...whose files then disappear
    run3 = tmp_path / "run3"
    third = await run_crawl(
        run3, site.url("/"), clock=later(2), dedup_from=(run2,), revalidate_from=(run2,)
    )
    kinds = {r.uri: r.type for r in responses(run3 / "warcs")}
    assert {u for u, kind in kinds.items() if kind == "revisit"} == changed_in_run2
    assert len(kinds) == 8
    assert {d["crawl"] for d in third.summary["depends_on"]} == {str(run2.resolve())}
    report = verify.verify([run3 / "warcs"], index=run3 / "index.cdxj")
    assert report.ok, verify.render(report)


# -------------------------------------------------------------------------------- sources


def set_status(crawl: Path, status: str) -> None:
    state = crawl / "state" / "crawl.json"
    data = json.loads(state.read_text())
    data["status"] = status
    state.write_text(json.dumps(data))


async def test_only_completed_crawls_are_sources(tmp_path: Path) -> None:
    async with SiteServer() as site:
        ChangingSite(site)
        run1 = tmp_path / "run1"
        await run_crawl(run1, site.url("/"))
        for status in ("interrupted", "failed", "running"):
            set_status(run1, status)
            with pytest.raises(SettingsError, match=f"status '{status}'"):
                open_source(run1)
            with pytest.raises(SettingsError, match="--revalidate-from"):
                await run_crawl(tmp_path / f"run-{status}", site.url("/"), revalidate_from=(run1,))
            assert not (tmp_path / f"run-{status}" / "warcs").exists()  # refused before crawling
        set_status(run1, "limit")
        assert open_source(run1).crawl == run1.resolve()
        with pytest.raises(SettingsError, match="no such crawl"):
            open_source(tmp_path / "nowhere")
        with pytest.raises(SettingsError, match="holds no archiver crawl"):
            open_source(tmp_path)
        with pytest.raises(SettingsError, match="--job"):
            open_source(Path("previous"))


async def test_bare_cdxj_is_trusted_and_originals_must_exist(tmp_path: Path) -> None:
    async with SiteServer() as site:
        changing = ChangingSite(site)
        run1 = tmp_path / "run1"
        await run_crawl(run1, site.url("/"))
        # a bare CDXJ next to a warcs/ directory (a copied index of any provenance)
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / "warcs").mkdir(parents=True)
        for warc in (run1 / "warcs").glob("*.warc.gz"):
            (elsewhere / "warcs" / warc.name).write_bytes(warc.read_bytes())
        cdxj = elsewhere / "all.cdxj"
        cdxj.write_text((run1 / "index.cdxj").read_text())
        source = open_source(cdxj)
        assert source.crawl is None and source.warc_root == (elsewhere / "warcs").resolve()
        run2 = tmp_path / "run2"
        second = await run_crawl(run2, site.url("/"), clock=later(1), dedup_from=(cdxj,))
        assert {r.type for r in responses(run2 / "warcs")} == {"revisit"}
        assert cdxj.with_name("all.cdxj.lookup.sqlite").is_file()
        assert {d["crawl"] for d in second.summary["depends_on"]} == {None}
        # the WARC files behind the index are gone: nothing may refer to them
        for warc in (elsewhere / "warcs").glob("*.warc.gz"):
            warc.unlink()
        changing.version = 2
        run3 = tmp_path / "run3"
        third = await run_crawl(
            run3, site.url("/"), clock=later(2), dedup_from=(cdxj,), revalidate_from=(cdxj,)
        )
        assert {r.type for r in responses(run3 / "warcs")} == {"response"}
        assert third.summary["depends_on"] == []


async def test_lookup_file_is_reused_and_rebuilt_when_the_index_changes(tmp_path: Path) -> None:
    async with SiteServer() as site:
        ChangingSite(site)
        run1 = tmp_path / "run1"
        await run_crawl(run1, site.url("/"))
    lookup_file = run1 / "state" / LOOKUP_NAME
    previous = await open_previous([run1])
    await previous.close()
    built = lookup_file.stat().st_mtime_ns
    previous = await open_previous([run1], [run1])
    assert len(previous.opened) == 1  # one lookup file serves both roles
    await previous.close()
    assert lookup_file.stat().st_mtime_ns == built
    index = run1 / "index.cdxj"
    lines = index.read_text().splitlines()
    index.write_text("".join(line + "\n" for line in lines[:-1]))
    previous = await open_previous([run1])
    await previous.close()
    assert lookup_file.stat().st_mtime_ns != built
    with sqlite3.connect(lookup_file) as con:
        assert con.execute("SELECT count(*) FROM urls").fetchone()[0] == len(lines) - 1
    # the cache location cannot take the file (here: a directory is in the way): the lookup
    # goes to the run's own cache directory, and without one the run stops with a clear error
    lookup_file.unlink()
    lookup_file.mkdir()
    cache = tmp_path / "cache"
    previous = await open_previous([run1], cache_dir=cache)
    await previous.close()
    assert len(list(cache.glob("*.sqlite"))) == 1
    with pytest.raises(OutputError, match="cannot write a lookup file"):
        await open_previous([run1])


def _synthetic_cdxj(path: Path, lines: int) -> None:
    """A sorted CDXJ of ``lines`` distinct 200 responses (what a big crawl's index looks like)."""
    with open(path, "w") as fh:
        for i in range(lines):
            fields = {
                "url": f"http://example.org/p/{i:08d}",
                "mime": "text/html",
                "status": "200",
                "digest": f"sha1:{i:032d}",
                "length": "1000",
                "offset": str(i * 1000),
                "filename": f"crawl-{i // 100_000:05d}.warc.gz",
            }
            fh.write(f"org,example)/p/{i:08d} 20250101000000 {json.dumps(fields)}\n")


async def _build_measured(tmp_path: Path, lines: int) -> tuple[PreviousCrawls, int]:
    cdxj = tmp_path / f"index-{lines}.cdxj"
    _synthetic_cdxj(cdxj, lines)
    tracemalloc.start()
    try:
        previous = await open_previous([cdxj], [cdxj])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return previous, peak


def _query_plans(con: sqlite3.Connection, statements: list[str]) -> dict[str, list[str]]:
    """SQLite's plan for each distinct statement shape (literals blanked), from a statement."""
    plans: dict[str, list[str]] = {}
    for sql in statements:
        shape = re.sub(r"'[^']*'|\b\d+\b", "?", sql)
        if shape not in plans:
            rows = con.execute(f"EXPLAIN QUERY PLAN {sql}").fetchall()
            plans[shape] = [row[3] for row in rows]
    return plans


async def test_lookup_is_memory_bounded_and_one_indexed_query(tmp_path: Path) -> None:
    """Building streams the CDXJ (peak memory does not grow with the line count), and each
    lookup is one query that SQLite answers from a primary-key index (a SEARCH, never a SCAN
    of the table). How long either takes is for a benchmark, not a test on a shared machine
    (measured once: 1,000,000 lines, ~20 s to build, ~30 us a lookup)."""
    small, small_peak = await _build_measured(tmp_path, 20_000)
    await small.close()
    lines = 100_000
    previous, peak = await _build_measured(tmp_path, lines)
    try:
        assert peak < 20_000_000, peak
        assert peak < small_peak * 1.5 + 1_000_000, (small_peak, peak)  # flat, not linear
        (lookup,) = previous.dedup
        con = lookup._con  # the lookup's own connection: the statements it really runs
        statements: list[str] = []
        con.set_trace_callback(statements.append)
        probes = range(0, lines, 97)
        try:
            for i in probes:
                found = lookup.original(f"sha1:{i:032d}")
                assert found is not None and found.url == f"http://example.org/p/{i:08d}"
                latest = lookup.latest(f"http://example.org/p/{i:08d}")
                assert latest is not None and latest.offset == i * 1000
        finally:
            con.set_trace_callback(None)
        plans = _query_plans(con, statements)
        by_table = {
            table: sum(f" FROM {table} " in s for s in statements)
            for table in ("originals", "urls", "files")
        }
        assert by_table["originals"] == by_table["urls"] == len(probes)  # one query a lookup
        assert by_table["files"] <= 1  # the file name, once per file (one file here)
        assert len(statements) == sum(by_table.values())
        for shape, details in plans.items():
            assert len(details) == 1 and details[0].startswith("SEARCH "), (shape, details)
            assert "PRIMARY KEY" in details[0] or "INDEX" in details[0], (shape, details)
        assert lookup.original("sha1:missing") is None
        # the WARC files of a synthetic index do not exist: nothing is referred to
        assert await previous.lookup("sha1:" + "0" * 32) is None
        assert await previous.revalidation("http://example.org/p/00000001") is None
        assert previous.depends_on() == []
    finally:
        await previous.close()


async def test_cdxj_lines_with_fields_out_of_range_are_skipped(tmp_path: Path) -> None:
    """Found by fuzzing: an offset past SQLite's 64-bit integers raised OverflowError, and a
    status of Unicode digits ("²" passes str.isdigit) raised ValueError, out of the lookup
    build: a hand-edited or foreign index stopped the run with a traceback."""
    good = {
        "url": "http://a.example/",
        "digest": "sha1:GOOD",
        "status": "200",
        "offset": "0",
        "length": "1",
        "filename": "a.warc.gz",
    }
    lines = [
        good,
        {**good, "url": "http://a.example/big", "offset": str(1 << 64), "length": "1"},
        {**good, "url": "http://a.example/sup", "status": "\u00b2"},
        {**good, "url": "http://a.example/huge", "status": "9" * 30},
    ]
    cdxj = tmp_path / "all.cdxj"
    cdxj.write_text(
        "".join(f"a.example)/ 20240501120000 {json.dumps(line)}\n" for line in lines),
        encoding="utf-8",
    )
    previous = await open_previous([cdxj])
    await previous.close()
    with sqlite3.connect(cdxj.with_name("all.cdxj.lookup.sqlite")) as con:
        rows = dict(con.execute("SELECT url, status FROM urls").fetchall())
    assert rows == {
        "http://a.example/": 200,
        "http://a.example/sup": None,
        "http://a.example/huge": None,
    }
