"""yt-dlp as a resolver of media URLs, run in child processes that have no network of their own.

:mod:`archiver.media.ytdlpchild` runs yt-dlp in a child process (a script: the crawl's process
never imports yt-dlp). Each HTTP request yt-dlp makes while resolving a page comes back here as
an :class:`HttpRequest` and is handed to the ``fetch`` function the caller gives
(:mod:`archiver.pipeline.media`: the lease's capturer, so robots.txt, politeness, scope, the
SSRF guard and dedup apply and every byte is recorded), whose :class:`HttpAnswer` or
:class:`Refusal` goes back to yt-dlp. What yt-dlp returns is its info dict, format selection
applied; nothing is downloaded by it.

Children are started on demand, up to ``processes``, and reused page after page (yt-dlp's
import costs a third of a second of CPU). A resolution is bounded by ``timeout`` seconds of
wall-clock time, requests included: past it the child is killed (the next page starts a new
one) and the page costs one :class:`Resolution` with an ``error``. A request being fetched
when the time runs out is not cancelled (its capture must be written whole, for the lease to
commit it; the fetcher's own timeouts bound it); the child is killed once it is answered. A
child that dies, answers nonsense or exceeds ``max_requests`` costs the same. Each child caps
its address space (``memory``) and exits when its stdin closes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from archiver.errors import ArchiverError
from archiver.media import ytdlpchild

#: 60 s: a page, an API call or two and a manifest, on a slow site
DEFAULT_TIMEOUT = 60.0
#: requests one resolution may make (the page, API calls, manifests); more are refused
MAX_REQUESTS = 50
#: a child's address space: yt-dlp with its lazy extractors takes ~100 MB
DEFAULT_MEMORY = 2 << 30
#: the longest protocol line read from a child (an info dict with thousands of formats)
MAX_LINE = 64 << 20
#: playlist entries a page's resolution follows at most
MAX_ENTRIES = 20
#: how long a new child may take to say it is ready (importing yt-dlp on a busy machine)
START_TIMEOUT = 60.0


class MediaResolverError(ArchiverError):
    """yt-dlp cannot run at all (not installed, or its child cannot start)."""


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A request yt-dlp makes: what it would send (its own ``User-Agent`` included)."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """What yt-dlp is answered: the final URL after redirects, the fields as received, the
    payload decoded (transfer and content codings removed, as an HTTP library hands it)."""

    status: int
    reason: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request the crawl did not fetch, and why (robots, scope, a failed fetch…)."""

    reason: str


Fetch = Callable[[HttpRequest], Awaitable[HttpAnswer | Refusal]]


@dataclass(frozen=True, slots=True)
class Resolution:
    """What resolving one page came to."""

    #: yt-dlp's info dict (``sanitize_info``'d), None when it found nothing or failed
    info: dict[str, Any] | None = None
    #: the extractor that answered (``Generic``, ``PeerTube``…)
    extractor: str | None = None
    #: why nothing was resolved (yt-dlp's message, the time limit…); None when skipped or found
    error: str | None = None
    #: True when no extractor but the generic one claims the URL and the page shows no media
    skipped: bool = False
    #: the requests yt-dlp made, each fetched or refused
    requests: int = 0
    warnings: tuple[str, ...] = field(default=())


class _Child:
    """One yt-dlp child process and its protocol line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        self._in = process.stdin
        self._out = process.stdout

    async def send(self, message: dict[str, Any]) -> None:
        self._in.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        await self._in.drain()

    async def receive(self) -> dict[str, Any]:
        line = await self._out.readline()
        if not line:
            with contextlib.suppress(TimeoutError):  # its exit status, when it has one
                await asyncio.wait_for(self.process.wait(), 1.0)
            raise EOFError(f"yt-dlp's process exited (status {self.process.returncode})")
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("yt-dlp's process answered something other than an object")
        return message

    async def kill(self) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()

    async def close(self) -> None:
        """Close its stdin (it exits by itself); killed if it does not within a second."""
        if self.process.returncode is None:
            self._in.close()
            try:
                await asyncio.wait_for(self.process.wait(), 1.0)
            except TimeoutError:
                await self.kill()


@dataclass(frozen=True, slots=True)
class ResolverConfig:
    """How pages are resolved (built from the settings by :mod:`archiver.config.assemble`)."""

    #: seconds one page's resolution may take, its requests included
    timeout: float = DEFAULT_TIMEOUT
    #: child processes at most (each resolves one page at a time)
    processes: int = 2
    #: each child's address space cap, in bytes
    memory: int = DEFAULT_MEMORY
    max_requests: int = MAX_REQUESTS
    max_entries: int = MAX_ENTRIES
    #: yt-dlp's format spec (:func:`archiver.media.formats.format_spec`)
    format_spec: str = "b"


class YtDlpResolver:
    """Resolves pages' media with yt-dlp in up to ``config.processes`` child processes."""

    def __init__(self, config: ResolverConfig | None = None) -> None:
        config = config or ResolverConfig()
        self.config = config
        self.timeout = config.timeout
        self.max_requests = config.max_requests
        self.max_entries = config.max_entries
        self.format_spec = config.format_spec
        self._memory = config.memory
        self._slots = asyncio.Semaphore(max(config.processes, 1))
        self._idle: list[_Child] = []
        self._busy: set[_Child] = set()
        self._closed = False
        #: yt-dlp's version, once a child has started
        self.version: str | None = None
        #: whether the children run in a network namespace of their own (no network at all),
        #: once one has started; else yt-dlp's request handler is their only way out
        self.isolated: bool | None = None

    async def start(self) -> str:
        """Start one child and return yt-dlp's version: raises :class:`MediaResolverError`
        when yt-dlp is not installed or its child cannot start (a crawl checks this before
        anything is written)."""
        child = await self._spawn()
        self._idle.append(child)
        assert self.version is not None
        return self.version

    async def _spawn(self) -> _Child:
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",  # isolated: no user site, no PYTHON* variables, no current directory
                ytdlpchild.__file__,
                str(self._memory),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                limit=MAX_LINE,
            )
        except OSError as exc:
            raise MediaResolverError(f"yt-dlp's process could not start: {exc}") from exc
        child = _Child(process)
        try:
            hello = await asyncio.wait_for(child.receive(), START_TIMEOUT)
        except (TimeoutError, EOFError, ValueError) as exc:
            await child.kill()
            raise MediaResolverError(f"yt-dlp's process did not start: {exc}") from exc
        if hello.get("error"):
            await child.kill()
            raise MediaResolverError(str(hello["error"]))
        self.version = str(hello.get("version"))
        self.isolated = hello.get("isolated") is True
        return child

    async def resolve(self, url: str, fetch: Fetch, *, media_hint: bool) -> Resolution:
        """The media of the page at ``url``, every request yt-dlp makes handed to ``fetch``."""
        if self._closed:
            return Resolution(error="the resolver is closed")
        async with self._slots:
            try:
                child = self._idle.pop() if self._idle else await self._spawn()
            except MediaResolverError as exc:
                return Resolution(error=str(exc))
            self._busy.add(child)
            keep = False
            try:
                resolution, keep = await self._converse(child, url, fetch, media_hint)
            finally:
                self._busy.discard(child)
                if keep and not self._closed:
                    self._idle.append(child)
                else:
                    await child.kill()
            return resolution

    async def _converse(
        self, child: _Child, url: str, fetch: Fetch, media_hint: bool
    ) -> tuple[Resolution, bool]:
        """The conversation for one page; whether the child may be reused."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        requests = 0
        try:
            await child.send(
                {
                    "op": "resolve",
                    "url": url,
                    "media_hint": media_hint,
                    "format": self.format_spec,
                    "max_entries": self.max_entries,
                    "timeout": self.timeout,
                }
            )
            while True:
                left = deadline - loop.time()
                if left <= 0:
                    raise TimeoutError
                message = await asyncio.wait_for(child.receive(), left)
                op = message.get("op")
                if op != "request":
                    return _ended(message, requests), op in ("result", "skipped", "failed")
                requests += 1
                if requests > self.max_requests:
                    answer: HttpAnswer | Refusal = Refusal(
                        f"more than {self.max_requests} requests for one page"
                    )
                else:
                    answer = await fetch(_request(message))
                if loop.time() >= deadline:
                    raise TimeoutError
                await child.send(_answer_message(answer))
        except TimeoutError:
            error = f"yt-dlp was still busy after {self.timeout:g} s"
        except (EOFError, ValueError, KeyError, TypeError, OSError) as exc:
            error = f"yt-dlp's process failed: {exc}"
        return Resolution(error=error, requests=requests), False

    async def close(self) -> None:
        """Stop every child (those resolving are killed when their page ends)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for child in idle:
            await child.close()
        for child in list(self._busy):
            await child.kill()


def _request(message: dict[str, Any]) -> HttpRequest:
    body = message.get("body")
    return HttpRequest(
        method=str(message["method"]).upper(),
        url=str(message["url"]),
        headers=tuple((str(k), str(v)) for k, v in message.get("headers") or ()),
        body=None if body is None else base64.b64decode(body),
    )


def _answer_message(answer: HttpAnswer | Refusal) -> dict[str, Any]:
    if isinstance(answer, Refusal):
        return {"op": "refused", "reason": answer.reason}
    return {
        "op": "response",
        "status": answer.status,
        "reason": answer.reason,
        "url": answer.url,
        "headers": [list(pair) for pair in answer.headers],
        "body": base64.b64encode(answer.body).decode("ascii"),
    }


def _ended(message: dict[str, Any], requests: int) -> Resolution:
    op = message.get("op")
    if op == "result" and isinstance(message.get("info"), dict):
        return Resolution(
            info=message["info"],
            extractor=str(message.get("extractor") or ""),
            requests=requests,
            warnings=tuple(str(w) for w in message.get("warnings") or ()),
        )
    if op == "skipped":
        return Resolution(skipped=True, requests=requests)
    return Resolution(error=str(message.get("error") or f"unexpected {op!r}"), requests=requests)


__all__ = [
    "DEFAULT_TIMEOUT",
    "Fetch",
    "HttpAnswer",
    "HttpRequest",
    "MediaResolverError",
    "Refusal",
    "Resolution",
    "ResolverConfig",
    "YtDlpResolver",
]
