"""The pieces of ``--processes N`` that need no process: figures merged, budgets shared out,
the message a crawler process reads, the setting, which crawl a run may resume, and a
``unix://`` Redis frontier (a real redis-server on a Unix socket)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archiver.config.settings import Settings, load_settings
from archiver.errors import OutputExistsError, SettingsError
from archiver.processes import merge
from archiver.processes.supervisor import child_message, read_child_message, share
from archiver.run.crawler import Crawler
from archiver.run.output import Layout, prepare, write_status
from tests.conftest import fast_settings
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer, generated_site
from tests.support.warcs import responses


def test_budgets_are_shared_out_and_never_zero() -> None:
    assert [share(10, 3, n) for n in range(3)] == [4, 3, 3]
    assert sum(share(1001, 4, n) or 0 for n in range(4)) == 1001
    assert [share(1, 2, n) for n in range(2)] == [1, 1]  # 0 would mean "no limit"
    assert share(None, 2, 0) is None


def test_the_settings_reach_a_crawler_process_whole(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        {
            "seeds": ("http://127.0.0.1:9/",),
            "output": str(tmp_path),
            "header": ["Authorization: Bearer secret"],  # to_json would redact it
            "max_pages": "7",
        },
    )
    read, write = os.pipe()
    os.write(write, child_message(settings, "host-p1"))
    os.close(write)
    got = read_child_message(read)
    os.close(read)
    assert got == (settings, "host-p1")
    read, write = os.pipe()
    os.close(write)  # the supervisor died before it wrote anything
    assert read_child_message(read) is None
    os.close(read)


def test_processes_auto_is_the_cores_this_process_may_use() -> None:
    cores = len(os.sched_getaffinity(0))
    assert load_settings(None, {"processes": "auto"}).processes == cores
    assert load_settings(None, {"processes": "3"}).processes == 3
    with pytest.raises(SettingsError, match="--processes: expected a number of processes"):
        load_settings(None, {"processes": "0"})
    with pytest.raises(SettingsError, match="--processes"):
        load_settings(None, {"processes": "2", "frontier": "memory"})
    assert load_settings(None, {"processes": str(4 * cores)}).processes == 4 * cores
    with pytest.raises(SettingsError, match="at most 4 processes per core"):
        load_settings(None, {"processes": str(4 * cores + 1)})


def test_a_run_resumes_only_a_crawl_of_its_own_kind(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "crawl")
    start = prepare(layout, overwrite=False, settings_json={}, processes=2)
    assert start.status["processes"] == 2
    write_status(layout, start.status)
    with pytest.raises(OutputExistsError, match="resume it with --processes 2 or more"):
        prepare(layout, overwrite=False, settings_json={})
    assert prepare(layout, overwrite=False, settings_json={}, processes=3).resumed
    single = Layout(tmp_path / "single")
    write_status(single, prepare(single, overwrite=False, settings_json={}).status)
    with pytest.raises(OutputExistsError, match="resume it without --processes"):
        prepare(single, overwrite=False, settings_json={}, processes=2)
    assert not prepare(single, overwrite=True, settings_json={}, processes=2).resumed


def test_snapshots_add_up_and_the_queue_is_read_once() -> None:
    parts = [
        {
            "captures": 10,
            "pages": 8,
            "in_flight": 2,
            "queued": 50,
            "done": 10,
            "failures": {"dns": 1},
            "top_hosts": {"a": 6, "b": 4},
            "warc_file": "one.warc.gz",
        },
        {
            "captures": 5,
            "pages": 5,
            "in_flight": 3,
            "queued": 45,
            "done": 15,
            "failures": {"dns": 2, "timeout": 1},
            "top_hosts": {"b": 5},
        },
    ]
    merged = merge.merge_snapshots(parts, elapsed=5.0, stopping=False)
    assert merged["captures"] == 15 and merged["pages"] == 13 and merged["in_flight"] == 5
    assert merged["queued"] == 45 and merged["done"] == 15  # the latest report, not a sum
    assert merged["failures"] == {"dns": 3, "timeout": 1}
    assert merged["top_hosts"] == [("b", 9), ("a", 6)]
    assert merged["pages_per_second"] == 2.6
    assert merged["warc_file"] == "one.warc.gz"


def test_summaries_merge_on_the_supervisors_clock() -> None:
    first = {
        "captures": 3,
        "pages": 2,
        "by_status": {"200": 2, "404": 1},
        "by_mime": {"text/html": 2},
        "largest": [{"url": "a", "bytes": 10}],
        "captures_over_time": [[0, 2], [1, 1]],
        "browser": {"pages": 1, "refused": {"scope": 2}},
    }
    second = {
        "captures": 4,
        "pages": 4,
        "by_status": {"200": 4, "301": 0},
        "by_mime": {"text/html": 4},
        "largest": [{"url": "b", "bytes": 30}],
        "captures_over_time": [[0, 4]],
        "browser": {"pages": 2, "refused": {"scope": 1, "robots": 1}},
    }
    killed = merge.partial_summary({"captures": 1, "pages": 1, "top_hosts": {"h": 1}})
    merged = merge.merge_summaries(
        [(0.0, first), (1.4, second), (3.0, killed)], started=0.0, duration=4.0
    )
    assert merged["captures"] == 8 and merged["pages"] == 7
    assert merged["by_status"] == {"200": 6, "301": 0, "404": 1}
    assert merged["by_mime"] == {"text/html": 6}
    assert merged["by_host"] == {"h": 1}
    assert [e["url"] for e in merged["largest"]] == ["b", "a"]
    assert merged["captures_over_time"] == [[0, 2], [1, 5]]
    assert merged["browser"] == {"pages": 3, "refused": {"scope": 3, "robots": 1}}
    assert merged["captures_per_second"] == 2.0


def test_traps_and_robots_figures_merge() -> None:
    trap = {"kind": "repeat", "pattern": "/a/a/", "example": "x", "skipped": 2}
    assert merge.merge_traps([[trap], [{**trap, "skipped": 3}], None]) == [{**trap, "skipped": 5}]
    assert merge.merge_robots([{"fetches": 1}, None, {"fetches": 2}]) == {"fetches": 3}
    assert merge.merge_robots([None]) is None


async def test_a_unix_socket_redis_frontier(tmp_path: Path) -> None:
    """``--frontier unix:///PATH?db=N`` (how the private server is reached) is a Redis
    frontier like ``redis://``: a crawl id is required, and a crawl runs on it."""
    with pytest.raises(SettingsError, match="--crawl-id"):
        load_settings(None, {"frontier": "unix:///tmp/x.sock?db=0"})
    with RedisServer() as server:
        assert server.url.startswith("unix://")
        async with SiteServer() as site:
            paths = generated_site(site, pages=30)
            settings: Settings = fast_settings(
                tmp_path / "out", site.url("/"), frontier=server.url, crawl_id="unix"
            )
            result = await Crawler(settings).run()
    assert result.status == "completed", result.reason
    assert {rec.uri for rec in responses(tmp_path / "out" / "warcs")} == {
        site.url(p) for p in paths
    }
