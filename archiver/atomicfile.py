"""Files written whole or not at all: through a temporary name, renamed once complete.

Readers (pywb, a resumed run, a person) see either the old file or the whole new one, never a
half-written one, even when the process dies mid-write. And a write that fails (a full disk,
an I/O error) removes its temporary file before the error goes on: a crawl stopped by a full
disk must not leave ``summary.json.tmp`` or ``index.cdxj.tmp`` behind, which nothing would
ever clean.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TMP_SUFFIX = ".tmp"


def tmp_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed."""
    return path.with_name(path.name + TMP_SUFFIX)


@contextlib.contextmanager
def replacing(
    path: Path, mode: str = "w", *, private: bool = False, fsync: bool = True
) -> Iterator[IO[Any]]:
    """A file to write ``path``'s new content into (``mode`` ``"w"`` or ``"wb"``); when the
    block ends it is flushed, fsynced (unless ``fsync`` is False) and renamed over ``path``.
    When the block or the rename raises, the temporary file is removed and ``path`` is left as
    it was. ``private``: readable by the owner only (cookies)."""
    tmp = tmp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    try:
        encoding = None if "b" in mode else "utf-8"
        with open(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_text(path: Path, text: str, *, private: bool = False, fsync: bool = True) -> None:
    """Replace ``path`` with ``text`` (UTF-8), whole or not at all."""
    with replacing(path, private=private, fsync=fsync) as fh:
        fh.write(text)


__all__ = ["TMP_SUFFIX", "replacing", "tmp_path", "write_text"]
