"""The pieces of ``--processes N`` that need no process: budgets shared out, the message a
crawler process reads, the setting, which crawl a run may resume, and a ``unix://`` Redis
frontier (a real redis-server on a Unix socket). Their figures merged: tests/run/test_stats.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archiver.config.settings import SeedEntry, Settings, load_settings
from archiver.errors import OutputExistsError, SettingsError
from archiver.processes.supervisor import child_message, read_child_message, share, shared_seed
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


def test_a_seeds_page_budget_is_shared_out_like_the_crawls() -> None:
    entry = SeedEntry("http://a.test/", (("max_depth", 2), ("max_pages", 10)))
    parts = [shared_seed(entry, 3, n) for n in range(3)]
    assert [dict(p.own)["max_pages"] for p in parts] == [4, 3, 3]
    assert all(dict(p.own)["max_depth"] == 2 and p.url == entry.url for p in parts)
    unlimited = SeedEntry("http://b.test/", (("max_pages", None),))
    assert shared_seed(unlimited, 2, 1) == unlimited


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
