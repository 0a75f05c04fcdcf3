"""Keys for the anonymous identity (``archiver keygen``, ``--wacz-sign-key``): P-384, signed
the way ArchiveWeb.page signs and ReplayWeb.page checks, and unusable keys refused with one
line before a crawl starts."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from archiver.errors import SignatureError, SigningError
from archiver.sign.check import check_signed_data
from archiver.sign.keys import load_signing_key, write_new_key
from archiver.sign.signeddata import parse_signed_data
from archiver.sign.signer import KeySigner
from tests.commands.test_cli import archiver

HASH = "sha256:" + "ab" * 32
CREATED = "2025-01-02T03:04:05Z"


def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(
    tmp_path: Path,
) -> None:
    key_path = tmp_path / "archive.key"
    run = archiver("keygen", str(key_path))
    assert run.code == 0, run.err
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    key = load_signing_key(key_path)
    assert f"public key sha-256 fingerprint: {key.fingerprint}" in run.out
    public = serialization.load_pem_public_key((tmp_path / "archive.key.pub").read_bytes())
    assert isinstance(public, ec.EllipticCurvePublicKey)
    assert public.curve.name == "secp384r1"
    before = key_path.read_bytes()
    again = archiver("keygen", str(key_path))
    assert again.code == 1
    assert again.err_lines == [
        f"archiver keygen: error: {key_path} exists: keygen never overwrites a key"
    ]
    assert key_path.read_bytes() == before


def test_a_key_signature_is_p1363_over_the_hash_and_verifies(tmp_path: Path) -> None:
    key = write_new_key(tmp_path / "k")
    data, identity = KeySigner(key, "archiver/test").sign(HASH, CREATED)
    assert set(data) == {"hash", "created", "software", "version", "signature", "publicKey"}
    # WebCrypto's ECDSA signature: r || s, 48 bytes each on P-384 (not DER)
    assert len(base64.b64decode(data["signature"])) == 96
    assert data["publicKey"] == key.public_key
    assert identity.kind == "anonymous"
    assert identity.public_key_fingerprint == key.fingerprint
    tampered = dict(data, hash="sha256:" + "cd" * 32)
    with pytest.raises(SignatureError, match="does not match the hash"):
        check_signed_data(parse_signed_data(tampered), None)
    other = write_new_key(tmp_path / "other")
    with pytest.raises(SignatureError, match="does not match the hash"):
        check_signed_data(parse_signed_data(dict(data, publicKey=other.public_key)), None)


def test_properties_the_format_does_not_list_are_refused(tmp_path: Path) -> None:
    key = write_new_key(tmp_path / "k")
    data, _ = KeySigner(key, "archiver/test").sign(HASH, CREATED)
    with pytest.raises(SignatureError, match="does not list"):
        parse_signed_data(dict(data, privateKey="x"))


@pytest.mark.parametrize("created", ["2025-02-30T03:04:05Z", "2025-01-02T25:04:05Z", "yesterday"])
def test_a_created_date_that_does_not_exist_is_refused_in_one_line(
    tmp_path: Path, created: str
) -> None:
    """``created`` shaped like a date but naming none (February 30th, hour 25) is a finding
    about the signature, not a ValueError out of the date parser."""
    key = write_new_key(tmp_path / "k")
    data, _ = KeySigner(key, "archiver/test").sign(HASH, CREATED)
    with pytest.raises(SignatureError, match="'created' is not an ISO 8601 date and time"):
        parse_signed_data(dict(data, created=created))
    assert parse_signed_data(data).created.isoformat() == "2025-01-02T03:04:05+00:00"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: ec.generate_private_key(ec.SECP256R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "is not an ECDSA P-384 key",
        ),
        (
            lambda: ec.generate_private_key(ec.SECP384R1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"secret"),
            ),
            "is an encrypted key",
        ),
        (lambda: b"WARC/1.1\r\n", "is not a PEM private key"),
    ],
)
def test_an_unusable_key_is_one_line(tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "bad.key"
    assert callable(make)
    path.write_bytes(make())
    with pytest.raises(SigningError, match=message):
        load_signing_key(path)


def test_a_crawl_with_an_unusable_key_stops_before_it_starts(tmp_path: Path) -> None:
    key = tmp_path / "p256.key"
    key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    out = tmp_path / "crawl"
    run = archiver("crawl", "http://127.0.0.1:9/", "-o", str(out), "--wacz-sign-key", str(key))
    assert run.code == 2
    assert len(run.err_lines) == 1
    assert run.err_lines[0].startswith("archiver crawl: error: --wacz-sign-key: ")
    assert "is not an ECDSA P-384 key" in run.err_lines[0]
    assert not out.exists()
