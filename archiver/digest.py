"""Digest algorithms and their WARC labels (WARC 1.1 section 5.8, annotated-spec #48/#80).

sha1 is written in Base32 (32 characters, what CDX consumers and pywb expect); algorithms whose
Base32 form would need ``=`` padding (sha256, sha512) are written in lowercase Base16, as the
annotated spec recommends and Browsertrix/Zeno do.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Protocol

ALGORITHMS = ("sha1", "sha256", "sha512")


class Hasher(Protocol):
    """The part of hashlib's interface we use."""

    def update(self, data: bytes | bytearray | memoryview, /) -> None: ...

    def digest(self) -> bytes: ...


def new_hasher(algorithm: str) -> Hasher:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unsupported digest algorithm {algorithm!r}")
    return hashlib.new(algorithm)


def label(algorithm: str, raw: bytes) -> str:
    """``algo:value`` as written in WARC-Block-Digest / WARC-Payload-Digest."""
    if algorithm == "sha1":
        return "sha1:" + base64.b32encode(raw).decode("ascii")
    return f"{algorithm}:{raw.hex()}"


def finish(algorithm: str, hasher: Hasher) -> str:
    return label(algorithm, hasher.digest())


def digest_bytes(algorithm: str, data: bytes) -> str:
    hasher = new_hasher(algorithm)
    hasher.update(data)
    return finish(algorithm, hasher)


def parse_label(value: str) -> tuple[str, bytes]:
    """Algorithm and raw digest of a labelled value in Base32, Base16 or Base64."""
    algorithm, _, text = value.strip().partition(":")
    algorithm = algorithm.lower().replace("-", "")
    size = hashlib.new(algorithm).digest_size
    for encoding in ("base16", "base32", "base64"):
        try:
            if encoding == "base16":
                raw = bytes.fromhex(text) if len(text) == size * 2 else b""
            elif encoding == "base32":
                raw = base64.b32decode(text.upper() + "=" * (-len(text) % 8))
            else:
                raw = base64.b64decode(text + "=" * (-len(text) % 4))
        except ValueError:
            continue
        if len(raw) == size:
            return algorithm, raw
    raise ValueError(f"cannot decode digest {value!r}")
