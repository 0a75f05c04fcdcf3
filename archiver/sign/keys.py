"""ECDSA keys: generating one (``archiver keygen``), signing a package's hash with it (the
anonymous identity), and checking an ECDSA signature with a public key.

The curve is P-384 and the signature is IEEE P1363 (``r || s``, what WebCrypto's
``crypto.subtle.sign`` returns) over the ASCII of the ``hash`` string, with SHA-256: that is
what ArchiveWeb.page writes (``src/sw/keystore.ts``) and the only form ReplayWeb.page checks
(wabac.js imports an anonymous ``publicKey`` as ``{name: "ECDSA", namedCurve: "P-384"}``; a
P-256 key fails to import there, so its signature would not show). The public key is the
base64 of its DER SubjectPublicKeyInfo (RFC 5280 section 4.1.2.7), as WebCrypto exports
``spki``. When checking, DER-encoded signatures (RFC 3279 section 2.2.3, what authsign and
OpenSSL write) are accepted too, and P-256 and P-521 keys, so packages from other tools can
be read.

The private key file is PEM PKCS#8 (RFC 5958), unencrypted, mode 0600: keep it like an SSH
key. It is read once, at the start of a crawl, and never written to a WARC, a log or a
summary.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from archiver.errors import SigningError

#: ArchiveWeb.page's and ReplayWeb.page's curve (see the module docstring)
CURVE_NAME = "P-384"
_CURVE = ec.SECP384R1
#: bytes of one coordinate (r or s) per curve, for P1363 signatures
_COORDINATE_BYTES = {"secp256r1": 32, "secp384r1": 48, "secp521r1": 66}
#: refuse key files bigger than any PEM EC key could be (a wrong path, a WARC...)
MAX_KEY_FILE = 64 << 10


def generate_private_key_pem() -> bytes:
    """A new P-384 private key, PEM PKCS#8, unencrypted."""
    key = ec.generate_private_key(_CURVE())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def write_new_key(path: Path) -> SigningKey:
    """``archiver keygen``: a new key at ``path`` (created 0600, never over an existing file)
    and its public half beside it (``path.pub``, PEM). Raises :class:`SigningError`."""
    pem = generate_private_key_pem()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningError(f"{path} exists: keygen never overwrites a key") from None
    except OSError as exc:
        raise SigningError(f"cannot create {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    key = _signing_key(pem, str(path))
    public = Path(str(path) + ".pub")
    try:
        public.write_bytes(key.public_key_pem)
    except OSError as exc:
        raise SigningError(f"cannot write {public}: {exc.strerror or exc}") from None
    return key


@dataclass(frozen=True, slots=True, repr=False)
class SigningKey:
    """A loaded private key. Its repr names only the public key's fingerprint."""

    _key: ec.EllipticCurvePrivateKey
    public_key: str  #: base64 DER SubjectPublicKeyInfo, as ``signedData.publicKey`` carries it
    public_key_pem: bytes

    @property
    def fingerprint(self) -> str:
        return public_key_fingerprint(self.public_key)

    def sign(self, text: str) -> str:
        """The base64 P1363 signature of ``text`` (ASCII) with ECDSA and SHA-256."""
        der = self._key.sign(text.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        size = _COORDINATE_BYTES[self._key.curve.name]
        return base64.b64encode(r.to_bytes(size, "big") + s.to_bytes(size, "big")).decode()

    def __repr__(self) -> str:
        return f"SigningKey(public key sha-256 {self.fingerprint})"


def public_key_fingerprint(public_key_b64: str) -> str:
    """The SHA-256 of the DER public key, in hex: how a signer's key is named to people."""
    try:
        return hashlib.sha256(base64.b64decode(public_key_b64, validate=True)).hexdigest()
    except (binascii.Error, ValueError):
        return "(not base64)"


def load_signing_key(path: Path) -> SigningKey:
    """The P-384 private key in ``path`` (PEM). :class:`SigningError` says in one line why a
    file cannot be used; the key's bytes never appear in the message."""
    try:
        if path.stat().st_size > MAX_KEY_FILE:
            raise SigningError(f"{path} is not a PEM private key (it is too large)")
        pem = path.read_bytes()
    except OSError as exc:
        raise SigningError(f"cannot read the signing key {path}: {exc.strerror or exc}") from None
    return _signing_key(pem, str(path))


def _signing_key(pem: bytes, name: str) -> SigningKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except TypeError:
        raise SigningError(
            f"{name} is an encrypted key: archiver reads unencrypted PKCS#8 keys "
            "(archiver keygen makes one)"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise SigningError(f"{name} is not a PEM private key (archiver keygen makes one)") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, _CURVE):
        raise SigningError(
            f"{name} is not an ECDSA {CURVE_NAME} key: ReplayWeb.page and ArchiveWeb.page check "
            f"anonymous signatures with {CURVE_NAME} only (archiver keygen makes one)"
        )
    public = key.public_key()
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pem_public = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return SigningKey(key, base64.b64encode(der).decode(), pem_public)


def load_public_key(public_key_b64: str) -> ec.EllipticCurvePublicKey | None:
    """An EC public key from base64 DER SubjectPublicKeyInfo, or ``None``."""
    try:
        key = serialization.load_der_public_key(base64.b64decode(public_key_b64, validate=True))
    except (binascii.Error, ValueError, UnsupportedAlgorithm):
        return None
    return key if isinstance(key, ec.EllipticCurvePublicKey) else None


def verify_signature(public_key: object, text: str, signature_b64: str) -> bool:
    """Whether ``signature_b64`` (P1363 or DER) signs ``text`` with ``public_key`` (an EC
    public key from this package), ECDSA with SHA-256."""
    if not isinstance(public_key, ec.EllipticCurvePublicKey):
        return False
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        data = text.encode("ascii")
    except (binascii.Error, ValueError):
        return False
    size = _COORDINATE_BYTES.get(public_key.curve.name)
    candidates = [signature]
    if size is not None and len(signature) == 2 * size:
        r = int.from_bytes(signature[:size], "big")
        s = int.from_bytes(signature[size:], "big")
        candidates.insert(0, encode_dss_signature(r, s))
    for der in candidates:
        try:
            public_key.verify(der, data, ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            continue
        return True
    return False
