"""The development commands the README and docs/ show, run as written from the checkout.

The fuzzing run takes its 20 seconds (and ~7 more to start) while the other modules of
``tests/docs`` run: ``tests/docs/conftest.py`` starts it, its test here collects it.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
from pathlib import Path

from tests.docs.registry import documents
from tests.docs.shell import DocShell, workdir
from tests.fuzz.harness import NAMES

REPO = Path(__file__).resolve().parents[2]
FUZZ_LIST = "scripts/fuzz --list"
CHECK = "./scripts/check"
GENERATE = "scripts/gen-default-config"
GENERATED = (Path("config/default.toml"), Path("docs/settings.md"), Path("README.md"))


@documents(CHECK)
def test_the_static_checks_pass(doc: DocShell) -> None:
    done = doc.run(CHECK, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"Contracts: \d+ kept, 0 broken", done.stdout), done.stdout[-2000:]


@documents(GENERATE)
def test_the_generated_settings_files_are_written_and_current(
    doc: DocShell, tmp_path: Path
) -> None:
    """Run in a copy of the checkout whose generated files are stale: the script writes all
    three, and what it writes is what is checked in (the files are current)."""
    copy = workdir(tmp_path / "checkout")
    (copy / "scripts").mkdir()
    shutil.copy2(REPO / GENERATE, copy / GENERATE)
    for path in GENERATED:
        (copy / path).parent.mkdir(exist_ok=True)
        shutil.copy2(REPO / path, copy / path)
    (copy / "config/default.toml").write_text("# stale\n")
    (copy / "docs/settings.md").write_text("stale\n")
    readme = (copy / "README.md").read_text()
    table = readme.index("### `[crawl]`")
    (copy / "README.md").write_text(readme[:table] + "stale" + readme[table + 20 :])
    done = doc.run(GENERATE, cwd=copy)
    assert done.returncode == 0, done.stderr
    for path in GENERATED:
        assert filecmp.cmp(copy / path, REPO / path, shallow=False), f"{path} differs"


@documents(FUZZ_LIST)
def test_the_fuzz_targets_are_listed(doc: DocShell) -> None:
    done = doc.run(FUZZ_LIST, cwd=REPO)
    assert done.returncode == 0, done.stderr
    listed = [line.split(":", 1)[0] for line in done.stdout.splitlines()]
    assert listed == list(NAMES) and len(listed) >= 10


@documents("scripts/fuzz --seconds 20 chunked")  # started by tests/docs/conftest.py
def test_one_fuzz_target_runs_for_its_seconds(fuzzing: subprocess.Popen[str] | None) -> None:
    assert fuzzing is not None
    out, err = fuzzing.communicate(timeout=240)
    assert fuzzing.returncode == 0, out + err[-3000:]
    line = re.fullmatch(r"chunked: (\d+) execs, \d+ features, \d+ corpus, 0 crashes\n", out)
    assert line and int(line.group(1)) > 0, out
