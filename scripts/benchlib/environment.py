"""Install what the benchmarks need, and describe the machine and the versions measured.

Benchmarks are not tests: ``.ci/run`` installs none of this. ``scripts/bench`` calls
:func:`ensure_system` (Debian packages through apt-get, only when missing) and
:func:`ensure_python` (pip into the repo's ``.venv``, only when an import fails).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from benchlib import REPO
from benchlib.nginx import nginx_binary

#: Debian package -> how to tell it is there
APT = {
    "nginx-light": lambda: nginx_binary() is not None,
    "wget": lambda: shutil.which("wget") is not None,
    "python3-doc": lambda: docs_root() is not None,
    "redis-server": lambda: shutil.which("redis-server") is not None,
    "chromium": lambda: (
        shutil.which("chromium") is not None or shutil.which("chromium-browser") is not None
    ),
}
#: import name -> pip requirement (pins as in pyproject.toml)
PIP = {
    "aiohttp": "aiohttp==3.14.5",
    "uvloop": "uvloop>=0.19",
    "selectolax": "selectolax==1.0.2",
    "warcio": "warcio==1.8.1",
    "fastwarc": "fastwarc==2.0.1",
    "cdxj_indexer": "cdxj-indexer==1.5.0",
    # the peers of the extractor bounds (scripts/bench --extract)
    "feedparser": "feedparser>=6.0",
    "m3u8": "m3u8>=6.0",
}


def docs_root() -> Path | None:
    """The HTML directory of Debian's python3-doc (found with ``dpkg -L``)."""
    try:
        listing = subprocess.run(
            ["dpkg", "-L", "python3-doc"], capture_output=True, text=True, check=False
        ).stdout
    except OSError:
        return None
    for line in listing.splitlines():
        if line.endswith("/html") and os.path.isfile(os.path.join(line, "index.html")):
            return Path(line).resolve()
    return None


def ensure_system(install: bool = True, need: tuple[str, ...] = tuple(APT)) -> None:
    missing = [pkg for pkg in need if not APT[pkg]()]
    if not missing:
        return
    if not install:
        raise SystemExit(
            f"bench: missing Debian packages: {' '.join(missing)} (run without --no-install)"
        )
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print(f"bench: apt-get install {' '.join(missing)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(
        [*sudo, "apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL
    )
    subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    still = [pkg for pkg in missing if not APT[pkg]()]
    if still:
        raise SystemExit(f"bench: still missing after apt-get: {' '.join(still)}")


def ensure_python(install: bool = True, extra: dict[str, str] | None = None) -> None:
    wanted = dict(PIP, **(extra or {}))
    missing = []
    for module, requirement in wanted.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(requirement)
    if not missing:
        return
    if not install:
        raise SystemExit(f"bench: missing Python packages: {' '.join(missing)}")
    print(f"bench: pip install {' '.join(missing)}", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)
    importlib.invalidate_caches()


def compile_archiver() -> None:
    """Byte-compile the archiver package, as ``pip install`` (non-editable) does.

    The repo's ``.venv`` holds an editable install, whose modules are compiled on every start
    when the environment sets ``PYTHONDONTWRITEBYTECODE`` (as this machine's does): ~0.08 s of
    CPU per crawl that no installed copy pays. ``compileall`` writes the caches regardless.
    """
    package = Path(__file__).resolve().parents[2] / "archiver"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def ensure_py_spy(install: bool = True) -> Path:
    exe = Path(sys.executable).parent / "py-spy"
    if not exe.exists():
        if not install:
            raise SystemExit("bench: py-spy is not installed in the venv")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "py-spy"], check=True)
    return exe


def _first_line(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return "not available"
    text = (proc.stdout or proc.stderr).strip()
    return text.splitlines()[0] if text else "?"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def machine() -> dict[str, str]:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as fh:
            mem = f"{int(fh.readline().split()[1]) / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    os_name = "?"
    with contextlib.suppress(OSError):
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME", "?")
    commit = _first_line(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    return {
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": mem,
        "os": f"{os_name}, kernel {platform.release()}",
        "python": platform.python_version(),
        "archiver": f"{_version('archiver')} (commit {commit}{', with uncommitted changes' if dirty else ''})",
        "aiohttp": _version("aiohttp"),
        "uvloop": _version("uvloop"),
        "selectolax": _version("selectolax"),
        "warcio": _version("warcio"),
        "isal": _version("isal"),
        "cdxj-indexer": _version("cdxj-indexer"),
        "nginx": _first_line([nginx_binary() or "nginx", "-v"]),
        "wget": _first_line(["wget", "--version"]),
        "python3-doc": _first_line(["dpkg-query", "-W", "-f", "${Version}", "python3-doc"]),
    }


def machine_lines(info: dict[str, str]) -> list[str]:
    return [
        f"Machine: {info['cpu']}, {info['memory']} RAM; {info['os']}",
        "Versions: Python {python}; archiver {archiver}; aiohttp {aiohttp}, uvloop {uvloop}, "
        "selectolax {selectolax}, warcio {warcio}, isal {isal}; {nginx}; {wget}; "
        "python3-doc {python3-doc}".format(**info),
    ]
