"""What a crawl needs of its disk: the directories it writes into, free space, a last reserve.

* **The directories are held.** When a run starts, the identity (device and inode) of the
  crawl directory, ``warcs/`` and ``state/`` is noted. A directory removed (``rm -rf``),
  replaced (moved away and made again) or unmounted no longer has that identity at its path:
  files written after that go into deleted inodes or somewhere else, and a crawl that carried
  on would report "completed" over nothing. :meth:`DiskGuard.check` says so; the writer asks
  it before every batch it writes, the crawler every couple of seconds, and the run stops,
  resumably (exit 3), writing nothing more into what is no longer its directory.
* **Free space above ``--min-free-disk``**, checked at the same times, so that a fast fill
  cannot outrun a periodic check by more than one batch. The message gives sizes in the unit
  the floor was given in (``500MB``: MB, not ``0.00 GB``).
* **A reserve** (:class:`Reserve`): a small file in ``state/`` made when the run starts and
  removed when it finishes, before the index, the summary and ``state/crawl.json`` are
  written. When the disk filled up, that space is what lets the run still record why it
  stopped; the next run makes it again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from archiver.config.settings import format_size, size_unit
from archiver.errors import OutputError
from archiver.run.output import Layout

#: Bytes kept free in ``state/`` for the last words of a run on a full disk: crawl.json, the
#: summary, the last lines of the log.
RESERVE_BYTES = 1 << 20

_Identity = tuple[int, int]


def _identity(path: Path) -> _Identity:
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


@dataclass(frozen=True, slots=True)
class _Held:
    path: Path
    identity: _Identity


class DiskGuard:
    """The crawl directory's parts as they were when the run started, and the free-space
    floor; :meth:`check` is cheap (a few ``stat`` calls) and thread-safe."""

    def __init__(self, layout: Layout, floor: int | None) -> None:
        self.root = layout.root
        self.floor = floor
        self._unit = size_unit(floor) if floor else ("GB", 10**9)
        self._held = tuple(
            _Held(path, _identity(path)) for path in (layout.root, layout.warcs, layout.state)
        )
        #: why the directories are not the run's any more, once they are not (it stays so)
        self.lost: str | None = None

    def check(self) -> str | None:
        """Why the run must not write on: a directory lost (see :attr:`lost`), or free space
        under the floor; None when all is well."""
        return self.check_held() or self.check_space()

    def check_held(self) -> str | None:
        if self.lost is None:
            for held in self._held:
                what = _changed(held)
                if what is not None:
                    self.lost = (
                        f"{held.path} was {what} while the crawl ran: nothing more is written "
                        f"there; put the directory back (or start a new crawl) and run again"
                    )
                    break
        return self.lost

    def check_space(self, *, at_start: bool = False) -> str | None:
        floor = self.floor
        if floor is None:
            return None
        try:
            free = shutil.disk_usage(self.root).free
        except OSError as exc:
            return f"cannot read the free space of {self.root}: {exc.strerror or exc}"
        if free >= floor:
            return None
        return (
            f"only {format_size(free, self._unit)} free in {self.root} "
            f"(--min-free-disk {format_size(floor, self._unit)})"
            f"{'; not starting' if at_start else ''}"
        )


def _changed(held: _Held) -> str | None:
    try:
        now = _identity(held.path)
    except FileNotFoundError:
        return "removed"
    except OSError as exc:
        return f"made unreadable ({exc.strerror or exc})"
    if now == held.identity:
        return None
    return "unmounted" if now[0] != held.identity[0] else "replaced"


class Reserve:
    """:data:`RESERVE_BYTES` of allocated space in ``state/`` (see the module docstring)."""

    def __init__(self, layout: Layout) -> None:
        self.path = layout.state / "reserve"

    def hold(self) -> None:
        """Take the space; a disk too full for it is an :class:`OutputError` (not starting)."""
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
            try:
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            finally:
                os.close(fd)
        except OSError as exc:
            self.release()
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise OutputError(
                    f"no space left in {self.path.parent} ({exc.strerror}); not starting"
                ) from None
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def release(self) -> None:
        """Give the space back for the run's last writes (nothing if it was never taken)."""
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)


__all__ = ["RESERVE_BYTES", "DiskGuard", "Reserve"]
