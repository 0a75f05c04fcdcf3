"""The HTML report: built from a real crawl of the sample site plus hostile values, then
opened in headless Chromium over the DevTools protocol: it must render (a screenshot with the
charts' colours in it), log no console error or exception, and load nothing from the network.

Chromium is Debian's package. The test never skips: without it, it fails saying how to install
it (CI's .ci/run does).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from archiver.commands import report
from archiver.commands.report import ReportError, bar_chart, scan_log, time_chart, write_report
from archiver.commands.sample import create_app
from tests.conftest import run_crawl

HOSTILE_URL = (
    "http://evil.example/\"><script>console.error('xss')</script><img src=x onerror=alert(1)>"
)
HOSTILE_MIME = 'text/html"><svg onload=alert(2)>'
HOSTILE_ERROR = "</td></tr></table><script>alert(3)</script>"
WINDOW = (1200, 2000)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--mute-audio",
    # nothing may leave the machine, whatever the page asks for
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    f"--window-size={WINDOW[0]},{WINDOW[1]}",
)


# -- a tiny PNG decoder (8-bit RGB/RGBA, not interlaced: what Chromium writes) --------------------


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and pixels of a PNG (PNG spec section 9: filters None/Sub/Up/Avg/Paeth)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0]
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    previous = bytearray(stride)
    pixels: list[tuple[int, ...]] = []
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = previous[i]
            c = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        pixels.extend(tuple(line[x : x + 3]) for x in range(0, stride, bpp))
        previous = line
    return width, height, pixels


def hex_rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


# -- headless Chromium over the DevTools protocol --------------------------------------------------


@dataclass
class PageResult:
    errors: list[str]
    requests: list[str]
    facts: dict[str, Any]
    screenshot: bytes


@dataclass
class Chromium:
    """One headless Chromium, driven through the DevTools protocol with aiohttp's websocket."""

    proc: asyncio.subprocess.Process
    ws: aiohttp.ClientWebSocketResponse
    events: list[dict[str, Any]] = field(default_factory=list)
    _next_id: int = 0
    _pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _waiters: dict[str, asyncio.Event] = field(default_factory=dict)

    async def read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data:
                future = self._pending.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_result(data)
            else:
                self.events.append(data)
                waiter = self._waiters.get(data.get("method", ""))
                if waiter is not None:
                    waiter.set()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        await self.ws.send_json({"id": self._next_id, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 30)
        assert "error" not in reply, reply
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def open(self, url: str) -> PageResult:
        self.events.clear()
        loaded = self._waiters["Page.loadEventFired"] = asyncio.Event()
        for domain in ("Page", "Runtime", "Log", "Network"):
            await self.call(f"{domain}.enable")
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=WINDOW[0],
            height=WINDOW[1],
            deviceScaleFactor=1,
            mobile=False,
        )
        await self.call("Page.navigate", url=url)
        await asyncio.wait_for(loaded.wait(), 30)
        facts = await self.call(
            "Runtime.evaluate",
            expression=(
                "JSON.stringify({title: document.title,"
                " charts: document.querySelectorAll('svg.chart').length,"
                " bars: document.querySelectorAll('svg.chart rect').length,"
                " scripts: document.scripts.length,"
                " sections: document.querySelectorAll('section').length,"
                " text: document.body.innerText})"
            ),
            returnByValue=True,
        )
        shot = await self.call("Page.captureScreenshot", format="png")
        errors, requests = [], []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                errors.append(
                    f"exception: {details.get('exception', {}).get('description', details)}"
                )
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                errors.append(f"console.{params['type']}: {params['args']}")
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                errors.append(f"log: {params['entry']['text']}")
            elif method == "Network.requestWillBeSent":
                requested = params["request"]["url"]
                if not requested.startswith(("file:", "data:", "about:")):
                    requests.append(requested)
        return PageResult(
            errors,
            requests,
            json.loads(facts["result"]["value"]),
            base64.b64decode(shot["data"]),
        )


def chromium_binary() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "Chromium is not installed, so the HTML report cannot be checked in a browser: "
        "install Debian's package (apt-get install -y chromium); CI's .ci/run installs it",
        pytrace=False,
    )


@contextlib.asynccontextmanager
async def chromium(profile: Path) -> AsyncIterator[Chromium]:
    proc = await asyncio.create_subprocess_exec(
        chromium_binary(),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        "about:blank",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    stderr = proc.stderr
    seen: list[str] = []

    async def devtools_url() -> str:
        while True:
            line = (await stderr.readline()).decode("utf-8", "replace")
            if not line:
                raise AssertionError("chromium exited:\n" + "".join(seen[-20:]))
            seen.append(line)
            match = re.search(r"DevTools listening on (ws://\S+)", line)
            if match:
                return match.group(1)

    async def drain() -> None:
        while await stderr.readline():
            pass

    drainer: asyncio.Task[None] | None = None
    try:
        browser_ws = await asyncio.wait_for(devtools_url(), 60)
        drainer = asyncio.create_task(drain())
        port = re.search(r":(\d+)/", browser_ws)
        assert port is not None
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port.group(1)}/json/list") as resp:
                targets = await resp.json()
            page = next(t for t in targets if t["type"] == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                browser = Chromium(proc, ws)
                reader = asyncio.create_task(browser.read())
                try:
                    yield browser
                finally:
                    reader.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reader
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        if drainer is not None:
            drainer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drainer


# -- the crawl the report describes -------------------------------------------------------------


@contextlib.asynccontextmanager
async def sample_site() -> AsyncIterator[str]:
    runner = web.AppRunner(create_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()


def add_hostile_values(crawl: Path) -> None:
    """What a hostile site could put in the crawl's own records: URLs, MIME types, errors."""
    with open(crawl / "crawl.log.jsonl", "a", encoding="utf-8") as fh:
        for event in (
            {"event": "fetch", "url": HOSTILE_URL, "via": HOSTILE_URL, "outcome": "failed",
             "reason": "connect-error", "error": HOSTILE_ERROR, "level": "info"},
            {"event": "skip", "url": HOSTILE_URL, "via": None, "reason": "scope", "level": "info"},
            {"event": "fetch", "url": HOSTILE_URL, "status": 503, "outcome": "captured",
             "level": "info"},
            {"event": "extract-error", "url": HOSTILE_URL, "error": HOSTILE_ERROR,
             "level": "warning"},
        ):  # fmt: skip
            fh.write(json.dumps(event) + "\n")
    path = crawl / "summary.json"
    summary = json.loads(path.read_text())
    summary["failures"]["connect-error"] = 1
    summary["skips"]["scope"] = summary["skips"].get("scope", 0) + 1
    summary["by_mime"][HOSTILE_MIME] = 1
    summary["by_host"]['evil.example"><b>'] = 1
    summary["largest"].append({"url": HOSTILE_URL, "bytes": 1, "mime": HOSTILE_MIME})
    summary["traps"] = [{"kind": "repeated-segment", "pattern": HOSTILE_URL, "skipped": 7}]
    summary["seeds"].append(HOSTILE_URL)
    path.write_text(json.dumps(summary))


@pytest.fixture
async def crawl_dir(tmp_path: Path) -> Path:
    async with sample_site() as url:
        result = await run_crawl(tmp_path / "crawl", url)
    assert result.status == "completed"
    add_hostile_values(tmp_path / "crawl")
    return tmp_path / "crawl"


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: Counter[str] = Counter()
        self.attributes: set[str] = set()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        for name, value in attrs:
            self.attributes.add(name)
            if name in ("src", "href", "action", "xlink:href"):
                self.urls.append(value or "")


def test_escaping_and_self_contained(crawl_dir: Path) -> None:
    html = write_report(crawl_dir, crawl_dir / "report.html").read_text(encoding="utf-8")
    parsed = TagCollector()
    parsed.feed(html)
    # the hostile values made no element and no attribute: they are text
    assert not {"script", "img", "iframe", "object", "a"} & set(parsed.tags), parsed.tags
    assert not [name for name in parsed.attributes if name.startswith("on")]
    assert parsed.urls == []  # nothing to fetch, nothing to click through to the live web
    assert "&lt;script&gt;console.error(&#x27;xss&#x27;)&lt;/script&gt;" in html
    assert "evil.example&quot;&gt;&lt;b&gt;" in html
    assert "default-src 'none'" in html


async def test_report_renders_in_headless_chromium(crawl_dir: Path, tmp_path: Path) -> None:
    path = write_report(crawl_dir, crawl_dir / "report.html")
    async with chromium(tmp_path / "profile") as browser:
        page = await browser.open(path.as_uri())
        # the harness catches what it should: errors, exceptions and network use
        control = tmp_path / "control.html"
        control.write_text(
            "<html><body><p>control</p><img src='http://127.0.0.1:9/x.png'>"
            "<script>console.error('boom'); undefinedFunction();</script></body></html>"
        )
        bad = await browser.open(control.as_uri())
    shot = crawl_dir / "report.png"
    shot.write_bytes(page.screenshot)
    print(f"screenshot: {shot}")

    assert any("boom" in e for e in bad.errors) and any(
        "undefinedFunction" in e for e in bad.errors
    )
    assert bad.requests == ["http://127.0.0.1:9/x.png"]

    assert page.errors == [], page.errors
    assert page.requests == [], page.requests
    facts = page.facts
    assert facts["title"].startswith("Crawl report: http://127.0.0.1:")
    assert facts["scripts"] == 0  # the hostile values stayed text
    assert facts["charts"] >= 5 and facts["bars"] >= 10 and facts["sections"] >= 10
    for text in (
        "Captures over time",
        "MIME types",
        "Top hosts",
        "Largest resources",
        "Failed URLs",
        "Skipped URLs",
        "Files written",
        "image/png",
        "revisits",
    ):
        assert text in facts["text"], text
    assert HOSTILE_URL in facts["text"]  # shown, as text

    width, height, pixels = decode_png(page.screenshot)
    assert (width, height) == WINDOW
    colours = Counter(pixels)
    assert len(colours) > 50, "the screenshot is blank"
    _, count = colours.most_common(1)[0]  # the background
    assert count < 0.9 * len(pixels)
    for name in ("2xx", "3xx", "4xx"):
        assert hex_rgb(report.STATUS_COLORS[name]) in colours, f"no {name} bar in the screenshot"
    assert hex_rgb(report.PALETTE[0]) in colours


def test_missing_summary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"no summary\.json"):
        write_report(tmp_path, tmp_path / "report.html")
    with pytest.raises(ReportError, match="not a directory"):
        write_report(tmp_path / "nope", tmp_path / "report.html")


def test_charts_with_nothing_to_show() -> None:
    assert "None." in bar_chart([], label="x")
    assert "No captures." in time_chart([], 0.0)
    svg = time_chart([[0, 3], [5000, 1]], 5000.5)
    assert svg.count("<rect") == 2 and "per 42 s" in svg


def test_scan_log_keeps_bounded_examples() -> None:
    lines = [
        json.dumps({"event": "skip", "url": f"http://x/{n}", "reason": "scope"}) for n in range(100)
    ]
    found = scan_log([*lines, "not json", "[1, 2]", '{"event": "crawl-start"}'])
    assert len(found.skips["scope"]) == report.EXAMPLES_PER_REASON
    assert found.runs == 1 and found.lines == 101


def test_a_page_checked_again_is_reported_by_its_last_check(tmp_path: Path) -> None:
    """A page whose check was made again (a resumed ``--qa`` crawl, a patch) has two lines in
    ``qa.jsonl``: the report lists it once, as the last one says."""
    first = {
        "url": "http://e.test/",
        "status": "incomplete",
        "misses": [{"url": "http://e.test/a"}],
    }
    again = {"url": "http://e.test/", "status": "complete", "misses": []}
    other = {"url": "http://e.test/b", "status": "complete", "misses": []}
    text = "".join(json.dumps(line) + "\n" for line in (first, other, again))
    (tmp_path / "qa.jsonl").write_text(text)
    assert report.qa_lines(tmp_path) == [again, other]


if __name__ == "__main__":  # pragma: no cover - handy for looking at a report by hand
    sys.exit(pytest.main([__file__, "-s"]))
