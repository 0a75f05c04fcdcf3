"""yt-dlp in a child process, asked only to resolve a page's media, never to download, and
given no network: every HTTP request it makes goes to the parent, which performs it with the
crawl's fetcher and records it, or refuses it.

Standard library and yt-dlp only (importing the ``archiver`` package would load the crawler),
run as a script by :mod:`archiver.media.resolver` with ``python -I``; the crawl's own process
never imports yt-dlp. yt-dlp's networking layer takes pluggable request handlers
(``yt_dlp.networking.common.RequestHandler``); :class:`ArchiverRH` is the only one this
``YoutubeDL`` has (:meth:`Resolver.build_request_director`), so no request can leave another
way: it writes the request on stdout and reads the answer on stdin.

The protocol is one JSON object a line, both ways (bodies in base64). Parent to child::

    {"op": "resolve", "url": U, "media_hint": bool, "format": SPEC, "max_entries": N,
     "timeout": SECONDS}
    {"op": "response", "status": S, "reason": R, "url": FINAL, "headers": [[k, v]...],
     "body": B64}                                   (the answer to the last request)
    {"op": "refused", "reason": WHY}                (the crawl did not fetch it)

Child to parent::

    {"op": "ready", "version": V, "isolated": bool} | {"op": "ready", "error": WHY}   (at start)
    {"op": "request", "method": M, "url": U, "headers": [[k, v]...], "body": B64 | null}
    {"op": "result", "info": {...}, "extractor": KEY, "warnings": [...]}
    {"op": "skipped", "why": ...}   (no extractor but the generic one, and no media on the page)
    {"op": "failed", "error": MESSAGE}

A page goes to yt-dlp's extractor for its URL when one other than the generic extractor claims
it; otherwise to the generic extractor (``<video>``, JSON-LD, ``og:video``, embedded players)
only when the parent saw media on the page (``media_hint``), so an ordinary page costs no
extraction. Before importing yt-dlp the child moves into a network namespace of its own where
the kernel allows it (:func:`isolate_network`: then no socket of yt-dlp's, or of a library it
calls, reaches any host) and caps its own address space (``RLIMIT_AS``); it exits when its
stdin closes (the crawl ended or died).

As a script: ``python ytdlpchild.py MEMORY_BYTES``.
"""

from __future__ import annotations

import base64
import ctypes
import io
import json
import os
import resource
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

#: what the child answers a parent that sent something it cannot read
PROTOCOL_ERROR = "protocol error"
#: unshare(2) flags (linux/sched.h)
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000


def isolate_network() -> bool:
    """Move this process into a network namespace of its own (unshare(2)): one with only a
    loopback interface, which is down, so no socket it opens reaches any host, the crawl's
    included. ``CLONE_NEWNET`` alone needs ``CAP_SYS_ADMIN``; with ``CLONE_NEWUSER`` an
    unprivileged process may do it where the kernel allows user namespaces. Done before
    yt-dlp is imported, while the process has one thread (``CLONE_NEWUSER`` requires it).
    False where neither is allowed: the request handler is then the only way out."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        unshare = libc.unshare
    except (OSError, AttributeError):
        return False
    return any(unshare(flags) == 0 for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET))


class Channel:
    """The protocol's two ends: JSON lines on the saved stdout, read from stdin."""

    def __init__(self, out: IO[str], into: IO[str]) -> None:
        self._out = out
        self._in = into

    def send(self, message: dict[str, Any]) -> None:
        self._out.write(json.dumps(message, separators=(",", ":")) + "\n")
        self._out.flush()

    def receive(self) -> dict[str, Any] | None:
        line = self._in.readline()
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError(PROTOCOL_ERROR)
        return message


def _body_bytes(data: Any) -> bytes | None:
    """A request body as bytes (yt-dlp allows bytes, an iterable of bytes or a file)."""
    if data is None:
        return None
    if isinstance(data, bytes):
        return data
    if hasattr(data, "read"):
        return bytes(data.read())
    return b"".join(data)


class _Pairs(list[tuple[str, str]]):
    """Header fields as a list of pairs with ``items()``: yt-dlp's Response adds each pair, so
    a repeated field (``Set-Cookie``) is kept."""

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self)


def make_handler(channel: Channel) -> type[Any]:
    """The request handler class that hands every request to the parent over ``channel``."""
    from yt_dlp.networking.common import Features, RequestHandler, Response  # noqa: PLC0415
    from yt_dlp.networking.exceptions import HTTPError, TransportError  # noqa: PLC0415

    class ArchiverRH(RequestHandler):  # type: ignore[misc]
        """Every request yt-dlp makes, performed (and recorded) by the crawl, or refused."""

        _SUPPORTED_URL_SCHEMES = ("http", "https")
        _SUPPORTED_PROXY_SCHEMES = None  # the crawl's proxy settings apply, not yt-dlp's
        _SUPPORTED_FEATURES = (Features.NO_PROXY, Features.ALL_PROXY)

        def _check_extensions(self, extensions: dict[str, Any]) -> None:
            super()._check_extensions(extensions)
            # the crawl's jar, timeouts and TLS settings apply; impersonation is refused
            for name in ("cookiejar", "timeout", "legacy_ssl", "keep_header_casing"):
                extensions.pop(name, None)

        def _send(self, request: Any) -> Any:
            body = _body_bytes(request.data)
            headers = self._get_headers(request)
            channel.send(
                {
                    "op": "request",
                    "method": request.method,
                    "url": request.url,
                    "headers": [[name, value] for name, value in headers.items()],
                    "body": None if body is None else base64.b64encode(body).decode("ascii"),
                }
            )
            answer = channel.receive()
            if answer is None:
                raise TransportError(msg="the crawl closed the channel")
            if answer.get("op") == "refused":
                raise TransportError(msg=f"not fetched by the crawl: {answer.get('reason')}")
            if answer.get("op") != "response":
                raise TransportError(msg=PROTOCOL_ERROR)
            response = Response(
                io.BytesIO(base64.b64decode(answer["body"])),
                url=answer["url"],
                headers=_Pairs((str(k), str(v)) for k, v in answer["headers"]),
                status=int(answer["status"]),
                reason=answer.get("reason") or None,
            )
            if not 200 <= response.status < 300:
                raise HTTPError(response)
            return response

    return ArchiverRH


class _Log:
    """yt-dlp's logger: warnings and errors kept for the result, nothing printed."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def debug(self, message: str) -> None:
        pass

    def info(self, message: str) -> None:
        pass

    def warning(self, message: str) -> None:
        if len(self.warnings) < 20:
            self.warnings.append(message[:500])

    def error(self, message: str) -> None:
        self.warning(message)


def _extractor_for(url: str) -> str | None:
    """The key of the first working extractor other than the generic one that claims ``url``."""
    from yt_dlp.extractor import gen_extractor_classes  # noqa: PLC0415

    for extractor in gen_extractor_classes():
        key = extractor.ie_key()
        if key != "Generic" and extractor.suitable(url) and extractor.working():
            return str(key)
    return None


def resolve(channel: Channel, handler: type[Any], message: dict[str, Any]) -> dict[str, Any]:
    """One page: its extractor's info dict, format selection applied, nothing downloaded."""
    import yt_dlp  # noqa: PLC0415

    url = str(message["url"])
    key = _extractor_for(url)
    if key is None and not message.get("media_hint"):
        return {"op": "skipped", "why": "no extractor but the generic one, and no media seen"}
    log = _Log()

    class Resolver(yt_dlp.YoutubeDL):  # type: ignore[misc]
        def build_request_director(self, handlers: Any, preferences: Any = None) -> Any:
            # only the crawl's handler: no request can leave by another
            return super().build_request_director([handler], preferences)

    params = {
        "logger": log,
        "quiet": True,
        "noprogress": True,
        "simulate": True,
        "skip_download": True,
        "format": message.get("format") or "b",
        "check_formats": False,
        "playlistend": int(message.get("max_entries") or 20),
        "cachedir": False,
        "socket_timeout": float(message.get("timeout") or 60),
        "extractor_retries": 0,
        "color": {"stdout": "no_color", "stderr": "no_color"},
    }
    try:
        with Resolver(params) as ydl:
            info = ydl.extract_info(url, download=False, ie_key=key or "Generic")
            clean = ydl.sanitize_info(info)
    except Exception as exc:  # yt-dlp's own errors and its extractors' bugs: one failure
        return {"op": "failed", "error": _one_line(str(exc) or type(exc).__name__)}
    if not isinstance(clean, dict):
        return {"op": "failed", "error": "yt-dlp returned no information"}
    return {
        "op": "result",
        "info": clean,
        "extractor": clean.get("extractor_key") or key or "Generic",
        "warnings": log.warnings,
    }


def _one_line(text: str) -> str:
    return " ".join(text.split())[:1000]


def serve(channel: Channel, answer: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Answer resolve requests until stdin closes."""
    while True:
        try:
            message = channel.receive()
        except ValueError:
            channel.send({"op": "failed", "error": PROTOCOL_ERROR})
            continue
        if message is None:
            return
        if message.get("op") == "resolve":
            channel.send(answer(message))


def warm_up() -> None:
    """Load yt-dlp and compile every extractor's URL pattern now, before the child says it is
    ready: the first :func:`_extractor_for` costs a quarter of a second of CPU (seconds of
    wall-clock time on a busy machine), which would otherwise be taken from the first page's
    resolution time."""
    import yt_dlp  # noqa: F401, PLC0415

    _extractor_for("http://localhost/")


def main(argv: list[str]) -> int:
    memory = int(argv[1]) if len(argv) > 1 else 0
    isolated = isolate_network()
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # the protocol owns the real stdout; anything yt-dlp or a library prints goes to stderr
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    sys.stdout = sys.stderr
    channel = Channel(out, sys.stdin)
    try:
        import yt_dlp.version  # noqa: PLC0415
    except ImportError:
        channel.send({"op": "ready", "error": "yt-dlp is not installed"})
        return 0
    try:
        warm_up()
    except Exception as exc:  # a broken yt-dlp install: the crawl says so before it starts
        channel.send({"op": "ready", "error": f"yt-dlp cannot run: {_one_line(str(exc))}"})
        return 0
    channel.send({"op": "ready", "version": yt_dlp.version.__version__, "isolated": isolated})
    handler = make_handler(channel)
    serve(channel, lambda message: resolve(channel, handler, message))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
