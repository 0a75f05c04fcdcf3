"""``fetch(url) -> Exchange``: one HTTP exchange, raw bytes captured, every limit enforced.

This module owns the aiohttp session. No aiohttp exception leaves it: transport failures are
mapped to :class:`archiver.errors.FetchError` subclasses at this boundary (as httpx does), each
with a :class:`~archiver.models.FailReason` the log and the summary count.

Limits, per fetch (a hostile or broken server must not turn into a hang or an out-of-memory
crash): connect timeout, idle-read timeout, a wall-clock limit for the whole exchange (a
trickling server is cut and the record marked ``WARC-Truncated: time``, WARC 1.1 section 5.13),
a body size cap (``length``), header block/line/count caps. Memory per fetch is bounded: bodies
spool to disk past ``spool_memory`` bytes and only ``keep_body`` bytes are kept for extraction.

Redirects are never followed here (``allow_redirects=False``): the crawler queues every hop, so
each is archived as its own exchange and chains that meet fetch their common URL once.

Cookies: the session consults the crawl's jar (:mod:`archiver.fetch.cookies`), kept in step
with its store around each fetch. Proxies: with ``FetchConfig.proxy`` every request goes through
a tunnel the connector opens (:mod:`archiver.fetch.tunnel`); aiohttp's own proxy support is not
used.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from archiver.errors import (
    BlockedAddressError,
    FetchError,
    HeadersTooLargeError,
    ProtocolError,
)
from archiver.fetch import capture
from archiver.fetch.cookies import (
    TRUSTED_CHANNEL,
    CookieStore,
    CrawlCookieJar,
    CrawlCookies,
    check_jar_compatibility,
    make_jar,
)
from archiver.fetch.cookiestxt import CookieLine
from archiver.fetch.httpframe import State
from archiver.fetch.proxy import ProxyRoutes
from archiver.fetch.tunnel import BlockedSocketError, ProxyError, Tunnels
from archiver.models import Exchange, FailReason, TlsInfo
from archiver.policy.credentials import is_credential_header, may_send_credentials
from archiver.policy.netguard import AddressPolicy
from archiver.timefmt import Clock, utcnow
from archiver.urls import scheme_host_port

DEFAULT_USER_AGENT = "archiver/0.1 (+https://github.com/archiver-crawler/archiver)"
#: Request header fields the fetcher sets itself (Host and Content-Length from the request it
#: sends, Cookie from the crawl's jar) or that describe one connection or the message framing
#: rather than the request (RFC 9110 sections 7.6.1 and 6.6.2): another client's request
#: relayed through :meth:`Fetcher.fetch` is sent without them (:func:`relayed_fields`).
OWN_FIELDS = frozenset(
    {
        "cookie",  # the crawl's jar adds the one Cookie field (archiver.fetch.cookies)
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-connection",
    }
)


@dataclass(frozen=True, slots=True)
class FetchConfig:
    """Everything the fetcher needs; built from :class:`archiver.config.settings.Settings`."""

    connections: int = 16
    user_agent: str = DEFAULT_USER_AGENT
    accept: str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    accept_encoding: str = "gzip, deflate"
    algorithm: str = "sha1"
    connect_timeout: float = 30.0
    read_timeout: float = 60.0
    fetch_timeout: float = 600.0
    max_body: int | None = None
    max_header_bytes: int = 256 * 1024
    max_header_line: int = 32 * 1024
    max_headers: int = 256
    keep_body: int = 8 * 1024 * 1024
    spool_memory: int = 512 * 1024
    spool_dir: str | None = None
    tls_verify: bool = False  #: True: refuse unverifiable certificates (else capture anyway)
    resolve: Mapping[str, str] = field(default_factory=dict)  #: host -> IP overrides
    extra_headers: Mapping[str, str] = field(default_factory=dict)
    #: host -> schemes over which the credential headers among ``extra_headers`` may be sent
    #: (:func:`archiver.policy.credentials.credential_scope`); other hosts never get them
    credential_scope: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: keep a cookie jar (:mod:`archiver.fetch.cookies`); False: no cookie is ever sent back
    cookies: bool = True
    #: cookies loaded from a cookies.txt file (``--cookies``): credentials, see the jar
    cookie_file: tuple[CookieLine, ...] = ()
    #: the proxy and the hosts that go direct (``--proxy``, ``--no-proxy-for``); None: direct
    proxy: ProxyRoutes | None = None


class OverrideResolver(AbstractResolver):
    """Resolves through getaddrinfo, except hosts mapped to fixed addresses (``--resolve``)."""

    def __init__(self, overrides: Mapping[str, str]) -> None:
        self._overrides = {host.lower(): ip for host, ip in overrides.items()}
        self._system = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        ip = self._overrides.get(host.lower().rstrip("."))
        if ip is None:
            return await self._system.resolve(host, port, family)
        fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": ip,
                "port": port,
                "family": fam,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        await self._system.close()


class Fetcher:
    """Performs fetches on one shared aiohttp session (keep-alive connection pool)."""

    def __init__(
        self,
        config: FetchConfig,
        policy: AddressPolicy | None = None,
        *,
        clock: Clock = utcnow,
        cookie_store: CookieStore | None = None,
    ) -> None:
        capture.check_aiohttp_compatibility()
        self.config = config
        #: when each fetch began (the exchange's WARC-Date); injectable so that tests can place
        #: runs in distinct seconds without waiting for the wall clock
        self.clock = clock
        self.policy = policy or AddressPolicy(allow_private=True)
        self._session: aiohttp.ClientSession | None = None
        #: hosts whose certificate failed verification, with the reason (capture-anyway mode)
        self.unverified_hosts: dict[str, str] = {}
        #: the crawl's cookie jar and its store (None with cookies off); made by ``start``
        self.cookies: CrawlCookies | None = None
        self._cookie_store = cookie_store

    # The TLS contexts are made on the first https URL: loading the CA bundle costs ~20 ms of
    # CPU, a noticeable share of a small crawl, and a plain-http crawl needs neither.
    @functools.cached_property
    def _verify_ctx(self) -> ssl.SSLContext:
        return ssl.create_default_context()

    @functools.cached_property
    def _noverify_ctx(self) -> ssl.SSLContext:
        """For capture-anyway mode (``tls_verify`` off): no CA bundle to load."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    async def __aenter__(self) -> Fetcher:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        cfg = self.config
        jar = make_jar(cfg.cookies)
        if isinstance(jar, CrawlCookieJar):
            missing = check_jar_compatibility(jar)
            if missing:
                raise capture.IncompatibleAiohttpError(
                    f"aiohttp {aiohttp.__version__}'s CookieJar lacks {', '.join(missing)}"
                )
            self.cookies = CrawlCookies(jar, self._cookie_store, cfg.cookie_file)
            await self.cookies.open()
        tunnels = None
        if cfg.proxy is not None:
            tunnels = Tunnels(
                cfg.proxy,
                self.policy.check,
                guard_active=not self.policy.allow_private,
                pinned=frozenset(host.lower().rstrip(".") for host in cfg.resolve),
                refused=_note_blocked,
            )
        connector = capture.RecordingConnector(
            tunnels=tunnels,
            limit=cfg.connections,
            limit_per_host=0,
            resolver=OverrideResolver(cfg.resolve),
            ttl_dns_cache=300,
            socket_factory=self._guarded_socket,
            enable_cleanup_closed=False,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=jar,
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
            timeout=aiohttp.ClientTimeout(
                total=None,
                sock_connect=cfg.connect_timeout,
                sock_read=cfg.read_timeout,
            ),
            max_line_size=cfg.max_header_line,
            max_field_size=cfg.max_header_line,
            max_headers=cfg.max_headers,
            trust_env=False,
        )

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self.cookies is not None:
            await self.cookies.close()

    def _guarded_socket(self, addr_info: Any) -> socket.socket:
        family, type_, proto, _, sockaddr = addr_info
        reason = self._check_address(str(sockaddr[0]), int(sockaddr[1]))
        if reason is not None:
            raise BlockedSocketError(f"refused to connect: {reason}")
        return socket.socket(family=family, type=type_, proto=proto)

    def _check_address(self, ip: str, port: int) -> str | None:
        """The SSRF guard's verdict on a direct socket's address; a refusal is noted on the
        current exchange."""
        reason = self.policy.check(ip, port)
        if reason is not None:
            _note_blocked(reason)
        return reason

    def _headers(self, extra: Mapping[str, str] | None, *, credentials: bool) -> dict[str, str]:
        """The request headers; configured credential headers only when ``credentials``."""
        cfg = self.config
        headers = {
            "User-Agent": cfg.user_agent,
            "Accept": cfg.accept,
            "Accept-Encoding": cfg.accept_encoding,
        }
        if credentials:
            headers.update(cfg.extra_headers)
        else:
            headers.update(self._public_headers)
        if extra:
            _merge(headers, extra)
        return headers

    @functools.cached_property
    def _public_headers(self) -> dict[str, str]:
        """The configured headers that are not credentials (sent to every host)."""
        return {
            name: value
            for name, value in self.config.extra_headers.items()
            if not is_credential_header(name)
        }

    async def fetch(
        self,
        url: str,
        headers: Mapping[str, str] | None = None,
        *,
        method: str = "GET",
        body: bytes | None = None,
    ) -> Exchange:
        """Send ``method`` (GET unless a browser asked for another) to ``url`` (normalised, see
        :mod:`archiver.urls`) with ``body``, and return the exchange.

        ``headers`` are added to the request; a ``Cookie`` among them is merged with the jar's
        into one header, so a browser's request headers are given without theirs
        (:func:`relayed_fields`). Raises :class:`FetchError` when
        there is nothing to archive (no complete header block).
        """
        message = _Message(method, headers, body)
        scheme, host, port = scheme_host_port(url)
        authority = f"{host}:{port}"
        if scheme == "https" and not self.config.tls_verify:
            ctx = self._noverify_ctx if authority in self.unverified_hosts else self._verify_ctx
        elif scheme == "https":
            ctx = self._verify_ctx
        else:
            ctx = None
        # Configured credentials go only to the seeds' hosts, and never to a host whose
        # certificate failed verification (archiver.policy.credentials).
        trusted = authority not in self.unverified_hosts
        credentials = trusted and may_send_credentials(self.config.credential_scope, scheme, host)
        cookies = self.cookies
        if cookies is not None:
            await cookies.refresh()
        try:
            exchange = await self._fetch_trusted(url, message, ctx, credentials, trusted=trusted)
        except aiohttp.ClientConnectorCertificateError as exc:
            if self.config.tls_verify:
                raise FetchError(
                    f"TLS certificate verification failed: {exc}", FailReason.TLS
                ) from exc
            self.unverified_hosts[authority] = _cert_reason(exc)
            try:
                exchange = await self._fetch_trusted(
                    url, message, self._noverify_ctx, False, trusted=False
                )
            except aiohttp.ClientConnectorCertificateError as exc2:  # pragma: no cover
                raise FetchError(f"TLS failure: {exc2}", FailReason.TLS) from exc2
        except FetchError:
            if cookies is not None:
                await cookies.publish()  # a response cut short may have set cookies
            raise
        if cookies is not None:
            # before the caller queues this response's links: whoever fetches them has the
            # cookies it set (another process of a shared crawl too)
            await cookies.publish()
        return exchange

    async def _fetch_trusted(
        self,
        url: str,
        message: _Message,
        ctx: ssl.SSLContext | None,
        credentials: bool,
        *,
        trusted: bool,
    ) -> Exchange:
        """One attempt, with the cookie jar told whether the channel is trusted."""
        token = TRUSTED_CHANNEL.set(trusted)
        try:
            return await self._fetch_once(url, message, ctx, credentials=credentials)
        finally:
            TRUSTED_CHANNEL.reset(token)

    async def _fetch_once(
        self,
        url: str,
        message: _Message,
        ctx: ssl.SSLContext | None,
        *,
        credentials: bool,
    ) -> Exchange:
        session = self._session
        if session is None:
            raise RuntimeError("Fetcher.start() was not called")
        cfg = self.config
        recorder = self._recorder()
        token = capture.CURRENT_RECORDER.set(recorder)
        date = self.clock()
        started = time.monotonic()
        timed_out = False
        response: aiohttp.ClientResponse | None = None
        clean = False
        whole = asyncio.timeout(cfg.fetch_timeout)
        try:
            try:
                async with whole:
                    response = await session.request(
                        message.method,
                        URL(url, encoded=True),
                        headers=self._headers(message.headers, credentials=credentials),
                        data=message.body,
                        allow_redirects=False,
                        ssl=ctx if ctx is not None else True,
                    )
                    clean = await self._drain(response, recorder)
            except TimeoutError:
                timed_out = True
            except aiohttp.ClientConnectorCertificateError:
                raise
            except aiohttp.ClientPayloadError:
                pass  # the body ended early or its framing broke: the recorder knows which
            except aiohttp.ClientConnectorDNSError as exc:
                raise FetchError(f"cannot resolve host: {exc.os_error}", FailReason.DNS) from exc
            except aiohttp.ClientConnectorError as exc:
                if recorder.blocked or isinstance(exc.os_error, BlockedSocketError):
                    raise BlockedAddressError(recorder.blocked or str(exc.os_error)) from exc
                if isinstance(exc.os_error, ProxyError):
                    raise FetchError(str(exc.os_error), FailReason.PROXY) from exc
                raise FetchError(f"cannot connect: {exc.os_error}", FailReason.CONNECT) from exc
            except (aiohttp.ClientResponseError, aiohttp.ServerDisconnectedError) as exc:
                if not recorder.headers_complete:
                    raise self._header_failure(recorder, exc) from exc
            except aiohttp.ClientError as exc:
                if not recorder.headers_complete:
                    raise self._header_failure(recorder, exc) from exc
            except OSError as exc:
                if not recorder.headers_complete:
                    raise FetchError(f"connection error: {exc}", FailReason.CONNECT) from exc
            self._check_head(recorder, timed_out=timed_out, whole_expired=whole.expired())
            return self._exchange(url, recorder, date, started, timed_out)
        finally:
            capture.CURRENT_RECORDER.reset(token)
            _release(recorder, response, clean=clean)

    def _recorder(self) -> capture.WireRecorder:
        cfg = self.config
        return capture.WireRecorder(
            algorithm=cfg.algorithm,
            max_body=cfg.max_body,
            max_header_bytes=cfg.max_header_bytes,
            max_header_line=cfg.max_header_line,
            max_headers=cfg.max_headers,
            keep_body=cfg.keep_body,
            spool_memory=cfg.spool_memory,
            spool_dir=cfg.spool_dir,
        )

    def _check_head(
        self, recorder: capture.WireRecorder, *, timed_out: bool, whole_expired: bool
    ) -> None:
        """Raise unless a whole response head arrived from an address the guard allows."""
        if recorder.blocked:
            raise BlockedAddressError(recorder.blocked)
        if recorder.headers_complete:
            return
        if timed_out:
            # which clock ran out: the whole fetch's, or the wait for the next bytes
            limit = (
                f"within {self.config.fetch_timeout:g} s"
                if whole_expired
                else f"(nothing received for {self.config.read_timeout:g} s)"
            )
            raise FetchError(f"no complete response {limit}", FailReason.TIMEOUT)
        raise self._header_failure(recorder, None)

    async def _drain(
        self, response: aiohttp.ClientResponse, recorder: capture.WireRecorder
    ) -> bool:
        """Read the body through aiohttp (which the connection needs) until it or a limit ends.

        The bytes themselves are already in the recorder; aiohttp's copy is dropped.
        """
        content = response.content
        while True:
            if recorder.framer.limit_reached:
                return False
            chunk = await content.readany()
            if not chunk:
                return True

    def _header_failure(
        self, recorder: capture.WireRecorder, exc: BaseException | None
    ) -> FetchError:
        framer = recorder.framer
        detail = framer.error or (str(exc) if exc is not None else "no response")
        if framer.headers_too_large:
            return HeadersTooLargeError(f"response headers over the limits: {framer.error}")
        if exc is not None and ("too long" in str(exc).lower() or "too many" in str(exc).lower()):
            return HeadersTooLargeError(f"response headers over the limits: {exc}")
        if framer.state is State.ERROR and framer.error and "HTTP/0.9" in framer.error:
            return ProtocolError(framer.error)
        if recorder.response.size == 0:
            return FetchError(f"server sent no response ({detail})", FailReason.DISCONNECT)
        return ProtocolError(f"unreadable response: {detail}")

    def _exchange(
        self,
        url: str,
        recorder: capture.WireRecorder,
        date: datetime,
        started: float,
        timed_out: bool,
    ) -> Exchange:
        framer = recorder.framer
        truncated = recorder.truncation(timed_out=timed_out)
        request_block, request_payload = recorder.request_digests()
        tls: TlsInfo | None = recorder.tls
        if tls is not None and not tls.verified:
            reason = self.unverified_hosts.get(
                "{}:{}".format(*scheme_host_port(url)[1:]), "verification disabled"
            )
            tls = TlsInfo(tls.version, tls.cipher_suite, False, reason)
        body = bytes(recorder.body) if recorder.body is not None else None
        return Exchange(
            target_uri=url,
            date=date,
            request=bytes(recorder.request),
            response=recorder.response,
            response_length=recorder.response.size,
            status=framer.status,
            headers=framer.decoded_headers(),
            block_digest=recorder.block_digest(),
            payload_digest=recorder.payload_digest(),
            payload_length=framer.payload_length,
            request_block_digest=request_block,
            request_payload_digest=request_payload,
            ip_address=recorder.peer,
            tls=tls,
            truncated=truncated,
            protocol_error=framer.error if framer.state is State.ERROR else None,
            duration=time.monotonic() - started,
            body=body,
            interim=tuple(recorder.interim),
        )


def relayed_fields(fields: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The header fields of another client's request (a page's, in the browser), as
    :meth:`Fetcher.fetch` is given them: without the :data:`OWN_FIELDS`."""
    return {name: value for name, value in fields if name.lower() not in OWN_FIELDS}


def _merge(headers: dict[str, str], extra: Mapping[str, str]) -> None:
    """Add ``extra`` to ``headers``, a field given in ``extra`` replacing one of ``headers``
    whatever the case of its name (field names are case-insensitive, RFC 9110 section 5.1): a
    browser's request says ``accept``, and only one Accept field must go out."""
    lowered = {name.lower(): name for name in headers}
    for name, value in extra.items():
        existing = lowered.get(name.lower())
        if existing is not None and existing != name:
            del headers[existing]
        headers[name] = value
        lowered[name.lower()] = name


@dataclass(frozen=True, slots=True)
class _Message:
    """What is sent besides the URL: the method, the caller's header fields and the body."""

    method: str
    headers: Mapping[str, str] | None
    body: bytes | None


def _note_blocked(reason: str) -> None:
    """Mark the current exchange as refused by the SSRF guard."""
    recorder = capture.CURRENT_RECORDER.get()
    if recorder is not None:
        recorder.blocked = reason


def _cert_reason(exc: aiohttp.ClientConnectorCertificateError) -> str:
    cert_error = exc.certificate_error
    return str(getattr(cert_error, "verify_message", None) or cert_error)


def _release(
    recorder: capture.WireRecorder, response: aiohttp.ClientResponse | None, *, clean: bool
) -> None:
    """Give the connection back for reuse after a whole exchange; otherwise close it."""
    if not (clean and recorder.complete):
        recorder.abort_connection()
    recorder.detach()
    if response is not None:
        if clean and recorder.complete:
            response.release()
        else:
            response.close()
    if recorder.response is not None and not recorder.headers_complete:
        recorder.response.close()
