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
import errno
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


class MountError(RuntimeError):
    """The private filesystem could not be mounted (not root?)."""


@contextlib.contextmanager
def private_tmpfs(path: Path, size: int) -> Iterator[Path]:
    """Mount a ``size``-byte tmpfs at ``path`` (created if needed) for the block, then unmount
    it (unless the block did), lazily if a process still holds a file there, so nothing is
    left mounted."""
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
        if os.path.ismount(path):  # a test may have unmounted it itself
            unmounted = subprocess.run(["umount", str(path)], capture_output=True, check=False)
            if unmounted.returncode != 0:
                subprocess.run(["umount", "-l", str(path)], capture_output=True, check=True)


class Ballast:
    """Every free byte of a filesystem, taken by one file (allocated blocks, not a sparse
    file): writes there fail with ENOSPC until :meth:`release`."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / ".ballast"
        fd = os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
        try:
            taken = 0
            step = max(os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize, 4096)
            while step >= 4096:  # the largest allocations that fit, then the last pages
                try:
                    os.posix_fallocate(fd, taken, step)
                    taken += step
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    step //= 2
        finally:
            os.close(fd)

    @property
    def free(self) -> int:
        st = os.statvfs(self.path.parent)
        return st.f_bavail * st.f_frsize

    def release(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass
class SplitOutput:
    """A crawl directory whose parts live on filesystems of their own, each a small tmpfs, so
    that a test fills exactly one of them: ``root`` (the log, index.cdxj, summary.json),
    ``warcs``, ``state`` (the frontier, crawl.json, pages.jsonl) and ``journals`` (the index
    journals, ``state/journals``). Mount points are empty directories: the directory still
    counts as a new crawl."""

    out: Path
    sizes: dict[str, int] = field(default_factory=dict)
    ballast: dict[str, Ballast] = field(default_factory=dict)

    def directory(self, part: str) -> Path:
        return {
            "root": self.out,
            "warcs": self.out / "warcs",
            "state": self.out / "state",
            "journals": self.out / "state" / "journals",
        }[part]

    def fill(self, part: str) -> None:
        self.ballast[part] = Ballast(self.directory(part))

    def free(self, part: str) -> None:
        self.ballast.pop(part).release()


@contextlib.contextmanager
def split_output(out: Path, **sizes: int) -> Iterator[SplitOutput]:
    """Mount the parts of :class:`SplitOutput` (sizes in bytes, defaults below), each inside
    the one before, and unmount them all afterwards."""
    split = SplitOutput(out, {"root": 8 << 20, "warcs": 32 << 20, "state": 16 << 20,
                              "journals": 4 << 20, **sizes})  # fmt: skip
    with contextlib.ExitStack() as stack:
        for part in ("root", "warcs", "state", "journals"):
            stack.enter_context(private_tmpfs(split.directory(part), split.sizes[part]))
        try:
            yield split
        finally:
            for ballast in split.ballast.values():
                ballast.release()
