"""A small filesystem of a test's own, for tests that fill a disk on purpose.

Filling the shared filesystem would stop every other crawl running on the machine at the
same time (each stops, resumably, when free space falls under its ``--min-free-disk``), and
on a nearly full disk it could fill ``/``. A tmpfs mounted for the test alone holds the crawl
output and the ballast instead: only the test's own crawl sees the space go. Mounting needs
root (CAP_SYS_ADMIN), which the test machines and CI have: ``scripts/test`` runs as root to
install its packages.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path


class MountError(RuntimeError):
    """The private filesystem could not be mounted (not root?)."""


@contextlib.contextmanager
def private_tmpfs(path: Path, size: int) -> Iterator[Path]:
    """Mount a ``size``-byte tmpfs at ``path`` (created if needed) for the block, then unmount
    it, lazily if a process still holds a file there, so nothing is left mounted."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        raise MountError(
            f"cannot mount a tmpfs at {path} ({mounted.stderr.strip()}): tests that fill a "
            "disk need root, to fill a filesystem of their own rather than the shared one"
        )
    try:
        yield path
    finally:
        unmounted = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if unmounted.returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=True)
