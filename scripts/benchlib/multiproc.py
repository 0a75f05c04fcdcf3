"""Run one crawl as several ``archiver crawl`` processes sharing a Redis frontier, as one command.

    python multiproc.py --processes 2 -- URL --output DIR [archiver crawl options...]

The benchmark measures a tool as one process tree (wall time from spawn to reap, CPU from
``wait4``): this launcher makes the scale-out mode such a tree. It starts a throwaway
redis-server (its own child, so the server's CPU is counted too), then the crawl processes
with ``--frontier redis://...`` and one crawl id, all writing into the same ``--output``
directory (WARCs side by side, per-process state under ``DIR/state/``), waits for every one of
them, stops redis-server by its PID and exits with the worst exit code of the crawlers.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.support.redis_server import RedisServer  # noqa: E402

ARCHIVER = REPO / ".venv" / "bin" / "archiver"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--processes", type=int, required=True)
    parser.add_argument("crawl_args", nargs=argparse.REMAINDER, help="-- then archiver crawl args")
    args = parser.parse_args()
    crawl_args = args.crawl_args[1:] if args.crawl_args[:1] == ["--"] else args.crawl_args
    with RedisServer(tcp=True) as server:  # a child of this process, stopped by its PID
        frontier = ["--frontier", server.url, "--crawl-id", "bench"]
        procs = [
            subprocess.Popen([str(ARCHIVER), "crawl", *crawl_args, *frontier])
            for _ in range(args.processes)
        ]
        codes = [proc.wait() for proc in procs]  # reaped here: their CPU counts
    return max(codes, key=abs)


if __name__ == "__main__":
    sys.exit(main())
