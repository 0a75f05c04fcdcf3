"""End to end: a static crawl of a local site that names its URLs in every way but HTML and CSS.

The site has a page with a ``Link: rel=preload`` header (the stylesheet is named nowhere else), a
module script importing another and one dynamically, an inline script fetching a JSON API that
names a page, an RSS feed whose items and enclosure are named only there, a PDF made here with a
link annotation to a page, an HLS stream of three segments encoded here by ffmpeg behind a
master playlist whose second variant is over the bit-rate cap (never fetched), and a DASH
manifest. The crawl must capture every URL exactly once, and its log must name the extractor
that found each; the summary counts per extractor what it queued and what came back 4xx. Then
ReplayWeb.page, in Chromium, plays the HLS video from the crawl's WACZ: the video's
``currentTime`` advances, so the playlist and segments the crawl captured are what the player
asked for.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pypdf import PdfWriter
from pypdf.annotations import Link

from archiver.run.crawler import Crawler
from tests.conftest import fast_settings
from tests.support.replaywebpage import ReplayWebPage
from tests.support.site import SiteServer
from tests.support.warcs import responses

HOME = """<!doctype html><html><head><title>home</title>
<script type="module" src="/app.js"></script>
<script>fetch("/api/items.json").then((r) => r.json());</script>
</head><body>
<a href="/feed.xml">feed</a> <a href="/doc.pdf">report</a> <a href="/dash.html">dash</a>
<a href="/missing-in-page.html">gone</a>
<video id="v" poster="/media/poster.jpg" muted playsinline>
<source src="/media/stream.m3u8" type="application/vnd.apple.mpegurl"></video>
<script>
// The smallest HLS player over Media Source Extensions (what hls.js does, without adaptation):
// its requests are fetches, which ReplayWeb.page's service worker answers from the WACZ.
(async () => {
  const video = document.getElementById("v");
  const lines = async (url) => (await (await fetch(url)).text()).split("\\n");
  const master = video.querySelector("source").src;
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
  // a transport stream's first timestamp is rarely 0: start where the data starts
  video.currentTime = video.buffered.start(0);
  document.body.dataset.start = String(video.buffered.start(0));
  await video.play();
})().catch((error) => { document.body.dataset.playerError = String(error); });
</script></body></html>"""

FEED = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>news</title><link>/</link>
<item><title>one</title><link>/articles/1.html</link><guid>/articles/1.html</guid>
<enclosure url="/media/ep1.mp3" type="audio/mpeg" length="4"/></item>
<item><title>two</title><link>/articles/2.html</link><guid isPermaLink="false">n2</guid></item>
</channel></rss>"""

MASTER = b"""#EXTM3U
#EXT-X-STREAM-INF:BANDWIDTH=300000,RESOLUTION=160x120,CODECS="avc1.42c00d"
v0/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=40000000,RESOLUTION=3840x2160
v1/index.m3u8
"""

MPD = b"""<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"
  minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
 <Period><AdaptationSet mimeType="video/mp4">
  <SegmentTemplate timescale="1000" duration="2000" startNumber="1"
    initialization="dash/$RepresentationID$-init.mp4" media="dash/$RepresentationID$-$Number$.m4s"/>
  <Representation id="lo" bandwidth="200000"/>
  <Representation id="hi" bandwidth="50000000"/>
 </AdaptationSet></Period>
</MPD>"""

#: every URL the crawl must capture, with the extractor that must be named for it ("" for
#: the seed)
EXPECTED = {
    "/": "",
    "/app.js": "html",
    "/lib.js": "js-module",
    "/lazy.js": "js-module",
    "/style.css": "link-header",
    "/bg.png": "css",
    "/api/items.json": "js-string",
    "/from-json.html": "json",
    "/feed.xml": "html",
    "/articles/1.html": "feed",
    "/articles/2.html": "feed",
    "/media/ep1.mp3": "feed",
    "/doc.pdf": "html",
    "/from-pdf.html": "pdf",
    "/dash.html": "html",
    "/media/manifest.mpd": "html",
    "/media/dash/lo-init.mp4": "dash",
    "/media/dash/lo-1.m4s": "dash",
    "/media/dash/lo-2.m4s": "dash",
    "/media/stream.m3u8": "html",
    "/media/poster.jpg": "html",
    "/media/v0/index.m3u8": "hls",
    "/media/v0/seg0.ts": "hls",
    "/media/v0/seg1.ts": "hls",
    "/media/v0/seg2.ts": "hls",
    "/missing-in-page.html": "html",
}


def make_pdf(target: str) -> bytes:
    """A one-page PDF whose only link is a URI link annotation to ``target``."""
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    writer.add_annotation(page_number=0, annotation=Link(rect=(10, 10, 150, 40), url=target))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(scope="session")
def hls_stream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Three one-second H.264 segments and their media playlist, encoded here by ffmpeg."""
    ffmpeg = shutil.which("ffmpeg")
    assert ffmpeg is not None, "ffmpeg is missing: scripts/test installs it (Debian ffmpeg)"
    work = tmp_path_factory.mktemp("hls")
    subprocess.run(
        [ffmpeg, "-loglevel", "error", "-f", "lavfi", "-i",
         "testsrc=duration=3:size=160x120:rate=10", "-c:v", "libx264", "-profile:v",
         "baseline", "-g", "10", "-pix_fmt", "yuv420p", "-f", "hls", "-hls_time", "1",
         "-hls_playlist_type", "vod", "-hls_segment_filename", str(work / "seg%d.ts"),
         str(work / "index.m3u8")],
        check=True,
        timeout=120,
    )  # fmt: skip
    return {path.name: path.read_bytes() for path in work.iterdir()}


def build_site(site: SiteServer, stream: dict[str, bytes]) -> None:
    site.add_page("/", HOME, headers={"Link": "</style.css>; rel=preload; as=style"})
    site.add_file("/style.css", b"body { background: url(/bg.png) }", "text/css")
    site.add_file("/bg.png", b"\x89PNG\r\n\x1a\n", "image/png")
    site.add_file(
        "/app.js",
        b'import { x } from "./lib.js";\nconst later = () => import("./lazy.js");\n',
        "text/javascript",
    )
    site.add_file("/lib.js", b"export const x = 1;\n", "text/javascript")
    site.add_file("/lazy.js", b"export default 2;\n", "text/javascript")
    site.add_file(
        "/api/items.json",
        json.dumps({"items": [{"title": "a", "url": "/from-json.html"}, "plain text"]}).encode(),
        "application/json",
    )
    for path in ("/from-json.html", "/articles/1.html", "/articles/2.html", "/from-pdf.html"):
        site.add_page(path, f"<title>{path}</title><p>{path}</p>")
    site.add_file("/feed.xml", FEED, "application/rss+xml")
    site.add_file("/media/ep1.mp3", b"ID3\x04", "audio/mpeg")
    site.add_file("/doc.pdf", make_pdf(site.url("/from-pdf.html")), "application/pdf")
    site.add_page("/dash.html", '<video src="/media/manifest.mpd"></video>')
    site.add_file("/media/manifest.mpd", MPD, "application/dash+xml")
    for name in ("lo-init.mp4", "lo-1.m4s", "lo-2.m4s"):
        site.add_file(f"/media/dash/{name}", b"\x00\x00\x00\x08free", "video/mp4")
    site.add_file("/media/stream.m3u8", MASTER, "application/vnd.apple.mpegurl")
    site.add_file("/media/poster.jpg", b"\xff\xd8\xff\xd9", "image/jpeg")
    for name, body in stream.items():
        kind = "application/vnd.apple.mpegurl" if name.endswith(".m3u8") else "video/mp2t"
        site.add_file(f"/media/v0/{name}", body, kind)
    site.add_page("/missing-in-page.html", "<p>gone</p>", status=404)


async def test_a_static_crawl_follows_every_kind_of_link_once_and_names_its_extractor(
    tmp_path: Path, hls_stream: dict[str, bytes]
) -> None:
    async with SiteServer() as site:
        build_site(site, hls_stream)
        out = tmp_path / "out"
        settings = fast_settings(out, site.url("/"), workers=4, wacz=True)
        result = await Crawler(settings).run()
        assert result.status == "completed", result.reason

        captured = [r.uri or "" for r in responses(out / "warcs")]
        assert sorted(captured) == sorted(site.url(path) for path in EXPECTED)
        for path in EXPECTED:  # the server saw each once; the 4K variant never
            assert site.counters.count(path) == 1, path
        assert site.counters.count("/media/v1/index.m3u8") == 0

        events = [json.loads(line) for line in (out / "crawl.log.jsonl").read_text().splitlines()]
        fetched = {e["url"]: e.get("found_by", "") for e in events if e.get("event") == "fetch"}
        assert fetched == {site.url(path): name for path, name in EXPECTED.items()}

        summary = json.loads((out / "summary.json").read_text())
        queued = {name: counts["queued"] for name, counts in summary["extractors"].items()}
        names = [name for name in EXPECTED.values() if name]
        assert queued == {name: names.count(name) for name in set(names)}
        client_errors = {n: c["4xx"] for n, c in summary["extractors"].items() if c["4xx"]}
        assert client_errors == {"html": 1}

        wacz = next(out.glob("*.wacz"))
        async with ReplayWebPage(wacz, tmp_path / "replay-browser") as replay:
            played = await replay.value_of(
                site.url("/"),
                # seconds played since the first frame, once the player has started
                "document.body.dataset.start ? document.getElementById('v').currentTime"
                " - Number(document.body.dataset.start) : -1",
                lambda value: isinstance(value, int | float) and value > 0.5,
            )
        assert played > 0.5
