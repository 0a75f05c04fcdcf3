"""Memory at write time: one response body of 1 GiB (``--quick``: 256 MiB), crawled whole.

The body comes from the local server's ``/bytes/N`` (its own process): random bytes that do
not compress, so the WARC record is as large as the body, the writer's worst case. archiver
crawls that one URL with ``--max-body-size 0`` (no cut) and long timeouts; its peak RSS is
read from /proc while it runs. The fetch spools the body to a file, the writer compresses it
from there a chunk at a time, so the peak should not grow with the body: the fixed cost
(archiver crawling one small page, measured in the same run) is subtracted to give the
marginal cost of the large body. GNU wget fetching the same URL into a WARC
(``--warc-file``) is the peer. The WARC archiver wrote is checked: one response record
whose block is the status line, the headers and all N bytes.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from benchlib import WORK, environment, measure, peers
from benchlib.slowserver import ServerProcess

#: the goal: what a body costs archiver at write time beyond its fixed cost
GOAL_MARGINAL = 64 * 1024 * 1024


def _response_block_length(warcs: Path) -> int:
    """Length of the largest response record's block in archiver's WARC files."""
    from warcio.archiveiterator import ArchiveIterator  # noqa: PLC0415

    largest = 0
    for path in sorted(warcs.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh, no_record_parse=True):
                if record.rec_type == "response":
                    length = 0
                    while chunk := record.raw_stream.read(1 << 20):
                        length += len(chunk)
                    largest = max(largest, length)
    return largest


def run(*, size: int, keep: bool, out: Any = print) -> dict[str, Any]:
    work = WORK / "runs" / "large-body"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    frontier_args, frontier_note = peers.frontier_choice(None)
    long_fetch = ["--max-body-size", "0", "--fetch-timeout", "1h", "--read-timeout", "5m"]
    out(
        f"== memory at write time: one {size / 2**20:,.0f} MiB body that does not compress; "
        f"archiver {' '.join(long_fetch)}; {frontier_note}"
    )
    report: dict[str, Any] = {
        "kind": "large-body",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "size": size,
        "frontier": frontier_note,
    }
    t0 = time.monotonic()
    with ServerProcess(work / "server", delay=0.0) as server:
        base = peers.run_archiver(
            f"{server.base}/fan/0", work / "base", workers=1, frontier_args=frontier_args
        )
        report["baseline"] = base.as_dict()
        out(f"   archiver crawling one small page (its fixed cost): peak RSS {_mb(base.m)} MB")
        row = peers.run_archiver(
            f"{server.base}/bytes/{size}",
            work / "archiver",
            workers=1,
            frontier_args=frontier_args,
            extra_args=long_fetch,
            timeout=3600,
        )
        report["archiver"] = row.as_dict()
        block = _response_block_length(work / "archiver" / "crawl" / "warcs")
        report["archiver_block"] = block
        out(
            f"   archiver: {row.m.wall_s:.1f} s, peak RSS {_mb(row.m)} MB, WARC "
            f"{row.warc_bytes / 2**20:,.0f} MiB, response block {block:,} bytes; rc={row.m.rc}"
        )
        wget = peers.run_wget_one(f"{server.base}/bytes/{size}", work / "wget", timeout=3600)
        report["wget"] = wget.as_dict()
        out(
            f"   wget --warc-file: {wget.m.wall_s:.1f} s, peak RSS {_mb(wget.m)} MB, WARC "
            f"{wget.warc_bytes / 2**20:,.0f} MiB; rc={wget.m.rc}"
        )
    report["elapsed_s"] = round(time.monotonic() - t0, 1)
    if not keep:
        for name in ("base", "archiver", "wget"):
            shutil.rmtree(work / name, ignore_errors=True)
    return report


def _mb(m: measure.Measurement) -> str:
    return f"{m.peak_rss_kb / 1024:,.0f}"


def format_report(r: dict[str, Any]) -> str:
    a, base, wget, size = r["archiver"], r["baseline"], r["wget"], r["size"]
    marginal = (a["peak_rss_kb"] - base["peak_rss_kb"]) * 1024
    whole = a["rc"] == 0 and r["archiver_block"] > size
    lines = environment.machine_lines(r["machine"])
    lines += [
        f"{r['when']}: one {size / 2**20:,.0f} MiB response body of random bytes from a local "
        f"server; archiver --max-body-size 0; {r['frontier']}",
        "",
        "| tool | wall s | CPU s | peak RSS MB | WARC MiB |",
        "|---|---:|---:|---:|---:|",
        f"| archiver, one small page (fixed cost) | {base['wall_s']:.1f} | {base['cpu_s']:.1f} "
        f"| {base['peak_rss_kb'] / 1024:,.0f} | - |",
        f"| archiver, the large body | {a['wall_s']:.1f} | {a['cpu_s']:.1f} "
        f"| {a['peak_rss_kb'] / 1024:,.0f} | {a['warc_bytes'] / 2**20:,.0f} |",
        f"| wget --warc-file (peer) | {wget['wall_s']:.1f} | {wget['cpu_s']:.1f} "
        f"| {wget['peak_rss_kb'] / 1024:,.0f} | {wget['warc_bytes'] / 2**20:,.0f} |",
        "",
        f"The large body costs archiver {marginal / 2**20:,.1f} MiB over its fixed cost "
        f"({100 * marginal / size:.1f} % of the body).",
        f"Goals: the body archived whole (one response record of {r['archiver_block']:,} bytes, "
        f"the body and its header block): {'met' if whole else 'NOT met'}; at most "
        f"{GOAL_MARGINAL / 2**20:.0f} MiB over the fixed cost whatever the body's size: "
        f"{'met' if marginal <= GOAL_MARGINAL else 'NOT met'}.",
        f"\n(benchmark took {r['elapsed_s']} s)",
    ]
    return "\n".join(lines)
