"""Checking a ``signedData`` object: the steps of WACZ Signing and Verification, section
"Verification", after the hashes (steps 1 and 2 are the package reader's).

Anonymous (step 4): the signature of ``hash`` holds under the embedded ``publicKey``. That
proves the key holder signed; who that is must be learnt elsewhere, so the result names the
key by its fingerprint.

Domain (steps 4 to 10): the first certificate of ``domainCert`` signed ``hash``; its subject
name is ``domain``; ``timeSignature`` is an RFC 3161 time stamp of ``signature``; ``created``
is at most 10 minutes before the stamp and not after it (authsign's rule, and the
specification's "within 10 minutes"); the domain certificate was valid at ``created``; both
chains hold and end at trusted roots; an optional ``crossSignedCert`` has the same public key
and a chain of its own, and is an alternative trust path when the domain chain's root is not
trusted (step 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from archiver.errors import SignatureError
from archiver.sign import keys
from archiver.sign.certs import (
    TrustedRoots,
    fingerprint,
    parse_chain,
    read_as_signature,
    same_public_key,
    subject_name,
    valid_at,
)
from archiver.sign.signeddata import AnonymousSignature, DomainSignature, SignedData
from archiver.sign.timestamp import verify_time_stamp
from archiver.timefmt import rfc3339

#: the largest time between ``created`` and the time stamp (the specification: 10 minutes)
STAMP_WINDOW = timedelta(minutes=10)


@dataclass(frozen=True, slots=True)
class Identity:
    """Who signed and when, as far as the signature proves it."""

    kind: str  #: "domain" or "anonymous"
    created: datetime  #: what the signer says (attested by ``time_stamp`` for a domain)
    software: str | None
    domain: str | None = None
    time_stamp: datetime | None = None  #: the TSA's time
    time_stamp_authority: str | None = None
    certificate_fingerprint: str | None = None  #: the domain certificate's sha-256
    public_key: str | None = None  #: base64 SPKI (anonymous)
    public_key_fingerprint: str | None = None
    trust: str | None = None  #: which roots vouched ("domain chain", "cross-signed chain")

    def describe(self) -> str:
        """One line: who signed and when."""
        made = rfc3339(self.created)
        if self.kind == "domain":
            stamp = rfc3339(self.time_stamp) if self.time_stamp else "?"
            return (
                f"signed by domain {self.domain} (certificate sha-256 "
                f"{self.certificate_fingerprint}), created {made}, time-stamped {stamp} by "
                f"{self.time_stamp_authority}"
            )
        return (
            f"signed anonymously by the key with sha-256 fingerprint "
            f"{self.public_key_fingerprint}, created {made} (the signer's own clock: an "
            "anonymous signature carries no time stamp)"
        )


def check_signed_data(
    signed: SignedData, roots: TrustedRoots | None, *, expected_domain: str | None = None
) -> Identity:
    """Verify ``signed`` (already parsed); :class:`SignatureError` names the failing step.
    ``expected_domain``: the domain the signature must name (the signing server's).
    ``roots=None`` checks everything but whether the chains' roots are trusted (what the
    crawler does with its signing server's answer: the operator chose that server; trust is
    the reader's judgement, made by ``archiver verify``)."""
    with read_as_signature("the signature"):
        if isinstance(signed, AnonymousSignature):
            return _check_anonymous(signed)
        return _check_domain(signed, roots, expected_domain)


def _check_anonymous(signed: AnonymousSignature) -> Identity:
    public_key = keys.load_public_key(signed.public_key)
    if public_key is None:
        raise SignatureError("signedData 'publicKey' is not a base64 ECDSA public key")
    if not keys.verify_signature(public_key, signed.hash, signed.signature):
        raise SignatureError("the signature does not match the hash under the embedded publicKey")
    return Identity(
        kind="anonymous",
        created=signed.created,
        software=signed.software,
        public_key=signed.public_key,
        public_key_fingerprint=keys.public_key_fingerprint(signed.public_key),
    )


def _check_domain(
    signed: DomainSignature, roots: TrustedRoots | None, expected_domain: str | None
) -> Identity:
    chain = parse_chain(signed.domain_cert, "domainCert")
    cert = chain.leaf
    if not keys.verify_signature(cert.public_key(), signed.hash, signed.signature):
        raise SignatureError("the signature does not match the hash under domainCert's key")
    named = subject_name(cert)
    if named != signed.domain:
        raise SignatureError(
            f"domainCert is for '{named}', but the signature says domain '{signed.domain}'"
        )
    if expected_domain is not None and named.lower() != expected_domain.lower():
        raise SignatureError(
            f"the signature is by domain '{named}', not by the signing server's '{expected_domain}'"
        )
    if not valid_at(cert, signed.created):
        raise SignatureError(
            f"domainCert was not valid at 'created' ({signed.created:%Y-%m-%dT%H:%M:%SZ})"
        )
    stamp = verify_time_stamp(signed.time_signature, signed.signature, signed.timestamp_cert)
    if not signed.created <= stamp.time <= signed.created + STAMP_WINDOW:
        raise SignatureError(
            f"'created' ({signed.created:%Y-%m-%dT%H:%M:%SZ}) is not within 10 minutes before "
            f"the time stamp ({stamp.time:%Y-%m-%dT%H:%M:%SZ})"
        )
    if roots is not None and stamp.chain.root_fingerprint not in roots.timestamp:
        raise SignatureError(
            f"the time stamp authority '{stamp.authority}' chains to an untrusted root (sha-256 "
            f"{stamp.chain.root_fingerprint}); --trusted-roots FILE adds roots"
        )
    trusted = roots.domain if roots is not None else frozenset({chain.root_fingerprint})
    trust = "domain chain" if chain.root_fingerprint in trusted else None
    if signed.cross_signed_cert:
        cross = parse_chain(signed.cross_signed_cert, "crossSignedCert")
        if not same_public_key(cross.leaf, cert):
            raise SignatureError("crossSignedCert does not have domainCert's public key")
        if trust is None and cross.root_fingerprint in trusted:
            trust = "cross-signed chain"
    if roots is None:
        trust = "not judged"
    elif trust is None:
        raise SignatureError(
            f"domainCert for '{named}' chains to an untrusted root (sha-256 "
            f"{chain.root_fingerprint}); --trusted-roots FILE adds roots"
        )
    return Identity(
        kind="domain",
        created=signed.created,
        software=signed.software,
        domain=named,
        time_stamp=stamp.time,
        time_stamp_authority=stamp.authority,
        certificate_fingerprint=fingerprint(chain.leaf),
        trust=trust,
    )
