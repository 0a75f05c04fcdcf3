"""The typed figures of a crawl: a snapshot and a summary keep the JSON shape readers know
(``/status``, stats lines, ``summary.json``), read back what they wrote, tolerate what another
version wrote, and add up the figures of several processes as one crawl's."""

from __future__ import annotations

import json
from pathlib import Path

from archiver.run.crawler import Crawler
from archiver.run.stats import (
    BrowserSnapshot,
    BrowserSummary,
    Largest,
    SeedFigures,
    Snapshot,
    Summary,
)
from tests.conftest import fast_settings
from tests.support.site import SiteServer

#: summary.json's fields, in the order a crawl writes them (``browser``, ``wacz_error`` and
#: ``processes`` only when there are)
SUMMARY_FIELDS = [
    "started",
    "duration_seconds",
    "captures",
    "pages",
    "revisits",
    "dedup_bytes_saved",
    "bytes_received",
    "bytes_written",
    "captures_per_second",
    "pages_per_second",
    "retries",
    "by_status_class",
    "by_status",
    "by_mime",
    "by_host",
    "failures",
    "skips",
    "truncated",
    "extractors",
    "largest",
    "captures_over_time",
    "by_seed",
    "status",
    "reason",
    "output",
    "resumed",
    "seeds",
    "seeds_count",
    "warc_files",
    "index",
    "wacz",
    "dedup_sources",
    "depends_on",
    "traps",
    "robots",
    "frontier",
    "version",
    "runs",
]
#: what /status and the stats lines have always held (``browser`` and ``processes`` when there
#: are), and the one figure added since: the bytes dedup saved, as summary.json has it
SNAPSHOT_FIELDS = {
    "elapsed",
    "captures",
    "pages",
    "revisits",
    "pages_per_second",
    "captures_per_second",
    "queued",
    "in_flight",
    "done",
    "seen",
    "bytes_received",
    "bytes_written",
    "warc_file",
    "failures",
    "skips",
    "by_status_class",
    "top_hosts",
    "retries",
    "by_host",
    "stopping",
    "dedup_bytes_saved",
    "paused",
}


async def test_a_crawls_figures_keep_their_json_shape(tmp_path: Path, site: SiteServer) -> None:
    site.add_page("/", '<a href="/a">a</a><a href="/gone">gone</a>')
    site.add_page("/a", "<p>a</p>")
    out = tmp_path / "out"
    crawler = Crawler(fast_settings(out, site.url("/")))
    result = await crawler.run()
    assert result.status == "completed"
    written = json.loads((out / "summary.json").read_text())
    assert list(written) == SUMMARY_FIELDS
    assert written["by_status"] == {"200": 2, "404": 1}
    # the home page's extractor queued two URLs, and one of them came back 404
    assert written["extractors"] == {"html": {"queued": 2, "4xx": 1}}
    assert written["largest"][0].keys() == {"url", "bytes", "mime"}
    summary = Summary.from_json(written)
    assert summary.to_json() == written, "read back, written again: the same object"
    assert (summary.captures, summary.status, summary.seeds) == (3, "completed", (site.url("/"),))
    # one seed, named by its URL: its leases' pages, captures and outcomes (the 404 is done)
    assert written["pages"] == 2
    assert written["by_seed"] == [
        {"seed": site.url("/"), "pages": 2, "captures": 3, "done": 3, "failed": 0, "skipped": 0}
    ]
    assert summary.seeds_count == 1
    assert [(run.status, run.captures) for run in summary.runs] == [("completed", 3)]
    snapshot = crawler.snapshot().to_json()
    assert set(snapshot) == SNAPSHOT_FIELDS
    assert snapshot["captures"] == 3 and snapshot["by_status_class"] == {"2xx": 2, "4xx": 1}
    assert Snapshot.from_json(json.loads(json.dumps(snapshot))).to_json() == snapshot


def test_another_versions_json_reads_as_defaults() -> None:
    odd = {
        "captures": "3",  # not a number
        "pages": True,  # not a count either
        "failures": {"dns": 2},
        "largest": [{"url": "a", "bytes": 5}, "junk"],
        "browser": {"pages": 1, "refused": {"robots": 2}},
        "status": "completed",
        "unknown": 1,
    }
    summary = Summary.from_json(odd)
    assert (summary.captures, summary.pages, summary.failures) == (0, 0, {"dns": 2})
    assert summary.largest == (Largest("a", 5, ""),)
    assert summary.browser == BrowserSummary(pages=1, refused={"robots": 2})
    assert Summary.from_json({}) == Summary()
    # a crawler process's stats line has top_hosts as an object
    line = {"captures": 2, "top_hosts": {"a": 2}, "browser": {"pages": 1}, "processes": 2}
    snapshot = Snapshot.from_json(line)
    assert snapshot.top_hosts == (("a", 2),)
    assert snapshot.browser == BrowserSnapshot(pages=1)
    assert snapshot.processes == 2


def test_snapshots_add_up_and_the_queue_is_read_once() -> None:
    parts = [
        Snapshot(
            captures=10,
            pages=8,
            in_flight=2,
            queued=50,
            done=10,
            failures={"dns": 1},
            top_hosts=(("a", 6), ("b", 4)),
            warc_file="one.warc.gz",
            browser=BrowserSnapshot(pages=1, refused=2),
        ),
        Snapshot(
            captures=5,
            pages=5,
            in_flight=3,
            queued=45,
            done=15,
            failures={"dns": 2, "timeout": 1},
            top_hosts=(("b", 5),),
            browser=BrowserSnapshot(pages=2, refused=1),
        ),
    ]
    merged = Snapshot.merged(parts, queue=parts[1], elapsed=5.0, stopping=False, processes=2)
    assert (merged.captures, merged.pages, merged.in_flight) == (15, 13, 5)
    assert (merged.queued, merged.done) == (45, 15)  # the latest report, not a sum
    assert merged.failures == {"dns": 3, "timeout": 1}
    assert merged.top_hosts == (("b", 9), ("a", 6))
    assert merged.pages_per_second == 2.6
    assert merged.warc_file == "one.warc.gz"
    assert merged.browser == BrowserSnapshot(pages=3, refused=3)
    assert merged.to_json()["processes"] == 2


def test_summaries_merge_on_the_supervisors_clock() -> None:
    first = Summary(
        captures=3,
        pages=2,
        by_status={"200": 2, "404": 1},
        by_mime={"text/html": 2},
        largest=(Largest("a", 10, ""),),
        captures_over_time=((0, 2), (1, 1)),
        browser=BrowserSummary(pages=1, refused={"scope": 2}),
        extractors={"html": {"queued": 5, "4xx": 1}, "feed": {"queued": 1, "4xx": 0}},
        status="completed",
        traps=({"kind": "repeat", "pattern": "/a/a/", "example": "x", "skipped": 2},),
        robots={"fetches": 1},
    )
    second = Summary(
        captures=4,
        pages=4,
        by_status={"200": 4, "301": 0},
        by_mime={"text/html": 4},
        largest=(Largest("b", 30, ""),),
        captures_over_time=((0, 4),),
        browser=BrowserSummary(pages=2, refused={"scope": 1, "robots": 1}),
        extractors={"feed": {"queued": 7, "4xx": 2}},
        status="completed",
        traps=({"kind": "repeat", "pattern": "/a/a/", "example": "x", "skipped": 3},),
        robots={"fetches": 2},
    )
    killed = Summary.from_snapshot(Snapshot(captures=1, pages=1, top_hosts=(("h", 1),)))
    merged = Summary.merged([(0.0, first), (1.4, second), (3.0, killed)], started=0.0, duration=4.0)
    assert (merged.captures, merged.pages) == (8, 7)
    assert merged.by_status == {"200": 6, "301": 0, "404": 1}
    assert merged.by_mime == {"text/html": 6}
    assert merged.by_host == {"h": 1}
    assert [e.url for e in merged.largest] == ["b", "a"]
    assert merged.captures_over_time == ((0, 2), (1, 5))
    assert merged.browser == BrowserSummary(pages=3, refused={"scope": 3, "robots": 1})
    assert merged.captures_per_second == 2.0
    assert merged.traps == ({"kind": "repeat", "pattern": "/a/a/", "example": "x", "skipped": 5},)
    assert merged.robots == {"fetches": 3}
    assert merged.extractors == {"feed": {"queued": 8, "4xx": 2}, "html": {"queued": 5, "4xx": 1}}
    assert Summary.merged([(0.0, killed)], started=0.0, duration=1.0).robots is None


def test_a_resumed_crawls_summary_counts_each_seed_across_its_runs() -> None:
    """``by_seed`` describes the whole crawl, as its other counts do: a seed's figures in the
    run before a resume and in this one, added up (a seed only one run met keeps its row)."""
    earlier = Summary(
        started="2026-01-01T00:00:00Z",
        captures=5,
        by_seed=(SeedFigures("http://a/", 3, 4, 4, 0, 1), SeedFigures("http://b/", 1, 1, 1)),
    )
    this = Summary(
        started="2026-01-01T01:00:00Z",
        captures=3,
        by_seed=(SeedFigures("http://a/", 2, 3, 2, 1, 0),),
    )
    whole = this.across_runs(earlier)
    assert whole.by_seed == (
        SeedFigures("http://a/", 5, 7, 6, 1, 1),
        SeedFigures("http://b/", 1, 1, 1, 0, 0),
    )
    assert whole.captures == 8


def test_an_ended_run_stays_in_the_live_figures() -> None:
    ended = Summary(
        captures=4,
        by_host={"a": 4},
        browser=BrowserSummary(pages=2, refused={"scope": 1, "robots": 2}),
    )
    view = ended.as_snapshot()
    assert (view.captures, view.in_flight, view.top_hosts) == (4, 0, (("a", 4),))
    assert view.browser == BrowserSnapshot(pages=2, refused=3)
