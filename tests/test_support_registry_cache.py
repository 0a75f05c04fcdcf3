"""The registry cache the npm and PyPI test helpers share: an archive is unpacked once and
reused, and one whose SHA-256 is not the pinned one leaves nothing behind."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.support.registry_cache import PinnedArchive, unpacked


class PinError(RuntimeError):
    pass


def tarball(path: Path) -> bytes:
    data = b"console.log('hi')\n"
    info = tarfile.TarInfo("package/dist/x.js")
    info.size = len(data)
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(info, io.BytesIO(data))
    return path.read_bytes()


def test_an_archive_is_fetched_once_and_reused(tmp_path: Path) -> None:
    source = tmp_path / "x-1.0.tgz"
    archive = PinnedArchive("x", "1.0", hashlib.sha256(tarball(source)).hexdigest())
    cache = tmp_path / "cache"
    fetched: list[Path] = []

    def download(into: Path) -> Path:
        fetched.append(into)
        return Path(shutil.copy(source, into))

    first = unpacked(archive, cache, download, PinError)
    again = unpacked(archive, cache, download, PinError)
    assert first == again == cache / "x-1.0"
    assert (first / "package" / "dist" / "x.js").read_bytes() == b"console.log('hi')\n"
    assert len(fetched) == 1
    assert not fetched[0].exists()  # the scratch folder is gone


def test_an_archive_not_matching_its_pin_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "x-1.0.tgz"
    tarball(source)
    archive = PinnedArchive("x", "1.0", "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(PinError, match=r"x-1\.0\.tgz: sha256 [0-9a-f]{64}, expected 0{64}"):
        unpacked(archive, cache, lambda into: Path(shutil.copy(source, into)), PinError)
    assert sorted(p.name for p in cache.iterdir()) == [".lock"]
