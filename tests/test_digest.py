"""archiver.digest: labels and values as WARC 1.1 section 5.9 writes them."""

from __future__ import annotations

from archiver import digest


def test_digest_labels_and_parsing() -> None:
    value = digest.digest_bytes("sha1", b"hello")
    assert value == "sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N"
    sha256 = digest.digest_bytes("sha256", b"hello")
    assert sha256 == "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert digest.parse_label(value)[0] == "sha1"
    assert digest.parse_label(sha256)[1].hex() == sha256.split(":")[1]
