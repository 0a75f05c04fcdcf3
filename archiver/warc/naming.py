"""WARC file names: ``{prefix}-{timestamp17}-{serial:05}-{host}.warc.gz``, ``.open`` while written.

The IIPC/Heritrix convention (WARC 1.1 annex C recommends a name that is unique and says when and
where it was written): the prefix names the crawl, the 17-digit UTC timestamp when the file was
opened, the serial its place in the series, the host the machine (or ``{hostname}-{pid}``, one
process of a shared crawl) that wrote it. A file keeps the ``.open`` suffix until every capture
in it is committed, so a crash leaves it to the resume repair; only sealed names end ``.warc.gz``.

Every part of a name comes from :func:`safe_name_part`, never from a URL as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from archiver.timefmt import timestamp17

OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9.-]+")
_NAME = re.compile(r"^(?P<prefix>.+)-(?P<ts>\d{17})-(?P<serial>\d{5,})-(?P<host>.+)\.warc\.gz$")


def safe_name_part(text: str, *, default: str = "host", limit: int = 64) -> str:
    """A file-name part from untrusted text: ``[A-Za-z0-9.-]``, no leading dot, bounded."""
    cleaned = _SAFE_NAME.sub("-", text).strip(".-")[:limit].strip(".-")
    return cleaned or default


def warc_name(prefix: str, opened: datetime, serial: int, host: str) -> str:
    """The final name of a WARC file (parts already made safe by :func:`safe_name_part`)."""
    return f"{prefix}-{timestamp17(opened)}-{serial:05d}-{host}{WARC_SUFFIX}"


def serial_of(name: str, prefix: str) -> int | None:
    """The serial in a WARC file name (``.open`` or not) written with ``prefix``, else None."""
    match = _NAME.match(name.removesuffix(OPEN_SUFFIX))
    if match is None or match.group("prefix") != prefix:
        return None
    return int(match.group("serial"))


def warc_files(directory: Path, *, include_open: bool = False) -> list[Path]:
    """The WARC files under ``directory`` (recursively), sorted by name."""
    if not directory.is_dir():
        return []
    patterns: Iterable[str] = (f"*{WARC_SUFFIX}",)
    if include_open:
        patterns = (f"*{WARC_SUFFIX}", f"*{WARC_SUFFIX}{OPEN_SUFFIX}")
    found = {path for pattern in patterns for path in directory.rglob(pattern)}
    return sorted(found)


#: The files other tools write that archiver reads (cdxj-indexer's list): WARC and ARC,
#: compressed one gzip member per record or not at all.
ARCHIVE_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")


def archive_files(directory: Path) -> list[Path]:
    """The WARC and ARC files under ``directory`` (recursively), sorted by path."""
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.rglob("*") if p.is_file() and p.name.endswith(ARCHIVE_SUFFIXES)
    )


__all__ = [
    "ARCHIVE_SUFFIXES",
    "OPEN_SUFFIX",
    "WARC_SUFFIX",
    "archive_files",
    "safe_name_part",
    "serial_of",
    "warc_files",
    "warc_name",
]
