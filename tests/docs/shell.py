"""Running a documented command as written.

:class:`DocShell` runs the exact text the documentation shows (``bash -c TEXT``), changed
only where the text names something of the reader's machine that does not exist here:

- ``replace`` swaps a remote URL (``https://example.org/``, ``redis://127.0.0.1:6379/0``, a
  proxy's URL) for a local server's, or a machine path (``/etc/archiver/jobs/example.toml``,
  ``/opt/archiver/.venv/bin/archiver``) for a file of the test; every key must be such a URL or
  an absolute or home path, and must occur in the text;
- the working directory (:func:`workdir`: a fresh directory in which ``.venv`` is the venv the
  suite runs in, so ``.venv/bin/archiver`` and relative paths such as ``crawls/example`` work
  as written) and the environment (``PATH`` starts with that venv's ``bin``, so ``archiver``
  is this checkout's; a test may add variables, e.g. ``HOME`` so that ``~/.pywb`` is a given
  directory) are the machine's.

Every command run is recorded, so that a test marked with ``documents(...)`` that ran none of
its commands fails (``tests/conftest.py`` checks at teardown).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from tests.docs.documented import documented_commands

VENV = Path(sys.prefix)
_MACHINE_SPECIFIC = re.compile(r"^([a-z][a-z0-9+.-]*://|/|~/)")


class NotDocumentedError(AssertionError):
    """A test asked to run a command the documentation does not show (any more)."""


def workdir(base: Path) -> Path:
    """``base`` made a directory to run documented commands in (``.venv`` links the venv)."""
    base.mkdir(parents=True, exist_ok=True)
    link = base / ".venv"
    if not link.exists():
        link.symlink_to(VENV, target_is_directory=True)
    return base


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the venv's ``bin`` first on ``PATH``."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env


class DocShell:
    """Runs documented command lines (see the module docstring), recording each one."""

    def __init__(self, ran: set[str]) -> None:
        self._documented = {command.text for command in documented_commands()}
        self.ran = ran  #: the documented texts run so far in this session

    def prepare(self, text: str, replace: Mapping[str, str] | None = None) -> str:
        """``text`` with its machine-specific parts replaced, after checking that the
        documentation shows it and that only URLs and paths are replaced."""
        if text not in self._documented:
            raise NotDocumentedError(
                f"not a command line of the documentation (any more?): {text!r}; "
                "python -m tests.docs lists them"
            )
        command = text
        for old, new in (replace or {}).items():
            if not _MACHINE_SPECIFIC.match(old):
                raise NotDocumentedError(
                    f"only remote URLs and machine paths may be replaced, not {old!r}"
                )
            if old not in command:
                raise NotDocumentedError(f"{old!r} does not occur in {text!r}")
            command = command.replace(old, new)
        return command

    def run(
        self,
        text: str,
        *,
        cwd: Path,
        replace: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``text`` to its end; its output is captured (a hang guard bounds it)."""
        command = self.prepare(text, replace)
        self.ran.add(text)
        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=environment(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start(
        self,
        text: str,
        *,
        cwd: Path,
        replace: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        **popen: Any,
    ) -> subprocess.Popen[str]:
        """Start ``text`` in a session of its own (signal it with ``os.killpg``); stdout and
        stderr are pipes unless ``popen`` says otherwise."""
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        command = self.prepare(text, replace)
        self.ran.add(text)
        return subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=environment(env),
            text=True,
            start_new_session=True,
            **popen,
        )


def read_until(stream: IO[str] | None, pattern: str, timeout: float = 120) -> tuple[str, str]:
    """Read ``stream`` (a pipe of a started command) until a line matches ``pattern``;
    returns that line and everything read. Reads the pipe's descriptor directly, so what is
    left is still there for ``communicate()``; ``timeout`` is a hang guard."""
    assert stream is not None
    fd = stream.fileno()
    deadline = time.monotonic() + timeout
    seen = b""
    while True:
        for line in seen.decode(errors="replace").splitlines():
            if re.search(pattern, line):
                return line, seen.decode(errors="replace")
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        assert ready, f"no line matching {pattern!r} in {timeout} s; read: {seen[-3000:]!r}"
        chunk = os.read(fd, 65536)
        assert chunk, f"the command ended without a line matching {pattern!r}: {seen[-3000:]!r}"
        seen += chunk


@contextlib.contextmanager
def fixed_port(port: int) -> Iterator[None]:
    """Hold the machine-wide lock of ``port`` for a documented command that binds it (its
    default, or the number it shows): runs of this suite in several checkouts at once take
    turns. A port another program holds fails the test, naming it."""
    lock = Path(tempfile.gettempdir()) / f"archiver-tests-port-{port}.lock"
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError as exc:
                    raise AssertionError(
                        f"port {port} is taken on this machine ({exc.strerror}), and the "
                        "documented command binds it: free it to run this test"
                    ) from exc
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def wait_for(event: threading.Event, process: subprocess.Popen[str], timeout: float = 120) -> None:
    """Until ``event`` is set (a test server saw the command's request); a command that ends
    first fails the test at once, with what it said."""
    deadline = time.monotonic() + timeout
    while not event.wait(0.1):
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"the command ended (exit {process.returncode}): {out}{err}")
        assert time.monotonic() < deadline, f"not reached in {timeout} s"
