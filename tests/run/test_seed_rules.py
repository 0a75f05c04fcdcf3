"""Per-seed rules through the command line: ``[[seed]]`` tables of a config file and JSON lines
of a seeds file, on a test site of two hosts (127.0.0.1 and 127.0.0.2) whose seeds have
different depth and exclude rules, and a third seed nested in the first host's site.

The site (``A`` is 127.0.0.1, ``B`` 127.0.0.2; ``->`` is a link)::

    A/          seed: host, max_depth 1, exclude /private/
                -> A/a1 -> A/a2             A/a2 is two hops out: not fetched
                -> A/private/p              excluded by A's rules
                -> A/docs/                  the third seed (C)
                -> B/shared                 on B's site: B's rules judge it (fetched)
    A/docs/     seed C: prefix, max_depth 2 (more specific than A's host: C judges A/docs/...)
                -> A/docs/d1 -> A/docs/d2 -> A/docs/d3     d3 is three hops out: not fetched
                -> A/docs/private/q         C's rules, not A's: fetched
    B/          seed: host, max_depth 3, exclude /b-skip/
                -> B/b1 -> B/b2 -> B/b3 -> B/b4           b4 is four hops out: not fetched
                -> B/b-skip/x               excluded by B's rules
                -> A/private/r              on A's site: A's exclude holds though B has none
                -> B/shared
    B/b1        -> A/a2                     two hops from B (B allows 3): A's depth 1 decides
    B/b2        -> A/docs/d3                three hops from B (B allows 3): C's depth 2 decides

Every verdict here is the same whichever page the crawl meets first: that is the point of
judging a URL by the seed whose site it is on (archiver.policy.seeds).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver.config.settings import SeedEntry
from archiver.run.crawler import Crawler
from archiver.run.seeds import SEED_BATCH
from tests.conftest import fast_settings
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.support.site import SiteServer
from tests.support.spacing import assert_spaced

#: What each host serves to the crawl, and nothing else: each page exactly once.
FETCHED_A = {"/", "/a1", "/docs/", "/docs/d1", "/docs/d2", "/docs/private/q"}
FETCHED_B = {"/", "/b1", "/b2", "/b3", "/shared"}


def build_site(a: SiteServer, b: SiteServer) -> None:
    def page(site: SiteServer, path: str, *links: str) -> None:
        site.add_page(path, "".join(f'<a href="{link}">{link}</a>' for link in links))

    page(a, "/", "/a1", "/private/p", "/docs/", b.url("/shared"))
    page(a, "/a1", "/a2")
    page(a, "/a2")
    page(a, "/private/p")
    page(a, "/private/r")
    page(a, "/docs/", "/docs/d1", "/docs/private/q")
    page(a, "/docs/d1", "/docs/d2")
    page(a, "/docs/d2", "/docs/d3")
    page(a, "/docs/d3")
    page(a, "/docs/private/q")
    page(b, "/", "/b1", "/b-skip/x", a.url("/private/r"), "/shared")
    page(b, "/b1", "/b2", a.url("/a2"))
    page(b, "/b2", "/b3", a.url("/docs/d3"))
    page(b, "/b3", "/b4")
    page(b, "/b4")
    page(b, "/b-skip/x")
    page(b, "/shared")


@pytest.fixture
def hosts() -> Iterator[tuple[SiteServer, SiteServer]]:
    with (
        SiteServer("127.0.0.1").running_in_thread() as a,
        SiteServer("127.0.0.2").running_in_thread() as b,
    ):
        build_site(a, b)
        yield a, b


def seed_tables(a: SiteServer, b: SiteServer) -> list[dict[str, Any]]:
    return [
        {"url": a.url("/"), "max_depth": 1, "exclude": ["/private/"]},
        {"url": a.url("/docs/"), "scope": "prefix", "max_depth": 2},
        {"url": b.url("/"), "max_depth": 3, "exclude": ["/b-skip/"]},
    ]


def toml_tables(tables: list[dict[str, Any]]) -> str:
    return "".join(
        "[[seed]]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in t.items())
        for t in tables
    )


def archiver(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=cwd,
    )


#: The crawl's own rules where a seed gives none: quick, polite enough for 127.0.0.x, and a
#: crawl-wide depth that would let every page in (the seeds' own depths must decide).
QUICK = (
    "--per-host-delay",
    "0",
    "--robots",
    "ignore",
    "--sitemaps",
    "off",
    "--progress",
    "off",
    "--quiet",
    "--max-depth",
    "10",
)


def fetched(site: SiteServer) -> Counter[str]:
    return Counter(hit.path for hit in site.counters.hits)


def log_events(output: Path, name: str) -> list[dict[str, Any]]:
    events = []
    for log in sorted(output.rglob("crawl.log.jsonl")):
        events += [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == name]
    return events


@pytest.mark.parametrize(
    ("source", "frontier"),
    [
        ("config", "sqlite"),
        ("seeds-file", "sqlite"),
        ("config", "processes"),
        ("seeds-file", "processes"),
    ],
)
def test_each_seed_is_judged_by_its_own_rules(
    tmp_path: Path, hosts: tuple[SiteServer, SiteServer], source: str, frontier: str
) -> None:
    a, b = hosts
    tables = seed_tables(a, b)
    if source == "config":
        config = tmp_path / "job.toml"
        config.write_text(toml_tables(tables))
        given = ["--config", str(config)]
    else:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(
            "# one seed a line, its rules as JSON\n" + "".join(json.dumps(t) + "\n" for t in tables)
        )
        given = ["--seeds-file", str(seeds)]
    run = ["--processes", "2"] if frontier == "processes" else ["--frontier", "sqlite"]
    out = tmp_path / "out"
    done = archiver("crawl", *given, "-o", str(out), *QUICK, *run)
    assert done.returncode == 0, done.stderr

    got_a, got_b = fetched(a), fetched(b)
    assert set(got_a) == FETCHED_A and set(got_b) == FETCHED_B
    assert max(got_a.values()) == 1 and max(got_b.values()) == 1  # every page once
    skips = {(e["url"], e["reason"]) for e in log_events(out, "skip")}
    assert {
        (a.url("/a2"), "depth"),  # A's depth 1, from A's page and from B's alike
        (a.url("/private/p"), "excluded"),
        (a.url("/private/r"), "excluded"),  # found on B's site, on A's: A's exclude
        (a.url("/docs/d3"), "depth"),  # C's depth 2, found by B at 3 (B allows 3)
        (b.url("/b4"), "depth"),
        (b.url("/b-skip/x"), "excluded"),
    } <= skips
    assert (a.url("/docs/private/q"), "excluded") not in skips  # C judges it, not A

    summary = json.loads((out / "summary.json").read_text())
    by_seed = {row["seed"]: row for row in summary["by_seed"]}
    assert {url: row["pages"] for url, row in by_seed.items()} == {
        a.url("/"): 2,  # A/ and A/a1
        a.url("/docs/"): 4,  # A/docs/, d1, d2, private/q
        b.url("/"): 5,  # B/, b1, b2, b3, shared
    }
    assert sum(row["captures"] for row in by_seed.values()) == summary["captures"]


def test_the_report_shows_each_seed(tmp_path: Path, hosts: tuple[SiteServer, SiteServer]) -> None:
    a, b = hosts
    config = tmp_path / "job.toml"
    config.write_text(toml_tables(seed_tables(a, b)))
    out = tmp_path / "out"
    assert archiver("crawl", "--config", str(config), "-o", str(out), *QUICK).returncode == 0
    assert archiver("report", str(out)).returncode == 0
    html = (out / "report.html").read_text()
    seeds = html.split("<h2>Seeds</h2>", 1)[1].split("</section>", 1)[0]
    for url in (a.url("/"), a.url("/docs/"), b.url("/")):
        assert url in seeds
    assert '<td class="num">5</td>' in seeds  # B's five pages


# -- resume and --processes N keep each queued URL's seed ------------------------------------


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait for ``condition`` (the test site's counters), or fail saying ``what``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("frontier", ["sqlite", "processes"])
def test_a_resumed_crawl_judges_queued_urls_by_their_seed(tmp_path: Path, frontier: str) -> None:
    """A URL on no seed's site is judged by the seed of the page that led to it: A/ lets one
    page outside the scope in (its extra_hops = 1; the crawl's is 2). The crawl is stopped
    while that page (O/x) is being fetched, and resumed: O/x, leased again from the frontier,
    must still be A's, so O/y, two pages out, stays out. Were its seed lost, the crawl's
    extra_hops = 2 would let O/y in."""
    released = asyncio.Event()  # set on the site's loop, from this thread
    with (
        SiteServer("127.0.0.1").running_in_thread() as a,
        SiteServer("127.0.0.3").running_in_thread() as outside,
    ):
        a.add_page("/", f'<a href="{outside.url("/x")}">x</a>')
        outside.add_page("/y", "<p>two pages outside</p>")
        page = f'<a href="{outside.url("/y")}">y</a>'.encode()

        async def held(_: web.Request) -> web.StreamResponse:
            await released.wait()  # the first fetch is cut by the stop
            return web.Response(body=page, content_type="text/html")

        outside.add_handler("/x", held)
        config = tmp_path / "job.toml"
        config.write_text(
            "[scope]\nextra_hops = 2\n" + toml_tables([{"url": a.url("/"), "extra_hops": 1}])
        )
        out = tmp_path / "out"
        run = ["--processes", "2"] if frontier == "processes" else ["--frontier", "sqlite"]
        command = [sys.executable, "-m", "archiver", "crawl", "--config", str(config)]
        # O is no seed's host: 127.0.0.3 is reached only with --allow-private
        command += ["-o", str(out), *QUICK, *run, "--grace-period", "0.2s", "--allow-private"]
        first = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(
                lambda: outside.counters.count("/x") == 1 or first.poll() is not None,
                "O/x to be requested",
            )
            assert first.poll() is None, "the crawl ended before it requested O/x"
            first.send_signal(signal.SIGTERM)
            _, err = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
        assert first.returncode == 3, err
        assert outside.loop is not None
        outside.loop.call_soon_threadsafe(released.set)
        again = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        assert again.returncode == 0, again.stderr
        assert outside.counters.count("/x") == 2  # cut, then fetched whole on resume
        assert outside.counters.count("/y") == 0
    assert (outside.url("/y"), "scope") in {
        (e["url"], e["reason"]) for e in log_events(out, "skip")
    }


# -- budgets and delays of a seed -----------------------------------------------------------


async def test_a_seed_budget_skips_its_pages_and_the_crawl_goes_on(tmp_path: Path) -> None:
    """A's max_pages = 2: two of its five pages are captured, the rest skipped with reason
    seed-budget; B, with no budget, is crawled whole, and the crawl completes (it is no
    --max-pages limit)."""
    async with SiteServer("127.0.0.1") as a, SiteServer("127.0.0.2") as b:
        for site in (a, b):
            site.add_page("/", "".join(f'<a href="/{n}">{n}</a>' for n in range(4)))
            for n in range(4):
                site.add_page(f"/{n}", "<p>a page</p>")
        settings = fast_settings(
            tmp_path / "out",
            seed=(
                SeedEntry(a.url("/"), (("max_pages", 2),)),
                SeedEntry(b.url("/")),
            ),
            workers=2,
        )
        result = await Crawler(settings).run()
        assert result.status == "completed"
        assert len(a.counters.hits) == 2 and len(b.counters.hits) == 5
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["skips"]["seed-budget"] == 3
    rows = {row["seed"]: row for row in summary["by_seed"]}
    assert (rows[a.url("/")]["pages"], rows[a.url("/")]["skipped"]) == (2, 3)
    assert (rows[b.url("/")]["pages"], rows[b.url("/")]["skipped"]) == (5, 0)


async def test_a_seed_delay_spaces_its_hosts(tmp_path: Path) -> None:
    """A's per_host_delay = 0.3 s, the crawl's 0: A's requests start at least 0.3 s apart
    (a lower bound: it holds however loaded the machine is)."""
    async with SiteServer("127.0.0.1") as a, SiteServer("127.0.0.2") as b:
        for site in (a, b):
            site.add_page("/", "".join(f'<a href="/{n}">{n}</a>' for n in range(3)))
            for n in range(3):
                site.add_page(f"/{n}", "<p>a page</p>")
        settings = fast_settings(
            tmp_path / "out",
            b.url("/"),
            seed=(SeedEntry(a.url("/"), (("per_host_delay", 0.3),)),),
            per_host_concurrency=4,
        )
        assert (await Crawler(settings).run()).status == "completed"
        starts = sorted(hit.started for hit in a.counters.hits)
        assert len(starts) == 4 and len(b.counters.hits) == 4
        assert_spaced(starts, 0.3)


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[crawl]\nseeds = 42\n", "[crawl] seeds: expected a list of strings, got 42"),
        ('[crawl]\nseeds = [{url = "http://a.test/"}]\n', "[crawl] seeds: expected a string"),
        ('[seed]\nurl = "http://a.test/"\n', "[[seed]]: write [[seed]]"),
        ('seed = "http://a.test/"\n', "[[seed]]: expected [[seed]] tables"),
        ('[[seed]]\nurl = "http://a.test/"\ndepth = 2\n', "[[seed]] 1: unknown key 'depth'"),
        ('[[seed]]\nurl = "http://a.test/"\n[[seed]]\nmax_depth = 2\n', "[[seed]] 2: needs url"),
        ('[[seed]]\nurl = "ftp://a.test/"\n', "is not an http(s) URL"),
        ('[[seed]]\nurl = "http://a.test/"\nscope = "galaxy"\n', "[[seed]] 1 scope: must be"),
        ('[[seed]]\nurl = "http://a.test/"\nmax_pages = -1\n', "[[seed]] 1 max_pages"),
    ],
)
def test_a_bad_seed_table_is_one_line_and_writes_nothing(
    tmp_path: Path, text: str, expected: str
) -> None:
    config = tmp_path / "job.toml"
    config.write_text(text)
    out = tmp_path / "out"
    done = archiver("crawl", "--config", str(config), "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_a_seed_further_down_a_seeds_file_keeps_its_rules(
    hosts: tuple[SiteServer, SiteServer], tmp_path: Path
) -> None:
    """A seeds file is read a batch at a time while the crawl runs: a seed table past the first
    batch (B's, after SEED_BATCH comment lines) reaches the scope, the frontier's seed store and
    the summary with its own rules, as one read at the start does (A's). Without them B would be
    crawled to the crawl's depth of 10."""
    a, b = hosts
    seeds = tmp_path / "seeds.txt"
    late = {"url": b.url("/"), "max_depth": 1, "exclude": ["/b-skip/"]}
    seeds.write_text(
        json.dumps({"url": a.url("/"), "scope": "page"})
        + "\n"
        + "# filler\n" * SEED_BATCH
        + json.dumps(late)
        + "\n"
    )
    out = tmp_path / "out"
    done = archiver("crawl", "--seeds-file", str(seeds), "-o", str(out), *QUICK)
    assert done.returncode == 0, done.stderr
    assert fetched(a) == Counter({"/": 1})
    assert fetched(b) == Counter({"/": 1, "/b1": 1, "/shared": 1})  # B's depth 1
    skips = {(e["url"], e["reason"]) for e in log_events(out, "skip")}
    assert {(b.url("/b2"), "depth"), (b.url("/b-skip/x"), "excluded")} <= skips
    summary = json.loads((out / "summary.json").read_text())
    assert {row["seed"]: row["pages"] for row in summary["by_seed"]} == {
        a.url("/"): 1,
        b.url("/"): 3,
    }
    assert summary["seeds_count"] == 2


def test_a_late_seed_that_asks_for_the_browser_is_fetched_without_it_and_said_so(
    hosts: tuple[SiteServer, SiteServer], tmp_path: Path
) -> None:
    """Chromium starts for the seeds known at the start; a seed further down the seeds file
    whose table asks for it (none before it did) is fetched statically, with a warning that
    says so, and the crawl goes on."""
    a, b = hosts
    seeds = tmp_path / "seeds.txt"
    late = {"url": b.url("/"), "scope": "page", "browser": "all"}
    seeds.write_text(
        json.dumps({"url": a.url("/"), "scope": "page"})
        + "\n"
        + "# filler\n" * SEED_BATCH
        + json.dumps(late)
        + "\n"
    )
    out = tmp_path / "out"
    done = archiver("crawl", "--seeds-file", str(seeds), "-o", str(out), *QUICK)
    assert done.returncode == 0, done.stderr
    (warning,) = log_events(out, "seed-browser-off")
    assert (warning["seed"], warning["browser"]) == (b.url("/"), "all")
    assert fetched(a) == Counter({"/": 1}) and fetched(b) == Counter({"/": 1})


def test_add_checks_a_url_against_every_seed_of_the_seeds_file(
    hosts: tuple[SiteServer, SiteServer], tmp_path: Path
) -> None:
    """``archiver add`` judges a URL by the crawl's seeds, those further down its seeds file
    (read in batches by the crawl) included: on a late seed's site it is added, elsewhere it is
    refused (exit 2, nothing written)."""
    a, b = hosts
    seeds = tmp_path / "seeds.txt"
    late = {"url": b.url("/docs/"), "scope": "prefix"}
    seeds.write_text(f"{a.url('/')}\n" + "# filler\n" * SEED_BATCH + json.dumps(late) + "\n")
    out = tmp_path / "out"
    done = archiver("crawl", "--seeds-file", str(seeds), "-o", str(out), *QUICK, "--max-pages", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "limit"
    refused = archiver("add", str(out), b.url("/b1"))
    assert refused.returncode == 2 and "on no seed's site" in refused.stderr, refused.stderr
    assert not (out / "add").exists() or not list((out / "add").glob("*.urls"))
    added = archiver("add", str(out), b.url("/docs/new"))
    assert added.returncode == 0, added.stderr
    (written,) = (out / "add").glob("*.urls")
    assert written.read_text() == b.url("/docs/new") + "\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"url": "URL", "depth": 2}', "unknown key 'depth'"),
        ('{"url": "URL", "max_depth": "deep"}', "max_depth: expected an integer"),
        ('{"url": "URL"', "not a URL nor a JSON object"),
        ('["URL"]', "is not an http(s) URL"),
    ],
)
def test_a_bad_seeds_file_line_is_logged_with_its_number_and_left_out(
    hosts: tuple[SiteServer, SiteServer], tmp_path: Path, line: str, expected: str
) -> None:
    """A seeds file may hold a million lines, read while the crawl runs: one bad line (a seed
    table with a key no seed has, a value of the wrong type, broken JSON) is a warning naming
    its line, and every other seed is crawled by its rules; the bad line's seed is not."""
    a, b = hosts
    seeds = tmp_path / "seeds.txt"
    good = json.dumps({"url": a.url("/"), "scope": "page"})
    seeds.write_text(f"{good}\n{line.replace('URL', b.url('/'))}\n")
    out = tmp_path / "out"
    done = archiver("crawl", "--seeds-file", str(seeds), "-o", str(out), *QUICK)
    assert done.returncode == 0, done.stderr
    (invalid,) = log_events(out, "seed-invalid")
    assert invalid["line"] == 2 and expected in invalid["error"], invalid
    assert fetched(a) == Counter({"/": 1}), "the good line's seed, by its own scope"
    assert not b.counters.hits, "the bad line's seed is left out"


# -- the README's example, as written -------------------------------------------------------

FAMILY = "archiver crawl --config family.toml --output crawls/family"
FAMILY_FILE = "archiver crawl --seeds-file seeds.txt --output crawls/family"
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(language: str) -> str:
    """The README's per-seed example block in ``language`` (the one after its marker)."""
    text = README.read_text(encoding="utf-8").split("<!-- per-seed example:", 1)[1]
    return text.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def family_site(a: SiteServer, b: SiteServer) -> dict[str, str]:
    """The sites of the README's example: ``a`` is example.org, ``b`` forum.example.net (and
    example.com); returns what the README's URLs become."""

    def page(site: SiteServer, path: str, *links: str) -> None:
        site.add_page(path, "".join(f'<a href="{link}">{link}</a>' for link in links))

    page(a, "/", "/about", "/private/p", "/docs/")
    page(a, "/about", "/about/team")
    page(a, "/about/team")
    page(a, "/private/p")
    page(a, "/docs/", "/docs/intro")
    page(a, "/docs/intro", "/docs/intro/more")
    page(a, "/docs/intro/more", "/docs/intro/more/deeper")
    page(a, "/docs/intro/more/deeper")
    page(b, "/", "/t/1", "/calendar/2024")
    page(b, "/t/1", "/t/2")
    page(b, "/t/2")
    page(b, "/calendar/2024")
    return {
        "https://example.org/": a.url("/"),
        "https://forum.example.net/": b.url("/"),
        "https://example.com/": b.url("/"),
    }


def local(text: str, urls: dict[str, str]) -> str:
    for old, new in urls.items():
        text = text.replace(old, new)
    return text


@documents(FAMILY)
def test_the_readme_family_of_sites(doc: DocShell, tmp_path: Path) -> None:
    """The README's [[seed]] tables, its URLs made local: each seed's rules hold, and the
    documentation seed, more specific than example.org's host, judges /docs/."""
    cwd = workdir(tmp_path)
    with (
        SiteServer("127.0.0.1").running_in_thread() as a,
        SiteServer("127.0.0.2").running_in_thread() as b,
    ):
        urls = family_site(a, b)
        (cwd / "family.toml").write_text(local(readme_block("toml"), urls))
        done = doc.run(FAMILY, cwd=cwd)
        assert done.returncode == 0, done.stderr[-3000:]
        pages_a = set(fetched(a)) - {"/robots.txt", "/sitemap.xml"}
        pages_b = set(fetched(b)) - {"/robots.txt", "/sitemap.xml"}
        spaced = sorted(hit.started for hit in a.counters.hits)
    assert pages_a == {"/", "/about", "/docs/", "/docs/intro", "/docs/intro/more"}
    assert pages_b == {"/", "/t/1", "/t/2"}  # the forum's /calendar/ excluded
    assert_spaced(spaced, 1.0)  # example.org's host: the documentation seed's 1 s
    summary = json.loads((cwd / "crawls" / "family" / "summary.json").read_text())
    assert {row["seed"] for row in summary["by_seed"]} >= {
        a.url("/"),
        a.url("/docs/"),
        b.url("/"),
    }


@documents(FAMILY_FILE)
def test_the_readme_seeds_file(doc: DocShell, tmp_path: Path) -> None:
    """The README's seeds file: a plain URL takes the crawl's rules (the forum's calendar is
    crawled: no seed excludes it), the JSON line the documentation's (its prefix only)."""
    cwd = workdir(tmp_path)
    with (
        SiteServer("127.0.0.1").running_in_thread() as a,
        SiteServer("127.0.0.2").running_in_thread() as b,
    ):
        urls = family_site(a, b)
        (cwd / "seeds.txt").write_text(local(readme_block("json"), urls))
        done = doc.run(FAMILY_FILE, cwd=cwd)
        assert done.returncode == 0, done.stderr[-3000:]
        pages_a = set(fetched(a)) - {"/robots.txt", "/sitemap.xml"}
        pages_b = set(fetched(b)) - {"/robots.txt", "/sitemap.xml"}
    assert pages_a == {"/docs/", "/docs/intro", "/docs/intro/more"}
    assert pages_b == {"/", "/t/1", "/t/2", "/calendar/2024"}
