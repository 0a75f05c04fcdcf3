"""Raw byte capture underneath aiohttp: the only code that knows aiohttp's internals.

An archive is evidence, so a response record must hold the bytes that arrived on the connection
and a request record the bytes that were sent (WARC 1.1 sections 6.3.2 and 6.5.2). aiohttp
de-chunks, decompresses and tidies headers before we ever see them, so the capture happens at the
connection's protocol object, after TLS:

* :class:`RecordingResponseHandler` replaces aiohttp's ``ResponseHandler`` for every connection
  the :class:`RecordingConnector` opens. Its ``data_received`` hands each received chunk to the
  recorder of the exchange that currently owns the connection, then to aiohttp; its transport is
  wrapped so every ``write`` is recorded too.
* :class:`RecordingConnector.connect` binds the :class:`WireRecorder` of the calling task (a
  context variable set by :mod:`archiver.fetch.fetcher`) to the connection it hands out, so
  keep-alive connections are split exactly at exchange boundaries: one request is in flight per
  connection
  (HTTP/1.1 without pipelining), and :class:`~archiver.fetch.httpframe.ResponseFramer` decides
  where the response ends by RFC 9112 section 6.3, independently of aiohttp's parser.

The aiohttp internals used are checked by :func:`check_aiohttp_compatibility` at start-up, and
the tests in ``tests/test_capture.py`` compare recorded bytes with what a raw test server wrote:
if a new aiohttp moves these internals, those tests fail loudly. ``pyproject.toml`` pins the
tested release.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import socket
import ssl
from collections.abc import Iterable
from typing import Any, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler

from archiver import digest
from archiver.fetch.httpframe import Framing, ResponseFramer, State
from archiver.fetch.tunnel import Tunnels
from archiver.models import TlsInfo, Truncation
from archiver.spool import DEFAULT_MEMORY_LIMIT, Spool

#: aiohttp releases whose internals this module has been verified against.
TESTED_AIOHTTP_VERSIONS = ("3.14.5",)
#: Request bytes kept per exchange; a crawler sends small GET requests, this only bounds memory.
MAX_REQUEST_BYTES = 1024 * 1024
#: Bytes kept of a response whose header block failed to parse (only for the log message).
MAX_DIAGNOSTIC_BYTES = 64 * 1024

#: The recorder of the exchange the current task is performing (set by archiver.fetch.fetcher).
CURRENT_RECORDER: contextvars.ContextVar[WireRecorder | None] = contextvars.ContextVar(
    "archiver_current_recorder", default=None
)


@functools.cache
def _empty_digest(algorithm: str) -> str:
    """The digest of no bytes (the payload of every GET request)."""
    return digest.digest_bytes(algorithm, b"")


class IncompatibleAiohttpError(RuntimeError):
    """The installed aiohttp does not have the internals raw capture relies on."""


def check_aiohttp_compatibility() -> None:
    """Fail loudly, before crawling, if aiohttp's internals moved."""
    missing = [
        name
        for name in ("data_received", "connection_made", "connection_lost", "_drain_tail")
        if not hasattr(ResponseHandler, name)
    ]
    for method in ("connect", "_resolve_host", "_wrap_create_connection"):
        if not hasattr(aiohttp.TCPConnector, method):
            missing.append(f"TCPConnector.{method}")
    probe = aiohttp.TCPConnector.__init__.__code__.co_names
    if (
        "_factory" not in probe
        and "_factory" not in aiohttp.BaseConnector.__init__.__code__.co_names
    ):
        missing.append("BaseConnector._factory")
    if missing:
        raise IncompatibleAiohttpError(
            f"aiohttp {aiohttp.__version__} lacks {', '.join(missing)}; raw capture is tested "
            f"on aiohttp {', '.join(TESTED_AIOHTTP_VERSIONS)} (see pyproject.toml)"
        )


_TLS_VERSIONS = {
    "TLSv1": "tls/1.0",
    "TLSv1.1": "tls/1.1",
    "TLSv1.2": "tls/1.2",
    "TLSv1.3": "tls/1.3",
}
# OpenSSL names of common TLS 1.2 suites -> IANA names (the form WARC-Cipher-Suite asks for,
# iipc/warc-specifications#86). TLS 1.3 suites already have their IANA names in OpenSSL.
_IANA_CIPHERS = {
    "ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "ECDHE-RSA-CHACHA20-POLY1305": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "DHE-RSA-AES128-GCM-SHA256": "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
    "DHE-RSA-AES256-GCM-SHA384": "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
    "ECDHE-RSA-AES128-SHA256": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "ECDHE-RSA-AES256-SHA384": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    "ECDHE-RSA-AES128-SHA": "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "ECDHE-RSA-AES256-SHA": "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "AES128-GCM-SHA256": "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "AES256-GCM-SHA384": "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "AES128-SHA": "TLS_RSA_WITH_AES_128_CBC_SHA",
    "AES256-SHA": "TLS_RSA_WITH_AES_256_CBC_SHA",
}


def tls_info(
    ssl_object: ssl.SSLObject | ssl.SSLSocket, verified: bool, error: str | None
) -> TlsInfo:
    version = ssl_object.version() or "unknown"
    cipher = ssl_object.cipher()
    name = cipher[0] if cipher else None
    return TlsInfo(
        version=_TLS_VERSIONS.get(version, version.lower()),
        cipher_suite=_IANA_CIPHERS.get(name, name) if name else None,
        verified=verified,
        verify_error=error,
    )


class WireRecorder:
    """The bytes of one exchange as they cross the connection, with streaming digests.

    The response bytes go to a :class:`~archiver.spool.Spool` (memory first, disk when large).
    The block digest is computed over exactly the stored bytes; the payload digest over the body
    with the chunked coding removed (content coding kept). The body is also kept in memory up to
    ``keep_body`` bytes for link extraction.
    """

    def __init__(
        self,
        *,
        algorithm: str = "sha1",
        method: str = "GET",
        max_body: int | None = None,
        max_header_bytes: int = 256 * 1024,
        max_header_line: int = 32 * 1024,
        max_headers: int = 256,
        keep_body: int = 0,
        spool_memory: int = DEFAULT_MEMORY_LIMIT,
        spool_dir: str | None = None,
    ) -> None:
        self.algorithm = algorithm
        self.request = bytearray()
        self.response = Spool(memory_limit=spool_memory, directory=spool_dir)
        self._spool_config = (spool_memory, spool_dir)
        #: interim (1xx) responses that came before the final one, each as received; kept out
        #: of ``response`` (see :meth:`_split_interim`)
        self.interim: list[bytes] = []
        self._interim_bytes = 0  #: their total length: where ``response`` starts in the stream
        self.framer = ResponseFramer(
            method=method,
            on_body=self._on_payload,
            max_header_bytes=max_header_bytes,
            max_header_line=max_header_line,
            max_headers=max_headers,
            body_limit=max_body,
        )
        self._block = digest.new_hasher(algorithm)
        self._payload = digest.new_hasher(algorithm)
        self._raw_body = digest.new_hasher(algorithm)  # for bodies whose chunking is broken
        self._keep_limit = keep_body
        self.body: bytearray | None = bytearray() if keep_body > 0 else None
        self.body_complete = True  # False when the kept body is only a prefix
        self.peer: str | None = None
        self.tls: TlsInfo | None = None
        self.eof = False
        self.excess = 0  #: bytes received after the response ended (logged, not stored)
        self.request_overflow = False
        self.blocked: str | None = None  #: set by the SSRF guard when it refused an address
        self._protocol: RecordingResponseHandler | None = None

    # -- fed by the connection -------------------------------------------------------------

    def on_sent(self, data: bytes | bytearray | memoryview) -> None:
        if len(self.request) + len(data) > MAX_REQUEST_BYTES:
            self.request_overflow = True
            return
        self.request += data

    def on_received(self, data: bytes) -> None:
        framer = self.framer
        if framer.done or framer.limit_reached:
            self.excess += len(data)
            return
        if framer.failed:
            if framer.headers_too_large:
                # refused already: close this connection too (aiohttp may have retried the
                # GET on a new one after the first was closed)
                self.excess += len(data)
                self.abort_connection()
                return
            self._store_unframed(data)
            return
        before = framer.consumed
        used = framer.feed(data)
        if used:
            self._store(memoryview(data)[:used], before)
        if framer.headers_too_large:
            # refused: reading the rest would only cost time (up to the read timeout) and
            # memory; the fetch fails as headers-too-large when aiohttp sees the close
            self.excess += len(data) - used
            self.abort_connection()
        elif framer.failed:
            if used < len(data):
                self._store_unframed(memoryview(data)[used:])
            if framer.headers_complete:
                # the chunked coding broke: where this response ends can no longer be known,
                # so what arrived is kept (marked truncated) and nothing more is waited for
                self.abort_connection()
        elif used < len(data):
            self.excess += len(data) - used

    def on_eof(self) -> None:
        self.eof = True
        if self.framer.state in (State.HEADERS, State.BODY) and not self.framer.limit_reached:
            self.framer.feed_eof()

    def _store(self, data: memoryview, offset: int) -> None:
        if len(self.framer.interim_ends) > len(self.interim):
            self._split_interim(data, offset)
            return
        self.response.write(data)
        self._block.update(data)
        if self.framer.framing is Framing.CHUNKED:
            skip = max(self.framer.header_length - offset, 0)
            if skip < len(data):
                self._raw_body.update(data[skip:])

    def _split_interim(self, data: memoryview, offset: int) -> None:
        """The framer found the end of an interim (1xx) response in ``data``: move it, and
        any earlier bytes of it, out of the stored response, then store the rest.

        Replay tools and indexers read a response record's first status line as the capture's
        status: a block starting with ``103 Early Hints`` replays as a 103 with the real
        response for a body (cdxj-indexer indexes it as 103). RFC 9110 section 15.2 makes
        them separate, interim messages, so the record keeps the final response and the
        interim ones go beside it (:meth:`archiver.warc.records.RecordFactory.capture`): every byte
        received is still in the WARC. Interim responses all end before the final response's
        header block does, so what is moved is header bytes (bounded by the header limits)
        and the stored response and its block digest simply start again after them.
        """
        held = self.response.getvalue() + bytes(data)  # stream bytes from _interim_bytes on
        start = self._interim_bytes
        for end in self.framer.interim_ends[len(self.interim) :]:
            self.interim.append(held[start - self._interim_bytes : end - self._interim_bytes])
            start = end
        rest = memoryview(held)[start - self._interim_bytes :]
        memory, directory = self._spool_config
        self.response.close()
        self.response = Spool(memory_limit=memory, directory=directory)
        self._block = digest.new_hasher(self.algorithm)
        self._interim_bytes = start
        self._store(rest, start)

    def _store_unframed(self, data: bytes | memoryview) -> None:
        """Bytes after a framing error: stored as received (best effort, WARC 1.1 6.3.2)."""
        if not self.framer.headers_complete:
            room = MAX_DIAGNOSTIC_BYTES - self.response.size
        elif self.framer.body_limit is not None:
            stored = self._interim_bytes + self.response.size  # stream bytes kept so far
            room = self.framer.header_length + self.framer.body_limit - stored
        else:
            room = len(data)
        chunk = memoryview(data)[: max(room, 0)]
        if chunk:
            self.response.write(chunk)
            self._block.update(chunk)
            if self.framer.headers_complete:
                self._raw_body.update(chunk)
        if len(chunk) < len(data):
            self.framer.limit_reached = True

    def _on_payload(self, data: memoryview) -> None:
        self._payload.update(data)
        body = self.body
        if body is not None:
            room = self._keep_limit - len(body)
            if room >= len(data):
                body += data
            else:
                if room > 0:
                    body += data[:room]
                self.body_complete = False

    # -- results ----------------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return self.framer.state is State.DONE

    @property
    def headers_complete(self) -> bool:
        return self.framer.headers_complete

    def truncation(self, *, timed_out: bool = False) -> Truncation | None:
        """What ``WARC-Truncated`` must say about the stored response, if anything."""
        framer = self.framer
        if framer.state is State.DONE:
            return None
        if framer.limit_reached:
            return Truncation.LENGTH
        if timed_out:
            return Truncation.TIME
        if framer.state is State.ERROR and framer.error and "closed" in framer.error:
            return Truncation.DISCONNECT
        if framer.state is State.ERROR:
            return Truncation.UNSPECIFIED
        if self.eof:
            return Truncation.DISCONNECT
        return Truncation.UNSPECIFIED

    def block_digest(self) -> str:
        return digest.finish(self.algorithm, self._block)

    def payload_digest(self) -> str:
        """Digest of the entity body; over the stored body when its chunking is broken."""
        framer = self.framer
        broken_chunking = (
            framer.framing is Framing.CHUNKED
            and framer.state is State.ERROR
            and framer.error is not None
            and "closed" not in framer.error
        )
        return digest.finish(self.algorithm, self._raw_body if broken_chunking else self._payload)

    def request_digests(self) -> tuple[str, str]:
        """Block and payload digests of the request (payload: what follows the header block)."""
        data = bytes(self.request)
        end = data.find(b"\r\n\r\n")
        body = data[end + 4 :] if end >= 0 else b""
        payload = (
            _empty_digest(self.algorithm) if not body else digest.digest_bytes(self.algorithm, body)
        )
        return digest.digest_bytes(self.algorithm, data), payload

    def detach(self) -> None:
        """Stop recording: the exchange is over (its connection may serve another one)."""
        protocol = self._protocol
        if protocol is not None and protocol.recorder is self:
            protocol.recorder = None
        self._protocol = None

    def abort_connection(self) -> None:
        """Close the connection this exchange used, so it is never reused after a cut."""
        protocol = self._protocol
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()


class _TappingTransport:
    """Wraps the connection's transport so the bytes written on it are recorded."""

    def __init__(self, transport: asyncio.Transport, protocol: RecordingResponseHandler) -> None:
        self._transport = transport
        self._protocol = protocol

    def write(self, data: bytes | bytearray | memoryview) -> None:
        recorder = self._protocol.recorder
        if recorder is not None:
            recorder.on_sent(data)
        self._transport.write(data)

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        chunks = list(list_of_data)
        recorder = self._protocol.recorder
        if recorder is not None:
            for chunk in chunks:
                recorder.on_sent(chunk)
        self._transport.writelines(chunks)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class RecordingResponseHandler(ResponseHandler):
    """aiohttp's client protocol, with the raw bytes of each exchange sent to its recorder."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.recorder: WireRecorder | None = None
        self.raw_transport: asyncio.Transport | None = None
        self._refeeding = 0
        #: a connection through a proxy tunnel: its peer is the proxy, so the origin's address
        #: is the one the proxy was given (None when the proxy resolved the name)
        self.tunneled = False
        self.tunnel_address: str | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses: duck typing only.
        self.raw_transport = cast(asyncio.Transport, transport)
        super().connection_made(_TappingTransport(self.raw_transport, self))  # type: ignore[arg-type]

    def data_received(self, data: bytes) -> None:
        # aiohttp re-feeds bytes it buffered earlier through data_received (from _drain_tail and
        # after an upgrade); only the outermost call carries new bytes from the transport.
        if data and not self._refeeding:
            recorder = self.recorder
            if recorder is not None:
                recorder.on_received(data)
        self._refeeding += 1
        try:
            super().data_received(data)
        finally:
            self._refeeding -= 1

    def _drain_tail(self) -> None:
        self._refeeding += 1
        try:
            super()._drain_tail()
        finally:
            self._refeeding -= 1

    def connection_lost(self, exc: BaseException | None) -> None:
        recorder = self.recorder
        if recorder is not None:
            recorder.on_eof()
        super().connection_lost(exc)

    def attach(self, recorder: WireRecorder) -> None:
        """Make ``recorder`` the owner of this connection's bytes until it detaches."""
        self.recorder = recorder
        recorder._protocol = self
        transport = self.raw_transport
        if transport is None:
            return
        peer = transport.get_extra_info("peername")
        if self.tunneled:
            recorder.peer = self.tunnel_address
        elif peer:
            recorder.peer = str(peer[0])
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            verified = ssl_object.context.verify_mode != ssl.CERT_NONE
            recorder.tls = tls_info(ssl_object, verified, None)


class RecordingConnector(aiohttp.TCPConnector):
    """A TCPConnector whose connections record raw bytes for the task's current recorder.

    With ``tunnels``, connections to proxied hosts are opened through a proxy tunnel
    (:mod:`archiver.fetch.tunnel`) in place of a direct socket: the tunnel is complete before
    the recording protocol is made, so it records the origin exchange only. aiohttp's own
    proxy support is not used: it would send plain-http requests in absolute form, and it
    records its CONNECT on the same protocol object.
    """

    def __init__(self, *, tunnels: Tunnels | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tunnels = tunnels
        if not hasattr(self, "_factory"):
            raise IncompatibleAiohttpError("aiohttp connectors no longer have _factory")
        self._factory = cast(
            "functools.partial[ResponseHandler]",
            functools.partial(RecordingResponseHandler, loop=self._loop),
        )

    async def _resolve_host(self, host: str, port: int, traces: Any = None) -> Any:
        """No local lookup for a name the proxy resolves when nothing here needs the address
        (the SSRF guard is off): aiohttp's address list then carries the name itself."""
        tunnels = self._tunnels
        if tunnels is not None and tunnels.resolved_by_proxy(host):
            family = socket.AF_INET
            return [
                {
                    "hostname": host,
                    "host": host,
                    "port": port,
                    "family": family,
                    "proto": 0,
                    "flags": 0,
                }
            ]
        return await super()._resolve_host(host, port, traces=traces)

    async def _wrap_create_connection(
        self,
        *args: Any,
        addr_infos: list[Any],
        req: Any,
        timeout: Any,  # noqa: ASYNC109
        client_error: type[Exception] = aiohttp.ClientConnectorError,
        **kwargs: Any,
    ) -> tuple[asyncio.Transport, ResponseHandler]:
        tunnels = self._tunnels
        host = req.url.raw_host or ""
        proxy = tunnels.proxy_for(host) if tunnels is not None else None
        if tunnels is None or proxy is None:
            return await super()._wrap_create_connection(
                *args,
                addr_infos=addr_infos,
                req=req,
                timeout=timeout,
                client_error=client_error,
                **kwargs,
            )
        # the tunnel weighed every address already: aiohttp is not to try the next one
        addresses = list(addr_infos)
        addr_infos.clear()
        try:
            async with asyncio.timeout(timeout.sock_connect):
                destination = tunnels.destination(proxy, host, int(req.port), addresses)
                transport, protocol = await tunnels.connect(
                    proxy,
                    destination,
                    args[0],
                    ssl_context=kwargs.get("ssl") or None,
                    server_hostname=kwargs.get("server_hostname"),
                )
        except ssl.SSLCertVerificationError as exc:  # as aiohttp maps a direct connection's
            raise aiohttp.ClientConnectorCertificateError(req.connection_key, exc) from exc
        except ssl.SSLError as exc:
            raise aiohttp.ClientConnectorSSLError(req.connection_key, exc) from exc
        except OSError as exc:
            if exc.errno is None and isinstance(exc, TimeoutError):
                raise
            raise client_error(req.connection_key, exc) from exc
        if not isinstance(protocol, RecordingResponseHandler):
            transport.close()
            raise IncompatibleAiohttpError("connection protocol is not the recording one")
        protocol.tunneled = True
        protocol.tunnel_address = destination.address
        return transport, protocol

    async def connect(self, req: Any, traces: Any, timeout: Any) -> Any:  # noqa: ASYNC109
        conn = await super().connect(req, traces, timeout)
        recorder = CURRENT_RECORDER.get()
        protocol = conn.protocol
        if recorder is not None:
            if not isinstance(protocol, RecordingResponseHandler):
                conn.close()
                raise IncompatibleAiohttpError("connection protocol is not the recording one")
            protocol.attach(recorder)
        return conn
