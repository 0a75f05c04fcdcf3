"""The fuzz targets in the suite: the checked-in corpus replays through every oracle, and each
target runs briefly under atheris (``scripts/fuzz --seconds 3 --seed N``) from that corpus, so a
regression in a parser, or a disagreement with an oracle, fails the build. The long campaign
(``scripts/fuzz --seconds 600``) is not run here; docs/fuzzing.md has its figures.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.fuzz.campaign import ROOT, SEEDS
from tests.fuzz.harness import NAMES, load

#: libFuzzer's seed in the suite: the same mutations on every run, so the build's verdict depends
#: on the code alone; new inputs are the campaign's job (``scripts/fuzz``, a new seed each run),
#: and what it finds joins the checked-in corpus that every build replays.
SUITE_SEED = 20261128
#: Seconds each target runs under atheris in the suite. A target's start (importing archiver
#: under instrumentation, loading its corpus) costs about 1 s of CPU, so 19 targets take
#: about 40 s of the suite's two workers on a 2-core machine.
SUITE_SECONDS = 3
_LINE = re.compile(r"(\w+): (\d+) execs, (\d+) features, (\d+) corpus, (\d+) crashes")


def test_there_are_at_least_ten_targets_each_with_seeds() -> None:
    assert len(NAMES) >= 10
    for name in NAMES:
        target = load(name)
        assert target.summary
        assert any((SEEDS / name).iterdir()), name


@pytest.mark.parametrize("name", NAMES)
def test_the_checked_in_corpus_replays_through_every_oracle(name: str) -> None:
    """Every seed, and every input that once crashed a target (kept as a regression), goes
    through the parser and its oracle again, without atheris."""
    target = load(name)
    inputs = sorted((SEEDS / name).iterdir())
    for path in inputs:
        target.check(path.read_bytes())


def _fuzz_briefly(name: str, work: Path) -> str | None:
    """Run one target for SUITE_SECONDS; None if it ran and found nothing, else what happened."""
    result = subprocess.run(
        [
            str(ROOT / "scripts" / "fuzz"),
            "--seconds",
            str(SUITE_SECONDS),
            "--seed",
            str(SUITE_SEED),
            "--work",
            str(work),
            name,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    match = _LINE.fullmatch(result.stdout.strip())
    ran = match is not None and match.group(1) == name and int(match.group(2)) > 0
    if result.returncode == 0 and ran and match is not None and int(match.group(5)) == 0:
        return None
    log = work / name / "log.txt"
    return result.stdout + (log.read_text(errors="replace")[-3000:] if log.exists() else "")


@pytest.mark.parametrize("name", NAMES)
def test_the_target_fuzzes_briefly_without_a_crash(name: str, tmp_path: Path) -> None:
    """One target at a time, so that the suite's workers (pytest-xdist) share them out."""
    failed = _fuzz_briefly(name, tmp_path)
    assert failed is None, f"{name}:\n{failed}"
