"""A throwaway public-key infrastructure made in the test: a root certificate authority, a
domain certificate (what authsign holds for the domain it signs as) and a time stamp
authority's certificate (RFC 3161 section 2.3: the extended key usage ``timeStamping``, and
only it, marked critical).

Every key is generated here and lives in the test's temporary directory; nothing is shipped.
The root signs both chains, so one PEM file of trusted roots serves the domain and the time
stamp checks alike.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: authsign's passphrase for the domain key it loads from its data directory (signer.py)
AUTHSIGN_PASSPHRASE = b"passphrase"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return _pem(self.cert)

    def key_pem(self, passphrase: bytes | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(passphrase)
            if passphrase
            else serialization.NoEncryption()
        )
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )


class TestCA:
    """A root CA that issues domain and time stamp authority certificates."""

    __test__ = False  # not a pytest class

    def __init__(self, name: str = "archiver test root") -> None:
        self.now = datetime.datetime.now(datetime.UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.now - datetime.timedelta(days=1))
            .not_valid_after(self.now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        self.root = Issued(cert, key)

    def _issue(self, subject: str, extensions: list[tuple[x509.ExtensionType, bool]]) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(subject))
            .issuer_name(self.root.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            # authsign accepts a domain certificate for 7 days after its start
            .not_valid_before(self.now - datetime.timedelta(minutes=5))
            .not_valid_after(self.now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical=critical)
        return Issued(builder.sign(self.root.key, hashes.SHA256()), key)

    def domain(self, domain: str) -> Issued:
        """A TLS-style certificate for ``domain`` (CN and subjectAltName)."""
        return self._issue(domain, [(x509.SubjectAlternativeName([x509.DNSName(domain)]), False)])

    def tsa(self) -> Issued:
        """A time stamp authority's certificate (RFC 3161 section 2.3)."""
        return self._issue(
            "archiver test TSA",
            [(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.TIME_STAMPING]), True)],
        )

    def chain(self, leaf: Issued) -> bytes:
        """``leaf`` then the root, a blank line between them (as Let's Encrypt serves a chain,
        and as ReplayWeb.page splits one)."""
        return leaf.pem + b"\n" + self.root.pem

    def write_roots(self, path: Path) -> Path:
        path.write_bytes(self.root.pem)
        return path

    def fingerprint(self) -> str:
        return self.root.cert.fingerprint(hashes.SHA256()).hex()
