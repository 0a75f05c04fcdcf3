"""``archiver rebuild-frontier DIR``: the frontier database of a crawl made again from its WARC
files, after it was lost or damaged while the crawl was stopped (:mod:`archiver.run.state`
refuses to resume without it).

What the WARC files and ``state/crawl.json`` hold is enough to rebuild what matters:

* **the done set**: every URL with a whole capture (a response, a revisit, a resource) is
  done, its capture committed, so the resumed crawl fetches none of them again;
* **the dedup digests**: each payload digest maps to the first response that stored it, so a
  payload met again is still written as a revisit;
* **the URLs the crawl captured**, where their records are (what a browser crawl answers
  from);
* **the queue**: the crawl is walked again from its seeds (``crawl.json``'s settings: seeds,
  seeds file, scope), breadth first, through what each captured response leads to, by the
  rules of a crawl (:mod:`archiver.extract.links` for HTML and CSS, the ``Location`` of a
  redirect, a sitemap's entries; :class:`archiver.policy.scope.Scope` decides): every URL
  reached that has no capture is queued, with the depth and hops the walk gives it.

Not rebuilt: the tries and outcomes of URLs that failed or were skipped (they are tried
again), politeness state, ``ignores`` and robots.txt verdicts (both are checked again when a
URL is leased). ``.open`` WARC files are first closed to their whole captures (all of them
count: without the frontier, which of their captures were committed is not known). The
damaged database, if any, is kept beside the new one (``frontier.sqlite.damaged-TIME``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from archiver import urls
from archiver.config.assemble import crawl_scope, sitemap_policy
from archiver.config.seeds import first_of_each
from archiver.config.settings import Settings, parse_value, setting_fields
from archiver.dedup.captured import read_response
from archiver.errors import OutputError, SettingsError, StateError
from archiver.extract import links
from archiver.extract.decoding import ContentDecodingError
from archiver.extract.found import link_limit
from archiver.extract.links import CSS_TYPES, HTML_TYPES, MAX_DECODED
from archiver.frontier.sqlite import SqliteFrontier, write_identity
from archiver.models import (
    CrawlItem,
    Exchange,
    Hop,
    Original,
    Outcome,
    RecordLocation,
    TaskResult,
    WrittenCapture,
    WrittenRecord,
)
from archiver.policy.politeness import HostGate
from archiver.policy.seeds import Seed
from archiver.policy.sitemaps import SitemapPolicy, is_sitemap
from archiver.run.output import Layout, OutputLock, read_status, write_status
from archiver.run.resume import close_abandoned
from archiver.run.seeds import SeedsFile, starting_seeds
from archiver.run.state import CRAWL_KEY, new_identity, record_settled
from archiver.spool import Spool
from archiver.timefmt import rfc3339_at, timestamp17, utcnow
from archiver.warc import reader
from archiver.warc.naming import warc_files

T = TypeVar("T")

#: The kinds of record a capture is indexed by (what makes its URL done).
_PRIMARY = ("response", "revisit", "resource")


@dataclass(frozen=True, slots=True)
class Captured:
    """One whole capture found in the WARC files: where it is, what its primary record says."""

    filename: str
    start: int
    end: int
    primary: reader.RecordInfo

    @property
    def location(self) -> RecordLocation:
        return RecordLocation(self.filename, self.primary.offset, self.primary.length)

    def written(self) -> WrittenCapture:
        record = self.primary
        return WrittenCapture(
            self.filename,
            self.start,
            self.end,
            (
                WrittenRecord(
                    record_type=record.record_type,
                    record_id=record.record_id or "",
                    target_uri=record.target_uri or "",
                    date=record.date or "",
                    filename=self.filename,
                    offset=record.offset,
                    length=record.length,
                    payload_digest=record.get("WARC-Payload-Digest"),
                ),
            ),
        )


@dataclass(slots=True)
class RebuildReport:
    """What ``rebuild-frontier`` found and made."""

    warc_files: int = 0
    captured: int = 0  #: URLs done (a whole capture each)
    queued: int = 0  #: URLs reached from the seeds without a capture
    digests: int = 0
    damaged: Path | None = None  #: where the damaged database was kept
    notes: list[str] = field(default_factory=list)


def settings_from_state(state: dict[str, Any]) -> Settings:
    """The crawl's settings as crawl.json recorded them (secrets redacted there are left at
    their defaults: the rebuild needs the seeds and the scope, not credentials)."""
    recorded = state.get("settings")
    if not isinstance(recorded, dict):
        raise StateError("crawl.json records no settings: the crawl cannot be walked again")
    values: dict[str, Any] = {}
    for f in setting_fields():
        if f.name not in recorded or recorded[f.name] is None:
            continue
        with contextlib.suppress(SettingsError, TypeError, ValueError):
            values[f.name] = parse_value(f.name, recorded[f.name], source="config")
    try:
        return Settings(**values)
    except (TypeError, ValueError) as exc:
        raise StateError(f"crawl.json's settings cannot be read back: {exc}") from None


def rebuild_frontier(crawl_dir: Path) -> RebuildReport:
    """Rebuild ``crawl_dir``'s ``state/frontier.sqlite`` (see the module docstring)."""
    layout = Layout(crawl_dir)
    state = read_status(layout)
    if state is None:
        raise OutputError(f"{crawl_dir} holds no archiver crawl (no state/crawl.json)")
    if int(state.get("processes") or 1) > 1:
        raise OutputError(
            f"{crawl_dir} was crawled with --processes: its queue is in its redis-server's "
            "append-only file (state/redis/), not in a frontier database"
        )
    settings = settings_from_state(state)
    report = RebuildReport()
    close_abandoned(crawl_dir)  # takes the lock itself; then every capture is in a sealed file
    with OutputLock(layout.lock_file):
        report.damaged = _keep_damaged(layout)
        found = _captures(layout.warcs, report)
        items = _walk(settings, found, layout.warcs)
        rebuilding = layout.state / "frontier.sqlite.rebuilding"
        for leftover in _database_files(rebuilding):
            leftover.unlink(missing_ok=True)
        asyncio.run(_write(rebuilding, settings, found, items, report))
        rebuilding.rename(layout.frontier_db)
        state.setdefault(CRAWL_KEY, new_identity())
        write_identity(layout.frontier_db, str(state[CRAWL_KEY]))
        record_settled(layout, state)
        state["rebuilt"] = rfc3339_at(time.time())
        if state.get("status") == "completed" and report.queued:
            state["status"] = "interrupted"
        write_status(layout, state)
    return report


def _database_files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def _keep_damaged(layout: Layout) -> Path | None:
    """Move a damaged database (and its WAL) out of the way, kept for inspection."""
    if not layout.frontier_db.exists():
        return None
    stamp = timestamp17(utcnow())[:14]
    kept = layout.frontier_db.with_name(f"frontier.sqlite.damaged-{stamp}")
    for source, target in zip(
        _database_files(layout.frontier_db), _database_files(kept), strict=True
    ):
        if source.exists():
            source.rename(target)
    return kept


def _captures(warcs: Path, report: RebuildReport) -> dict[str, Captured]:
    """The first whole capture of every URL in the WARC files (sealed ones, in name order)."""
    found: dict[str, Captured] = {}
    for path in warc_files(warcs):
        report.warc_files += 1
        for item in reader.iter_captures(path):
            if isinstance(item, reader.Damage):
                report.notes.append(f"{path.name}: {item.reason}; the rest of it is not read")
                break
            head = item.head
            if head.record_type not in _PRIMARY or not item.whole or head.target_uri is None:
                continue
            found.setdefault(head.target_uri, Captured(path.name, item.start, item.end, head))
    return found


def _seeds(settings: Settings) -> tuple[Seed, ...]:
    """Every seed of the crawl with its rules: the config file's, the command line's and the
    whole seeds file's."""
    seeds = list(starting_seeds(settings).seeds)
    if settings.seeds_file is not None and settings.seeds_file.exists():
        rest = SeedsFile(settings.seeds_file, settings)
        rest.open()
        seeds += (seed for batch in rest for seed in batch.seeds)
    return first_of_each(seeds)


def _seed_items(
    settings: Settings, seeds: tuple[Seed, ...], sitemaps: SitemapPolicy
) -> list[CrawlItem]:
    urls = [seed.url for seed in seeds]
    items = [
        CrawlItem(url=seed.url, redirects_left=settings.max_redirects, seed=seed.key)
        for seed in seeds
    ]
    return items + sitemaps.start_items(urls)


def _walk(
    settings: Settings, found: dict[str, Captured], warcs: Path
) -> dict[str, tuple[CrawlItem, Captured | None]]:
    """Every URL the crawl reaches from its seeds through what it captured, breadth first:
    with its capture, or None to queue it; then the captured URLs no walk reaches (robots.txt,
    a browser's requests), done as they are."""
    sitemaps = sitemap_policy(settings)
    every = _seeds(settings)
    seeds = _seed_items(settings, every, sitemaps)
    scope = crawl_scope(settings, tuple(seed.url for seed in every), every)
    reached: dict[str, tuple[CrawlItem, Captured | None]] = {}
    pending: deque[CrawlItem] = deque(seeds)
    while pending:
        item = pending.popleft()
        if item.url in reached:
            continue
        capture = found.get(item.url)
        reached[item.url] = (item, capture)
        if capture is None:
            continue
        for child in _children(item, capture, warcs, settings, sitemaps):
            if child.url in reached:
                continue
            why, admitted = scope.admit(child)
            if why is None:
                scope.accepted(admitted)
                pending.append(admitted)
    for url, capture in found.items():
        reached.setdefault(url, (CrawlItem(url=url), capture))
    return reached


def _children(
    item: CrawlItem, capture: Captured, warcs: Path, settings: Settings, sitemaps: SitemapPolicy
) -> list[CrawlItem]:
    """What the captured response leads to, as discovery finds it in a crawl."""
    if capture.primary.record_type != "response":
        return []
    stored = read_response(warcs, capture.location, max_body=MAX_DECODED)
    if stored is None:
        return []
    headers = dict((k.lower(), v) for k, v in reversed(stored.headers))
    if 300 <= stored.status < 400:
        target = urls.resolve(item.url, headers.get("location", ""))
        if target is None or item.redirects_left <= 0 or not headers.get("location"):
            return []
        return [item.child(target, Hop.REDIRECT)]
    if not 200 <= stored.status < 300 or stored.payload is None:
        return []
    if is_sitemap(item):
        return list(sitemaps.children(item, _exchange(item.url, stored.status, stored)).items)
    media = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media not in HTML_TYPES and media not in CSS_TYPES:
        return []
    try:
        found = links.extract(
            stored.payload,
            item.url,
            media,
            headers.get("content-encoding"),
            max_links=link_limit(settings.max_links_per_page),
        )
    except ContentDecodingError:
        return []
    children = [item.child(url, Hop.LINK) for url in found.pages]
    return children + [item.child(url, Hop.EMBED) for url in found.requisites]


def _exchange(url: str, status: int, stored: Any) -> Exchange:
    """The little of an exchange that a sitemap's reading asks for."""
    return Exchange(
        target_uri=url,
        date=datetime.now(UTC),
        request=b"",
        response=Spool.from_bytes(b""),
        response_length=0,
        status=status,
        headers=list(stored.headers),
        block_digest="",
        payload_digest="",
        payload_length=len(stored.payload or b""),
        request_block_digest="",
        request_payload_digest="",
        body=stored.payload,
    )


async def _write(
    path: Path,
    settings: Settings,
    found: dict[str, Captured],
    reached: dict[str, tuple[CrawlItem, Captured | None]],
    report: RebuildReport,
) -> None:
    """The new database: the done URLs committed with their captures, then the queue, the
    digests and the captured URLs' records."""
    frontier = SqliteFrontier(path, HostGate(concurrency=1_000_000, delay=0.0))
    await frontier.open()
    try:
        done = [(item, capture) for item, capture in reached.values() if capture is not None]
        for batch in _batches(done, 1000):
            accepted = {i.url for i in await frontier.put_many([item for item, _ in batch])}
            for _ in accepted:
                lease = await frontier.get()
                capture = found[lease.item.url]
                await frontier.task_done(
                    lease, TaskResult(Outcome.DONE, captures=(capture.written(),))
                )
            report.captured += len(accepted)
        queue = [item for item, capture in reached.values() if capture is None]
        for items in _batches(queue, 1000):
            report.queued += len(await frontier.put_many(items))
        digests, captured = frontier.digest_index(), frontier.captured_urls()
        stored: set[str] = set()
        for url, capture in found.items():
            record = capture.primary
            digest = record.get("WARC-Payload-Digest")
            if record.record_type == "response" and digest and digest not in stored:
                stored.add(digest)  # the first response that stored a payload is its original
                await digests.add(digest, Original(record.record_id, url, record.date or ""))
            await captured.add(url, capture.location)
        report.digests = len(stored)
        await frontier.flush()
    finally:
        await frontier.close()


def _batches(items: list[T], size: int) -> Iterator[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


__all__ = ["RebuildReport", "rebuild_frontier", "settings_from_state"]
