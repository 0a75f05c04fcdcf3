"""What a page tells about itself while it runs: console errors, WebSockets, who asked for what.

A replay check needs more than the requests a page made: a script that throws because a module
did not load, a page that opens a WebSocket (which no archive can answer: the connection is a
live conversation, not a resource), and, for every request, its *initiator* (the parser of a
document, a script at a line, a stylesheet), so that a missing URL can be traced to the code
that built it. The DevTools protocol reports these as events of the Runtime, Log and Network
domains (https://chromedevtools.github.io/devtools-protocol/: ``Runtime.consoleAPICalled``,
``Runtime.exceptionThrown``, ``Log.entryAdded``, ``Network.requestWillBeSent`` with its
``initiator``, ``Network.webSocketCreated``); :class:`PageObserver` listens to them on each
session of a page and keeps bounded lists.

A network failure (``Failed to load resource``) is not kept as a console error: the request
itself is what the caller's handler answered, and its outcome is known there. The Network
domain is enabled without response bodies (``maxTotalBufferSize`` 0): nothing is buffered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archiver.browser.cdp import Params, Session

#: The most console messages kept per page.
MAX_CONSOLE = 50
#: The most characters of one message kept.
MAX_MESSAGE = 500
#: The most initiators remembered per page (one per request).
MAX_INITIATORS = 10_000

#: The commands that start the reports this module listens to, in one session.
COMMANDS: list[tuple[str, Params]] = [
    ("Runtime.enable", {}),
    ("Log.enable", {}),
    ("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}),
]


@dataclass(frozen=True, slots=True)
class ConsoleEntry:
    """One error the page reported: an uncaught exception, ``console.error``, a browser
    message of level error."""

    kind: str
    """``exception``, ``console`` or the Log domain's source (``javascript``, ``security``...)."""
    text: str
    url: str = ""
    """The script or document it came from, when known."""

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text, "url": self.url}


@dataclass
class PageObserver:
    """Collects a page's errors, WebSockets and initiators (see the module docstring)."""

    console: list[ConsoleEntry] = field(default_factory=list)
    sockets: list[str] = field(default_factory=list)
    #: the protocol's request id (``networkId`` in the Fetch domain) -> who made the request
    initiators: dict[str, str] = field(default_factory=dict)

    def watch(self, session: Session) -> None:
        session.on("Runtime.consoleAPICalled", self._console_called)
        session.on("Runtime.exceptionThrown", self._exception)
        session.on("Log.entryAdded", self._log_entry)
        session.on("Network.requestWillBeSent", self._request)
        session.on("Network.webSocketCreated", self._socket)

    def _keep(self, entry: ConsoleEntry) -> None:
        if len(self.console) < MAX_CONSOLE:
            self.console.append(entry)

    def _console_called(self, params: Params) -> None:
        if params.get("type") not in ("error", "assert"):
            return
        parts = [_remote_text(arg) for arg in params.get("args", [])]
        frames = params.get("stackTrace", {}).get("callFrames", [])
        url = str(frames[0].get("url", "")) if frames else ""
        self._keep(ConsoleEntry("console", _cut(" ".join(parts)), url))

    def _exception(self, params: Params) -> None:
        details = params.get("exceptionDetails", {})
        exception = details.get("exception", {})
        text = exception.get("description") or details.get("text") or "an exception"
        self._keep(ConsoleEntry("exception", _cut(str(text)), str(details.get("url", ""))))

    def _log_entry(self, params: Params) -> None:
        entry = params.get("entry", {})
        if entry.get("level") != "error" or entry.get("source") == "network":
            return  # a failed request is known to the handler that answered it
        text = str(entry.get("text", ""))
        if text.startswith("Failed to load resource"):
            return
        source = str(entry.get("source", "other"))
        self._keep(ConsoleEntry(source, _cut(text), str(entry.get("url", ""))))

    def _request(self, params: Params) -> None:
        if len(self.initiators) < MAX_INITIATORS:
            self.initiators[str(params.get("requestId", ""))] = describe_initiator(
                params.get("initiator", {})
            )

    def _socket(self, params: Params) -> None:
        if len(self.sockets) < MAX_CONSOLE:
            self.sockets.append(str(params.get("url", "")))


def describe_initiator(initiator: dict[str, Any]) -> str:
    """Who made a request, on one line: ``parser URL:LINE``, ``script URL:LINE``, ``preload``,
    ``other`` (the protocol's Network.Initiator; line numbers there count from 0)."""
    kind = str(initiator.get("type", "other"))
    frames = initiator.get("stack", {}).get("callFrames", [])
    parent = initiator.get("stack", {}).get("parent", {})
    while not frames and parent:  # an async stack: the frames are in a parent
        frames = parent.get("callFrames", [])
        parent = parent.get("parent", {})
    if frames:
        frame = frames[0]
        return f"{kind} {frame.get('url', '')}:{int(frame.get('lineNumber', 0)) + 1}"
    url = initiator.get("url")
    if url:
        line = initiator.get("lineNumber")
        return f"{kind} {url}" + (f":{int(line) + 1}" if isinstance(line, int | float) else "")
    return kind


def _remote_text(arg: dict[str, Any]) -> str:
    """A console argument (a Runtime.RemoteObject) as text."""
    if "value" in arg:
        return str(arg["value"])
    return str(arg.get("description") or arg.get("type", ""))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


__all__ = ["COMMANDS", "ConsoleEntry", "PageObserver", "describe_initiator"]
