"""The extractors' bounds on large documents: time and memory, beside a peer parser.

    scripts/bench --extract        (or: python scripts/benchlib/extractbounds.py [--quick])

Four documents, generated here (deterministic), each read by archiver's extractor as a crawl
reads it (default caps: 10,000 links per document, 1,000 PDF pages, 10 s of CPU per PDF) and by a peer
that reads the same format in full, in the same run:

* a **50 MB PDF** (5,000 pages, one URI link annotation each, and a 45 MB stream): archiver's
  reader runs in its child process (:mod:`archiver.extract.isolated`) under its CPU budget and
  1 GiB address-space cap; the peer is pypdf reading every page's annotations in a child
  process with no limit. (In a crawl a PDF over the 8 MiB a fetch keeps for extraction is not
  read at all: logged ``pdf-not-read``.) Memory is the child's peak RSS.
* an **RSS feed of 100,000 items**: ``extract_feed`` (streaming expat) against feedparser;
* an **HLS media playlist of 100,000 segments**: ``extract_hls`` against the m3u8 library;
* a **JSON document of 1,000,000 strings** (one in ten a root-relative URL):
  ``json_url_strings`` (every URL string, no cap) and ``extract_json`` against ``json.loads``.

Memory for the in-process ones is tracemalloc's peak of Python allocations during the call.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make `benchlib` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import WORK, environment

URL = "http://bench.example/docs/"


def make_pdf(path: Path, pages: int, padding: int) -> None:
    from pypdf import PdfWriter  # noqa: PLC0415
    from pypdf.annotations import Link  # noqa: PLC0415
    from pypdf.generic import DecodedStreamObject, NameObject  # noqa: PLC0415

    writer = PdfWriter()
    for number in range(pages):
        writer.add_blank_page(width=200, height=200)
        link = Link(rect=(10, 10, 100, 30), url=f"{URL}page-{number}.html")
        writer.add_annotation(page_number=number, annotation=link)
    blob = DecodedStreamObject()
    blob.set_data(bytes(range(256)) * (padding // 256))
    writer._root_object[NameObject("/Padding")] = writer._add_object(blob)
    with path.open("wb") as fh:
        writer.write(fh)


def make_feed(items: int) -> bytes:
    parts = [b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>']
    for n in range(items):
        parts.append(
            b"<item><title>item %d</title><link>%sarticle-%d.html</link>"
            b'<enclosure url="%saudio-%d.mp3" length="1" type="audio/mpeg"/></item>'
            % (n, URL.encode(), n, URL.encode(), n)
        )
    parts.append(b"</channel></rss>")
    return b"".join(parts)


def make_playlist(segments: int) -> bytes:
    lines = [b"#EXTM3U", b"#EXT-X-TARGETDURATION:4", b"#EXT-X-PLAYLIST-TYPE:VOD"]
    for n in range(segments):
        lines += [b"#EXTINF:4.000,", b"seg-%06d.ts" % n]
    lines.append(b"#EXT-X-ENDLIST")
    return b"\n".join(lines) + b"\n"


def make_json(strings: int) -> bytes:
    values = [f"/items/{n}.html" if n % 10 == 0 else f"value number {n}" for n in range(strings)]
    return json.dumps({"data": values}).encode()


def in_process(function: Callable[[], Any]) -> dict[str, Any]:
    """Seconds of one call (untraced), tracemalloc's peak (MB) in a second call, and what it
    found."""
    gc.collect()
    started = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - started
    gc.collect()
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"seconds": round(seconds, 3), "peak_mb": round(peak / 1e6, 1), "found": result}


def _child_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def pdf_rows(path: Path) -> list[dict[str, Any]]:
    from archiver.extract.isolated import read_pdf  # noqa: PLC0415

    body = path.read_bytes()
    started = time.perf_counter()
    found = asyncio.run(read_pdf(body, URL + "big.pdf"))
    ours = {
        "seconds": round(time.perf_counter() - started, 3),
        "peak_mb": round(_child_peak_mb(), 1),
        "found": f"{len(found.links.pages)} links, {found.pages}/{found.page_count} pages"
        + (f" ({found.error})" if found.error else ""),
    }
    peer_code = (
        "import sys, time; from pypdf import PdfReader; r = PdfReader(sys.argv[1]); n = 0\n"
        "for p in r.pages:\n"
        "    for a in (p.get('/Annots') or []):\n"
        "        n += '/URI' in a.get_object().get('/A', {})\n"
        "print(n)"
    )
    started = time.perf_counter()
    peer = subprocess.run(
        [sys.executable, "-c", peer_code, str(path)], capture_output=True, text=True, check=True
    )
    peer_row = {
        "seconds": round(time.perf_counter() - started, 3),
        "found": f"{peer.stdout.strip()} links, all pages",
    }
    # ru_maxrss of children is the largest of them so far: archiver's child ran first, so the
    # second reading is the peer's unless the peer took less
    return [
        {
            "document": f"PDF, {len(body) / 1e6:.0f} MB",
            "reader": "archiver (child process)",
            **ours,
        },
        {
            "document": f"PDF, {len(body) / 1e6:.0f} MB",
            "reader": "pypdf, every page, no limit",
            **peer_row,
            "peak_mb": round(_child_peak_mb(), 1),
        },
    ]


def run(*, quick: bool = False, keep: bool = False) -> dict[str, Any]:
    from archiver.extract.feeds import extract_feed  # noqa: PLC0415
    from archiver.extract.hls import extract_hls  # noqa: PLC0415
    from archiver.extract.jsondoc import extract_json, json_url_strings  # noqa: PLC0415
    from archiver.extract.media import MediaLimits  # noqa: PLC0415

    scale = 10 if quick else 1
    work = WORK / "extract"
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []

    pdf = work / f"big-{scale}.pdf"
    if not pdf.exists():
        make_pdf(pdf, 5000 // scale, 45_000_000 // scale)
    rows += pdf_rows(pdf)

    feed = make_feed(100_000 // scale)
    label = f"RSS, {100_000 // scale:,} items ({len(feed) / 1e6:.0f} MB)"
    ours = in_process(lambda: len(extract_feed(feed, URL + "feed.xml").links.pages))
    rows.append({"document": label, "reader": "archiver extract_feed (cap 10,000)", **ours})
    ours = in_process(
        lambda: len(extract_feed(feed, URL + "feed.xml", max_links=10**9).links.pages)
    )
    rows.append({"document": label, "reader": "archiver extract_feed (no cap)", **ours})
    import feedparser  # noqa: PLC0415

    peer = in_process(lambda: len(feedparser.parse(io.BytesIO(feed)).entries))
    rows.append({"document": label, "reader": "feedparser", **peer})

    playlist = make_playlist(100_000 // scale)
    label = f"HLS, {100_000 // scale:,} segments ({len(playlist) / 1e6:.1f} MB)"
    unbounded = MediaLimits(max_bytes=10**18)
    ours = in_process(
        lambda: len(extract_hls(playlist, URL + "i.m3u8", limits=unbounded).links.requisites)
    )
    rows.append({"document": label, "reader": "archiver extract_hls (cap 10,000)", **ours})
    import m3u8  # noqa: PLC0415

    peer = in_process(lambda: len(m3u8.loads(playlist.decode()).segments))
    rows.append({"document": label, "reader": "m3u8", **peer})

    document = make_json(1_000_000 // scale)
    label = f"JSON, {1_000_000 // scale:,} strings ({len(document) / 1e6:.0f} MB)"
    text = document.decode()
    ours = in_process(lambda: sum(1 for _ in json_url_strings(text)))
    rows.append({"document": label, "reader": "archiver json_url_strings (no cap)", **ours})
    ours = in_process(lambda: len(extract_json(document, URL + "api.json").pages))
    rows.append({"document": label, "reader": "archiver extract_json (cap 10,000)", **ours})
    peer = in_process(lambda: len(json.loads(document)["data"]))
    rows.append({"document": label, "reader": "json.loads", **peer})
    if not keep:
        pdf.unlink(missing_ok=True)
    return {"kind": "extract", "machine": environment.machine(), "rows": rows}


def format_report(report: dict[str, Any]) -> str:
    lines = [
        "### Extractor bounds: large documents, archiver beside a peer (same run)",
        "",
        *environment.machine_lines(report["machine"]),
        "",
        "| document | reader | seconds | peak memory MB | found |",
        "|---|---|---:|---:|---|",
    ]
    for row in report["rows"]:
        peak = row.get("peak_mb")
        lines.append(
            f"| {row['document']} | {row['reader']} | {row['seconds']:.2f} "
            f"| {'' if peak is None else f'{peak:.1f}'} | {row['found']} |"
        )
    lines += [
        "",
        "Memory: tracemalloc's peak of Python allocations for in-process readers; the PDF "
        "readers' is the child process's peak RSS (the largest of the two children).",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="documents a tenth the size")
    args = parser.parse_args()
    report = run(quick=args.quick)
    print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
