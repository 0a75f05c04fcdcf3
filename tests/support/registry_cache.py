"""Pinned archives from a package registry, fetched once into the checkout's git-ignored
``.cache/`` and checked against a pinned SHA-256: the code and data tests run that archiver
must not commit or ship (:mod:`tests.support.npm_packages`, :mod:`tests.support.sdists`).

Each registry's module says how its ordinary client fetches an archive (``npm pack``,
``pip download``); what follows is the same for every registry: an archive is unpacked once
(the tar ``data`` filter: no absolute paths, links out of the tree or device files), a
``.complete`` mark says the folder is whole, and a lock on the cache folder makes a test
process wait for another that is fetching, so parallel workers and later sessions reuse one
copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

DOWNLOAD_TIMEOUT = 300


@dataclass(frozen=True, slots=True)
class PinnedArchive:
    """An archive in a registry: name, version and the SHA-256 of the file its client writes."""

    name: str
    version: str
    sha256: str

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"


@contextlib.contextmanager
def _locked(cache: Path) -> Iterator[None]:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def unpacked(
    archive: PinnedArchive,
    cache: Path,
    download: Callable[[Path], Path],
    error: type[Exception],
) -> Path:
    """The folder under ``cache`` that ``archive`` is unpacked into, fetched and checked on
    first use.

    ``download`` fetches the archive into the folder it is given and returns its path; a file
    whose SHA-256 is not the pinned one raises ``error`` and leaves nothing in the cache.
    """
    target = cache / archive.folder
    done = target / ".complete"
    if done.exists():
        return target
    with _locked(cache):
        if done.exists():
            return target
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            fetched = download(Path(scratch))
            digest = hashlib.sha256(fetched.read_bytes()).hexdigest()
            if digest != archive.sha256:
                raise error(f"{fetched.name}: sha256 {digest}, expected {archive.sha256}")
            shutil.rmtree(target, ignore_errors=True)
            tree = Path(scratch) / "tree"
            with tarfile.open(fetched) as tar:
                tar.extractall(tree, filter="data")
            tree.rename(target)
        done.touch()
    return target


__all__ = ["DOWNLOAD_TIMEOUT", "PinnedArchive", "unpacked"]
