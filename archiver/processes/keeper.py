"""The keeper of a crawl's private redis-server: run as a script, it starts the server and stops
it once nobody of the crawl is left.

``python -I keeper.py -- redis-server ARGS...`` (the standard library only: it starts in a few
tens of milliseconds and imports nothing of archiver). The server must outlive the supervisor
for as long as any crawler process still talks to it: after a ``kill -9`` of the supervisor its
children stop on their own, and they need Redis to hand their leases back and flush their
outcomes. So neither the supervisor nor any child owns the server; its life is a pipe:

- The keeper's standard input is the read end of the *lifeline*. The supervisor holds the write
  end and passes a copy to every crawler process it starts (they never write to it). When the
  last holder exits, however it exits, the kernel closes the last write end and the keeper reads
  EOF: it sends SIGTERM to redis-server (which then writes its append-only file and exits, see
  redis.conf, "SHUTDOWN") and waits for it.
- redis-server is started with ``PR_SET_PDEATHSIG`` = SIGTERM (prctl(2)), set in the forked
  child before ``exec`` (safe here: the keeper runs no thread), so a keeper killed with
  ``kill -9`` still takes its server with it. The setting survives ``execve(2)`` for a binary
  that is not set-user-ID.
- Readiness is redis-server's own: ``--supervised systemd`` sends ``READY=1`` to the datagram
  socket named by ``NOTIFY_SOCKET`` (sd_notify(3)) once it accepts connections. The keeper then
  writes ``ready PID`` on its standard output, or ``failed CODE`` if the server exited first.

The keeper runs in a process group of its own (the supervisor starts it so), so a Ctrl-C on the
terminal reaches the supervisor alone, which stops the crawl in order.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

#: prctl(2) option: the signal the calling process gets when its parent thread dies.
PR_SET_PDEATHSIG = 1
#: Seconds redis-server may take to start (loading a large append-only file takes a while).
START_TIMEOUT = 600.0
#: Seconds redis-server may take to write its data and exit after SIGTERM.
STOP_TIMEOUT = 120.0
#: How often the keeper looks at the server while it waits for EOF on its lifeline.
POLL_SECONDS = 0.5


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux prctl(2)
    ``PR_SET_PDEATHSIG``). False where the call does not exist (macOS and the BSDs: there the
    pipe each process watches is the only link)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _notify_socket() -> tuple[socket.socket, Path]:
    """A datagram socket for sd_notify messages, at a path short enough for ``sun_path``."""
    directory = Path(tempfile.mkdtemp(prefix="archiver-notify-"))
    path = directory / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    return sock, path


def _start(argv: list[str]) -> subprocess.Popen[bytes] | None:
    """Start redis-server and wait for READY=1; None when it exited before that."""
    sock, path = _notify_socket()
    try:
        env = {**os.environ, "NOTIFY_SOCKET": str(path)}
        server = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - the keeper runs no thread
        )
        sock.settimeout(0.2)
        waited = 0.0
        while waited < START_TIMEOUT:
            try:
                if b"READY=1" in sock.recv(4096):
                    return server
            except TimeoutError:
                waited += 0.2
            if server.poll() is not None:
                return None
        _stop(server)
        return None
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            path.unlink()
            path.parent.rmdir()


def _stop(server: subprocess.Popen[bytes]) -> int:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            server.kill()
    return server.wait()


def _say(text: str) -> None:
    with contextlib.suppress(OSError):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def main(argv: list[str]) -> int:
    """Start the server, report, wait for EOF on stdin (or the server's exit), stop it."""
    if argv[:1] == ["--"]:
        argv = argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when we stop
    server = _start(argv)
    if server is None:
        _say("failed")
        return 1
    _say(f"ready {server.pid}")
    with contextlib.suppress(OSError):
        sys.stdout.close()
    with selectors.DefaultSelector() as selector:
        selector.register(sys.stdin.buffer.fileno(), selectors.EVENT_READ)
        while server.poll() is None:
            if not selector.select(POLL_SECONDS):
                continue
            if not os.read(sys.stdin.buffer.fileno(), 4096):
                break  # EOF: every holder of the lifeline has exited
    return _stop(server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
