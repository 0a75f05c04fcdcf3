"""A client for the Chrome DevTools Protocol over Chromium's ``--remote-debugging-pipe``.

The protocol (https://chromedevtools.github.io/devtools-protocol/) is JSON messages: a command
``{"id", "method", "params", "sessionId"?}`` gets one reply with the same ``id`` carrying either
``result`` or ``error``; events ``{"method", "params", "sessionId"?}`` arrive in between. Over the
pipe each message is followed by a NUL byte; Chromium reads commands on its fd 3 and writes
replies and events on its fd 4.

Sessions are *flat* (``Target.attachToTarget`` / ``Target.setAutoAttach`` with ``flatten: true``):
every tab, out-of-process iframe or worker gets a ``sessionId`` and its messages share the one
pipe, tagged with that id. The browser itself is the session without an id.

Why a pipe rather than a WebSocket on ``--remote-debugging-port``: no TCP port that any local
user could connect to and drive the browser through, no port file to wait for, no HTTP
handshake, and no dependency: asyncio reads and writes the two pipes. (The protocol libraries on
PyPI either generate typed wrappers for hundreds of commands and still need a transport, or are
unmaintained; this client needs about ten commands and one transport.)

Nothing here may hang: every command has a timeout, and when the connection ends (Chromium exits
or crashes) or a session ends (its tab crashed, closed or detached) every command waiting on it
fails at once with a :class:`~archiver.browser.errors.BrowserError`, and so does every later one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from archiver.browser.errors import BrowserError

Params = dict[str, Any]
Listener = Callable[[Params], None]

#: The largest message read from Chromium. Replies carry screenshots and the serialised DOM
#: (capped by the caller); events carry request bodies. A bigger message ends the connection.
MAX_MESSAGE = 256 * 1024 * 1024


class CommandError(BrowserError):
    """Chromium answered a command with a protocol error (no such request, target gone...)."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} ({code})")
        self.method = method
        self.code = code


class CommandTimeoutError(BrowserError):
    """No reply came in time: the browser, or the tab the command was for, is busy or hung."""


def _decode(raw: bytes) -> Params:
    """One message (lone UTF-16 surrogates, which a JavaScript string may hold and Chromium
    escapes as ``\\udXXX``, are accepted)."""
    message = json.loads(raw)
    if not isinstance(message, dict):
        raise ValueError("a DevTools message that is not a JSON object")
    return message


def _encode(message: Params) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\0"


class Session:
    """One flat session: the browser (``id`` None), a tab, an iframe or a worker."""

    def __init__(self, connection: Connection, session_id: str | None) -> None:
        self.connection = connection
        self.id = session_id
        self._listeners: dict[str, list[Listener]] = {}
        self._pending: set[asyncio.Future[Params]] = set()
        #: set (with an exception) when the session can no longer be used
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @property
    def error(self) -> BrowserError | None:
        """Why the session ended, or None while it works."""
        if not self.ended.done():
            return None
        exc = self.ended.exception()
        return exc if isinstance(exc, BrowserError) else BrowserError(str(exc))

    def on(self, method: str, listener: Listener) -> None:
        """Call ``listener(params)`` for each ``method`` event of this session, in order."""
        self._listeners.setdefault(method, []).append(listener)

    async def send(
        self,
        method: str,
        params: Params | None = None,
        *,
        timeout: float,  # noqa: ASYNC109 - a deadline per command, reported by name
    ) -> Params:
        """Send a command and return its ``result``; raise :class:`BrowserError` on a protocol
        error, when no reply comes within ``timeout`` seconds, or when the session ends."""
        error = self.error
        if error is not None:
            raise error
        future = await self.connection.submit(method, params or {}, self.id, timeout=timeout)
        self._pending.add(future)
        error = self.error  # the session may have ended while the command was being written
        if error is not None and not future.done():
            future.set_exception(error)
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(future)
        except TimeoutError:
            raise CommandTimeoutError(
                f"{method}: no answer from the browser within {timeout:g} s"
            ) from None
        finally:
            self._pending.discard(future)
            if not future.done():
                future.cancel()

    def end(self, error: BrowserError) -> None:
        """End the session: its waiting commands and all later ones fail with ``error``."""
        if not self.ended.done():
            self.ended.set_exception(error)
            self.ended.exception()  # retrieved: nobody has to await it
        for future in list(self._pending):
            if not future.done():
                future.set_exception(error)

    async def wait(
        self,
        awaitable: asyncio.Future[Any] | asyncio.Event,
        timeout: float,  # noqa: ASYNC109 - False when it runs out, not an exception
    ) -> bool:
        """Wait for a future or an event for at most ``timeout`` seconds; False on timeout.
        Raises the session's error as soon as the session ends."""
        if isinstance(awaitable, asyncio.Event):
            waiter: asyncio.Future[Any] = asyncio.ensure_future(awaitable.wait())
        else:
            waiter = awaitable
        try:
            done, _ = await asyncio.wait(
                (waiter, self.ended), timeout=max(timeout, 0.0), return_when="FIRST_COMPLETED"
            )
        finally:
            if isinstance(awaitable, asyncio.Event):
                waiter.cancel()
        error = self.error
        if error is not None:
            raise error
        return waiter in done

    def _dispatch(self, method: str, params: Params) -> None:
        for listener in self._listeners.get(method, ()):
            listener(params)


class Connection:
    """The protocol connection to one Chromium: commands with ids, events, flat sessions."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        read_transport: asyncio.BaseTransport | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._read_transport = read_transport
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[str, asyncio.Future[Params]]] = {}
        self._sessions: dict[str | None, Session] = {}
        self.browser = self.session(None)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._read(), name="devtools-reader")

    @property
    def error(self) -> BrowserError | None:
        """Why the connection ended, or None while it is open."""
        return self.browser.error

    def session(self, session_id: str | None) -> Session:
        """The session with this id (created on first use: an attach reply or event names it)."""
        session = self._sessions.get(session_id)
        if session is None:
            session = Session(self, session_id)
            error = self.error if session_id is not None else None
            if error is not None:
                session.end(error)
            self._sessions[session_id] = session
        return session

    async def submit(
        self,
        method: str,
        params: Params,
        session_id: str | None,
        *,
        timeout: float,  # noqa: ASYNC109 - the deadline of the write, reported by name
    ) -> asyncio.Future[Params]:
        """Write one command; the returned future gets its result."""
        error = self.error
        if error is not None:
            raise error
        command_id = next(self._ids)
        message: Params = {"id": command_id, "method": method, "params": params}
        if session_id is not None:
            message["sessionId"] = session_id
        future: asyncio.Future[Params] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = (method, future)
        future.add_done_callback(lambda _: self._pending.pop(command_id, None))
        try:
            self._writer.write(_encode(message))
            async with asyncio.timeout(timeout):
                await self._writer.drain()
        except TimeoutError:
            self.fail(BrowserError(f"the browser stopped reading commands ({method})"))
        except (OSError, RuntimeError) as exc:  # a closed pipe; RuntimeError: transport closing
            self.fail(BrowserError(f"the connection to the browser is closed ({exc})"))
        error = self.error
        if error is not None:
            future.cancel()
            raise error
        return future

    def fail(self, error: BrowserError) -> None:
        """End the connection: every session and command, waiting or later, fails with it."""
        if self.browser.ended.done():
            return
        for session in list(self._sessions.values()):
            session.end(error)
        for _method, future in list(self._pending.values()):
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        self._writer.close()
        if self._read_transport is not None:
            self._read_transport.close()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()

    async def close(self) -> None:
        self.fail(BrowserError("the connection to the browser was closed"))
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _read(self) -> None:
        error = BrowserError("the browser closed the DevTools connection")
        try:
            while True:
                raw = await self._reader.readuntil(b"\0")
                self._dispatch(_decode(raw[:-1]))
        except asyncio.IncompleteReadError:
            pass  # the browser exited or closed its end
        except asyncio.LimitOverrunError:
            error = BrowserError(f"a DevTools message over {MAX_MESSAGE} bytes")
        except (OSError, ValueError) as exc:
            error = BrowserError(f"unreadable DevTools message: {exc}")
        except BrowserError as exc:
            error = exc
        self.fail(error)

    def _dispatch(self, message: Params) -> None:
        command_id = message.get("id")
        if command_id is not None:
            method, future = self._pending.pop(command_id, ("", None))
            if future is None or future.done():
                return
            problem = message.get("error")
            if problem is not None:
                future.set_exception(
                    CommandError(method, problem.get("code", 0), problem.get("message", ""))
                )
            else:
                future.set_result(message.get("result", {}))
            return
        method = message.get("method", "")
        params = message.get("params", {})
        if method == "Target.detachedFromTarget":
            detached = self._sessions.pop(params.get("sessionId"), None)
            if detached is not None:
                detached.end(BrowserError("the tab was closed or detached"))
        session = self._sessions.get(message.get("sessionId"))
        if session is not None:
            try:
                session._dispatch(method, params)
            except Exception as exc:  # a bug in a listener: end loudly rather than hang
                raise BrowserError(f"internal error while handling {method}: {exc!r}") from exc
