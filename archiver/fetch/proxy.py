"""Which proxy a request goes through, and how it is named without its credentials (pure).

``--proxy URL`` takes ``http://``, ``https://`` (TLS to the proxy itself), ``socks5://`` and
``socks5h://``, with optional ``user:password@`` (percent-encoded, RFC 3986 section 3.2.1). The
port defaults to the scheme's (80, 443, 1080). Every request uses a tunnel to the origin
(:mod:`archiver.fetch.tunnel`); ``--no-proxy-for`` names hosts and domains that go direct.

Who resolves the origin's name: the proxy for ``http``, ``https`` and ``socks5h`` (RFC 9110
section 9.3.6 ``CONNECT host:port``; RFC 1928 ATYP 3), the crawler for ``socks5`` (the proxy is
given an address). A host pinned with ``--resolve`` is always given as its address: the
operator said where it is. The SSRF guard judges the destination either way (see the tunnel).

Credentials in the URL never appear in a message, a log line, warcinfo or ``state/crawl.json``:
:attr:`ProxyConfig.redacted` and :func:`redact_proxy_url` replace the whole userinfo (a proxy
provider's user name is often the account key).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

from archiver.urls import InvalidURLError, normalize_host

#: proxy URL schemes -> default port
DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}
REDACTED_USERINFO = "***"


class ProxyURLError(ValueError):
    """A ``--proxy`` value that is not a proxy URL (the message holds no credentials)."""


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """One proxy. ``repr`` and :attr:`redacted` never show the credentials."""

    scheme: str  #: http, https, socks5 or socks5h
    host: str
    port: int
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def is_socks(self) -> bool:
        return self.scheme in ("socks5", "socks5h")

    @property
    def resolves_names(self) -> bool:
        """Whether this proxy is given host names (and resolves them itself)."""
        return self.scheme != "socks5"

    @property
    def redacted(self) -> str:
        """The proxy as messages name it: ``http://***@proxy.example:3128``."""
        userinfo = f"{REDACTED_USERINFO}@" if self.username or self.password else ""
        return f"{self.scheme}://{userinfo}{_authority(self.host, self.port)}"


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_proxy_url(text: str) -> ProxyConfig:
    """A :class:`ProxyConfig` from ``--proxy``; :class:`ProxyURLError` says what is wrong
    (naming the URL with its userinfo redacted)."""
    shown = redact_proxy_url(text)
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        raise ProxyURLError(f"{shown!r} is not a URL with a valid port") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ProxyURLError(
            f"{shown!r}: the scheme must be http, https, socks5 or socks5h (e.g. "
            "http://proxy.example:3128)"
        )
    if not parts.hostname:
        raise ProxyURLError(f"{shown!r} names no proxy host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ProxyURLError(f"{shown!r}: a proxy URL has no path, query or fragment")
    try:
        host = _host(parts.hostname)
    except InvalidURLError:
        raise ProxyURLError(f"{shown!r}: {parts.hostname!r} is not a host name") from None
    username = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    return ProxyConfig(scheme, host, port or DEFAULT_PORTS[scheme], username, password)


def _host(name: str) -> str:
    text = name.strip().strip("[]").rstrip(".")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return normalize_host(text)


def redact_proxy_url(text: str) -> str:
    """``text`` with its userinfo replaced by ``***`` (for settings shown anywhere)."""
    head, sep, rest = text.partition("://")
    if not sep:
        return text if "@" not in text else REDACTED_USERINFO
    authority_end = min(
        (i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest)
    )
    authority, tail = rest[:authority_end], rest[authority_end:]
    if "@" not in authority:
        return text
    return f"{head}://{REDACTED_USERINFO}@{authority.rpartition('@')[2]}{tail}"


def parse_direct_hosts(values: Iterable[str]) -> tuple[str, ...]:
    """``--no-proxy-for`` values (repeatable, or comma-separated as in ``NO_PROXY``): host
    names (a domain includes its subdomains; a leading dot is allowed) and IP addresses.

    Raises :class:`ProxyURLError` for a value that is neither."""
    hosts = []
    for value in values:
        for item in value.split(","):
            name = item.strip().lstrip(".")
            if not name:
                continue
            try:
                hosts.append(_host(name))
            except InvalidURLError:
                raise ProxyURLError(f"{item.strip()!r} is not a host name or address") from None
    return tuple(dict.fromkeys(hosts))


@dataclass(frozen=True, slots=True)
class ProxyRoutes:
    """The proxy every request goes through, except to the hosts that go direct."""

    proxy: ProxyConfig
    direct: tuple[str, ...] = ()  #: from :func:`parse_direct_hosts`

    def for_host(self, host: str) -> ProxyConfig | None:
        """The proxy for a request to ``host`` (a normalised URL's host), None if direct."""
        name = host.strip("[]").rstrip(".").lower()
        for direct in self.direct:
            if name == direct or name.endswith("." + direct):
                return None
        return self.proxy


__all__ = [
    "DEFAULT_PORTS",
    "ProxyConfig",
    "ProxyRoutes",
    "ProxyURLError",
    "parse_direct_hosts",
    "parse_proxy_url",
    "redact_proxy_url",
]
