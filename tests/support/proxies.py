"""Real proxies for tests: proxy.py (HTTP, CONNECT, Basic auth, TLS to the proxy) and microsocks
(SOCKS5, RFC 1929 auth), each its own process on 127.0.0.1, stopped by process group.

proxy.py (PyPI, a dev dependency) binds port 0 and writes the port it got to ``--port-file``:
readiness is that file. microsocks (Debian; ``scripts/test`` installs it) takes a port, so a
free one is picked and the start retried if another program took it meanwhile; it is ready
when it accepts a connection. A missing microsocks is an error, never a skip.

Both log what they do: proxy.py one access-log line per tunnel (``CONNECT host:port``),
microsocks one line per connection (``connected to host:port``), which tests read to prove that
traffic went through the proxy, and with which destination (a name or an address).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

START_TIMEOUT = 60.0  #: a hang guard, not a speed expectation
BIND_ATTEMPTS = 5


class ProxyStartError(RuntimeError):
    """The proxy program is missing or would not start."""


class _Process:
    """A proxy process in its own process group, with its output in a log file."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="proxy-"))
        self.log_path = self.directory / "proxy.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def _spawn(self, args: list[str]) -> subprocess.Popen[bytes]:
        with open(self.log_path, "ab") as log:
            return subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(20)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class ProxyPy(_Process):
    """``python -m proxy``: an HTTP proxy (CONNECT to any port), optionally behind Basic auth
    (``auth="user:password"``) or serving TLS itself (``tls=(cert_file, key_file)``)."""

    def __init__(self, *, auth: str | None = None, tls: tuple[Path, Path] | None = None) -> None:
        super().__init__()
        self.auth = auth
        self.tls = tls

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url(self, userinfo: str | None = None) -> str:
        at = f"{userinfo}@" if userinfo else ""
        return f"{self.scheme}://{at}127.0.0.1:{self.port}"

    def __enter__(self) -> ProxyPy:
        port_file = self.directory / "port"
        args = [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0"]
        args += ["--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1"]
        if self.auth:
            args += ["--basic-auth", self.auth]
        if self.tls:
            args += ["--cert-file", str(self.tls[0]), "--key-file", str(self.tls[1])]
        self.process = process = self._spawn(args)
        deadline = time.monotonic() + START_TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ProxyStartError(f"proxy.py did not start:\n{self.log()[-2000:]}")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def connects(self) -> list[str]:
        """The ``host:port`` of every CONNECT the proxy served, in order."""
        return [
            line.split(" - CONNECT ", 1)[1].split(" ", 1)[0]
            for line in self.log().splitlines()
            if " - CONNECT " in line
        ]


class MicroSocks(_Process):
    """microsocks, a SOCKS5 server (RFC 1928), optionally with user/password (RFC 1929)."""

    def __init__(self, *, user: str | None = None, password: str | None = None) -> None:
        super().__init__()
        self.user = user
        self.password = password

    def url(self, scheme: str = "socks5", *, credentials: bool = True) -> str:
        at = f"{self.user}:{self.password}@" if credentials and self.user else ""
        return f"{scheme}://{at}127.0.0.1:{self.port}"

    def __enter__(self) -> MicroSocks:
        binary = shutil.which("microsocks")
        if binary is None:
            raise ProxyStartError(
                "microsocks is not installed: the SOCKS5 tests need a real SOCKS server "
                "(apt-get install microsocks; scripts/test does this)"
            )
        for _ in range(BIND_ATTEMPTS):
            self.port = _free_port()
            args = [binary, "-i", "127.0.0.1", "-p", str(self.port)]
            if self.user:
                args += ["-u", self.user, "-P", self.password or ""]
            self.process = self._spawn(args)
            if self._ready():
                return self
            self.stop()
        raise ProxyStartError(f"microsocks did not start:\n{self.log()[-2000:]}")

    def _ready(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        assert self.process is not None
        while self.process.poll() is None and time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=5),
            ):
                return True
            time.sleep(0.05)
        return False

    def destinations(self) -> list[str]:
        """The ``host:port`` of every connection the proxy made, as the client named it."""
        return [
            line.rsplit("connected to ", 1)[1].strip()
            for line in self.log().splitlines()
            if "connected to " in line
        ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
