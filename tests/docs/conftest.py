"""Long documented commands that need nothing else start with the package, so that their
time passes while the other modules run; each one's test collects it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.shell import DocShell

REPO = Path(__file__).resolve().parents[2]
FUZZ_ONE = "scripts/fuzz --seconds 20 chunked"
FUZZ_TEST = "test_one_fuzz_target_runs_for_its_seconds"


@pytest.fixture(scope="package", autouse=True)
def fuzzing(
    doc: DocShell, request: pytest.FixtureRequest
) -> Iterator[subprocess.Popen[str] | None]:
    """``scripts/fuzz --seconds 20 chunked``, when its test is among those that will run."""
    if not any(item.name == FUZZ_TEST for item in request.session.items):
        yield None
        return
    process = doc.start(FUZZ_ONE, cwd=REPO)
    try:
        yield process
    finally:
        if process.poll() is None:  # its test failed before collecting it
            process.kill()
        process.communicate()
