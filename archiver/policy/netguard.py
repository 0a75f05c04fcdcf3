"""The SSRF guard's decision: may the crawler connect to this address and port? (pure)

Links and redirects are written by the sites being crawled, so a crawl running on a server must
never be steered into the network it runs in (server-side request forgery, OWASP SSRF). The
decision is taken on the *resolved* address at connect time (see :mod:`archiver.fetch.fetcher`),
which also defeats DNS rebinding.

Refused unless allowed: loopback, RFC 1918 private, CGNAT ``100.64.0.0/10`` (Alibaba's metadata
service lives there), link-local ``169.254.0.0/16`` (cloud metadata ``169.254.169.254``),
``0.0.0.0/8``, multicast, reserved and broadcast addresses; IPv6 loopback, unique-local
``fc00::/7``, link-local ``fe80::/10``, multicast, and any IPv4 address embedded in IPv6
(IPv4-mapped ``::ffff:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) is judged as the IPv4
address it carries. In short: only globally routable unicast addresses pass.

The seeds' own ``(address, port)`` pairs are always allowed, so crawling a local site works
without opening everything else; ``allow_private`` opens all non-global addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _effective(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries, if it carries one."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def classify(ip: str) -> str | None:
    """None for a globally routable unicast address, else a short reason."""
    try:
        address = _effective(ipaddress.ip_address(ip.split("%", 1)[0]))
    except ValueError:
        return "not an IP address"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if isinstance(address, ipaddress.IPv4Address) and address in ipaddress.IPv4Network(
        "100.64.0.0/10"
    ):
        return "shared (CGNAT)"
    if address.is_private:
        return "private"
    if address.is_reserved or not address.is_global:
        return "reserved"
    return None


class AddressPolicy:
    """Decides whether a connection to ``(ip, port)`` may be opened."""

    def __init__(
        self, *, allow_private: bool = False, allowed: Iterable[tuple[str, int]] = ()
    ) -> None:
        self.allow_private = allow_private
        self._allowed: set[tuple[str, int]] = set()
        for ip, port in allowed:
            self.allow(ip, port)

    def allow(self, ip: str, port: int) -> None:
        """Always allow this address and port (a seed's own)."""
        self._allowed.add((str(ipaddress.ip_address(ip.split("%", 1)[0])), port))

    def check(self, ip: str, port: int) -> str | None:
        """None when allowed, else why not."""
        reason = classify(ip)
        if reason is None or self.allow_private:
            return None
        try:
            canonical = str(ipaddress.ip_address(ip.split("%", 1)[0]))
        except ValueError:
            return reason
        if (canonical, port) in self._allowed:
            return None
        return f"{reason} address {ip} port {port} (use --allow-private to crawl it)"
