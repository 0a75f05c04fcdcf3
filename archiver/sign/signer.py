"""Who signs a package: a local key, or an authsign-compatible server.

A :class:`Signer` turns the ``hash`` and ``created`` of ``datapackage.json`` into the
``signedData`` object of ``datapackage-digest.json`` (WACZ Signing and Verification), or
raises :class:`SigningError` with one line saying why.

:class:`RemoteSigner` speaks authsign's API (``POST /sign`` with ``{"hash", "created"}``, an
optional ``Authorization: bearer TOKEN``; the answer is the ``signedData``), as py-wacz's
``--signing-url`` and Browsertrix Crawler do. It never trusts the answer: before it is put in
a package it must be a domain signature of exactly the hash and ``created`` asked for, by the
signing server's own domain (the URL's host: authsign obtains its certificate for the name it
is reached at), with a valid chain and an RFC 3161 time stamp within 10 minutes of
``created`` (:mod:`archiver.sign.check`). The whole exchange has one deadline, so a server
that is down, slow or trickling fails in bounded time; the answer is read up to
:data:`MAX_ANSWER` bytes. The standard library's HTTP client is used: this is one request at
the end of a crawl to a server the operator chose, not a capture (the crawl's fetcher records
and guards what it fetches, which this must not be).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from archiver.errors import SignatureError, SigningError
from archiver.sign.check import Identity, check_signed_data
from archiver.sign.keys import SigningKey
from archiver.sign.signeddata import FORMAT_VERSION, DomainSignature, parse_signed_data

#: the most a signing server's answer may weigh (authsign's is a few kilobytes)
MAX_ANSWER = 1 << 20
DEFAULT_TIMEOUT = 60.0


class Signer(Protocol):
    def sign(self, hash_: str, created: str) -> tuple[dict[str, Any], Identity]:
        """The ``signedData`` for ``hash_`` and ``created``, and who it names."""
        ...


@dataclass(slots=True)
class SigningAttempt:
    """A signer as the package writer calls it (``archiver.index.wacz.Sign``): the
    ``signedData``, or ``None`` with the reason kept in :attr:`error` (the package is then
    written unsigned)."""

    signer: Signer
    error: str | None = None
    identity: Identity | None = None

    def __call__(self, hash_: str, created: str) -> dict[str, Any] | None:
        try:
            data, self.identity = self.signer.sign(hash_, created)
        except SigningError as exc:
            self.error = str(exc)
            return None
        return data


@dataclass(frozen=True, slots=True)
class KeySigner:
    """Signs with a local key: the anonymous identity, its public key embedded."""

    key: SigningKey
    software: str

    def sign(self, hash_: str, created: str) -> tuple[dict[str, Any], Identity]:
        data = {
            "hash": hash_,
            "created": created,
            "software": self.software,
            "version": FORMAT_VERSION,
            "signature": self.key.sign(hash_),
            "publicKey": self.key.public_key,
        }
        try:
            identity = check_signed_data(parse_signed_data(data), None)
        except SignatureError as exc:  # pragma: no cover - a bug in this module
            raise SigningError(f"the key's own signature does not verify: {exc}") from None
        return data, identity


@dataclass(frozen=True, slots=True)
class RemoteSigner:
    """Asks an authsign-compatible server at ``url`` (its ``/sign`` endpoint)."""

    url: str
    timeout: float = DEFAULT_TIMEOUT
    token: str | None = field(default=None, repr=False)

    @property
    def domain(self) -> str:
        return urllib.parse.urlsplit(self.url).hostname or ""

    def sign(self, hash_: str, created: str) -> tuple[dict[str, Any], Identity]:
        answer = self._post({"hash": hash_, "created": created})
        if not isinstance(answer, Mapping):
            raise SigningError(f"the signing server {self.url} answered JSON that is no object")
        if answer.get("hash") != hash_ or answer.get("created") != created:
            raise SigningError(
                f"the signing server {self.url} signed another hash or date than asked"
            )
        try:
            signed = parse_signed_data(answer)
            if not isinstance(signed, DomainSignature):
                raise SignatureError("the answer has no domain identity")
            identity = check_signed_data(signed, None, expected_domain=self.domain)
        except SignatureError as exc:
            raise SigningError(
                f"the signing server {self.url} answered a bad signature: {exc}"
            ) from None
        return dict(answer), identity

    def _post(self, body: Mapping[str, str]) -> object:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SigningError(f"the signing URL {self.url} is not an http(s) URL")
        deadline = time.monotonic() + self.timeout
        connection: http.client.HTTPConnection
        if parts.scheme == "https":
            connection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=self.timeout,
                context=ssl.create_default_context(),
            )  # fmt: skip
        else:
            connection = http.client.HTTPConnection(
                parts.hostname, parts.port, timeout=self.timeout
            )
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"bearer {self.token}"
        try:
            connection.request("POST", path, json.dumps(body).encode(), headers)
            sock = connection.sock  # kept: getresponse() may drop the connection's reference
            _bound(sock, deadline)
            response = connection.getresponse()
            payload = _read_until(response, sock, deadline)
        except TimeoutError:
            raise SigningError(
                f"the signing server {self.url} did not answer within {self.timeout:g} s"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise SigningError(f"cannot reach the signing server {self.url}: {reason}") from None
        finally:
            connection.close()
        if response.status != 200:
            detail = payload[:200].decode("utf-8", "replace").strip()
            raise SigningError(
                f"the signing server {self.url} answered HTTP {response.status}"
                + (f": {detail}" if detail else "")
            )
        try:
            return json.loads(payload)
        except ValueError:
            raise SigningError(
                f"the signing server {self.url} answered something not JSON"
            ) from None


def _bound(sock: object, deadline: float) -> None:
    """The socket's next operation may take what is left until ``deadline``."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    if isinstance(sock, socket.socket):
        sock.settimeout(remaining)


def _read_until(response: http.client.HTTPResponse, sock: object, deadline: float) -> bytes:
    """The body, each read bounded by what is left of the deadline (a server that trickles
    a byte at a time cannot stretch it), at most :data:`MAX_ANSWER` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        _bound(sock, deadline)
        chunk = response.read1(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_ANSWER:
            raise http.client.HTTPException(f"an answer over {MAX_ANSWER} bytes")
        chunks.append(chunk)
