"""Index benchmark: the CDXJ of N captures from the writer's journals vs cdxj-indexer.

1. **Generate** (in child processes, one writer per core): N captures (response + request records,
   small bodies, 100 hosts, a few 301s and 404s) written by archiver's own
   :class:`archiver.warc.writer.Writer` from :class:`archiver.warc.records.RecordFactory` records, the
   way a crawl writes them: WARC files under ``warcs/`` and the writer's CDXJ journals under
   ``state/journals/``. This also gives the writer's throughput (captures/s).
2. **archiver**: ``archiver.index.cdxj.build_index`` over the journals (what a crawl does at its end:
   an external byte-order merge sort of the lines the writer recorded), in a fresh process.
3. **cdxj-indexer** ``--sort`` over the same WARC files (it must read every record back).

Both outputs are compared: the design says they are the same lines in the same order.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make `benchlib` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import WORK, environment, measure

HOSTS = 100
BATCH = 512


def _exchange(i: int):  # type: ignore[no-untyped-def]  # archiver imported lazily
    from datetime import UTC, datetime  # noqa: PLC0415

    from archiver import digest  # noqa: PLC0415
    from archiver.models import Exchange  # noqa: PLC0415
    from archiver.spool import Spool  # noqa: PLC0415

    host = f"www.site{(i * 7919) % HOSTS:03d}.example.org"
    path = f"/section-{i % 97}/item-{i}.html" + (f"?page={i % 13}&sort=date" if i % 5 == 0 else "")
    url = f"http://{host}{path}"
    if i % 50 == 3:
        status, reason, ctype, body = 404, "Not Found", "text/plain", b"not found\n"
        extra = ""
    elif i % 37 == 5:
        status, reason, ctype, body = 301, "Moved Permanently", "text/html", b""
        extra = f"Location: {url}/\r\n"
    else:
        status, reason, ctype = 200, "OK", "text/html; charset=utf-8"
        body = (
            f"<!DOCTYPE html><html><head><title>item {i}</title></head><body><h1>Item {i}</h1>"
            f'<p>{"lorem ipsum dolor sit amet " * (4 + i % 9)}</p><a href="/">home</a></body></html>\n'
        ).encode()
        extra = ""
    head = (
        f"HTTP/1.1 {status} {reason}\r\nServer: bench\r\nContent-Type: {ctype}\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    raw = head + body
    request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: archiver-bench\r\n\r\n".encode()
    headers = [("Server", "bench"), ("Content-Type", ctype), ("Content-Length", str(len(body)))]
    if extra:
        headers.append(("Location", f"{url}/"))
    return Exchange(
        target_uri=url,
        date=datetime.now(UTC),
        request=request,
        response=Spool.from_bytes(raw),
        response_length=len(raw),
        status=status,
        headers=headers,
        block_digest=digest.digest_bytes("sha1", raw),
        payload_digest=digest.digest_bytes("sha1", body),
        payload_length=len(body),
        request_block_digest=digest.digest_bytes("sha1", request),
        request_payload_digest=digest.digest_bytes("sha1", b""),
        ip_address="192.0.2.1",
    )


async def _generate(directory: Path, start: int, end: int, shard: int) -> None:
    from archiver.index.cdxj import writer_journal  # noqa: PLC0415
    from archiver.warc.records import RecordFactory  # noqa: PLC0415
    from archiver.warc.writer import Writer, WriterConfig  # noqa: PLC0415

    factory = RecordFactory()
    config = WriterConfig(
        directory=directory / "warcs",
        journal=writer_journal(directory / "state" / "journals"),
        prefix="BENCH",
        host=f"bench{shard}",
    )
    writer = Writer(config, factory)
    writer.start()
    try:
        for first in range(start, end, BATCH):
            captures = [
                factory.capture(_exchange(i)) for i in range(first, min(first + BATCH, end))
            ]
            await asyncio.gather(*(writer.write(c) for c in captures))
    finally:
        await writer.close()


def generate_shard(directory: Path, start: int, end: int, shard: int) -> None:
    try:
        import uvloop  # noqa: PLC0415

        uvloop.run(_generate(directory, start, end, shard))
    except ImportError:
        asyncio.run(_generate(directory, start, end, shard))


def generate(directory: Path, count: int) -> None:
    """Write ``count`` captures with one writer process per core (each its own WARC files)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    shards = max(1, os.cpu_count() or 1)
    bounds = [count * k // shards for k in range(shards + 1)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "shard",
                str(directory),
                str(bounds[k]),
                str(bounds[k + 1]),
                str(k),
            ]
        )
        for k in range(shards)
    ]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("a generator shard failed")
    (directory / "DONE").write_text(str(count))


def _build_index_argv(journals: Path, output: Path) -> list[str]:
    code = (
        "import sys; from pathlib import Path; from archiver.index.cdxj import build_index; "
        "print(build_index([(Path(sys.argv[1]), '')], Path(sys.argv[2])))"
    )
    return [sys.executable, "-c", code, str(journals), str(output)]


def _digest(path: Path) -> tuple[int, str]:
    h = hashlib.sha1()
    lines = 0
    with open(path, "rb") as fh:
        for line in fh:
            h.update(line)
            lines += 1
    return lines, h.hexdigest()


def run(*, count: int, keep: bool, out: Callable[[str], None] = print) -> dict[str, Any]:
    work = WORK / "runs" / "index"
    corpus = work / f"corpus-{count}"
    work.mkdir(parents=True, exist_ok=True)
    out(
        f"== index: {count:,} captures ({2 * count:,} WARC records) written by archiver's Writer; "
        "CDXJ by archiver.index.cdxj.build_index (journals) vs cdxj-indexer --sort (WARCs)"
    )
    gen = None
    if not (corpus / "DONE").exists() or (corpus / "DONE").read_text() != str(count):
        gen = measure.run(
            [sys.executable, __file__, "generate", str(corpus), str(count)],
            log=work / "generate.log",
            timeout=3600,
        )
        if gen.rc != 0:
            raise SystemExit(f"bench: generating the WARCs failed; see {work / 'generate.log'}")
        out(
            f"   generated in {gen.wall_s:.1f} s ({count / gen.wall_s:,.0f} captures/s through the writer, "
            f"{gen.cpu_s:.1f} s CPU, peak RSS {gen.peak_rss_kb / 1024:.0f} MB)"
        )
    warcs = sorted((corpus / "warcs").glob("*.warc.gz"))
    warc_bytes = sum(p.stat().st_size for p in warcs)
    out(f"   {len(warcs)} WARC file(s), {warc_bytes / 1e6:.0f} MB")
    ours_out, theirs_out = work / "archiver.cdxj", work / "cdxj-indexer.cdxj"
    ours = measure.run(
        _build_index_argv(corpus / "state" / "journals", ours_out),
        log=work / "archiver.log",
        timeout=3600,
    )
    out(
        f"   archiver.index.cdxj.build_index: {ours.wall_s:7.2f} s wall {ours.cpu_s:7.2f} s CPU "
        f"{ours.peak_rss_kb / 1024:5.0f} MB  load {ours.load1:.2f}"
    )
    indexer = Path(sys.executable).parent / "cdxj-indexer"
    theirs = measure.run(
        [
            str(indexer),
            "--sort",
            "--dir-root",
            str(corpus / "warcs"),
            "-o",
            str(theirs_out),
            *map(str, warcs),
        ],
        log=work / "cdxj-indexer.log",
        timeout=7200,
    )
    out(
        f"   cdxj-indexer --sort:        {theirs.wall_s:7.2f} s wall {theirs.cpu_s:7.2f} s CPU "
        f"{theirs.peak_rss_kb / 1024:5.0f} MB  load {theirs.load1:.2f}"
    )
    lines_a, sha_a = _digest(ours_out)
    lines_b, sha_b = _digest(theirs_out)
    same = "identical" if sha_a == sha_b else f"DIFFERENT ({lines_a} vs {lines_b} lines)"
    if sha_a != sha_b:  # same lines in another order?
        a = sorted(ours_out.read_bytes().splitlines())
        b = sorted(theirs_out.read_bytes().splitlines())
        if a == b:
            same = "same lines, different order"
    report: dict[str, Any] = {
        "kind": "index",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": environment.machine(),
        "captures": count,
        "warc_files": len(warcs),
        "warc_bytes": warc_bytes,
        "generate": gen.as_dict() if gen else None,
        "archiver": ours.as_dict(),
        "cdxj_indexer": theirs.as_dict(),
        "index_lines": lines_a,
        "outputs": same,
    }
    if not keep:
        shutil.rmtree(corpus, ignore_errors=True)
        ours_out.unlink(missing_ok=True)
        theirs_out.unlink(missing_ok=True)
    return report


def format_report(r: dict[str, Any]) -> str:
    ours, theirs = r["archiver"], r["cdxj_indexer"]
    wall_ratio = ours["wall_s"] / theirs["wall_s"] if theirs["wall_s"] else float("nan")
    cpu_ratio = ours["cpu_s"] / theirs["cpu_s"] if theirs["cpu_s"] else float("nan")
    lines = environment.machine_lines(r["machine"])
    lines += [
        f"{r['when']}: CDXJ for {r['captures']:,} captures = {r['index_lines']:,} index lines "
        f"({2 * r['captures']:,} WARC records: response + request; {r['warc_files']} WARC files, "
        f"{r['warc_bytes'] / 1e6:,.0f} MB)",
        "",
        "| indexer | wall s | CPU s | peak RSS MB | lines/s (wall) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, m in (
        ("archiver.index.cdxj.build_index (merge-sorts the writer's journals)", ours),
        ("cdxj-indexer --sort (reads every record of the WARCs)", theirs),
    ):
        lines.append(
            f"| {name} | {m['wall_s']:.2f} | {m['cpu_s']:.2f} | {m['peak_rss_kb'] / 1024:.0f} "
            f"| {r['index_lines'] / m['wall_s']:,.0f} |"
        )
    lines.append("")
    verdict = "met" if wall_ratio <= 0.10 else "NOT met"
    lines.append(
        f"archiver ÷ cdxj-indexer: wall {wall_ratio:.3f}, CPU {cpu_ratio:.3f} (goal ≤ 0.10: {verdict}); "
        f"the two CDXJ files are {r['outputs']}; 1-min load during the runs: {ours['load1']:.2f} / "
        f"{theirs['load1']:.2f}."
    )
    gen = r.get("generate")
    if gen:
        lines.append(
            f"Writing the corpus through archiver's Writer (one process per core) took {gen['wall_s']:.1f} s "
            f"({r['captures'] / gen['wall_s']:,.0f} captures/s, {gen['cpu_s']:.1f} s CPU, "
            f"{1e6 * gen['cpu_s'] / r['captures']:.0f} µs CPU per capture including building the exchanges)."
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "generate":
        generate(Path(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 6 and sys.argv[1] == "shard":
        generate_shard(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit("usage: index1m.py generate DIR COUNT")
