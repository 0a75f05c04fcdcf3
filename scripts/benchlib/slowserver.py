"""An HTTP/1.1 test server that answers after a fixed delay (a remote site, simulated).

    python slowserver.py [--delay 0.05] [--fanout 20] [--page-size 2048] [--stats-file F]

Listens on 127.0.0.1, port 0 (the kernel picks a free one), prints ``PORT <n>`` on stdout once
it is listening, and serves until SIGTERM/SIGINT, when it writes its counters (JSON) to
``--stats-file``. Keep-alive; one request at a time per connection; GET and HEAD only.

URLs (every response other than ``/fan/N`` waits ``--delay`` seconds, per request, without
blocking the others; many thousands can be held at once):

``/tree/TOTAL/I``   an HTML page of about ``--page-size`` bytes linking to pages
                    ``I*fanout+1 … I*fanout+fanout`` (those below TOTAL): a site of TOTAL pages,
                    all reachable from ``/tree/TOTAL/0``. ``/tree/TOTAL/urls.txt`` lists them.
``/fan/N``          answered at once: a page linking to ``/fan/N/0`` … ``/fan/N/N-1``
``/fan/N/I``        a small page without links, after the delay (the C10K benchmark holds each
                    of these for 10 s, so N fetches are in flight at once)
``/bytes/N``        N bytes of incompressible data (``application/octet-stream``), at once,
                    streamed under flow control (the server never holds more than a few MiB
                    of it): a body as large as the benchmark of memory at write time wants
``/__stats``        the counters as JSON, at once

Counters: connections (total, open, peak open), requests, responses, in-flight requests and
their peak (a request is in flight from its arrival until its response is written).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

MAX_HEAD = 64 * 1024
#: what ``/bytes/N`` repeats: random bytes, longer than deflate's 32 KiB window, so the body
#: does not compress (a WARC member as large as the body, the writer's worst case)
_NOISE = memoryview(random.Random(0).randbytes(4 * 1024 * 1024))
_FILLER = (
    "The quick archive captures every response as it crossed the wire; the index points at "
    "each record by offset and length, and replay serves the page as it was. "
)


@dataclass
class Stats:
    connections: int = 0
    open_connections: int = 0
    peak_open_connections: int = 0
    requests: int = 0
    responses: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    errors: int = 0
    #: seconds from the first delayed request: when the last one arrived, when the peak was reached
    last_delayed_s: float = 0.0
    peak_in_flight_s: float = 0.0


class Site:
    def __init__(self, delay: float, fanout: int, page_size: int) -> None:
        self.delay = delay
        self.fanout = fanout
        self.page_size = page_size
        self.stats = Stats()
        self.first_delayed: float | None = None

    def tree_page(self, total: int, i: int) -> bytes:
        first = i * self.fanout + 1
        children = range(first, min(first + self.fanout, total))
        links = "".join(f'<li><a href="/tree/{total}/{c}">page {c}</a></li>\n' for c in children)
        head = f"<!DOCTYPE html>\n<html><head><title>page {i} of {total}</title></head><body>\n"
        nav = f'<nav><a href="/tree/{total}/0">home</a></nav>\n<h1>Page {i}</h1>\n<ul>\n{links}</ul>\n'
        tail = "</body></html>\n"
        room = self.page_size - len(head) - len(nav) - len(tail) - len("<p></p>\n")
        text = ""
        if room > 0:
            text = "<p>" + (_FILLER * (1 + room // len(_FILLER)))[:room] + "</p>\n"
        return (head + nav + text + tail).encode()

    def route(self, path: str) -> tuple[int, str, bytes, bool]:
        """(status, content type, body, delayed?) for a request path."""
        m = re.fullmatch(r"/tree/(\d+)/(\d+)", path)
        if m:
            total, i = int(m.group(1)), int(m.group(2))
            if i < total:
                return 200, "text/html; charset=utf-8", self.tree_page(total, i), True
        m = re.fullmatch(r"/tree/(\d+)/urls\.txt", path)
        if m:
            total = int(m.group(1))
            body = "".join(f"/tree/{total}/{i}\n" for i in range(total)).encode()
            return 200, "text/plain", body, False
        m = re.fullmatch(r"/fan/(\d+)", path)
        if m:
            n = int(m.group(1))
            links = "".join(f'<a href="/fan/{n}/{i}">{i}</a>\n' for i in range(n))
            return (
                200,
                "text/html",
                f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n".encode(),
                False,
            )
        m = re.fullmatch(r"/fan/(\d+)/(\d+)", path)
        if m:
            body = f"<!DOCTYPE html>\n<html><body><p>leaf {m.group(2)}</p></body></html>\n".encode()
            return 200, "text/html", body, True
        if path == "/__stats":
            return 200, "application/json", json.dumps(asdict(self.stats)).encode(), False
        return 404, "text/plain", b"not found\n", True


class Connection(asyncio.Protocol):
    def __init__(self, site: Site) -> None:
        self.site = site
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False
        self.timer: asyncio.TimerHandle | None = None
        self.closing = False
        self.paused = False
        self.to_stream = 0  #: bytes of a ``/bytes/N`` body still to send

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        s = self.site.stats
        s.connections += 1
        s.open_connections += 1
        s.peak_open_connections = max(s.peak_open_connections, s.open_connections)

    def connection_lost(self, exc: Exception | None) -> None:
        s = self.site.stats
        s.open_connections -= 1
        if self.timer is not None:  # the client gave up on a held request
            self.timer.cancel()
            self.timer = None
            s.in_flight -= 1
            s.errors += 1
        self.transport = None

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._pump()

    def _pump(self) -> None:
        """Send the rest of a ``/bytes/N`` body while the transport takes it."""
        while self.to_stream and not self.paused and self.transport is not None:
            n = min(self.to_stream, len(_NOISE))
            self.transport.write(_NOISE[:n])
            self.to_stream -= n
        if self.to_stream == 0 and self.busy and self.transport is not None:
            self._done()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next()

    def _next(self) -> None:
        if self.busy or self.transport is None:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                self.transport.close()
            return
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[: end + 4]
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or parts[0] not in ("GET", "HEAD"):
            self.site.stats.errors += 1
            self.transport.write(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            self.transport.close()
            return
        method, target, version = parts
        self.closing = version == "HTTP/1.0" or any(
            line.lower().replace(" ", "") == "connection:close" for line in lines[1:]
        )
        path = target.split("?", 1)[0]
        self.busy = True
        if path == "/__stats":  # not counted: the benchmark polls it while a crawl runs
            self._respond(method, *self.site.route(path)[:3], counted=False)
            return
        s = self.site.stats
        s.requests += 1
        s.in_flight += 1
        streamed = re.fullmatch(r"/bytes/(\d+)", path)
        if streamed:
            self._stream(method, int(streamed.group(1)))
            return
        status, ctype, body, delayed = self.site.route(path)
        if delayed and self.site.delay > 0:
            loop = asyncio.get_running_loop()
            now = loop.time()
            if self.site.first_delayed is None:
                self.site.first_delayed = now
            s.last_delayed_s = round(now - self.site.first_delayed, 3)
            if s.in_flight > s.peak_in_flight:
                s.peak_in_flight_s = s.last_delayed_s
        s.peak_in_flight = max(s.peak_in_flight, s.in_flight)
        if delayed and self.site.delay > 0:
            self.timer = loop.call_later(
                self.site.delay, self._respond, method, status, ctype, body
            )
        else:
            self._respond(method, status, ctype, body)

    def _respond(
        self, method: str, status: int, ctype: str, body: bytes, counted: bool = True
    ) -> None:
        self.timer = None
        s = self.site.stats
        if counted:
            s.in_flight -= 1
        if self.transport is None:
            return
        reason = {200: "OK", 404: "Not Found"}.get(status, "OK")
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            + ("Connection: close\r\n" if self.closing else "")
            + "\r\n"
        ).encode()
        self.transport.write(head + body if method == "GET" else head)
        if counted:
            s.responses += 1
        self._done()

    def _stream(self, method: str, size: int) -> None:
        assert self.transport is not None
        self.site.stats.in_flight -= 1
        close = "Connection: close\r\n" if self.closing else ""
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
            + f"Content-Length: {size}\r\n{close}\r\n".encode()
        )
        self.site.stats.responses += 1
        self.to_stream = size if method == "GET" else 0
        self._pump()

    def _done(self) -> None:
        """The response is out: close, or go on with the next pipelined request."""
        assert self.transport is not None
        self.busy = False
        if self.closing:
            self.transport.close()
            return
        if self.buffer:
            self._next()


async def serve(
    delay: float = 0.05,
    fanout: int = 20,
    page_size: int = 2048,
    host: str = "127.0.0.1",
    port: int = 0,
) -> tuple[asyncio.Server, Site]:
    """Start the server (not in a new process); returns it and the :class:`Site` with the stats."""
    site = Site(delay, fanout, page_size)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Connection(site), host, port, backlog=65535, reuse_address=True
    )
    return server, site


async def _main(args: argparse.Namespace) -> None:
    server, site = await serve(args.delay, args.fanout, args.page_size)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    if args.stats_file:
        with open(args.stats_file, "w") as fh:  # noqa: ASYNC230 - once, at shutdown
            json.dump(asdict(site.stats), fh)


class ServerProcess:
    """This server in its own process: ``with ServerProcess(workdir, delay=10) as s: s.base``.

    Stopped by its PID (SIGTERM), then reaped; ``stats`` holds its counters afterwards.
    """

    def __init__(
        self, workdir: Path, *, delay: float, fanout: int = 20, page_size: int = 2048
    ) -> None:
        self.workdir = Path(workdir)
        self.args = ["--delay", str(delay), "--fanout", str(fanout), "--page-size", str(page_size)]
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.stats: dict[str, int] = {}

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stats_file = self.workdir / "server-stats.json"
        self.stats_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, *self.args, "--stats-file", str(self.stats_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(self.workdir / "server.log", "wb"),
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode().split()
        if len(line) != 2 or line[0] != "PORT":
            self.__exit__()
            raise RuntimeError(f"slow server did not start; see {self.workdir / 'server.log'}")
        self.port = int(line[1])
        return self

    def __exit__(self, *exc: object) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        with contextlib.suppress(OSError, ValueError):
            self.stats = json.loads(self.stats_file.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each answer")
    parser.add_argument("--fanout", type=int, default=20, help="links per /tree page")
    parser.add_argument("--page-size", type=int, default=2048, help="bytes per /tree page (about)")
    parser.add_argument("--stats-file")
    parser.add_argument("--asyncio", action="store_true", help="the default loop, not uvloop")
    args = parser.parse_args()
    try:
        if args.asyncio:
            raise ImportError
        import uvloop  # noqa: PLC0415

        uvloop.run(_main(args))
    except ImportError:
        asyncio.run(_main(args))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
    sys.exit(0)
