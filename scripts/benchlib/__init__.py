"""Helpers for ``scripts/bench``: sites, nginx, peers, servers, measurement, reports.

Nothing in ``archiver/`` imports this package, and nothing here is part of the test suite's
timing: benchmarks print figures, they never assert on them.
"""

from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent
REPO = SCRIPTS.parent
#: Everything the benchmarks generate (sites, crawl outputs, logs, results); git-ignored.
WORK = REPO / "bench-out"
