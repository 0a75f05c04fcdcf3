"""The private redis-server of a ``--processes N`` crawl: started by the supervisor, its data in
the crawl's state directory, stopped when nobody of the crawl is left.

::

    OUTPUT/state/redis/      mode 0700: its append-only file holds the crawl's cookie jar
      redis.sock             the Unix socket (or a short directory under /tmp when the path
                             would not fit in sun_path, 108 bytes on Linux: see unix(7))
      appendonlydir/         the append-only file: a resumed crawl continues from it
      redis.log              redis-server's log; keeper.log the keeper's
      redis.pid              {"redis", "keeper", "socket"} of the running server

Why these settings (redis.conf documents each): ``port 0`` (no TCP: the socket's mode 700 and
the directory say who may connect, and there is no port to find or to race for);
``appendonly yes`` with ``appendfsync everysec``, so a resume continues where the crawl stopped
(a SIGTERM, which is how the server is always stopped, writes everything; only a machine crash
can lose the last second, whose URLs are then fetched again); ``save ""`` (no RDB snapshots
beside the AOF).

The server is a child of the keeper (:mod:`archiver.processes.keeper`), which stops it once the
supervisor and every crawler process have exited, however they exited. A server left running by
a dead run (a machine that ran out of memory, a killed keeper on a system without prctl) is
found through the pid file at the next start; before anything is signalled its identity is
checked in ``/proc`` (its working directory is this directory: redis-server changes into
``--dir``, and it rewrites its command line, so that cannot be used), and it is first asked to
stop through its own socket (``SHUTDOWN``), which only this crawl's server listens on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

from archiver import atomicfile
from archiver.errors import OutputError, SettingsError
from archiver.processes import keeper

INSTALL_HINT = "Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis"
#: The directory a socket goes to when the state directory is too deep (under /tmp).
SOCKET_DIR_PREFIX = "archiver-redis-"
#: Longest socket path used in place; sun_path holds 108 bytes with the NUL (unix(7)).
MAX_SOCKET_PATH = 100
#: Seconds a server left by an earlier run may take to stop by itself (its keeper stops it
#: once that run's processes are gone, which the supervisor has waited for), then after
#: SHUTDOWN.
LEFTOVER_WAIT = 5.0
#: Seconds the keeper may take to report that the server is ready.
START_TIMEOUT = keeper.START_TIMEOUT + 10.0


def redis_binary() -> str:
    """The redis-server executable on PATH; a usage error naming the package when missing."""
    found = shutil.which("redis-server")
    if found is None:
        raise SettingsError(
            "--processes",
            f"needs redis-server for the queue the processes share, and it is not installed "
            f"({INSTALL_HINT})",
        )
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def _proc_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


class PrivateRedis:
    """One crawl's redis-server, through its keeper. ``await start()``, ``url``,
    ``lifeline`` (the fd each crawler process inherits), ``await stop()``."""

    def __init__(self, state: Path, binary: str) -> None:
        self.directory = (state / "redis").resolve()
        self.binary = binary
        self.pid_file = self.directory / "redis.pid"
        self.log_file = self.directory / "redis.log"
        self._sockdir: Path | None = None
        self.socket_path = self.directory / "redis.sock"
        self.keeper: asyncio.subprocess.Process | None = None
        self.server_pid = 0
        self.lifeline: int | None = None  #: write end of the keeper's stdin

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}?db=0"

    def server_args(self) -> list[str]:
        """redis-server's command line (the settings the module docstring explains)."""
        return [
            self.binary,
            "--port", "0",
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
            "--dir", str(self.directory),
            "--logfile", str(self.log_file),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--supervised", "systemd",
            "--daemonize", "no",
        ]  # fmt: skip

    async def start(self) -> None:
        """Stop what an earlier run left, then start the server and wait until it is ready."""
        # the append-only file holds the crawl's cookie jar (a login's session): the owner's
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.chmod(0o700)
        await asyncio.to_thread(self.reap_leftover)
        if len(str(self.socket_path)) > MAX_SOCKET_PATH:
            self._sockdir = Path(tempfile.mkdtemp(prefix=SOCKET_DIR_PREFIX))
            self.socket_path = self._sockdir / "redis.sock"
        read_end, write_end = os.pipe()
        log = os.open(self.directory / "keeper.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            self.keeper = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                keeper.__file__,
                "--",
                *self.server_args(),
                stdin=read_end,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                start_new_session=True,  # a Ctrl-C on the terminal is the supervisor's alone
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
            os.close(log)
        self.lifeline = write_end
        assert self.keeper.stdout is not None
        try:
            line = await asyncio.wait_for(self.keeper.stdout.readline(), START_TIMEOUT)
        except TimeoutError:
            line = b""
        words = line.decode(errors="replace").split()
        if words[:1] != ["ready"] or len(words) != 2:
            await self.stop()
            raise OutputError(
                f"the crawl's redis-server did not start; see {self.log_file} and "
                f"{self.directory / 'keeper.log'}"
            )
        self.server_pid = int(words[1])
        self._write_pid_file()

    def _write_pid_file(self) -> None:
        assert self.keeper is not None
        data = {
            "redis": self.server_pid,
            "keeper": self.keeper.pid,
            "socket": str(self.socket_path),
        }
        atomicfile.write_text(self.pid_file, json.dumps(data) + "\n", fsync=False)

    async def wait_exited(self) -> int:
        """Wait for the keeper to exit (it does when the server has): its exit status."""
        assert self.keeper is not None
        return await self.keeper.wait()

    async def stop(self) -> None:
        """Close the supervisor's end of the lifeline and wait for the keeper: when the
        crawler processes have exited too, it stops the server (SIGTERM: the AOF is written)."""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None
        if self.keeper is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.keeper.wait(), keeper.STOP_TIMEOUT + 10.0)
            if self.keeper.returncode is None:  # pragma: no cover - a hung keeper
                self.keeper.kill()
                await self.keeper.wait()
        self.pid_file.unlink(missing_ok=True)
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)

    # -- what an earlier run left ----------------------------------------------------------

    def _is_ours(self, pid: int, *, server: bool) -> bool:
        """Whether ``pid`` is this crawl's server (working directory) or keeper (command
        line), read from /proc; False where /proc cannot tell."""
        if server:
            return _proc_cwd(pid) == str(self.directory)
        cmdline = _proc_cmdline(pid)
        return keeper.__file__ in cmdline and str(self.directory) in cmdline

    def reap_leftover(self) -> None:
        """Wait for a server of an earlier run of this crawl to stop (its keeper stops it
        once that run's processes are gone), ask it through its socket if it does not, and
        signal it only as a last resort and only when /proc shows it is this crawl's."""
        try:
            info = json.loads(self.pid_file.read_text(encoding="utf-8"))
            pid, sock = int(info["redis"]), Path(str(info["socket"]))
        except (OSError, ValueError, KeyError, TypeError):
            return
        if not self._wait_gone(pid, LEFTOVER_WAIT):
            _shutdown(sock)
            if not self._wait_gone(pid, LEFTOVER_WAIT) and self._is_ours(pid, server=True):
                os.kill(pid, signal.SIGTERM)
                self._wait_gone(pid, keeper.STOP_TIMEOUT)
        if _alive(pid) and self._is_ours(pid, server=True):
            raise OutputError(
                f"the redis-server (pid {pid}) of an earlier run of this crawl does not stop"
            )
        self.pid_file.unlink(missing_ok=True)
        if _is_socket_dir(sock.parent):
            shutil.rmtree(sock.parent, ignore_errors=True)

    def _wait_gone(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while _alive(pid) and (self._is_ours(pid, server=True) or not Path("/proc").is_dir()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True


def _is_socket_dir(path: Path) -> bool:
    """Whether ``path`` (read from a pid file) is a socket directory this module made: only
    such a directory is ever removed."""
    return path.parent == Path(tempfile.gettempdir()) and path.name.startswith(SOCKET_DIR_PREFIX)


def _shutdown(sock: Path) -> None:
    """``SHUTDOWN`` in RESP over the server's own socket (the server writes its AOF and
    exits); nothing happens when nobody listens there."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(5.0)
        conn.connect(str(sock))
        conn.sendall(b"*1\r\n$8\r\nSHUTDOWN\r\n")
        with contextlib.suppress(OSError):
            conn.recv(1024)


__all__ = ["INSTALL_HINT", "PrivateRedis", "redis_binary"]
