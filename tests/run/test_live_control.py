"""Live control of a running crawl: the crawl directory's ``ignores`` and ``control.toml``.

Real crawls of a local site on each frontier backend (memory, SQLite, and a real redis-server).
The site holds one request open until the test has changed a file and the crawler has read it
(an event, not a sleep), so what was queued before the change is known exactly.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver.commands.cli import main
from archiver.errors import SettingsError
from archiver.frontier.redis import RedisFrontier
from archiver.models import CrawlItem, SkipReason
from archiver.policy.ignores import Exclusions, combine, compile_patterns, parse_ignores
from archiver.policy.politeness import HostGate, Politeness
from archiver.run.control import append_ignore, parse_control
from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.support.faults import assert_archive_sound, captured_once
from tests.support.redis_server import RedisServer
from tests.support.site import SiteServer

BACKENDS = ["memory", "sqlite", "redis"]


@pytest.fixture(scope="module")
def redis_tcp() -> Iterator[RedisServer]:
    with RedisServer(tcp=True) as server:
        yield server


def backend_settings(request: pytest.FixtureRequest, backend: str) -> dict[str, Any]:
    if backend != "redis":
        return {"frontier": backend}
    server: RedisServer = request.getfixturevalue("redis_tcp")
    return {"frontier": server.url, "crawl_id": f"live-{request.node.name}"}


def run_files(output: Path) -> tuple[Path, Path]:
    """crawl.log.jsonl and summary.json of the run (a Redis crawl keeps them per process)."""
    logs = sorted(output.rglob("crawl.log.jsonl"))
    assert len(logs) == 1, logs
    return logs[0], logs[0].parent / "summary.json"


def events(output: Path, name: str) -> list[dict[str, Any]]:
    log, _ = run_files(output)
    lines = log.read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == name]


async def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition`` (the crawler's own state), polling the event loop."""
    while not condition():  # noqa: ASYNC110 - counters and files, no event to wait on
        await asyncio.sleep(0.02)


# -- the patterns ---------------------------------------------------------------------------


def test_ignores_file_syntax() -> None:
    ignores = parse_ignores(
        "# comments and blank lines are skipped\n\n  /calendar/  \n(unclosed\n\\.pdf$\n"
    )
    assert ignores.patterns == ("/calendar/", r"\.pdf$")
    assert len(ignores.errors) == 1 and ignores.errors[0].startswith("line 4: '(unclosed'")
    assert ignores.search("http://h/calendar/2024") and ignores.search("http://h/a.pdf")
    assert not ignores.search("http://h/a.pdf.html")


def test_lines_with_a_global_flag_combine_apart() -> None:
    # "(?i)" cannot sit inside an alternation with the others: it gets one of its own
    ignores = parse_ignores("(?i)/PRIVATE/\n/tmp/\n")
    assert ignores.patterns == ("(?i)/PRIVATE/", "/tmp/")
    assert ignores.search("http://h/private/x") and ignores.search("http://h/tmp/x")
    assert not ignores.search("http://h/public/") and not ignores.search("http://h/TMP/x")
    lines = ["(?i)/PRIVATE/", "/tmp/", "(?i)/SECRET/", "/var/"]
    assert [r.pattern for r in combine([re.compile(line) for line in lines])] == [
        "(?i)(?:/PRIVATE/)|(?:/SECRET/)",
        "(?:/tmp/)|(?:/var/)",
    ]


@pytest.mark.parametrize(
    ("text", "url", "ignored"),
    [
        ("(a)\\1\n(b)\\1\n", "http://h/bb", True),  # "\1" is its own line's group
        ("(a)\\1\n(b)\\1\n", "http://h/ba", False),
        ("(?P<n>a)\n(?P<n>b)\n", "http://h/b", True),  # one name on two lines
        ("(a)\n(b)(?(1)x|y)\n", "http://h/bx", True),  # a conditional on its own group
    ],
)
def test_lines_that_number_or_name_groups_keep_their_meaning(
    text: str, url: str, ignored: bool
) -> None:
    """Found by fuzzing (the combined regexes against each line searched alone): combined
    into one alternation, a line's "\\1" meant the first line's group, and two lines naming
    a group alike raised re.error out of parse_ignores."""
    assert parse_ignores(text).search(url) is ignored


def test_exclusions_name_their_reason() -> None:
    exclusions = Exclusions(compile_patterns(("/old/",)))
    assert exclusions.check("http://h/old/a") is SkipReason.EXCLUDED
    assert exclusions.check("http://h/new/a") is None
    exclusions.replace(parse_ignores("/new/\n"))
    assert exclusions.version == 1
    assert exclusions.check("http://h/new/a") is SkipReason.IGNORED
    assert exclusions.check("http://h/old/new/") is SkipReason.EXCLUDED  # --exclude first
    assert Exclusions().check("http://h/") is None


def test_control_file_syntax() -> None:
    defaults = Politeness(delay=0.5, concurrency=2)
    assert parse_control("", defaults) == defaults
    assert parse_control("[politeness]\nper_host_delay = '2s'\n", defaults) == Politeness(2.0, 2)
    assert parse_control(
        "[politeness]\nper_host_concurrency = 1\nper_host_delay = 0\n", defaults
    ) == Politeness(0.0, 1)
    for text, message in [
        ("[politeness\n", "not valid TOML"),
        ("per_host_delay = 1\n", "only a [politeness] table"),
        ("[politeness]\nworkers = 3\n", "unknown key 'workers'"),
        ("[politeness]\nper_host_concurrency = 0\n", "an integer >= 1"),
        ("[politeness]\nper_host_delay = 'soon'\n", "a duration"),
    ]:
        with pytest.raises(SettingsError, match=re.escape(message)):
            parse_control(text, defaults)


def test_new_politeness_respaces_every_host() -> None:
    now = [100.0]
    gate = HostGate(concurrency=1, delay=1.0, clock=lambda: now[0])
    gate.acquire("a")
    gate.set_crawl_delay("b", 3.0)
    gate.acquire("b")
    assert gate.ready_at("a") == math.inf  # its one slot is taken
    gate.configure(delay=5.0, concurrency=2)
    assert gate.ready_at("a") == 105.0  # a second slot, spaced by the new delay
    assert gate.ready_at("b") == 105.0  # the crawl's delay is now longer than Crawl-delay
    gate.configure(delay=0.0, concurrency=2)
    assert gate.ready_at("a") == 100.0
    assert gate.ready_at("b") == 103.0  # the Crawl-delay holds again


# -- the ignore command ---------------------------------------------------------------------


def test_ignore_command_appends_a_checked_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ignores").write_text("/a/")  # hand-edited, no final newline
    assert main(["ignore", str(tmp_path), r"/b/\d+"]) == 0
    assert (tmp_path / "ignores").read_text() == "/a/\n/b/\\d+\n"
    assert main(["ignore", str(tmp_path), "(unclosed"]) == 2
    assert "invalid regular expression '(unclosed'" in capsys.readouterr().err
    assert main(["ignore", str(tmp_path / "missing"), "x"]) == 2
    assert "no such crawl directory" in capsys.readouterr().err
    with pytest.raises(SettingsError, match="comment"):
        append_ignore(tmp_path, "# not a pattern")
    assert (tmp_path / "ignores").read_text() == "/a/\n/b/\\d+\n"


def test_ignore_command_line_error_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "ignore", str(tmp_path), "a[b"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "invalid regular expression" in done.stderr


# -- crawls ---------------------------------------------------------------------------------


def hold_site(site: SiteServer, held_path: str) -> asyncio.Event:
    """``/`` links to /keep/0-4 then /drop/0-4; ``held_path`` answers once the event is set."""
    release = asyncio.Event()
    links = [f"/keep/{i}" for i in range(5)] + [f"/drop/{i}" for i in range(5)]
    site.add_page("/", "".join(f'<a href="{link}">{link}</a>' for link in links))
    for link in links:
        site.add_page(link, f"<p>{link}</p>")
    page = f"<p>{held_path}</p>".encode()

    async def held(_: web.Request) -> web.StreamResponse:
        await release.wait()
        return web.Response(body=page, content_type="text/html")

    site.add_handler(held_path, held)
    return release


def requested(site: SiteServer, prefix: str) -> list[str]:
    return [hit.path for hit in site.counters.hits if hit.path.startswith(prefix)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_ignores_line_added_while_running_drops_queued_urls(
    tmp_path: Path, site: SiteServer, request: pytest.FixtureRequest, backend: str
) -> None:
    release = hold_site(site, "/keep/0")
    out = tmp_path / "out"
    settings = fast_settings(
        out,
        site.url("/"),
        workers=1,
        per_host_concurrency=1,
        **backend_settings(request, backend),
    )
    crawler = Crawler(settings)
    task = asyncio.create_task(crawler.run())
    await until(lambda: len(requested(site, "/keep/0")) == 1)  # /drop/* are queued by now
    assert crawler.stages is not None and crawler.stages.control is not None
    exclusions = crawler.stages.control.exclusions
    assert main(["ignore", str(out), r"/drop/\d$"]) == 0
    await until(lambda: exclusions.version == 1)
    release.set()
    result = await task

    assert result.status == "completed"
    assert requested(site, "/drop/") == []
    assert sorted(requested(site, "/keep/")) == [f"/keep/{i}" for i in range(5)]
    dropped = {site.url(f"/drop/{i}") for i in range(5)}
    skips = [e for e in events(out, "skip") if e["reason"] == "ignored"]
    assert {e["url"] for e in skips} == dropped and len(skips) == 5
    assert all(e["via"] == site.url("/") for e in skips)
    _, summary_file = run_files(out)
    summary = json.loads(summary_file.read_text())
    assert summary["skips"] == {"ignored": 5}
    logged = events(out, "ignores")[-1]
    assert logged["patterns"] == 1 and logged["added"] == [r"/drop/\d$"]
    assert logged["removed"] == []


async def test_a_hundred_thousand_ignores_apply_at_start_and_grow_by_a_line(
    tmp_path: Path, site: SiteServer
) -> None:
    """An ``ignores`` file of 100,000 lines (shared ignore lists are that long) applies before
    the first lease, and a line appended while the crawl runs is read without compiling the
    file again (the watcher's reload is incremental): both drop exactly what they match."""
    release = hold_site(site, "/keep/0")
    out = tmp_path / "out"
    out.mkdir()
    lines = [
        f"^https?://site{i}\\.invalid/" if i % 2 else f"/calendar/\\d{{4}}/{i}/"
        for i in range(99_999)
    ]
    (out / "ignores").write_text("\n".join([*lines, r"/drop/[0-2]$"]) + "\n")
    crawler = Crawler(fast_settings(out, site.url("/"), workers=1, per_host_concurrency=1))
    task = asyncio.create_task(crawler.run())
    await until(lambda: len(requested(site, "/keep/0")) == 1)  # /drop/3 and 4 are queued
    assert crawler.stages is not None and crawler.stages.control is not None
    exclusions = crawler.stages.control.exclusions
    assert len(exclusions.ignores.patterns) == 100_000
    loaded = exclusions.ignores
    assert main(["ignore", str(out), r"/drop/[3-4]$"]) == 0
    await until(lambda: exclusions.version == 2)  # the load, then the appended line
    grown = exclusions.ignores
    assert len(grown.patterns) == 100_001
    assert grown._lines[lines[0]] is loaded._lines[lines[0]]
    release.set()
    result = await task

    assert result.status == "completed"
    assert requested(site, "/drop/") == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skips"] == {"ignored": 5}
    records = assert_archive_sound(out)
    kept = [site.url("/"), *(site.url(f"/keep/{i}") for i in range(5))]
    assert captured_once(records) == dict.fromkeys(kept, 1)
    logged = events(out, "ignores")[-1]
    assert logged["patterns"] == 100_001 and logged["added"] == [r"/drop/[3-4]$"]


async def test_ignores_apply_at_discovery_and_bad_lines_only_warn(
    tmp_path: Path, site: SiteServer
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # the operator prepared the file before the first run: the directory still counts as new
    (out / "ignores").write_text("# skip the drops\n/drop/\n(unclosed\n")
    hold_site(site, "/never").set()
    result = await Crawler(fast_settings(out, site.url("/"))).run()

    assert result.status == "completed"
    assert requested(site, "/drop/") == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["skips"] == {"ignored": 5}
    warnings = events(out, "ignores-invalid")
    assert len(warnings) == 1 and warnings[0]["error"].startswith("line 3: '(unclosed'")
    assert (out / "ignores").exists()  # the operator's file is left alone


async def test_a_resumed_crawl_with_a_new_exclude_drops_queued_urls(
    tmp_path: Path, site: SiteServer
) -> None:
    release = hold_site(site, "/keep/0")
    out = tmp_path / "out"
    first = Crawler(
        fast_settings(out, site.url("/"), frontier="sqlite", workers=1, per_host_concurrency=1)
    )
    task = asyncio.create_task(first.run())
    await until(lambda: len(requested(site, "/keep/0")) == 1)
    first.request_stop()
    release.set()
    assert (await task).status == "interrupted"
    assert requested(site, "/drop/") == []

    resumed = Crawler(
        fast_settings(out, site.url("/"), frontier="sqlite", exclude=(r"/drop/[0-3]$",), workers=1)
    )
    result = await resumed.run()
    assert result.status == "completed"
    assert sorted(requested(site, "/drop/")) == ["/drop/4"]
    excluded = [e["url"] for e in events(out, "skip") if e["reason"] == "excluded"]
    assert sorted(excluded) == [site.url(f"/drop/{i}") for i in range(4)]
    assert json.loads((out / "summary.json").read_text())["skips"] == {"excluded": 4}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_control_toml_changes_per_host_concurrency_while_running(
    tmp_path: Path, site: SiteServer, request: pytest.FixtureRequest, backend: str
) -> None:
    three = asyncio.Event()
    site.add_page("/", "".join(f'<a href="/p/{i}">{i}</a>' for i in range(6)))

    async def page(_: web.Request) -> web.StreamResponse:
        if site.counters.in_flight >= 3:
            three.set()
        await three.wait()  # one at a time would wait here for ever
        return web.Response(text="<p>page</p>", content_type="text/html")

    for i in range(6):
        site.add_handler(f"/p/{i}", page)
    out = tmp_path / "out"
    settings = fast_settings(
        out,
        site.url("/"),
        workers=4,
        per_host_concurrency=1,
        **backend_settings(request, backend),
    )
    crawler = Crawler(settings)
    task = asyncio.create_task(crawler.run())
    await until(lambda: len(requested(site, "/p/")) == 1)
    assert crawler.stages is not None and crawler.stages.control is not None
    control = crawler.stages.control
    (out / "control.toml").write_text("[politeness]\nper_host_concurrency = 3\n")
    result = await task

    assert result.status == "completed", result.reason
    assert site.counters.max_in_flight == 3  # raised from 1, and never past the new limit
    changed = events(out, "control")
    assert changed[0]["per_host_concurrency"] == 3 and changed[0]["source"] == "control.toml"
    assert control.politeness == Politeness(delay=0.0, concurrency=3)


async def test_invalid_control_toml_warns_and_keeps_the_values(
    tmp_path: Path, site: SiteServer
) -> None:
    release = hold_site(site, "/keep/0")
    out = tmp_path / "out"
    crawler = Crawler(fast_settings(out, site.url("/"), workers=1, per_host_concurrency=1))
    task = asyncio.create_task(crawler.run())
    await until(lambda: len(requested(site, "/keep/0")) == 1)
    assert crawler.stages is not None and crawler.stages.control is not None
    control = crawler.stages.control
    (out / "control.toml").write_text("[politeness]\nper_host_concurrency = 2\n")
    await until(lambda: control.politeness.concurrency == 2)
    (out / "control.toml").write_text("[politeness]\nper_host_concurrency = 'many'\n")
    await until(lambda: control.control_error is not None)
    release.set()
    assert (await task).status == "completed"
    assert control.politeness == Politeness(delay=0.0, concurrency=2)
    assert control.control_error is not None and "per_host_concurrency" in control.control_error
    warning = events(out, "control-invalid")[0]
    assert "per_host_concurrency" in warning["error"] and warning["per_host_concurrency"] == 2


async def test_politeness_set_in_one_process_reaches_the_others(redis_tcp: RedisServer) -> None:
    one = RedisFrontier(redis_tcp.url, "shared-politeness", gate=HostGate(delay=0.0))
    two = RedisFrontier(redis_tcp.url, "shared-politeness", gate=HostGate(delay=0.0))
    await one.open()
    await two.open()
    try:
        assert await two.shared_politeness() is None  # nobody changed anything yet
        one.set_politeness(1000.0, 1)
        await one.flush()
        assert await two.shared_politeness() == (1000.0, 1)
        assert (two.gate.delay, two.gate.concurrency) == (1000.0, 1)
        assert await two.shared_politeness() is None  # applied once
        await two.put_many([CrawlItem("http://h.test/a"), CrawlItem("http://h.test/b")])
        lease = await two.get()
        host = await two.ask("HMGET", two.link.key("host:h.test"), "last", "next")
        assert float(host[1]) - float(host[0]) == pytest.approx(1000.0)  # spaced by the new delay
        two.give_back(lease)
    finally:
        await one.close()
        await two.close()
