"""Tunnels through a proxy, so that what is recorded is the exchange with the origin only.

A WARC record holds the HTTP exchange with the origin server (WARC 1.1 sections 6.3.2, 6.5.2),
so a crawl through a proxy must record the same bytes as a direct one. Every proxied request
therefore goes through a tunnel, and the tunnel is ready (handshake done, nothing left over)
before the connection's protocol, which records bytes (:mod:`archiver.fetch.capture`), sees it:

* ``http://`` proxies: ``CONNECT host:port`` (RFC 9110 section 9.3.6) for https *and* plain
  http origins. The absolute-form request line a proxy expects for plain http (``GET
  http://host/ HTTP/1.1``, RFC 9112 section 3.2.2) is not what the origin would have seen, so
  it is never sent: the request line in the record is the origin-form the origin received.
* ``https://`` proxies: the same, inside a TLS connection to the proxy (its certificate is
  verified against the system's CAs, or the bundle ``SSL_CERT_FILE`` names); an https origin's
  own TLS then runs inside that (TLS in TLS).
* ``socks5://`` and ``socks5h://`` (RFC 1928, user/password auth RFC 1929): negotiated by
  python-socks, chosen over aiohttp-socks because aiohttp-socks replaces the whole connector,
  and this one must stay the recording connector with the SSRF guard and ``--resolve``.
  python-socks returns the bare socket once the proxy has answered (it reads exactly the reply),
  and the origin's TLS is then set up on it exactly as on a direct connection.

The CONNECT exchange is written here rather than by python-socks, whose HTTP client reads its
reply with one ``recv``: a reply split over two packets would leave the rest of its header
block to be read (and recorded) as the start of the origin's response. Here the reply is read
to its blank line, and any byte after it (an origin never speaks first in HTTP/1.1 or TLS) is
an error.

The SSRF guard judges the destination, not the proxy (the operator chose the proxy): an address
literal directly, a name by resolving it here. When the proxy is given the name (it resolves it
itself), every address the name has here must be allowed, since the proxy may pick any of them;
when it is given an address, that address is one the guard allows. ``WARC-IP-Address`` is that
address, or absent when the proxy resolved the name. With ``--allow-private`` nothing is judged,
so a name the proxy resolves is not looked up here at all (a name only the proxy knows, such as
an onion service, then works).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ipaddress
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from archiver.fetch.proxy import ProxyConfig, ProxyRoutes
from archiver.httphead import parse_status_line, start_line

#: The longest CONNECT reply header block read from a proxy.
MAX_CONNECT_REPLY = 64 * 1024

#: ``(family, type, proto, canonname, sockaddr)`` as aiohttp and getaddrinfo give them
AddrInfo = tuple[Any, ...]
#: The SSRF guard's decision on ``(ip, port)``: None to allow, else why not
Check = Callable[[str, int], "str | None"]


class BlockedSocketError(OSError):
    """The SSRF guard refused the destination's address."""


class ProxyError(OSError):
    """The proxy could not be reached, or refused the tunnel; the message names the proxy
    without its credentials."""


@dataclass(frozen=True, slots=True)
class Destination:
    """What the proxy is asked to connect to, and the address the record names."""

    host: str  #: given to the proxy: a name (the proxy resolves it) or an address
    port: int
    address: str | None  #: ``WARC-IP-Address``; None when the proxy resolves the name


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class Tunnels:
    """Opens tunnels for the connector: which proxy, which destination, and the handshake."""

    def __init__(
        self,
        routes: ProxyRoutes,
        check: Check,
        *,
        guard_active: bool,
        pinned: frozenset[str] = frozenset(),
        refused: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.routes = routes
        self.check = check  #: the guard's verdict (pure)
        self.refused = refused  #: told why, when a destination is refused
        self.guard_active = guard_active
        self.pinned = pinned  #: hosts with a ``--resolve`` address

    def proxy_for(self, host: str) -> ProxyConfig | None:
        return self.routes.for_host(host)

    def resolved_by_proxy(self, host: str) -> bool:
        """Whether ``host`` is given to its proxy by name without being looked up here."""
        proxy = self.proxy_for(host)
        return (
            proxy is not None
            and proxy.resolves_names
            and not self.guard_active
            and not is_address(host)
            and host.rstrip(".").lower() not in self.pinned
        )

    def destination(
        self, proxy: ProxyConfig, host: str, port: int, addr_infos: Sequence[AddrInfo]
    ) -> Destination:
        """Where the proxy connects, judged by the SSRF guard; raises
        :class:`BlockedSocketError` when the guard refuses it."""
        name = host.strip("[]")
        if is_address(name):
            self._judge(name, port)
            return Destination(name, port, name)
        if proxy.resolves_names and name.rstrip(".").lower() not in self.pinned:
            if self.guard_active:
                for info in addr_infos:
                    self._judge(str(info[4][0]), port)
            return Destination(name.rstrip("."), port, None)
        refusal = "no address"
        for info in addr_infos:
            ip = str(info[4][0])
            reason = self.check(ip, port)
            if reason is None:
                return Destination(ip, port, ip)
            refusal = reason
        raise self._refuse(refusal)

    def _judge(self, ip: str, port: int) -> None:
        reason = self.check(ip, port)
        if reason is not None:
            raise self._refuse(reason)

    def _refuse(self, reason: str) -> BlockedSocketError:
        self.refused(reason)
        return BlockedSocketError(f"refused to connect: {reason}")

    @functools.cached_property
    def _proxy_tls(self) -> ssl.SSLContext:
        return ssl.create_default_context()

    async def connect(
        self,
        proxy: ProxyConfig,
        destination: Destination,
        protocol_factory: Callable[[], asyncio.Protocol],
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
    ) -> tuple[asyncio.Transport, asyncio.Protocol]:
        """A connection to ``destination`` through ``proxy`` with a fresh protocol from
        ``protocol_factory`` on it (TLS to the origin when ``ssl_context`` is given). Raises
        :class:`ProxyError` (or the TLS error of the origin's handshake)."""
        loop = asyncio.get_running_loop()
        if proxy.scheme == "https":
            return await self._through_tls_proxy(
                proxy, destination, protocol_factory, ssl_context, server_hostname
            )
        if proxy.is_socks:
            sock = await _socks_socket(proxy, destination)
        else:
            sock = await _connect_socket(proxy, destination)
        try:
            transport, protocol = await loop.create_connection(
                protocol_factory, sock=sock, ssl=ssl_context, server_hostname=server_hostname
            )
        except BaseException:
            sock.close()
            raise
        return transport, protocol

    async def _through_tls_proxy(
        self,
        proxy: ProxyConfig,
        destination: Destination,
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
    ) -> tuple[asyncio.Transport, asyncio.Protocol]:
        loop = asyncio.get_running_loop()
        try:
            transport, handshake = await loop.create_connection(
                _Handshake, proxy.host, proxy.port, ssl=self._proxy_tls, server_hostname=proxy.host
            )
        except ssl.SSLError as exc:
            raise ProxyError(f"TLS to proxy {proxy.redacted} failed: {exc}") from exc
        except OSError as exc:
            raise _unreachable(proxy, exc) from exc
        try:
            transport.write(connect_request(proxy, destination))
            reply = await handshake.reply()
            check_connect_reply(proxy, destination, reply, handshake.surplus())
            protocol = protocol_factory()
            if ssl_context is not None:
                tls = await loop.start_tls(
                    transport, protocol, ssl_context, server_hostname=server_hostname
                )
                if tls is None:  # pragma: no cover - only when the transport closed meanwhile
                    raise ProxyError(f"proxy {proxy.redacted} closed the tunnel")
                transport = tls
            else:
                transport.set_protocol(protocol)
            protocol.connection_made(transport)
        except BaseException:
            transport.close()
            raise
        return transport, protocol


class _Handshake(asyncio.Protocol):
    """Collects a CONNECT reply on a TLS connection to an https:// proxy."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._done: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self._done.done():
            end = self._buffer.find(b"\r\n\r\n")
            if end >= 0:
                self._done.set_result(bytes(self._buffer[: end + 4]))
            elif len(self._buffer) > MAX_CONNECT_REPLY:
                self._done.set_exception(ProxyError("the proxy's CONNECT reply is too long"))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._done.done():
            self._done.set_exception(ProxyError("the proxy closed the connection during CONNECT"))

    async def reply(self) -> bytes:
        return await self._done

    def surplus(self) -> bytes:
        end = self._buffer.find(b"\r\n\r\n")
        return bytes(self._buffer[end + 4 :]) if end >= 0 else b""


def connect_request(proxy: ProxyConfig, destination: Destination) -> bytes:
    """``CONNECT host:port`` with the proxy's Basic credentials (RFC 9110 sections 9.3.6,
    11.7.2; RFC 7617)."""
    host = destination.host
    authority = f"[{host}]:{destination.port}" if ":" in host else f"{host}:{destination.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if proxy.username is not None or proxy.password is not None:
        pair = f"{proxy.username or ''}:{proxy.password or ''}".encode()
        lines.append(f"Proxy-Authorization: Basic {base64.b64encode(pair).decode('ascii')}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def check_connect_reply(
    proxy: ProxyConfig, destination: Destination, head: bytes, surplus: bytes
) -> None:
    """Raise :class:`ProxyError` unless ``head`` is a 2xx reply with nothing after it."""
    status_line = parse_status_line(start_line(head))
    target = f"{destination.host}:{destination.port}"
    if status_line is None or status_line.version[0] != 1:
        raise ProxyError(f"proxy {proxy.redacted} did not answer CONNECT with HTTP")
    if not 200 <= status_line.status < 300:
        answer = f"{status_line.status} {status_line.reason.decode('latin-1')}".strip()
        raise ProxyError(f"proxy {proxy.redacted} refused CONNECT {target}: {answer}")
    if surplus:
        raise ProxyError(f"proxy {proxy.redacted} sent data before the origin for {target}")


async def _open_socket(proxy: ProxyConfig) -> socket.socket:
    """A TCP connection to the proxy itself (not judged by the SSRF guard)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(proxy.host, proxy.port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise _unreachable(proxy, exc) from exc
    error: OSError = OSError("no address")
    for family, type_, proto, _, address in infos:
        sock = socket.socket(family, type_, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    raise _unreachable(proxy, error)


async def _connect_socket(proxy: ProxyConfig, destination: Destination) -> socket.socket:
    loop = asyncio.get_running_loop()
    sock = await _open_socket(proxy)
    try:
        await loop.sock_sendall(sock, connect_request(proxy, destination))
        received = bytearray()
        while (end := received.find(b"\r\n\r\n")) < 0:
            chunk = await loop.sock_recv(sock, 4096)
            if not chunk:
                raise ProxyError(f"proxy {proxy.redacted} closed the connection during CONNECT")
            received += chunk
            if len(received) > MAX_CONNECT_REPLY:
                raise ProxyError(f"proxy {proxy.redacted}: CONNECT reply too long")
        check_connect_reply(
            proxy, destination, bytes(received[: end + 4]), bytes(received[end + 4 :])
        )
    except BaseException:
        sock.close()
        raise
    return sock


async def _socks_socket(proxy: ProxyConfig, destination: Destination) -> socket.socket:
    """A socket through a SOCKS5 proxy (python-socks reads the reply exactly)."""
    import python_socks  # noqa: PLC0415 - only crawls through a SOCKS proxy need it
    from python_socks.async_.asyncio import Proxy  # noqa: PLC0415

    client = Proxy(
        python_socks.ProxyType.SOCKS5,
        proxy.host,
        proxy.port,
        username=proxy.username,
        password=proxy.password,
        rdns=True,  # a name is sent as a name: it is resolved here only when we chose to
        loop=asyncio.get_running_loop(),
    )
    target = f"{destination.host}:{destination.port}"
    try:
        # no timeout of its own: the connector's connect timeout covers the whole tunnel
        return await client.connect(destination.host, destination.port, timeout=1e9)
    except python_socks.ProxyConnectionError as exc:
        raise _unreachable(proxy, exc) from exc
    except python_socks.ProxyError as exc:
        raise ProxyError(f"proxy {proxy.redacted} refused {target}: {exc}") from exc


def _unreachable(proxy: ProxyConfig, exc: OSError) -> ProxyError:
    return ProxyError(f"cannot reach proxy {proxy.redacted}: {exc.strerror or exc}")


__all__ = [
    "BlockedSocketError",
    "Destination",
    "ProxyError",
    "Tunnels",
    "check_connect_reply",
    "connect_request",
]
