"""``--media yt-dlp`` end to end, with the real yt-dlp, on a local site.

The page sets up its player as Video.js pages do, ``player.src({src: "media/stream.m3u8"})``
in an inline script: a relative URL in a script, which no static extractor follows. yt-dlp's
generic extractor reads it and fetches the master playlist and the variant within the bit-rate
cap (requests of its own: captured by the crawl, in the page's lease), and names the variant;
the crawl's HLS extractor reads the variant captured for yt-dlp and queues its segments as
requisites of the page. Every request yt-dlp made is in
the WARC files (the server saw each URL once: the page itself was answered from its capture),
yt-dlp's info JSON is a metadata record of the page that ``archiver index`` indexes as
cdxj-indexer does, and ReplayWeb.page plays the video from the WACZ.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from archiver.media.resolver import ResolverConfig, YtDlpResolver
from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.run.test_extractors_crawl import MASTER, hls_stream  # noqa: F401 - a fixture
from tests.support.replaywebpage import ReplayWebPage
from tests.support.site import SiteServer
from tests.support.tools import reference_cdxj
from tests.support.warcs import read_records, responses

WATCH = """<!doctype html><html><head><title>a clip</title></head><body>
<video id="v" muted playsinline></video>
<script>
// Video.js's set-up call, as pages write it (the library itself is not needed here)
window.videojs = function (id) { return { src(source) { window.source = source; } }; };
var player = videojs("v");
player.src({"src": "media/stream.m3u8", "type": "application/x-mpegURL"});
</script>
<script>
// The smallest HLS player over Media Source Extensions (as in test_extractors_crawl)
(async () => {
  const video = document.getElementById("v");
  const lines = async (url) => (await (await fetch(url)).text()).split("\\n");
  const master = new URL(window.source.src, location.href);
  const variant = new URL((await lines(master)).find((l) => l && !l.startsWith("#")), master);
  const segments = (await lines(variant)).filter((l) => l && !l.startsWith("#"));
  const source = new MediaSource();
  video.src = URL.createObjectURL(source);
  await new Promise((done) => source.addEventListener("sourceopen", done, { once: true }));
  const buffer = source.addSourceBuffer('video/mp2t; codecs="avc1.42c00d"');
  for (const segment of segments) {
    buffer.appendBuffer(await (await fetch(new URL(segment, variant))).arrayBuffer());
    await new Promise((done) => buffer.addEventListener("updateend", done, { once: true }));
  }
  source.endOfStream();
  video.currentTime = video.buffered.start(0);
  document.body.dataset.start = String(video.buffered.start(0));
  await video.play();
})().catch((error) => { document.body.dataset.playerError = String(error); });
</script></body></html>"""


def build_site(site: SiteServer, stream: dict[str, bytes]) -> None:
    site.add_page("/", '<a href="/watch.html">watch</a>')
    site.add_page("/watch.html", WATCH)
    site.add_file("/media/stream.m3u8", MASTER, "application/vnd.apple.mpegurl")
    for name, body in stream.items():
        kind = "application/vnd.apple.mpegurl" if name.endswith(".m3u8") else "video/mp2t"
        site.add_file(f"/media/v0/{name}", body, kind)


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]


async def test_yt_dlp_resolves_a_pages_media_through_the_crawls_own_fetcher(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811 - the fixture imported above
) -> None:
    async with SiteServer() as site:
        build_site(site, hls_stream)
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), workers=4, wacz=True, media="yt-dlp")
        result = await Crawler(settings).run()
        assert result.status == "completed", result.reason

        log = events(out)
        resolved = [e for e in log if e.get("event") == "yt-dlp"]
        assert len(resolved) == 1, [e for e in log if str(e.get("event")).startswith("yt-dlp")]
        assert resolved[0]["url"] == site.url("/watch.html")
        assert resolved[0]["extractor"] == "Generic"
        # the page (answered from its capture), the master playlist and the variant
        assert resolved[0]["requests"] == 3, resolved

        segments = [f"/media/v0/seg{n}.ts" for n in range(3)]
        expected = ["/", "/watch.html", "/media/stream.m3u8", "/media/v0/index.m3u8", *segments]
        captured = sorted(r.uri or "" for r in responses(out / "warcs"))
        assert captured == sorted(site.url(path) for path in expected)
        for path in expected:  # every request yt-dlp caused reached the server once, recorded
            assert site.counters.count(path) == 1, path
        assert site.counters.count("/media/v1/index.m3u8") == 0  # over the bit-rate cap
        # no byte bypassed the recorder: the server saw no request that is not in the WARCs
        assert sorted(hit.path for hit in site.counters.hits) == sorted(expected)

        fetched = {e["url"]: e for e in log if e.get("event") == "fetch"}
        master = fetched[site.url("/media/stream.m3u8")]
        assert master["found_by"] == "yt-dlp" and master.get("yt_dlp") is True
        assert fetched[site.url("/media/v0/index.m3u8")]["found_by"] == "yt-dlp"
        assert {fetched[site.url(p)]["found_by"] for p in segments} == {"hls"}

        records = read_records(out / "warcs")
        named = "urn:yt-dlp:" + site.url("/watch.html")
        info = [r for r in records if r.type == "metadata" and r.uri == named]
        assert len(info) == 1
        page = next(r for r in records if r.type == "response" and r.uri == site.url("/watch.html"))
        assert info[0].get("WARC-Refers-To") == page.get("WARC-Record-ID")
        assert info[0].get("Content-Type") == "application/json"
        described = json.loads(info[0].block)
        assert described["webpage_url"] == site.url("/watch.html")
        assert described["url"] == site.url("/media/v0/index.m3u8")

        # the index: cdxj-indexer's, line for line, the info record under its own key
        index = (out / "index.cdxj").read_text()
        assert index.splitlines() == reference_cdxj(out / "warcs")
        assert sum("urn:yt-dlp:" in line for line in index.splitlines()) == 1

        # archiver's own checks of the crawl and the package take the metadata record
        for target in (out, next(out.glob("*.wacz"))):
            checked = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-m", "archiver", "verify", str(target)],
                capture_output=True,
                text=True,
                timeout=300,  # a hang guard
            )
            assert checked.returncode == 0, checked.stdout + checked.stderr

        wacz = next(out.glob("*.wacz"))
        async with ReplayWebPage(wacz, tmp_path / "replay-browser") as replay:
            played = await replay.value_of(
                site.url("/watch.html"),
                "document.body.dataset.start ? document.getElementById('v').currentTime"
                " - Number(document.body.dataset.start) : -1",
                lambda value: isinstance(value, int | float) and value > 0.5,
            )
        assert played > 0.5


async def test_a_crawl_without_media_yt_dlp_starts_no_yt_dlp(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811
) -> None:
    async with SiteServer() as site:
        build_site(site, hls_stream)
        out = tmp_path / "out"
        result = await Crawler(fast_settings(out, site.url("/"), workers=2)).run()
        assert result.status == "completed", result.reason
        assert site.counters.count("/media/stream.m3u8") == 0  # only yt-dlp finds it
    assert "yt_dlp" not in sys.modules
    assert not any(str(e.get("event")).startswith("yt-dlp") for e in events(out))


async def test_a_request_the_crawl_refuses_is_refused_to_yt_dlp(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811
) -> None:
    """robots.txt keeps the crawl out of /media/: yt-dlp's request for the playlist is refused
    (neither fetched nor recorded) and yt-dlp is told why; the crawl goes on."""
    async with SiteServer() as site:
        build_site(site, hls_stream)
        site.add_file("/robots.txt", b"User-agent: *\nDisallow: /media/\n", "text/plain")
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), media="yt-dlp", robots="obey")
        result = await Crawler(settings).run()
        assert result.status == "completed", result.reason
        assert not [hit for hit in site.counters.hits if hit.path.startswith("/media/")]
    resolved = [e for e in events(out) if e.get("event") == "yt-dlp"]
    assert len(resolved) == 1
    assert any("not fetched by the crawl: robots" in w for w in resolved[0]["warnings"])
    captured = {r.uri for r in responses(out / "warcs")}
    assert captured == {site.url(p) for p in ("/robots.txt", "/", "/watch.html")}


async def test_a_page_yt_dlp_fails_on_costs_one_logged_failure(tmp_path: Path) -> None:
    """A page that shows a player yt-dlp finds nothing in: one logged failure, no metadata
    record, and the crawl completes."""
    async with SiteServer() as site:
        site.add_page("/", '<a href="/empty.html">e</a> <a href="/other.html">o</a>')
        site.add_page("/empty.html", '<video id="player"></video>')
        site.add_page("/other.html", "<p>text</p>")
        out = tmp_path / "out"
        result = await Crawler(fast_settings(out, site.url("/"), media="yt-dlp")).run()
        assert result.status == "completed", result.reason
    log = events(out)
    failed = [e for e in log if e.get("event") == "yt-dlp-failed"]
    assert [e["url"] for e in failed] == [site.url("/empty.html")]
    assert failed[0]["error"]
    assert not [e for e in log if e.get("event") == "yt-dlp"]
    assert not [r for r in read_records(out / "warcs") if r.type == "metadata"]
    captured = {r.uri for r in responses(out / "warcs")}
    assert captured == {site.url(p) for p in ("/", "/empty.html", "/other.html")}


async def test_a_resolution_past_its_time_is_cut_and_what_it_captured_is_kept(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811 - the fixture imported above
) -> None:
    """The master playlist answers after the page's resolution time is up: the capture is
    written whole (the lease commits it), yt-dlp is stopped, one failure is logged, and the
    other page yt-dlp resolves succeeds.

    The server holds the playlist for the resolution time counted from when the request
    arrived: the resolution began before yt-dlp asked for it, so its time is up by then,
    however slow the machine."""
    limit = 8.0  # long enough for yt-dlp to reach the playlist on a busy machine
    async with SiteServer() as site:
        build_site(site, hls_stream)
        prompt = site.routes["/media/stream.m3u8"]

        async def late(request: web.Request) -> web.StreamResponse:
            await asyncio.sleep(limit + 0.5)
            return await prompt(request)

        site.add_handler("/media/stream.m3u8", late)
        site.add_page("/", '<a href="/watch.html">watch</a> <a href="/second.html">2</a>')
        site.add_page("/second.html", '<video src="/clip.mp4"></video>')
        site.add_file("/clip.mp4", b"\x00\x00\x00\x08free", "video/mp4")
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), media="yt-dlp", media_timeout=limit)
        result = await asyncio.wait_for(Crawler(settings).run(), 120)  # a hang guard
        assert result.status == "completed", result.reason
        assert site.counters.count("/media/stream.m3u8") == 1
    log = events(out)
    failed = [e for e in log if e.get("event") == "yt-dlp-failed"]
    assert [e["url"] for e in failed] == [site.url("/watch.html")], failed
    assert f"still busy after {limit:g} s" in failed[0]["error"]
    assert [e["url"] for e in log if e.get("event") == "yt-dlp"] == [site.url("/second.html")]
    assert site.url("/media/stream.m3u8") in {r.uri for r in responses(out / "warcs")}
    # the playlist yt-dlp never read leads nowhere: no segment was queued for it
    assert site.counters.count("/media/v0/index.m3u8") == 0


def ytdlp_children() -> list[int]:
    """The yt-dlp child processes of this process that are alive (a zombie has no command
    line), read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # it ended meanwhile
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"ytdlpchild.py" in command:
            found.append(int(entry.name))
    return found


def signalling_site(site: SiteServer, stream: dict[str, bytes], signal_number: int) -> list[int]:
    """The Video.js site, whose master playlist, when yt-dlp asks for it, first sends
    ``signal_number`` to the yt-dlp process (one worker: there is one), then is answered; and
    a second page, ``<video src>``, that yt-dlp resolves without a request to the server.
    Returns the list the signalled process ids are added to."""
    build_site(site, stream)
    prompt = site.routes["/media/stream.m3u8"]
    signalled: list[int] = []

    async def signalling(request: web.Request) -> web.StreamResponse:
        for pid in ytdlp_children():
            os.kill(pid, signal_number)
            signalled.append(pid)
        return await prompt(request)

    site.add_handler("/media/stream.m3u8", signalling)
    site.add_page("/", '<a href="/watch.html">watch</a> <a href="/second.html">2</a>')
    site.add_page("/second.html", '<video src="/clip.mp4"></video>')
    site.add_file("/clip.mp4", b"\x00\x00\x00\x08free", "video/mp4")
    return signalled


async def test_a_yt_dlp_process_that_dies_costs_its_page_only(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811 - the fixture imported above
) -> None:
    """yt-dlp's process is killed (as the kernel's OOM killer would) while its request for the
    playlist is fetched: the capture is kept, the page costs one failure, the next page gets a
    new process, the crawl completes and no process is left behind."""
    async with SiteServer() as site:
        signalled = signalling_site(site, hls_stream, signal.SIGKILL)
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), workers=1, media="yt-dlp")
        result = await asyncio.wait_for(Crawler(settings).run(), 120)  # a hang guard
        assert result.status == "completed", result.reason
    assert len(signalled) == 1
    log = events(out)
    failed = [e for e in log if e.get("event") == "yt-dlp-failed"]
    assert [e["url"] for e in failed] == [site.url("/watch.html")], failed
    assert "yt-dlp's process failed" in failed[0]["error"]
    assert [e["url"] for e in log if e.get("event") == "yt-dlp"] == [site.url("/second.html")]
    assert site.url("/media/stream.m3u8") in {r.uri for r in responses(out / "warcs")}
    assert ytdlp_children() == []


async def test_a_yt_dlp_process_that_hangs_is_killed_at_its_pages_time(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811
) -> None:
    """yt-dlp's process stops answering (SIGSTOP: it neither runs nor exits) once its request
    for the playlist is answered: at the page's resolution time it is killed, the page costs
    one failure, the next page gets a new process, and the crawl completes."""
    limit = 8.0  # long enough for yt-dlp to reach the playlist on a busy machine
    async with SiteServer() as site:
        signalled = signalling_site(site, hls_stream, signal.SIGSTOP)
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), workers=1, media="yt-dlp", media_timeout=limit)
        result = await asyncio.wait_for(Crawler(settings).run(), 120)  # a hang guard
        assert result.status == "completed", result.reason
    assert len(signalled) == 1
    log = events(out)
    failed = [e for e in log if e.get("event") == "yt-dlp-failed"]
    assert [e["url"] for e in failed] == [site.url("/watch.html")], failed
    assert f"still busy after {limit:g} s" in failed[0]["error"]
    assert [e["url"] for e in log if e.get("event") == "yt-dlp"] == [site.url("/second.html")]
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(signalled[0], 0)
    assert ytdlp_children() == []


def python_without_yt_dlp(where: Path) -> Path:
    """A virtual environment with everything this one has but yt-dlp (its site-packages
    entries linked, archiver's editable install among them): archiver installed without the
    ``media`` extra."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    theirs = Path(sysconfig.get_paths()["purelib"])
    ours = Path(
        subprocess.run(
            [
                str(where / "bin" / "python"),
                "-c",
                "import sysconfig as s; print(s.get_paths()['purelib'])",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    for entry in theirs.iterdir():
        if not entry.name.startswith("yt_dlp"):
            (ours / entry.name).symlink_to(entry)
    return where / "bin" / "python"


async def test_media_yt_dlp_without_yt_dlp_installed_is_a_usage_error(tmp_path: Path) -> None:
    """archiver installed without its ``media`` extra: ``--media yt-dlp`` is refused in one
    line that says how to install it (exit 2), before any request or file."""
    python = await asyncio.to_thread(python_without_yt_dlp, tmp_path / "venv")
    probe = [str(python), "-c", "import archiver, aiohttp; import yt_dlp"]
    premise = await asyncio.to_thread(subprocess.run, probe, capture_output=True, text=True)
    assert "No module named 'yt_dlp'" in premise.stderr, premise.stderr
    async with SiteServer() as site:
        site.add_page("/", '<video src="/clip.mp4"></video>')
        out = tmp_path / "out"
        command = [str(python), "-m", "archiver", "crawl", site.url("/"), "-o", str(out)]
        done = await asyncio.to_thread(
            subprocess.run,
            [*command, "--media", "yt-dlp"],
            capture_output=True,
            text=True,
            timeout=120,  # a hang guard
        )
        assert site.counters.hits == []
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "yt-dlp is not installed: pip install 'archiver[media]'" in lines[0]
    assert not (out / "warcs").exists()


README_CRAWL = "archiver crawl https://example.org/watch/ -o crawls/videos --media yt-dlp --wacz"


@documents(README_CRAWL)
async def test_the_readme_media_crawl_as_documented(
    doc: DocShell,
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811
) -> None:
    """The README's command line, the site a local Video.js page: the stream yt-dlp resolved
    is in the crawl's WARC files and WACZ, with yt-dlp's info record."""
    cwd = workdir(tmp_path)
    async with SiteServer() as site:
        build_site(site, hls_stream)
        page = site.url("/watch.html")
        done = await asyncio.to_thread(
            doc.run, README_CRAWL, cwd=cwd, replace={"https://example.org/watch/": page}
        )
    assert done.returncode == 0, done.stderr
    out = cwd / "crawls" / "videos"
    captured = {r.uri for r in responses(out / "warcs")}
    assert {site.url(f"/media/v0/seg{n}.ts") for n in range(3)} <= captured
    records = read_records(out / "warcs")
    assert [r.uri for r in records if r.type == "metadata"] == ["urn:yt-dlp:" + page]
    assert (out / "videos.wacz").is_file()


def unshare_allowed() -> bool:
    """Whether this machine lets a process move into a network namespace of its own, asked of
    the kernel in a process of its own (unshare(2) with CLONE_NEWNET, or with CLONE_NEWUSER)."""
    probe = (
        "import ctypes, sys; u = ctypes.CDLL(None).unshare;"
        " sys.exit(0 if u(0x40000000) == 0 or u(0x50000000) == 0 else 1)"
    )
    return subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0


async def test_yt_dlp_runs_in_a_network_namespace_of_its_own() -> None:
    """Where the kernel allows it, yt-dlp's process has no network at all (a namespace whose
    only interface is a loopback that is down): no code in it, yt-dlp's or a library's, can
    open a connection that bypasses the crawl. The resolver says which it is."""
    resolver = YtDlpResolver(ResolverConfig(processes=1))
    try:
        await resolver.start()
        [pid] = ytdlp_children()
        theirs = os.readlink(f"/proc/{pid}/ns/net")
        allowed = await asyncio.to_thread(unshare_allowed)
        assert resolver.isolated is allowed
        assert (theirs != os.readlink("/proc/self/ns/net")) is allowed
    finally:
        await resolver.close()
    assert ytdlp_children() == []


TWO_CLIPS = """<!doctype html><html><head><title>two clips</title></head><body>
<div id="player"></div>
<script>
// JW Player's set-up call, as pages write it (the library itself is not needed here)
jwplayer("player").setup({"playlist": [
  {"file": "media/a.mp4", "title": "a"}, {"file": "media/b.mp4", "title": "b"}]});
</script></body></html>"""
CLIP = 3_000  # bytes of each clip


@pytest.mark.parametrize(
    ("budget", "fetched"), [(CLIP, ["/media/a.mp4"]), (0, ["/media/a.mp4", "/media/b.mp4"])]
)
async def test_the_media_yt_dlp_resolves_stay_within_their_pages_budget(
    tmp_path: Path, budget: int, fetched: list[str]
) -> None:
    """yt-dlp resolves two clips from a JW Player playlist (relative URLs in a script: no static
    extractor finds them). With a budget of one clip, the first is fetched and the second is
    skipped as the page has spent its budget (one worker, so the first is fetched before the
    second is leased); with no budget (0) both are."""
    async with SiteServer() as site:
        site.add_page("/", '<a href="/two.html">two</a>')
        site.add_page("/two.html", TWO_CLIPS)
        for name in ("a", "b"):
            site.add_file(f"/media/{name}.mp4", bytes([ord(name)]) * CLIP, "video/mp4")
        out = tmp_path / "out"
        settings = fast_settings(
            out, site.url("/"), workers=1, media="yt-dlp", media_max_bytes=budget
        )
        result = await asyncio.wait_for(Crawler(settings).run(), 120)  # a hang guard
        assert result.status == "completed", result.reason
        served = sorted(hit.path for hit in site.counters.hits if hit.path.startswith("/media/"))
    assert served == fetched
    log = events(out)
    resolved = [e for e in log if e.get("event") == "yt-dlp"]
    assert [(e["url"], e["media"]) for e in resolved] == [(site.url("/two.html"), 2)]
    skipped = [e for e in log if "media-budget" in json.dumps(e)]
    if budget:
        assert [e.get("url") for e in skipped] == [site.url("/media/b.mp4")], skipped
    else:
        assert skipped == []


async def test_two_processes_each_resolve_with_their_own_yt_dlp(
    tmp_path: Path,
    hls_stream: dict[str, bytes],  # noqa: F811
) -> None:
    """``--processes 2 --media yt-dlp``: whichever process leases the page resolves it with
    its own yt-dlp; the stream is captured once and the info record written once."""
    async with SiteServer() as site:
        build_site(site, hls_stream)
        out = tmp_path / "out"
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "archiver", "crawl", site.url("/"), "--output", str(out),
            "--processes", "2", "--workers", "2", "--robots", "ignore", "--sitemaps", "off",
            "--per-host-delay", "0", "--min-free-disk", "0", "--quiet", "--progress", "off",
            "--media", "yt-dlp",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            output, _ = await asyncio.wait_for(process.communicate(), 300)  # a hang guard
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, output.decode(errors="replace")[-3000:]
        segments = [f"/media/v0/seg{n}.ts" for n in range(3)]
        expected = ["/", "/watch.html", "/media/stream.m3u8", "/media/v0/index.m3u8", *segments]
        assert sorted(hit.path for hit in site.counters.hits) == sorted(expected)
    records = read_records(out / "warcs")
    assert sorted(r.uri or "" for r in records if r.type == "response") == sorted(
        site.url(path) for path in expected
    )
    assert [r.uri for r in records if r.type == "metadata"] == [
        "urn:yt-dlp:" + site.url("/watch.html")
    ]
