"""A crawl signed with a local key: ``archiver verify`` accepts the package and names the key;
a one-byte change in any file, in datapackage.json or in the signature fails it with the file
named; the key never reaches a WARC, a log or summary.json."""

from __future__ import annotations

import asyncio
import gzip
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from archiver.commands.exits import exit_code
from archiver.sign.keys import write_new_key
from tests.commands.test_cli import archiver
from tests.conftest import run_crawl
from tests.sign.helpers import add_pages, digest_of, flip_byte, rewrite_member
from tests.support.site import SiteServer
from tests.support.tools import wacz_validate


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One key-signed crawl shared by the tests of this module (they only read it)."""
    tmp = tmp_path_factory.mktemp("key-signed")
    key_path = tmp / "archive.key"
    key = write_new_key(key_path)

    async def crawl() -> Any:
        async with SiteServer() as site:
            add_pages(site)
            return await run_crawl(tmp / "crawl", site.url("/"), wacz_sign_key=key_path)

    result = asyncio.run(crawl())
    assert result.status == "completed", result.reason
    assert exit_code(result.status) == 0
    return tmp / "crawl", tmp / "crawl" / "crawl.wacz", key, key_path


def test_the_package_carries_an_anonymous_signature_that_verifies(signed: Any) -> None:
    out, wacz, key, _ = signed
    signed_data = digest_of(wacz)["signedData"]
    assert signed_data["publicKey"] == key.public_key
    with zipfile.ZipFile(wacz) as zf:
        assert signed_data["created"] == json.loads(zf.read("datapackage.json"))["created"]
    run = archiver("verify", str(wacz))
    assert run.code == 0, run.out
    assert f"signed anonymously by the key with sha-256 fingerprint {key.fingerprint}" in run.out
    assert run.out.rstrip().endswith("VERIFY OK")
    as_json = json.loads(archiver("verify", "--json", str(wacz)).out)
    assert as_json["ok"] is True
    assert as_json["signer"]["identity"] == "anonymous"
    assert as_json["signer"]["public_key_sha256"] == key.fingerprint
    summary = json.loads((out / "summary.json").read_text())
    assert key.fingerprint in summary["wacz_signed_by"]
    ok, output = wacz_validate(wacz)  # py-wacz: hashes, and created == signedData.created
    assert ok, output


def test_the_private_key_is_nowhere_in_the_crawls_output(signed: Any) -> None:
    out, _, _, key_path = signed
    pem = key_path.read_bytes()
    body = b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))
    secret_parts = [body[i : i + 32] for i in range(0, len(body) - 32, 32)]
    for path in out.rglob("*"):
        if not path.is_file() or path.suffix == ".gz":
            continue
        data = path.read_bytes()
        assert not any(part in data for part in secret_parts), path
    for warc in (out / "warcs").glob("*.warc.gz"):
        data = gzip.decompress(warc.read_bytes())
        assert not any(part in data for part in secret_parts), warc


def _members(wacz: Path) -> list[str]:
    with zipfile.ZipFile(wacz) as zf:
        return [n for n in zf.namelist() if n not in ("datapackage-digest.json",)]


def test_a_changed_byte_in_any_file_fails_and_names_it(signed: Any, tmp_path: Path) -> None:
    _, wacz, _, _ = signed
    names = _members(wacz)
    assert {"datapackage.json", "pages/pages.jsonl", "indexes/index.cdx.gz"} <= set(names)
    assert any(n.startswith("archive/") for n in names)
    for n, name in enumerate(names):
        changed = tmp_path / f"changed-{n}.wacz"
        rewrite_member(wacz, changed, name, flip_byte)
        run = archiver("verify", str(changed))
        assert run.code == 1, (name, run.out)
        assert run.out.rstrip().endswith("VERIFY FAILED")
        errors = [line for line in run.out.splitlines() if line.startswith("ERROR ")]
        assert errors, run.out
        assert errors[0].startswith(f"ERROR {name}: "), (name, errors)


def test_a_byte_changed_inside_the_zip_is_named_too(signed: Any, tmp_path: Path) -> None:
    """The same change made in place (the ZIP's CRC no longer holds)."""
    _, wacz, _, _ = signed
    with zipfile.ZipFile(wacz) as zf:
        info = next(i for i in zf.infolist() if i.filename.startswith("archive/"))
        header_end = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data = bytearray(wacz.read_bytes())
    data[header_end + info.compress_size // 2] ^= 0x01
    changed = tmp_path / "in-place.wacz"
    changed.write_bytes(bytes(data))
    run = archiver("verify", str(changed))
    assert run.code == 1
    assert f"ERROR {info.filename}: " in run.out


@pytest.mark.parametrize("field", ["signature", "publicKey", "hash", "created"])
def test_a_changed_signature_fails(signed: Any, tmp_path: Path, field: str) -> None:
    _, wacz, _, _ = signed

    def change(data: bytes) -> bytes:
        digest = json.loads(data)
        value = digest["signedData"][field]
        at = len(value) // 2
        swapped = "A" if value[at] != "A" else "B"
        if field in ("hash", "created"):
            swapped = "0" if value[-2] != "0" else "1"
            at = len(value) - 2
        digest["signedData"][field] = value[:at] + swapped + value[at + 1 :]
        return json.dumps(digest, indent=2).encode()

    changed = tmp_path / f"sig-{field}.wacz"
    rewrite_member(wacz, changed, "datapackage-digest.json", change)
    run = archiver("verify", str(changed))
    assert run.code == 1, run.out
    assert "ERROR datapackage-digest.json: signature: " in run.out


def test_a_crawl_of_several_processes_is_signed_by_its_supervisor(tmp_path: Path) -> None:
    """``--processes 2``: the supervisor packages the crawl, and signs it."""
    key = write_new_key(tmp_path / "k")
    out = tmp_path / "shared"
    with SiteServer().running_in_thread() as site:
        add_pages(site)
        run = archiver(
            "crawl", site.url("/"), "-o", str(out), "--processes", "2", "--robots", "ignore",
            "--per-host-delay", "0", "--quiet", "--wacz-sign-key", str(tmp_path / "k"),
            timeout=300,
        )  # fmt: skip
    assert run.code == 0, run.err
    checked = archiver("verify", str(out / "shared.wacz"))
    assert checked.code == 0, checked.out
    assert f"fingerprint {key.fingerprint}" in checked.out
    summary = json.loads((out / "summary.json").read_text())
    assert key.fingerprint in summary["wacz_signed_by"]


def test_a_file_that_is_no_package_is_one_line(signed: Any, tmp_path: Path) -> None:
    _, wacz, _, _ = signed
    cut = tmp_path / "cut.wacz"
    cut.write_bytes(wacz.read_bytes()[: wacz.stat().st_size // 2])
    warc = tmp_path / "warc.wacz"
    warc.write_bytes(b"WARC/1.1\r\n")
    for path in (cut, warc):
        run = archiver("verify", str(path))
        assert run.code == 1
        assert "Traceback" not in run.out + run.err
        assert f"ERROR {path.name}: not a readable ZIP file: " in run.out
    garbage = tmp_path / "garbage.wacz"
    rewrite_member(wacz, garbage, "datapackage.json", lambda _: b"{not json")
    run = archiver("verify", str(garbage))
    assert run.code == 1
    assert "ERROR datapackage.json: is not JSON: " in run.out
