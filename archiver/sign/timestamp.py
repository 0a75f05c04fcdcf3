"""RFC 3161 time stamps: the ``timeSignature`` of a domain signature, which a time stamp
authority (TSA) made over the ``signature`` text (WACZ Signing and Verification, step 6).

``timeSignature`` is the base64 of a DER ``TimeStampResp`` (RFC 3161 section 2.4.2), as
authsign stores it. The token is parsed and its CMS signature (RFC 5652 section 5) and
certificate chain are checked by ``rfc3161-client``, Trail of Bits' Rust-backed
implementation used by sigstore, rather than by a hand-written ASN.1 reader: it checks the
status, the message imprint, the signed attributes and the signing certificate's critical
``timeStamping`` extended key usage (RFC 3161 section 2.3). The chain is built from the
certificates in the token and those in ``timestampCert``, starting at the certificate the
SignerInfo names, and checked up to its own root; whether that root is trusted is the
caller's question (:class:`archiver.sign.certs.TrustedRoots`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC, datetime

import rfc3161_client

from archiver.errors import SignatureError
from archiver.sign.certs import (
    Chain,
    der_certificates,
    order_chain,
    parse_certificates,
    require_vouched,
    subject_name,
)


@dataclass(frozen=True, slots=True)
class TimeStamp:
    time: datetime  #: the TSA's genTime (RFC 3161 section 2.4.2), UTC
    authority: str  #: the TSA certificate's subject name
    chain: Chain


def verify_time_stamp(time_signature: str, message: str, chain_pem: str | None) -> TimeStamp:
    """Check that ``time_signature`` stamps ``message`` (ASCII); return when, and by whom.
    Raises :class:`SignatureError` saying which check failed."""
    try:
        der = base64.b64decode(time_signature, validate=True)
        response = rfc3161_client.decode_timestamp_response(der)
    except (binascii.Error, ValueError):
        raise SignatureError("timeSignature is not an RFC 3161 time stamp response") from None
    embedded = der_certificates(response.signed_data.certificates, "timeSignature")
    given = parse_certificates(chain_pem, "timestampCert") if chain_pem else []
    pool = embedded + [cert for cert in given if cert not in embedded]
    signer_infos = list(response.signed_data.signer_infos)
    if len(signer_infos) != 1:
        raise SignatureError("timeSignature does not have exactly one signer")
    signer = signer_infos[0]
    leaf = next(
        (c for c in pool if c.issuer == signer.issuer and c.serial_number == signer.serial_number),
        None,
    )
    if leaf is None:
        raise SignatureError("the time stamp authority's certificate is in neither the token "
                             "nor timestampCert")  # fmt: skip
    chain = order_chain(pool, leaf, "timestampCert")
    # the token's certificate set is outside the authority's signature (RFC 5652 section 5.1):
    # each certificate, there or in timestampCert, must still be one its issuer signed
    require_vouched(embedded, chain, "timeSignature")
    require_vouched(given, chain, "timestampCert")
    verifier = rfc3161_client.VerifierBuilder(
        tsa_certificate=leaf,
        intermediates=list(chain.certs[1:-1]),
        roots=[chain.certs[-1]],
    ).build()
    try:
        verifier.verify_message(response, message.encode("ascii"))
    except (rfc3161_client.VerificationError, ValueError) as exc:
        raise SignatureError(f"timeSignature does not hold: {exc}") from None
    return TimeStamp(
        time=response.tst_info.gen_time.astimezone(UTC),
        authority=subject_name(leaf),
        chain=chain,
    )
