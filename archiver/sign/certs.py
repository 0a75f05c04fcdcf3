"""X.509 certificate chains of domain signatures and time stamps, and which roots are trusted.

A chain is PEM text, the leaf first and each certificate signed by the next (the order authsign
and Let's Encrypt use; WACZ Signing and Verification: the chains "should include the full
certificate chain to aide in validation"). Only the signatures along the chain and the last
certificate's fingerprint are judged, as authsign's verifier does: validity periods are
checked by the caller against the signing time, not against today (a package signed with a
certificate that has since expired is still signed).

Trusted roots are SHA-256 fingerprints of root certificates. The built-in list is authsign's
(``authsign/trusted/roots.yaml``, version 0.6.1): the Let's Encrypt roots for domain
certificates, FreeTSA's and DigiCert's for time stamps. ``--trusted-roots FILE`` adds the
roots in a PEM file (a private CA, or the tests' CA).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID

from archiver.errors import SignatureError

#: authsign 0.6.1's trusted domain certificate roots (sha-256 of the DER certificate)
DOMAIN_ROOTS = frozenset(
    {
        "96bcec06264976f37460779acf28c5a7cfe8a3c0aae11a8ffcee05c0bddf08c6",  # ISRG Root X1
        "69729b8e15a86efc177a57afb7171dfc64add28c2fca8cf1507e34453ccb1470",  # ISRG Root X2
        "6d99fb265eb1c5b3744765fcbc648f3cd8e1bffafdc4c2f99b9d47cf7ff1c24f",  # DST Root CA X3
        "ee5f7abd6981bb0255632cd8f49283451b4b18844d12040b44ee00f07b8fe2c6",  # X1 cross-signed
    }
)
#: authsign 0.6.1's trusted time stamp authority roots
TIMESTAMP_ROOTS = frozenset(
    {
        "a6379e7cecc05faa3cbf076013d745e327bbbaa38c0b9af22469d4701d18aabc",  # freetsa.org
        "33846b545a49c9be4903c60e01713c1bd4e4ef31ea65cd95d69e62794f30b941",  # DigiCert G4
    }
)
MAX_ROOTS_FILE = 4 << 20


@dataclass(frozen=True, slots=True)
class TrustedRoots:
    """Fingerprints of the roots a domain chain and a time stamp chain may end at."""

    domain: frozenset[str] = DOMAIN_ROOTS
    timestamp: frozenset[str] = TIMESTAMP_ROOTS
    added: tuple[str, ...] = field(default=())  #: the files the extra roots came from

    def with_file(self, path: Path) -> TrustedRoots:
        """These roots and every certificate in the PEM file ``path`` (for both chains)."""
        try:
            if path.stat().st_size > MAX_ROOTS_FILE:
                raise SignatureError(f"{path} is too large for a file of root certificates")
            certs = x509.load_pem_x509_certificates(path.read_bytes())
        except OSError as exc:
            raise SignatureError(f"cannot read {path}: {exc.strerror or exc}") from None
        except ValueError:
            raise SignatureError(f"{path} holds no PEM certificate") from None
        prints = frozenset(fingerprint(cert) for cert in certs)
        return TrustedRoots(self.domain | prints, self.timestamp | prints, (*self.added, str(path)))


@dataclass(frozen=True, slots=True)
class Chain:
    """A parsed, internally consistent chain (leaf first)."""

    certs: tuple[x509.Certificate, ...]

    @property
    def leaf(self) -> x509.Certificate:
        return self.certs[0]

    @property
    def root_fingerprint(self) -> str:
        return fingerprint(self.certs[-1])


@contextlib.contextmanager
def read_as_signature(what: str) -> Iterator[None]:
    """The errors ``cryptography`` and ``rfc3161-client`` raise on malformed input (a
    certificate whose fields only fail when read, a key that is no key) as one
    :class:`SignatureError`: a damaged signature is a finding, never a traceback."""
    try:
        yield
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SignatureError(f"{what} cannot be read: {exc}") from None


def fingerprint(cert: x509.Certificate) -> str:
    return hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()


def parse_certificates(pem: str, what: str) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise SignatureError(f"{what} is not a PEM certificate chain") from None
    if not certs:
        raise SignatureError(f"{what} holds no certificate")
    return certs


def parse_chain(pem: str, what: str) -> Chain:
    """The chain in ``pem``, each certificate checked to be signed by the next one;
    :class:`SignatureError` names the first link that does not hold."""
    certs = parse_certificates(pem, what)
    chain = order_chain(certs, certs[0], what)
    require_vouched(certs, chain, what)
    return chain


def order_chain(pool: Sequence[x509.Certificate], leaf: x509.Certificate, what: str) -> Chain:
    """From ``leaf`` up through ``pool`` by issuer name to a self-issued certificate (or the
    end of the pool), each link's signature checked."""
    chain = [leaf]
    remaining = [cert for cert in pool if cert != leaf]
    while chain[-1].issuer != chain[-1].subject:
        current = chain[-1]
        issuer = next((c for c in remaining if c.subject == current.issuer), None)
        if issuer is None:
            break
        if not signed_by(current, issuer):
            raise SignatureError(
                f"{what}: '{subject_name(current)}' is not signed by '{subject_name(issuer)}'"
            )
        chain.append(issuer)
        remaining.remove(issuer)
    if chain[-1].issuer == chain[-1].subject and not signed_by(chain[-1], chain[-1]):
        raise SignatureError(f"{what}: the root '{subject_name(chain[-1])}' is not self-signed")
    return Chain(tuple(chain))


def signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """Whether ``issuer``'s key made ``cert``'s signature (ECDSA or RSA PKCS#1 v1.5)."""
    key = issuer.public_key()
    algorithm = cert.signature_hash_algorithm
    if algorithm is None:
        return False
    try:
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algorithm))
        elif isinstance(key, rsa.RSAPublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), algorithm)
        else:
            return False
    except (InvalidSignature, UnsupportedAlgorithm, ValueError):
        return False
    return True


def subject_name(cert: x509.Certificate) -> str:
    """The certificate's common name, else its first DNS subjectAltName (authsign's rule)."""
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if names:
        value = names[0].value
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return ""
    dns = san.value.get_values_for_type(x509.DNSName)
    return dns[0] if dns else ""


def valid_at(cert: x509.Certificate, moment: datetime) -> bool:
    return cert.not_valid_before_utc <= moment <= cert.not_valid_after_utc


def same_public_key(a: x509.Certificate, b: x509.Certificate) -> bool:
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return a.public_key().public_bytes(*fmt) == b.public_key().public_bytes(*fmt)


def der_certificates(certs: Iterable[bytes], what: str) -> list[x509.Certificate]:
    """Certificates from DER (a time stamp token's)."""
    try:
        return [x509.load_der_x509_certificate(der) for der in certs]
    except ValueError:
        raise SignatureError(f"{what} carries a certificate that cannot be read") from None


def require_vouched(certs: Sequence[x509.Certificate], chain: Chain, what: str) -> None:
    """Each of ``certs`` but the chain's top was signed by a certificate of ``certs`` or of
    the chain (itself, for a root). A chain is read from its leaf up, so a certificate off that
    path would otherwise go unread: with this rule no byte of any certificate given can change
    unnoticed. The top is vouched for by its fingerprint, which must be a trusted root's (it
    need not be self-signed: Let's Encrypt's cross-signed ISRG Root X1 ends some chains)."""
    pool = [*certs, *chain.certs]
    for cert in certs:
        if cert == chain.certs[-1]:
            continue
        if not any(c.subject == cert.issuer and signed_by(cert, c) for c in pool):
            raise SignatureError(
                f"{what} holds a certificate for '{subject_name(cert)}' that no certificate "
                "it names signed"
            )
