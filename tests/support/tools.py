"""Reference tools the suite judges archiver's output with.

pywb and py-wacz pin dependencies that conflict with archiver's own (pywb 2.10 installs
redis 2.10.6), so they live in a separate venv, `.venv-tools` at the repo root, made by
`scripts/tools-venv` from `scripts/tools-requirements.txt`. `tools_venv()` (re)creates it on
demand, so `pytest` works without running the script first. cdxj-indexer and warcio are
compatible with archiver and are imported from the test venv itself.
"""

from __future__ import annotations

import functools
import hashlib
import io
import subprocess
from pathlib import Path

from cdxj_indexer.main import CDXJIndexer

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_SCRIPT = REPO_ROOT / "scripts" / "tools-venv"
TOOLS_REQUIREMENTS = REPO_ROOT / "scripts" / "tools-requirements.txt"
TOOLS_VENV = REPO_ROOT / ".venv-tools"
STAMP = TOOLS_VENV / ".requirements.sha256"

# Generous: a cold install downloads pywb, gevent and py-wacz's frictionless stack.
INSTALL_TIMEOUT = 900
TOOL_TIMEOUT = 120


class ToolsError(RuntimeError):
    """A reference tool could not be installed or run."""


def _is_current() -> bool:
    if not (TOOLS_VENV / "bin" / "python").exists():
        return False
    want = hashlib.sha256(TOOLS_REQUIREMENTS.read_bytes()).hexdigest()
    try:
        return STAMP.read_text().strip() == want
    except FileNotFoundError:
        return False


@functools.cache
def tools_venv() -> Path:
    """The tools venv, created or refreshed by `scripts/tools-venv` when missing or stale."""
    if not _is_current():
        proc = subprocess.run(
            [str(TOOLS_SCRIPT)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if proc.returncode != 0 or not _is_current():
            raise ToolsError(
                f"{TOOLS_SCRIPT.name} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
            )
    return TOOLS_VENV


def tools_bin(name: str) -> Path:
    """An executable of the tools venv (`wayback`, `wb-manager`, `wacz`, ...)."""
    return tools_venv() / "bin" / name


def tools_python() -> Path:
    """The tools venv's interpreter (it can import pywb and wacz)."""
    return tools_bin("python")


def run_tool(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a tools-venv executable (args[0] is its name); output captured, never raises on exit."""
    return subprocess.run(
        [str(tools_bin(args[0])), *args[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT,
        check=False,
    )


def wacz_validate(path: Path) -> tuple[bool, str]:
    """`wacz validate -f PATH` (py-wacz): whether it passed, and what it printed.

    py-wacz checks datapackage.json, file paths and hashes only (not the index or ZIP layout).
    """
    proc = run_tool(["wacz", "validate", "-f", str(path)])
    return proc.returncode == 0, proc.stdout + proc.stderr


def reference_cdxj(warc_dir: Path) -> list[str]:
    """CDXJ lines cdxj-indexer writes for every `*.warc.gz` under `warc_dir`, sorted bytewise.

    `filename` fields are relative to `warc_dir` (`--dir-root`), as archiver writes them.
    """
    inputs = [str(p) for p in sorted(warc_dir.rglob("*.warc.gz"))]
    out = io.StringIO()
    CDXJIndexer(out, inputs, dir_root=str(warc_dir)).process_all()
    return sorted(out.getvalue().splitlines(), key=lambda line: line.encode())
