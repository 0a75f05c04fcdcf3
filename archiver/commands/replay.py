"""``archiver replay DIR``: show a crawl as it was, in pywb, on 127.0.0.1.

pywb is an optional tool, never a dependency: it pins libraries that conflict with archiver's
own (pywb 2.10 installs redis 2.10.6), so it lives in an environment of its own — ``pipx
install pywb``, or a venv named with ``--pywb-venv`` / ``ARCHIVER_PYWB``. archiver finds that
environment's interpreter (from ``--pywb-venv``, else from the ``#!`` line of the ``wayback``
script on PATH) and runs a small server script with it.

The collection is built under ``DIR/state/replay/`` (a temporary directory if the crawl is
read-only)::

    config.yaml
    collections/crawl/archive  -> DIR/warcs        (a symlink: index filenames resolve as is)
    collections/crawl/indexes/index.cdxj -> DIR/index.cdxj
    pywb.log                   pywb's own log

The server script binds the listening socket itself (port 0 picks a free port) before it
tells us the port, so the URL printed is live the moment it appears. ``Ctrl-C`` (or SIGTERM)
stops pywb by its process id; pywb runs in its own session so the terminal's Ctrl-C reaches
archiver only, and the shutdown is orderly.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from archiver.errors import ArchiverError

COLLECTION = "crawl"
HOST = "127.0.0.1"
STARTUP_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0
INSTALL_HINT = (
    "install it in its own environment: pipx install pywb, or python3 -m venv ~/.pywb && "
    "~/.pywb/bin/pip install pywb==2.10.0, then pass --pywb-venv ~/.pywb (or set ARCHIVER_PYWB)"
)

CONFIG_YAML = """\
# Written by archiver replay; rebuilt on every start.
collections_root: collections
enable_memento: true
"""

#: Run by pywb's interpreter (``python -I -c RUNNER ROOT PORT``). Kept compatible with old
#: Pythons. Its first stdout line is the port, or ``error: ...`` and exit 3.
RUNNER = r"""
import os, sys
def fail(message):
    os.write(1, ("error: " + message + "\n").encode("utf-8", "replace"))
    sys.exit(3)
root, port = sys.argv[1], int(sys.argv[2])
try:
    from gevent import monkey
    monkey.patch_all()
    import logging, signal, socket
    import gevent
    from gevent.pywsgi import WSGIServer
    from pywb import __version__ as pywb_version
    from pywb.apps.frontendapp import FrontEndApp
    from pywb.utils.geventserver import RequestURIWSGIHandler
except ImportError as exc:
    fail("pywb is not installed for " + sys.executable + " (" + str(exc) + ")")
os.chdir(root)
os.environ.pop("PYWB_CONFIG_FILE", None)
logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                    format="%(asctime)s %(levelname)s %(message)s")
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    listener.bind(("127.0.0.1", port))
except OSError as exc:
    fail("cannot listen on 127.0.0.1:%d: %s (choose another --port)" % (port, exc.strerror))
listener.listen(128)
app = FrontEndApp(config_file="./config.yaml")
server = WSGIServer(listener, app, handler_class=RequestURIWSGIHandler,
                    log=sys.stderr, error_log=sys.stderr)
server.init_socket()
gevent.signal_handler(signal.SIGTERM, server.stop)
os.write(1, ("%d %s\n" % (listener.getsockname()[1], pywb_version)).encode())
os.dup2(2, 1)
logging.info("pywb %s serving %s on http://127.0.0.1:%d/", pywb_version, root,
             listener.getsockname()[1])
server.serve_forever()
"""


class ReplayError(ArchiverError):
    """Replay cannot start (pywb missing, not a crawl directory, port taken)."""


class _StopSignalError(Exception):
    """Raised by the signal handler to leave the foreground wait."""


def _shebang_python(script: Path) -> Path | None:
    """The interpreter named on a console script's ``#!`` line (pip and pipx write one)."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        found = shutil.which(words[1])
        return Path(found) if found else None
    return Path(words[0])


def find_pywb_python(pywb: Path | None = None) -> Path:
    """The Python interpreter of the environment pywb is installed in.

    ``pywb`` is a venv directory, its ``bin/wayback`` or its python; without it, ``wayback``
    is looked up on PATH.
    """
    if pywb is not None:
        path = pywb.expanduser()
        if path.is_dir():
            for name in ("bin/python", "bin/python3", "Scripts/python.exe"):
                if (path / name).exists():
                    return path / name
            raise ReplayError(f"--pywb-venv {path}: no bin/python in it; {INSTALL_HINT}")
        if path.is_file():
            if path.name.startswith("python"):
                return path
            python = _shebang_python(path)
            if python is not None and python.exists():
                return python
        raise ReplayError(f"--pywb-venv {path}: not a pywb environment; {INSTALL_HINT}")
    wayback = shutil.which("wayback")
    if wayback is None:
        raise ReplayError(f"pywb is not installed (no wayback on PATH): {INSTALL_HINT}")
    python = _shebang_python(Path(wayback))
    if python is None or not python.exists():
        raise ReplayError(f"cannot tell which Python runs {wayback}: {INSTALL_HINT}")
    return python


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target.resolve(), target_is_directory=target.is_dir())


def build_collection(crawl_dir: Path, root: Path, *, framed: bool = True) -> Path:
    """Lay out a pywb collection for ``crawl_dir`` under ``root``; returns ``root``. Unframed
    (``framed=False``), the archived page is the top document (a replay check reads it)."""
    index = crawl_dir / "index.cdxj"
    warcs = crawl_dir / "warcs"
    if not index.is_file():
        raise ReplayError(
            f"no index.cdxj in {crawl_dir}: is it a crawl directory? (archiver index "
            f"{crawl_dir} rebuilds it)"
        )
    if not warcs.is_dir():
        raise ReplayError(f"no warcs/ directory in {crawl_dir}")
    collection = root / "collections" / COLLECTION
    (collection / "indexes").mkdir(parents=True, exist_ok=True)
    config = CONFIG_YAML if framed else CONFIG_YAML + "framed_replay: false\n"
    (root / "config.yaml").write_text(config, encoding="utf-8")
    archive = collection / "archive"
    if archive.is_dir() and not archive.is_symlink():
        shutil.rmtree(archive)
    _link(warcs, archive)
    _link(index, collection / "indexes" / "index.cdxj")
    return root


def _replay_root(crawl_dir: Path) -> Path:
    root = crawl_dir / "state" / "replay"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".writable"
        probe.write_text("")
        probe.unlink()
        return root
    except OSError:
        return Path(tempfile.mkdtemp(prefix="archiver-replay-"))


def _seeds(crawl_dir: Path) -> list[str]:
    try:
        summary = json.loads((crawl_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    seeds = summary.get("seeds", []) if isinstance(summary, dict) else []
    return [str(s) for s in seeds if isinstance(s, str)]


def _read_first_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The runner's first stdout line ('PORT VERSION' or 'error: ...'); '' if it exited."""
    assert proc.stdout is not None
    out: IO[bytes] = proc.stdout
    deadline = time.monotonic() + timeout
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(out, selectors.EVENT_READ)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReplayError(f"pywb did not start within {timeout:g} s")
            if sel.select(left):
                chunk = os.read(out.fileno(), 4096)
                if not chunk:
                    return buf.decode("utf-8", "replace").strip()
                buf += chunk
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop pywb by its PID: SIGTERM, then SIGKILL if it does not go."""
    try:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)
    finally:
        if proc.stdout is not None:
            proc.stdout.close()


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


@dataclass
class PywbServer:
    """A pywb started by :func:`start_pywb`: stop it with :meth:`stop`."""

    proc: subprocess.Popen[bytes]
    port: int
    version: str
    root: Path

    @property
    def base(self) -> str:
        """The collection's replay prefix: ``BASE + TIMESTAMP/URL`` replays a capture."""
        return f"http://{HOST}:{self.port}/{COLLECTION}/"

    @property
    def log_path(self) -> Path:
        return self.root / "pywb.log"

    def stop(self) -> None:
        _stop(self.proc)


def start_pywb(
    crawl_dir: Path, port: int, *, pywb: Path | None = None, framed: bool = True
) -> PywbServer:
    """Start pywb on ``crawl_dir`` on 127.0.0.1:``port`` (0: a free one) and return once it
    serves. Raises :class:`ReplayError` when pywb is missing or cannot start."""
    python = find_pywb_python(pywb)
    root = build_collection(crawl_dir, _replay_root(crawl_dir), framed=framed)
    log_path = root / "pywb.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(python), "-I", "-c", RUNNER, str(root), str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,  # the terminal's Ctrl-C is ours; we stop pywb by PID
        )
    try:
        first = _read_first_line(proc, STARTUP_TIMEOUT)
        if first.startswith("error: "):
            message = first.removeprefix("error: ")
            if "not installed" in message:
                message += f"; {INSTALL_HINT}"
            raise ReplayError(message)
        port_text, _, version = first.partition(" ")
        if not port_text.isdigit():
            proc.wait(STOP_TIMEOUT)
            tail = _log_tail(log_path)
            raise ReplayError(
                f"pywb exited with {proc.returncode} before serving"
                + (f": {tail}" if tail else f" (see {log_path})")
            )
    except BaseException:
        _stop(proc)
        raise
    return PywbServer(proc, int(port_text), version, root)


def serve(
    crawl_dir: Path,
    port: int,
    *,
    pywb: Path | None = None,
    out: IO[str] | None = None,
) -> int:
    """Serve ``crawl_dir`` in pywb on 127.0.0.1:``port`` until Ctrl-C/SIGTERM; returns 0.

    Raises :class:`ReplayError` when pywb is missing or cannot start.
    """
    out = out or sys.stdout
    server = start_pywb(crawl_dir, port, pywb=pywb)
    proc = server.proc
    previous: dict[signal.Signals, signal._HANDLER] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise _StopSignalError

    try:
        base = server.base
        seeds = _seeds(crawl_dir)
        lines = [
            f"archiver: pywb {server.version} is replaying {crawl_dir} at {base} (Ctrl-C to stop)"
        ]
        if seeds:
            lines.append(f"  open:          {base}{seeds[0]}")
            lines.append(f"  all captures:  {base}*/{seeds[0]}*")
        lines.append(f"  pywb log:      {server.log_path}")
        out.write("\n".join(lines) + "\n")
        out.flush()
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
        code = proc.wait()
        raise ReplayError(f"pywb stopped unexpectedly (exit {code}); see {server.log_path}")
    except _StopSignalError:
        return 0
    finally:
        for sig in previous:  # a second Ctrl-C must not interrupt the shutdown
            signal.signal(sig, signal.SIG_IGN)
        _stop(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
