"""The ``signedData`` object of ``datapackage-digest.json`` (WACZ Signing and Verification,
section "Signature Data Format"): which fields each identity has, read strictly.

The specification: the object "MUST conform to one of the two signature formats" and "MUST
not contain any property that is not listed in either signature format". ``created`` is an
ISO 8601 date; archiver writes and expects the RFC 3339 UTC form with whole seconds
(``2024-05-01T12:00:00Z``), the form py-wacz and authsign write (authsign's verifier compares
it with a time stamp that has whole seconds, so a fraction could put it "after" the stamp).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from archiver.errors import SignatureError
from archiver.timefmt import parse_w3c_datetime, rfc3339

#: the version of the signedData format (authsign writes "0.1.0")
FORMAT_VERSION = "0.1.0"
ANONYMOUS_FIELDS = frozenset({"hash", "created", "software", "version", "signature", "publicKey"})
DOMAIN_FIELDS = frozenset(
    {
        "hash",
        "created",
        "software",
        "version",
        "signature",
        "domain",
        "domainCert",
        "timeSignature",
        "timestampCert",
        "crossSignedCert",
    }
)
_ANONYMOUS_REQUIRED = ("hash", "created", "signature", "publicKey")
_DOMAIN_REQUIRED = ("hash", "created", "signature", "domain", "domainCert", "timeSignature")
_HASH = re.compile(r"sha256:[0-9a-f]{64}\Z")
_CREATED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)\Z")


@dataclass(frozen=True, slots=True)
class AnonymousSignature:
    hash: str
    created: datetime
    signature: str  #: base64
    public_key: str  #: base64 of the DER SubjectPublicKeyInfo
    software: str | None


@dataclass(frozen=True, slots=True)
class DomainSignature:
    hash: str
    created: datetime
    signature: str  #: base64
    domain: str
    domain_cert: str  #: PEM chain, the domain's certificate first
    time_signature: str  #: base64 of an RFC 3161 TimeStampResp (or a bare token)
    timestamp_cert: str | None  #: PEM chain of the time stamp authority
    cross_signed_cert: str | None
    software: str | None


SignedData = AnonymousSignature | DomainSignature


def created_text(moment: datetime) -> str:
    """``created`` as archiver writes it: UTC, whole seconds, ``Z``."""
    return rfc3339(moment)


def parse_created(text: str) -> datetime:
    moment = parse_w3c_datetime(text) if _CREATED.match(text) else None
    if moment is None:
        raise SignatureError(f"signedData 'created' is not an ISO 8601 date and time: {text!r}")
    return moment.astimezone(UTC)


def _text(data: Mapping[str, Any], name: str, *, required: bool) -> str | None:
    value = data.get(name)
    if value is None:
        if required:
            raise SignatureError(f"signedData has no '{name}'")
        return None
    if not isinstance(value, str) or (required and not value):
        raise SignatureError(f"signedData '{name}' is not a non-empty string")
    return value


def parse_signed_data(data: object) -> SignedData:
    """The identity and fields of ``data``; :class:`SignatureError` names what is wrong."""
    if not isinstance(data, Mapping):
        raise SignatureError("signedData is not a JSON object")
    keys = set(data)
    domain_like = "domain" in keys or "domainCert" in keys
    if "publicKey" in keys and domain_like:
        raise SignatureError("signedData has both 'publicKey' and a domain identity")
    allowed = DOMAIN_FIELDS if domain_like else ANONYMOUS_FIELDS
    extra = sorted(keys - allowed)
    if extra:
        raise SignatureError(f"signedData has properties the format does not list: {extra}")
    required = _DOMAIN_REQUIRED if domain_like else _ANONYMOUS_REQUIRED
    values = {name: _text(data, name, required=name in required) for name in allowed}
    hash_ = values["hash"] or ""
    if not _HASH.match(hash_):
        raise SignatureError(f"signedData 'hash' is not sha256:<64 hex digits>: {hash_!r}")
    created = parse_created(values["created"] or "")
    if domain_like:
        return DomainSignature(
            hash=hash_,
            created=created,
            signature=values["signature"] or "",
            domain=values["domain"] or "",
            domain_cert=values["domainCert"] or "",
            time_signature=values["timeSignature"] or "",
            timestamp_cert=values["timestampCert"],
            cross_signed_cert=values["crossSignedCert"],
            software=values["software"],
        )
    return AnonymousSignature(
        hash=hash_,
        created=created,
        signature=values["signature"] or "",
        public_key=values["publicKey"] or "",
        software=values["software"],
    )
