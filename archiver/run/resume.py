"""Resume after a crash: cut ``.open`` WARC files back to what the frontier committed.

A killed run leaves its last WARC files named ``.open``. Each is walked member by member
(:func:`archiver.warc.reader.repair`): a damaged tail is cut, and so is every capture from the first
one whose lease outcome never reached the frontier (its URL is fetched again by the resumed run,
so keeping it would capture it twice). URLs whose committed captures were cut with it are
re-queued, the file's index journal is trimmed to match, and the file gets its final name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from archiver.errors import LockedError, OutputError
from archiver.frontier.base import Frontier
from archiver.index import cdxj as index
from archiver.run.output import Layout, OutputLock, layouts
from archiver.warc import reader as warcfile
from archiver.warc.naming import OPEN_SUFFIX


async def repair_open_warcs(
    layout: Layout, frontier: Frontier, log: Any, *, process_id: str | None = None
) -> None:
    """Cut each ``.open`` WARC back to its committed captures and close it.

    In a directory shared by several processes only this process's own files are touched
    (other processes' are closed by :func:`close_abandoned` once they are dead)."""
    own = "*.warc.gz.open" if process_id is None else f"*-{process_id}.warc.gz.open"
    for path in sorted(layout.warcs.rglob(own)):
        final_name = path.name.removesuffix(".open")
        committed = await frontier.committed_captures(final_name)
        report = warcfile.repair(
            path, keep=committed_filter(committed) if frontier.persistent else None
        )
        requeued = await frontier.uncommit_captures(final_name, report.kept_size)
        journal = layout.journals / (final_name + index.JOURNAL_SUFFIX)
        index.truncate_journal(journal, report.kept_size)
        log.warning(
            "warc-repaired",
            file=path.name,
            kept_bytes=report.kept_size,
            removed_bytes=report.removed_bytes,
            dropped_captures=len(report.dropped),
            damage=report.damage,
            requeued=requeued,
        )
        if report.kept_size == 0:
            path.unlink()
            journal.unlink(missing_ok=True)
            continue
        final = path.with_name(final_name)
        if final.exists():
            raise OutputError(f"cannot close {path}: {final} exists")
        path.rename(final)


def committed_filter(committed: set[tuple[int, int]]) -> Callable[[warcfile.Capture], bool]:
    """Keep a capture on resume only if the frontier committed it (warcinfo always)."""

    def keep(capture: warcfile.Capture) -> bool:
        first = capture.records[0].record_type if capture.records else ""
        return first == "warcinfo" or (capture.start, capture.end) in committed

    return keep


def close_abandoned(crawl_dir: Path) -> list[Path]:
    """Close ``.open`` WARCs a dead process left in ``crawl_dir``: cut to whole captures,
    rename, and rebuild their journals by reading them. Refuses while a run holds the lock of
    a single-run directory; in a shared one, the files of live processes are left alone.

    A dead process of a Redis crawl had URLs in flight; their leases expired and other
    processes fetched them again, so each of those may be captured twice (both whole)."""
    closed: list[Path] = []
    for layout in layouts(crawl_dir):
        pattern = "*.warc.gz.open" if layout.process is None else f"*-{layout.process}.warc.gz.open"
        opened = sorted(layout.warcs.rglob(pattern)) if layout.warcs.is_dir() else []
        if not opened:
            continue
        lock = OutputLock(layout.lock_file)
        try:
            lock.acquire()
        except LockedError:
            if layout.process is None:
                raise
            continue  # a live process: its files are still being written
        try:
            for path in opened:
                final = _close_abandoned_file(layout, path)
                if final is not None:
                    closed.append(final)
        finally:
            lock.release()
    return closed


def _close_abandoned_file(layout: Layout, path: Path) -> Path | None:
    """Repair, rename and re-journal one abandoned file (None: nothing whole was left)."""
    report = warcfile.repair(path)
    final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
    journal = layout.journals / (final.name + index.JOURNAL_SUFFIX)
    if report.kept_size == 0:
        path.unlink()
        journal.unlink(missing_ok=True)
        return None
    path.rename(final)
    layout.journals.mkdir(parents=True, exist_ok=True)
    index.write_lines_atomically(journal, index.scan_warc(final))
    return final
