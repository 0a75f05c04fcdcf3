"""Checking a WACZ whole (``archiver verify PACKAGE.wacz``): every file against
``datapackage.json``, ``datapackage.json`` against ``datapackage-digest.json``, and the
signature and its identity (WACZ 1.1.1; WACZ Signing and Verification, section
"Verification", steps 1 to 10).

1. every ZIP member is read whole: its CRC-32 (and, when deflated, its compressed stream) must
   hold, and its sha256 and size must be what ``datapackage.json`` lists for it;
2. every file ``datapackage.json`` lists is in the ZIP, and every member but the two manifests
   is listed (a file slipped in would otherwise go unnoticed);
3. ``datapackage-digest.json`` names ``datapackage.json`` and its sha256;
4. ``signedData``, when present: its ``hash`` is that sha256, its ``created`` is the package's
   (py-wacz's rule), and the signature holds (:mod:`archiver.sign.check`), anonymous or by a
   domain whose chains end at trusted roots.

A change to any byte of a listed file, of ``datapackage.json`` or of the signature fails one
of these, and the finding names the file. What the signature covers is the manifest: the ZIP's
own headers (member dates, comments) are outside it, as in every WACZ verifier. Each member is
streamed once; memory does not grow with the package.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.errors import SignatureError
from archiver.sign.certs import TrustedRoots
from archiver.sign.check import Identity, check_signed_data
from archiver.sign.signeddata import parse_signed_data
from archiver.timefmt import rfc3339

DATAPACKAGE = "datapackage.json"
DIGEST = "datapackage-digest.json"
#: the manifests are small; a bigger one is not a WACZ's
MAX_MANIFEST = 64 << 20
_CHUNK = 1 << 20


@dataclass(slots=True)
class WaczReport:
    """What ``archiver verify`` says about one package."""

    path: Path
    files_checked: int = 0
    bytes_checked: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)  #: (file in the package, why)
    signed: bool = False
    identity: Identity | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    def fail(self, name: str, message: str) -> None:
        self.errors.append((name, message))


def verify_wacz(path: Path, roots: TrustedRoots | None = None) -> WaczReport:
    """Check the package at ``path``; never raises for what is in the file."""
    report = WaczReport(path)
    try:
        with zipfile.ZipFile(path) as zf:
            _check(zf, report, roots or TrustedRoots())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
        report.fail(path.name, f"not a readable ZIP file: {exc}")
    except OSError as exc:
        report.fail(path.name, f"cannot read: {exc.strerror or exc}")
    return report


def _check(zf: zipfile.ZipFile, report: WaczReport, roots: TrustedRoots) -> None:
    members = {info.filename: info for info in zf.infolist() if not info.is_dir()}
    package_bytes = _manifest(zf, members, DATAPACKAGE, report)
    if package_bytes is None:
        return
    package = _json(package_bytes, DATAPACKAGE, report)
    if not isinstance(package, dict) or not isinstance(package.get("resources"), list):
        report.fail(DATAPACKAGE, "has no 'resources' list")
        return
    listed: set[str] = set()
    for resource in package["resources"]:
        name = resource.get("path") if isinstance(resource, dict) else None
        if not isinstance(name, str):
            report.fail(DATAPACKAGE, "a resource has no 'path'")
            continue
        listed.add(name)
        if name not in members:
            report.fail(name, "listed in datapackage.json but not in the package")
            continue
        _check_member(zf, members[name], resource, report)
    for name in sorted(set(members) - listed - {DATAPACKAGE, DIGEST}):
        report.fail(name, "in the package but not listed in datapackage.json")
    created = package.get("created")
    _check_digest(_Open(zf, members, report), created, package_bytes, roots)


def _manifest(
    zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], name: str, report: WaczReport
) -> bytes | None:
    info = members.get(name)
    if info is None:
        report.fail(name, "missing")
        return None
    if info.file_size > MAX_MANIFEST:
        report.fail(name, f"is {info.file_size} bytes, too large for a manifest")
        return None
    try:
        with zf.open(info) as fh:
            return fh.read()
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        report.fail(name, f"damaged in the ZIP: {exc}")
        return None


def _json(data: bytes, name: str, report: WaczReport) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        report.fail(name, f"is not JSON: {exc}")
        return None


def _check_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, resource: dict[str, Any], report: WaczReport
) -> None:
    name = info.filename
    listed_hash = resource.get("hash")
    if not isinstance(listed_hash, str) or not listed_hash.startswith("sha256:"):
        report.fail(name, f"datapackage.json gives no sha256 hash for it ({listed_hash!r})")
        return
    digest = hashlib.sha256()
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        report.fail(name, f"damaged in the ZIP: {exc}")
        return
    report.files_checked += 1
    report.bytes_checked += size
    if "sha256:" + digest.hexdigest() != listed_hash:
        report.fail(name, "its sha256 differs from the one datapackage.json lists")
    elif resource.get("bytes") not in (None, size):
        report.fail(name, f"is {size} bytes, datapackage.json says {resource.get('bytes')}")


@dataclass(frozen=True, slots=True)
class _Open:
    """The package being read, and the report it adds to."""

    zf: zipfile.ZipFile
    members: dict[str, zipfile.ZipInfo]
    report: WaczReport


def _check_digest(
    package: _Open, created: object, package_bytes: bytes, roots: TrustedRoots
) -> None:
    zf, members, report = package.zf, package.members, package.report
    if DIGEST not in members:
        return  # recommended, not required (WACZ 1.1.1); the report says "not signed"
    data = _manifest(zf, members, DIGEST, report)
    digest = _json(data, DIGEST, report) if data is not None else None
    if not isinstance(digest, dict):
        if data is not None:
            report.fail(DIGEST, "is not a JSON object")
        return
    package_hash = "sha256:" + hashlib.sha256(package_bytes).hexdigest()
    if digest.get("path") != DATAPACKAGE:
        report.fail(DIGEST, f"names {digest.get('path')!r}, not datapackage.json")
    if digest.get("hash") != package_hash:
        report.fail(DATAPACKAGE, "its sha256 differs from the one datapackage-digest.json gives")
        return
    if "signedData" not in digest:
        return
    report.signed = True
    try:
        signed = parse_signed_data(digest["signedData"])
        if signed.hash != package_hash:
            raise SignatureError("signedData 'hash' is not the sha256 of datapackage.json")
        if digest["signedData"].get("created") != created:
            raise SignatureError("signedData 'created' differs from datapackage.json's 'created'")
        report.identity = check_signed_data(signed, roots)
    except SignatureError as exc:
        report.fail(DIGEST, f"signature: {exc}")


def render_wacz(report: WaczReport) -> str:
    """The human report: counts, who signed (or that nobody did), one line per failure, and
    ``VERIFY OK`` or ``VERIFY FAILED``."""
    lines = [
        f"{report.path.name}: {report.files_checked} files checked against datapackage.json, "
        f"{report.bytes_checked} bytes"
    ]
    if report.identity is not None:
        lines.append(report.identity.describe())
    elif not report.signed:
        lines.append("not signed (datapackage-digest.json has no signedData)")
    lines.extend(f"ERROR {name}: {message}" for name, message in report.errors)
    lines.append("VERIFY OK" if report.ok else "VERIFY FAILED")
    return "\n".join(lines)


def wacz_to_json(report: WaczReport) -> dict[str, Any]:
    identity = report.identity
    return {
        "ok": report.ok,
        "package": str(report.path),
        "files": report.files_checked,
        "bytes": report.bytes_checked,
        "signed": report.signed,
        "signer": (
            {
                "identity": identity.kind,
                "domain": identity.domain,
                "created": rfc3339(identity.created),
                "time_stamp": rfc3339(identity.time_stamp) if identity.time_stamp else None,
                "time_stamp_authority": identity.time_stamp_authority,
                "certificate_sha256": identity.certificate_fingerprint,
                "public_key": identity.public_key,
                "public_key_sha256": identity.public_key_fingerprint,
                "software": identity.software,
            }
            if identity is not None
            else None
        ),
        "errors": [{"file": name, "message": message} for name, message in report.errors],
    }
