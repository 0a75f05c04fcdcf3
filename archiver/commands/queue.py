"""``archiver queue DIR``: a crawl's frontier listed, running or stopped, as grab-site's
``gs-dump-urls`` and Heritrix's frontier report list theirs.

Which frontier: the one the crawl's recorded settings name (``state/crawl.json``). A single
process's SQLite database is opened read-only (:mod:`archiver.frontier.sqlite.listing`). The
private redis-server of ``--processes N`` is read through its socket while the crawl runs;
when the crawl is stopped it is started for the listing (under the crawl's lock, so no run
starts meanwhile) and stopped again, its data unchanged. A ``redis://`` crawl is read from its
server: the recorded URL has its password redacted, so ``--frontier`` gives it whole.

Output: one URL a line on standard output (``STATE<TAB>URL`` when more than one state is
listed), in the order the frontier holds them, written as they are read; then, on standard
error, the frontier's own counts by state and how many URLs were listed. Memory stays that of
one chunk of rows, whatever the size of the crawl.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import IO, Any, TypeVar

from archiver.errors import FrontierError, SettingsError
from archiver.frontier.config import REDIS_SCHEMES
from archiver.frontier.listing import STATES, FrontierView, StateCounts
from archiver.frontier.sqlite.listing import SqliteView
from archiver.processes.redisserver import PrivateRedis, redis_binary
from archiver.processes.supervisor import DEFAULT_CRAWL_ID
from archiver.run.control import recorded_status
from archiver.run.output import Layout, OutputLock

T = TypeVar("T")


def counts_line(counts: StateCounts, listed: int) -> str:
    return (
        f"archiver queue: {counts.queued} queued, {counts.in_flight} in flight, "
        f"{counts.done} done, {counts.failed} failed, {counts.skipped} skipped "
        f"({counts.seen} URLs seen); {listed} listed"
    )


def listing(
    view: FrontierView,
    states: Collection[str],
    match: re.Pattern[str] | None,
    out: IO[str],
) -> int:
    """Write the URLs of ``states`` that ``match`` to ``out`` as they are read; how many."""
    listed = 0
    tagged = len(states) > 1
    for state, url in view.urls(states):
        if match is not None and match.search(url) is None:
            continue
        out.write(f"{state}\t{url}\n" if tagged else f"{url}\n")
        listed += 1
    return listed


def run(
    crawl_dir: Path,
    *,
    states: Collection[str] | None = None,
    match: str | None = None,
    frontier: str | None = None,
    out: IO[str] = sys.stdout,
) -> str:
    """List the frontier of the crawl in ``crawl_dir`` to ``out`` (see the module docstring);
    the line of counts."""
    try:
        pattern = re.compile(match) if match is not None else None
    except re.error as exc:
        raise SettingsError("--match", f"invalid regular expression {match!r}: {exc}") from None

    def read(view: FrontierView) -> tuple[StateCounts, int]:
        wanted = states or [state for state in STATES if state in view.listable]
        unlisted = sorted(set(wanted) - view.listable)
        if unlisted:
            raise SettingsError(
                "--state",
                f"{unlisted[0]}: a Redis frontier keeps finished URLs as keys, not as URLs "
                "(their counts are listed; crawl.log.jsonl names them)",
            )
        counts = view.counts()
        return counts, listing(view, wanted, pattern, out)

    counts, listed = with_view(crawl_dir, frontier, read)
    out.flush()
    return counts_line(counts, listed)


def with_view(crawl_dir: Path, frontier: str | None, use: Callable[[FrontierView], T]) -> T:
    """``use(view)`` with the crawl's frontier open (a stopped ``--processes N`` crawl's
    redis-server started for it, then stopped)."""
    status = recorded_status(crawl_dir)
    settings: dict[str, Any] = status.get("settings") or {}
    backend = frontier or str(settings.get("frontier") or "sqlite")
    crawl_id = str(settings.get("crawl_id") or DEFAULT_CRAWL_ID)
    layout = Layout(crawl_dir)
    if int(status.get("processes") or 1) > 1 and not backend.startswith(REDIS_SCHEMES):
        return _private(layout, crawl_id, use)
    if backend == "memory":
        raise SettingsError("DIR", "the crawl's frontier was in memory: nothing is left to list")
    if backend.startswith(REDIS_SCHEMES):
        if ":***@" in backend:
            raise SettingsError(
                "--frontier",
                "the crawl's Redis URL is recorded without its password: give it whole",
            )
        return _use(_redis_view(backend, crawl_id), use)
    return _use(SqliteView(layout.frontier_db), use)


def _use(view: FrontierView, use: Callable[[FrontierView], T]) -> T:
    try:
        return use(view)
    finally:
        view.close()


def _redis_view(url: str, crawl_id: str) -> FrontierView:
    from archiver.frontier.redis.listing import RedisView  # noqa: PLC0415 - only for Redis

    return RedisView(url, crawl_id)


def _private(layout: Layout, crawl_id: str, use: Callable[[FrontierView], T]) -> T:
    """The private redis-server of a ``--processes N`` crawl: its socket while the crawl
    runs; started for the listing while it is stopped (the crawl's lock held)."""
    running = _running_socket(layout)
    if running is not None:
        return _use(_redis_view(f"unix://{running}?db=0", crawl_id), use)
    binary = redis_binary()
    lock = OutputLock(layout.lock_file)
    lock.acquire()  # a run starting now would start its own server on the same files
    try:
        return asyncio.run(_started(layout, binary, crawl_id, use))
    finally:
        lock.release()


async def _started(
    layout: Layout, binary: str, crawl_id: str, use: Callable[[FrontierView], T]
) -> T:
    if not (layout.state / "redis").is_dir():
        raise FrontierError(f"no redis-server data in {layout.state / 'redis'}")
    server = PrivateRedis(layout.state, binary)
    await server.start()
    try:
        return await asyncio.to_thread(lambda: _use(_redis_view(server.url, crawl_id), use))
    finally:
        await server.stop()


def _running_socket(layout: Layout) -> str | None:
    """The socket of the crawl's redis-server when it runs (its pid file, a live process)."""
    try:
        data = json.loads((layout.state / "redis" / "redis.pid").read_text(encoding="utf-8"))
        socket = str(data["socket"])
        pid = int(data["redis"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, as another user's
    return socket if Path(socket).exists() else None


__all__ = ["counts_line", "listing", "run", "with_view"]
