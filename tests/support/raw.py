"""A raw HTTP test server: replies with canned byte strings, so a test knows what was on the wire.

Each route maps a request path to either bytes (sent as they are, then the connection stays open
for the next request) or an async callable that receives ``(reader, writer, request_bytes)`` and
misbehaves as it likes (trickle, close mid-body, send garbage). Every request's exact bytes are
recorded, so request records can be compared with what the server received.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, bytes], Awaitable[bool]]


@dataclass
class RawRoute:
    response: bytes | None = None
    handler: RawHandler | None = None
    close: bool = False  #: close the connection after sending ``response``


@dataclass
class RawServer:
    routes: dict[str, RawRoute] = field(default_factory=dict)
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    host: str = "127.0.0.1"
    port: int = 0
    #: serve TLS with this context (``https://`` URLs)
    tls: ssl.SSLContext | None = None
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def add(self, path: str, response: bytes, *, close: bool = False) -> None:
        self.routes[path] = RawRoute(response=response, close=close)

    def add_handler(self, path: str, handler: RawHandler) -> None:
        self.routes[path] = RawRoute(handler=handler)

    def url(self, path: str) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{self.host}:{self.port}{path}"

    def requests_for(self, path: str) -> list[bytes]:
        return [r for r in self.requests if r.split(b" ", 2)[1:2] == [path.encode()]]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    request = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                self.requests.append(request)
                path = request.split(b" ", 2)[1].decode("latin-1")
                route = self.routes.get(path)
                if route is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                if route.handler is not None:
                    keep_open = await route.handler(reader, writer, request)
                    if not keep_open:
                        return
                    continue
                assert route.response is not None
                writer.write(route.response)
                await writer.drain()
                if route.close:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def _track(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(
            self._track, self.host, 0, limit=1 << 20, ssl=self.tls
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
