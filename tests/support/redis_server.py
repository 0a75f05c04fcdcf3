"""A real ``redis-server`` for tests: started in a temporary directory, stopped by its PID.

No fakeredis: the Redis frontier's Lua scripts, pipelines and reconnects are the point. The
server listens on a Unix socket (``--port 0`` disables TCP, so nothing races for a port), or,
with ``tcp=True`` (for ``archiver crawl`` subprocesses, whose ``--frontier`` takes
``redis://HOST:PORT``), on 127.0.0.1 at a port picked by the kernel for a socket we then close:
another program may take that port in between, so a start that fails to bind is retried on a new
port. Readiness is an event, not a poll: redis-server's ``--supervised systemd`` sends
``READY=1`` to the datagram socket named by ``NOTIFY_SOCKET``.

``persistent=True`` turns the append-only file on (fsync always), so ``stop()`` then ``start()``
is a Redis restart that keeps the data, on the same socket or port: the outage tests use it.

A missing ``redis-server`` binary is an error, never a skip: ``.ci/run`` installs it
(``apt-get install redis-server``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0
BIND_ATTEMPTS = 5


class RedisServerError(RuntimeError):
    """redis-server is missing or would not start."""


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise RedisServerError(
            "redis-server is not installed: the Redis frontier tests need a real server "
            "(apt-get install redis-server; .ci/run does this)"
        )
    return found


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process. ``with RedisServer() as server: server.url``."""

    def __init__(
        self, directory: Path | None = None, *, tcp: bool = False, persistent: bool = False
    ) -> None:
        # Unix socket paths are limited to ~107 bytes: keep ours short, whatever tmp_path is.
        self._own_dir = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="redis-", dir="/tmp"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self.tcp = tcp
        self.persistent = persistent
        self.socket_path = self.directory / "redis.sock"
        if len(str(self.socket_path)) > 100:
            self._sockdir: Path | None = Path(tempfile.mkdtemp(prefix="rs-", dir="/tmp"))
            self.socket_path = self._sockdir / "redis.sock"
        else:
            self._sockdir = None
        self.port = 0
        self.log_path = self.directory / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RedisServerError("redis-server is not running")
        return self.process.pid

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0`` with ``tcp=True``, else ``unix://SOCKET?db=0``."""
        if self.tcp:
            return f"redis://127.0.0.1:{self.port}/0"
        return f"unix://{self.socket_path}?db=0"

    def _args(self, port: int) -> list[str]:
        args = [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--unixsocket",
            str(self.socket_path),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.directory),
            "--logfile",
            str(self.log_path),
            "--save",
            "",
            "--supervised",
            "systemd",
            "--daemonize",
            "no",
        ]
        if self.persistent:
            args += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            args += ["--appendonly", "no"]
        return args

    def start(self) -> None:
        """Start (or restart, after ``stop``) and return once the server accepts connections."""
        if self.process is not None:
            raise RedisServerError("redis-server is already running")
        if not self.tcp or self.port:  # Unix socket only, or a restart on the same port
            if self._launch(self.port):
                return
        else:
            for _ in range(BIND_ATTEMPTS):
                port = _free_port()
                if self._launch(port):
                    self.port = port
                    return
                # somebody took the port between our probe and redis's bind: another one
        raise RedisServerError(f"redis-server did not start; log:\n{self._log_tail()}")

    def _launch(self, port: int) -> bool:
        notify_path = self.directory / "notify.sock"
        if len(str(notify_path)) > 100:
            notify_path = Path(tempfile.mkdtemp(prefix="rn-", dir="/tmp")) / "notify.sock"
        notify_path.unlink(missing_ok=True)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
            notify.bind(str(notify_path))
            notify.settimeout(0.2)  # to notice an early exit; READY=1 wakes us at once
            env = {**os.environ, "NOTIFY_SOCKET": str(notify_path)}
            process = subprocess.Popen(self._args(port), env=env, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + START_TIMEOUT
            try:
                while time.monotonic() < deadline:
                    try:
                        message = notify.recv(4096)
                    except TimeoutError:
                        if process.poll() is not None:
                            return False  # exited: bind failure or bad arguments
                        continue
                    if b"READY=1" in message:
                        self.process = process
                        return True
            finally:
                notify_path.unlink(missing_ok=True)
                if self.process is not process:
                    self._terminate(process)
        return False

    def _terminate(self, process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
        if process.poll() is None:
            os.kill(process.pid, sig)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()

    def stop(self) -> None:
        """A clean shutdown (SIGTERM: with ``persistent``, the data is on disk)."""
        if self.process is not None:
            process, self.process = self.process, None
            self._terminate(process)

    def kill(self) -> None:
        """SIGKILL: what a crash or a lost machine looks like."""
        if self.process is not None:
            process, self.process = self.process, None
            self._terminate(process, signal.SIGKILL)

    def _log_tail(self, size: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-size:]
        except OSError:
            return "(no log)"

    def cleanup(self) -> None:
        self.stop()
        if self._sockdir is not None:
            shutil.rmtree(self._sockdir, ignore_errors=True)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


@contextmanager
def running_redis(directory: Path | None = None, **kwargs: bool) -> Iterator[RedisServer]:
    server = RedisServer(directory, **kwargs)
    try:
        server.start()
        yield server
    finally:
        server.cleanup()
