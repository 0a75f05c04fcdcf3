"""Orchestration only: start workers and the writer, join the frontier, stop, build the index.

The shape is the seed design's (DESIGN.md section 2)::

    worker x N:  lease = frontier.get()  ->  robots / budget  ->  fetch  ->  records  ->  writer
                 -> discovered URLs (redirect Location, links) -> scope -> frontier.put_many
                 -> frontier.task_done(lease, result)       (after the capture is written)
    crawl():     start writer + workers -> await frontier.join() -> cancel workers
                 -> close writer -> build the index from the writer's journals

Failure rules: an expected failure of one URL (network, protocol, bad content) is logged,
counted and recorded as failed or retried; the crawl goes on. A write failure stops the crawl
loudly with a resumable state. An unexpected exception (a bug) stops the crawl with a clear
error instead of hanging it: every lease is always handed back with ``task_done``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import importlib.metadata
import json
import math
import os
import platform
import shutil
import socket
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from archiver import __version__, index, links, records, urls, wacz, warcfile
from archiver.dedup import DigestIndex, MemoryDigestIndex
from archiver.errors import (
    ArchiverError,
    BlockedAddressError,
    FetchError,
    FrontierError,
    FrontierUnavailableError,
    OutputError,
    SettingsError,
    WriteError,
)
from archiver.fetch import FetchConfig, Fetcher
from archiver.frontier.base import Frontier, Lease
from archiver.frontier.memory import MemoryFrontier
from archiver.frontier.sqlite import SqliteDigestIndex, SqliteFrontier
from archiver.log import CrawlLog, crawl_logger
from archiver.models import (
    MAX_REDIRECTS,
    CrawlItem,
    Exchange,
    FailReason,
    Hop,
    Outcome,
    SkipReason,
    TaskResult,
    WrittenCapture,
)
from archiver.netguard import AddressPolicy
from archiver.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    OutputLock,
    finish_status,
    prepare,
    write_json_atomic,
    write_status,
)
from archiver.politeness import HostGate, parse_retry_after
from archiver.records import Original, PendingCapture, RecordFactory, warc_date
from archiver.recrawl import LayeredDigestIndex, PreviousCrawls, Revalidation, open_previous
from archiver.robots import Robots, RobotsReport, RobotsStats
from archiver.scope import Scope, ScopeRules, seeds_in_order
from archiver.settings import Settings, read_lines_file
from archiver.sitemaps import SitemapPolicy, is_sitemap
from archiver.stats import CrawlStats
from archiver.writer import Writer, WriterConfig, safe_name_part, warc_files

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 3
EXIT_LOCKED = 4

#: failures worth another try later (RFC 9110 5xx, connection trouble)
TRANSIENT = {
    FailReason.CONNECT,
    FailReason.TIMEOUT,
    FailReason.DISCONNECT,
    FailReason.DNS,
}
RETRY_BASE_SECONDS = 2.0
DISK_CHECK_SECONDS = 2.0
RECENT_LIMIT = 200_000
HTML_TYPES = ("text/html", "application/xhtml+xml")


#: Fetch a URL and archive the exchange as part of the current lease (used for robots.txt).
ArchiveFetch = Callable[[str], Awaitable[Exchange]]


class RobotsChecker(Protocol):
    """What the crawler asks of robots.txt handling (see :mod:`archiver.robots`)."""

    async def allowed(self, item: CrawlItem, fetch: ArchiveFetch) -> bool: ...

    def take_reports(self) -> list[RobotsReport]: ...

    def statistics(self) -> RobotsStats: ...


@dataclass(slots=True)
class CrawlResult:
    """What a crawl returns to the CLI and to Python callers."""

    status: str  #: completed, limit, interrupted or failed
    exit_code: int
    reason: str | None
    output: Path
    resumed: bool = False
    warc_files: list[Path] = field(default_factory=list)
    index: Path | None = None
    cdx11: Path | None = None
    wacz: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)


def default_output(seeds: Iterable[str]) -> Path:
    for seed in seeds:
        try:
            host = urls.hostname(urls.normalize_url(seed))
        except urls.InvalidURLError:
            continue
        return Path("crawls") / safe_name_part(host, default="crawl")
    return Path("crawls") / "crawl"


class Crawler:
    """One crawl run. ``await Crawler(settings).run()``; ``request_stop()`` from a signal."""

    def __init__(
        self,
        settings: Settings,
        *,
        console: IO[str] | None = None,
        frontier: Frontier | None = None,
        write_fn: Callable[..., int] | None = None,
    ) -> None:
        self.settings = settings
        #: ``{hostname}-{pid}`` when several processes share the crawl (Redis frontier): it
        #: names this process's state directory and its WARC series, so nothing collides
        self.process_id: str | None = None
        if settings.frontier.startswith(("redis://", "rediss://")):
            self.process_id = safe_name_part(f"{socket.gethostname()}-{os.getpid()}")
        output = settings.output or default_output(settings.seeds)
        self.layout = Layout(output, process=self.process_id)
        self.console = console
        self.stats = CrawlStats()
        self.frontier: Frontier | None = frontier
        self.fetcher: Fetcher | None = None
        self.writer: Writer | None = None
        self.scope: Scope | None = None
        self.robots: RobotsChecker | None = None
        self.sitemaps = SitemapPolicy(enabled=False)
        self.dedup: DigestIndex = MemoryDigestIndex()
        #: --dedup-from / --revalidate-from sources (issue 6), opened when the run starts
        self.previous: PreviousCrawls | None = None
        self.factory = RecordFactory(algorithm=settings.digest)
        self.log: Any = None
        self._crawl_log: CrawlLog | None = None
        self._write_fn = write_fn
        self._stopping = False
        self._immediate = False
        self._stop_event: asyncio.Event | None = None
        self._final: tuple[str, str | None] | None = None
        self._busy = 0
        self._pages_reserved = 0
        #: URLs recently queued, and (URL, hop) recently rejected by scope: repeats skip work
        self._recent_queued: set[str] = set()
        #: per WARC file: captures written whose lease outcome is not yet handed to the frontier
        self._uncommitted: collections.Counter[str] = collections.Counter()
        #: payload digests whose first copy is being written right now
        self._dedup_in_flight: dict[str, asyncio.Future[Original | None]] = {}
        self._recent_rejected: set[tuple[str, str]] = set()
        self._pages_file: IO[str] | None = None
        self._seeds: tuple[str, ...] = ()
        self.resumed = False

    # -- control ----------------------------------------------------------------------------

    def request_stop(self, *, immediate: bool = False, reason: str = "stopped by signal") -> None:
        """First call: stop taking URLs and let in-flight fetches finish. With ``immediate``:
        cancel them too (their URLs are re-fetched on resume)."""
        self._stop(STATUS_INTERRUPTED, reason, immediate=immediate)

    def _stop(self, status: str, reason: str | None, *, immediate: bool = False) -> None:
        if self._final is None or status == STATUS_FAILED:
            self._final = (status, reason)
        self._stopping = True
        if immediate:
            self._immediate = True
        if self._stop_event is not None:
            self._stop_event.set()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def snapshot(self) -> dict[str, Any]:
        """A cheap, JSON-ready view of the crawl for live progress and periodic stats lines."""
        stats = self.stats
        frontier = self.frontier.statistics() if self.frontier is not None else None
        writer = self.writer.stats if self.writer is not None else None
        elapsed = max(stats.elapsed, 1e-9)
        return {
            "elapsed": round(stats.elapsed, 1),
            "captures": stats.captures,
            "pages": stats.pages,
            "revisits": stats.revisits,
            "pages_per_second": round(stats.pages / elapsed, 2),
            "captures_per_second": round(stats.captures / elapsed, 2),
            "queued": frontier.queued if frontier else 0,
            "in_flight": self._busy,
            "done": frontier.done if frontier else 0,
            "seen": frontier.seen if frontier else 0,
            "bytes_received": stats.bytes_received,
            "bytes_written": writer.bytes if writer else 0,
            "warc_file": writer.current_file if writer else None,
            "failures": dict(stats.failures),
            "skips": dict(stats.skips),
            "by_status_class": dict(stats.by_status),
            "top_hosts": stats.by_host.most_common(5),
            "stopping": self._stopping,
        }

    # -- set-up -----------------------------------------------------------------------------

    def _seed_list(self) -> tuple[str, ...]:
        raw = list(self.settings.seeds)
        if self.settings.seeds_file is not None:
            raw += read_lines_file(self.settings.seeds_file, "--seeds-file")
        seeds = []
        for seed in raw:
            try:
                seeds.append(urls.normalize_url(seed if "://" in seed else "http://" + seed))
            except urls.InvalidURLError as exc:
                raise SettingsError("seeds", f"{seed!r} is not an http(s) URL: {exc}") from None
        if not seeds:
            raise SettingsError("seeds", "give at least one seed URL (or --seeds-file)")
        return seeds_in_order(seeds)

    def _scope_rules(self, seeds: tuple[str, ...]) -> ScopeRules:
        s = self.settings
        exclude = list(s.exclude)
        if s.exclude_file is not None:
            exclude += read_lines_file(s.exclude_file, "--exclude-file")
        return ScopeRules(
            seeds=seeds,
            mode=s.scope,
            include=s.include,
            exclude=tuple(exclude),
            max_depth=s.max_depth,
            page_requisites=s.page_requisites,
            max_url_length=s.max_url_length,
            max_path_segments=s.max_path_segments,
            max_segment_repeats=s.max_segment_repeats,
            max_query_key_repeats=s.max_query_key_repeats,
            max_pattern_depth=s.max_pattern_depth,
            max_urls_per_host=s.max_urls_per_host,
        )

    async def _address_policy(self, seeds: tuple[str, ...]) -> AddressPolicy:
        """The seeds' own addresses and ports are always allowed (SPEC-NOTES section D)."""
        s = self.settings
        policy = AddressPolicy(allow_private=s.allow_private)
        overrides = dict(s.resolve)
        loop = asyncio.get_running_loop()
        for seed in seeds:
            _, host, port = urls.scheme_host_port(seed)
            if host in overrides:
                policy.allow(overrides[host], port)
                continue
            try:
                infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:
                continue  # the fetch will fail with a DNS error, logged there
            for info in infos:
                policy.allow(str(info[4][0]), port)
        return policy

    def _fetch_config(self) -> FetchConfig:
        s = self.settings
        return FetchConfig(
            connections=max(s.workers, 1),
            user_agent=s.user_agent,
            accept_encoding=s.accept_encoding,
            algorithm=s.digest,
            connect_timeout=s.connect_timeout or 30.0,
            read_timeout=s.read_timeout or 3600.0,
            fetch_timeout=s.fetch_timeout or 24 * 3600.0,
            max_body=s.max_body_size,
            max_header_bytes=s.max_header_size,
            keep_body=8 * 1024 * 1024,
            tls_verify=s.tls_verify,
            resolve=dict(s.resolve),
            extra_headers=dict(s.header),
        )

    def _warcinfo(self) -> tuple[tuple[str, str], ...]:
        s = self.settings
        digest_policy = (
            f"WARC-Block-Digest: {s.digest} of the stored block; WARC-Payload-Digest: {s.digest} "
            "of the entity body with the transfer coding removed and the content coding kept "
            "(WARC 1.1 section 5.9, iipc/warc-specifications#22); sha1 in Base32, others Base16"
        )
        robots = "rfc9309 (obey)" if s.robots == "obey" else "ignore"
        if s.robots == "obey" and s.robots_exempt_requisites:
            robots += "; page requisites exempt"
        tls = (
            "strict (unverifiable servers are not fetched)"
            if s.tls_verify
            else (
                "capture-anyway (failed certificate verifications are recorded in metadata records)"
            )
        )
        fields = [
            ("software", software_string()),
            ("format", "WARC File Format 1.1"),
            (
                "conformsTo",
                "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            ),
            ("hostname", socket.gethostname()),
            ("operator", s.operator),
            ("description", s.description),
            ("isPartOf", s.crawl_id or self.layout.root.name),
            ("http-header-user-agent", s.user_agent),
            ("robots", robots),
            ("digest-policy", digest_policy),
            ("tls-policy", tls),
            ("request-records", "as sent, not redacted"),
            ("crawl-settings", s.to_json_text()),
        ]
        return tuple(fields)

    def _make_frontier(self, gate: HostGate) -> Frontier:
        backend = self.settings.frontier
        if backend == "memory":
            return MemoryFrontier(gate)
        if backend == "sqlite":
            return SqliteFrontier(self.layout.frontier_db, gate)
        from archiver.frontier.redis import RedisFrontier  # noqa: PLC0415 - optional backend

        frontier = RedisFrontier(
            backend,
            self.settings.crawl_id or "",
            gate=gate,
            settings=self.settings,
            process_id=self.process_id,
            log=self.log,
        )
        self.dedup = frontier.digest_index()  # revisits across every process of the crawl
        return frontier

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        """Run the crawl to completion, a limit, a stop request or a fatal error."""
        self._stop_event = asyncio.Event()
        seeds = self._seed_list()
        self._seeds = seeds
        layout = self.layout
        layout.root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(layout.lock_file)
        lock.acquire()
        try:
            return await self._run_locked(seeds)
        finally:
            lock.release()

    async def _run_locked(self, seeds: tuple[str, ...]) -> CrawlResult:
        s = self.settings
        layout = self.layout
        if s.dedup_from or s.revalidate_from:
            # checked before anything is written: a source that is not a completed crawl is a
            # usage error, not a failed run; lookup files are built here (streamed, cached)
            self.previous = await open_previous(
                s.dedup_from, s.revalidate_from, cache_dir=layout.state / "lookups"
            )
        try:
            start = prepare(layout, overwrite=s.overwrite, settings_json=s.to_json())
        except BaseException:
            if self.previous is not None:
                await self.previous.close()
            raise
        self.resumed = start.resumed
        if start.resumed and start.previous_status == STATUS_COMPLETED:
            return CrawlResult(
                STATUS_COMPLETED,
                EXIT_OK,
                "already completed (use --overwrite to crawl again)",
                layout.root,
                resumed=True,
                warc_files=warc_files(layout.warcs),
                index=layout.index if layout.index.exists() else None,
                summary=_read_json(layout.summary),
            )
        write_status(layout, start.status)
        layout.warcs.mkdir(parents=True, exist_ok=True)
        layout.journals.mkdir(parents=True, exist_ok=True)
        self._crawl_log = crawl_logger(
            layout.log,
            quiet=s.quiet,
            verbose=s.verbose,
            console=self.console,
            heritrix=layout.heritrix_log if s.heritrix_log else None,
        )
        self.log = self._crawl_log.bind()
        if self.previous is not None:
            for warning in self.previous.warnings:
                self.log.warning("dedup-source", warning=warning)
        gate = HostGate(
            concurrency=s.per_host_concurrency,
            delay=s.per_host_delay or 0.0,
            max_pause=s.max_retry_after or 600.0,
            max_crawl_delay=s.max_crawl_delay if s.max_crawl_delay is not None else math.inf,
        )
        if self.frontier is None:
            self.frontier = self._make_frontier(gate)
        frontier = self.frontier
        status: str = STATUS_FAILED
        reason: str | None = "not started"
        try:
            self._check_disk(at_start=True)
            info = await frontier.open()
            if isinstance(frontier, SqliteFrontier):
                # within-crawl dedup that survives resume and keeps no digest in the heap
                self.dedup = SqliteDigestIndex(frontier)
            self.log.info(
                "crawl-start",
                seeds=list(seeds),
                output=str(layout.root),
                resumed=start.resumed,
                frontier=s.frontier,
                version=__version__,
                requeued_in_flight=info.requeued_in_flight,
            )
            if start.resumed:
                await self._repair_open_warcs(frontier)
            self.scope = Scope(self._scope_rules(seeds))
            self.robots = Robots(
                agent=s.robots_agent,
                obey=s.robots == "obey",
                exempt_requisites=s.robots_exempt_requisites,
                max_crawl_delay=s.max_crawl_delay,
                set_host_delay=frontier.set_host_delay,
                # processes sharing a crawl (Redis) share robots.txt fetches too
                shared=robots_cache()
                if (robots_cache := getattr(frontier, "robots_cache", None))
                else None,
            )
            self.sitemaps = SitemapPolicy(enabled=s.sitemaps == "on", max_redirects=s.max_redirects)
            policy = await self._address_policy(seeds)
            self.fetcher = Fetcher(self._fetch_config(), policy)
            await self.fetcher.start()
            if self.previous is not None:
                # this run's own index first, then the earlier crawls (only lookups reach them)
                self.dedup = LayeredDigestIndex(self.dedup, self.previous)
            self.writer = Writer(
                WriterConfig(
                    directory=layout.warcs,
                    index_directory=layout.journals,
                    prefix=s.warc_prefix or safe_name_part(layout.root.name, default="crawl"),
                    host=self.process_id or safe_name_part(socket.gethostname()),
                    max_size=s.warc_size or 10**18,
                    fsync_interval=s.fsync_interval or 5.0,
                    compress_level=s.compress_level,
                    warcinfo_fields=self._warcinfo(),
                ),
                self.factory,
                write_fn=self._write_fn or os.write,
                auto_seal=False,
            )
            self.writer.start()
            self._pages_file = open(layout.pages, "a", encoding="utf-8")  # noqa: SIM115, ASYNC230
            await self._put(
                [CrawlItem(url=seed, redirects_left=s.max_redirects) for seed in seeds]
                + self.sitemaps.start_items(seeds)
            )
            status, reason = await self._crawl(frontier)
        except ArchiverError as exc:
            # a full disk (at start or while writing) is resumable once space is back
            # a full disk or a frontier failing mid-crawl is resumable once fixed; a backend
            # that cannot be reached at all is a failed start
            resumable = (
                isinstance(exc, (WriteError, FrontierError))
                and not isinstance(exc, FrontierUnavailableError)
            ) or type(exc) is OutputError
            status, reason = (STATUS_INTERRUPTED if resumable else STATUS_FAILED), str(exc)
            if self.log is not None:
                self.log.error("crawl-error", error=str(exc))
        finally:
            status, reason = await self._shutdown(status, reason)
        return self._result(status, reason, start.status)

    async def _crawl(self, frontier: Frontier) -> tuple[str, str | None]:
        assert self._stop_event is not None
        workers = [
            asyncio.create_task(self._worker(n), name=f"worker-{n}")
            for n in range(self.settings.workers)
        ]
        join = asyncio.create_task(frontier.join(), name="frontier-join")
        stop = asyncio.create_task(self._stop_event.wait(), name="stop-wait")
        monitor = asyncio.create_task(self._monitor(), name="monitor")
        try:
            done, _ = await asyncio.wait(
                {join, stop, *workers}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in done:
                if task in workers and task.exception() is not None:
                    exc = task.exception()
                    self._stop(STATUS_FAILED, f"internal error in a worker: {exc!r}")
            if join in done and not self._stopping:
                self._final = (STATUS_COMPLETED, None)
                self._stopping = True
            else:
                await self._drain_workers(workers)
        finally:
            for task in (*workers, join, stop, monitor):
                task.cancel()
            await asyncio.gather(*workers, join, stop, monitor, return_exceptions=True)
        return self._final or (STATUS_COMPLETED, None)

    async def _drain_workers(self, workers: list[asyncio.Task[None]]) -> None:
        """Graceful stop: let busy workers finish their fetch, within the grace period."""
        if self._immediate:
            return
        deadline = time.monotonic() + (self.settings.grace_period or 0.0)
        while self._busy > 0 and not self._immediate and time.monotonic() < deadline:
            alive = [w for w in workers if not w.done()]
            if not alive:
                return
            await asyncio.wait(alive, timeout=min(0.1, max(deadline - time.monotonic(), 0)))

    async def _monitor(self) -> None:
        """Time limit and free disk space, checked every couple of seconds."""
        limit = self.settings.max_duration
        while True:
            await asyncio.sleep(
                DISK_CHECK_SECONDS if limit is None else min(DISK_CHECK_SECONDS, limit)
            )
            if limit is not None and self.stats.elapsed >= limit:
                self._stop(STATUS_LIMIT, f"max-duration of {limit:g} s reached")
                return
            try:
                self._check_disk()
            except OutputError as exc:
                self.log.error("disk-space", error=str(exc))
                self._stop(STATUS_INTERRUPTED, str(exc))
                return
            await self._seal_committed()

    async def _seal_committed(self) -> None:
        """Give rotated WARC files their final names once every capture in them is committed
        by the frontier. Until then they stay ``.open``, so a crash leaves them to the resume
        repair, which keeps only committed captures: nothing is captured twice."""
        writer, frontier = self.writer, self.frontier
        if writer is None or frontier is None:
            return
        names = [name for name in writer.retired() if self._uncommitted[name] <= 0]
        if not names:
            return
        try:
            await frontier.flush()
            await asyncio.to_thread(writer.seal, names)
        except (FrontierError, WriteError, OSError) as exc:
            self.log.warning("seal-deferred", files=names, error=str(exc))
            return
        for name in names:
            self._uncommitted.pop(name, None)

    def _check_disk(self, *, at_start: bool = False) -> None:
        floor = self.settings.min_free_disk
        if floor is None:
            return
        free = shutil.disk_usage(self.layout.root).free
        if free < floor:
            raise OutputError(
                f"only {free / 1e9:.2f} GB free in {self.layout.root} "
                f"(--min-free-disk {floor / 1e9:.2f} GB){'; not starting' if at_start else ''}"
            )

    # -- one worker -------------------------------------------------------------------------

    async def _worker(self, number: int) -> None:
        frontier = self.frontier
        assert frontier is not None
        while not self._stopping:
            lease = await frontier.get()
            if self._stopping:
                frontier.give_back(lease)
                return
            self._busy += 1
            captures: list[WrittenCapture] = []
            try:
                result = await self._process(lease, captures)
            except asyncio.CancelledError:
                raise
            except (WriteError, FrontierError) as exc:
                self._stop(STATUS_INTERRUPTED, str(exc))
                self.log.error("write-error", url=lease.item.url, error=str(exc))
                return  # the lease stays in flight: a resumed crawl fetches it again
            except Exception as exc:  # a bug in archiver: stop with a clear error, never hang
                self.stats.failure(FailReason.INTERNAL)
                self.log.error(
                    "internal-error",
                    url=lease.item.url,
                    error=repr(exc),
                    traceback="".join(traceback.format_exception(exc)),
                )
                self._stop(
                    STATUS_FAILED, f"internal error while crawling {lease.item.url}: {exc!r}"
                )
                result = TaskResult(Outcome.FAILED, reason=FailReason.INTERNAL)
            finally:
                self._busy -= 1
            try:
                await frontier.task_done(
                    lease,
                    TaskResult(
                        result.outcome,
                        captures=tuple(captures),
                        status=result.status,
                        reason=result.reason,
                        retry_after=result.retry_after,
                    ),
                )
            except FrontierError as exc:
                self._stop(STATUS_INTERRUPTED, str(exc))
                self.log.error("frontier-error", url=lease.item.url, error=str(exc))
                return
            for capture in captures:
                self._uncommitted[capture.filename] -= 1

    async def _process(self, lease: Lease, captures: list[WrittenCapture]) -> TaskResult:
        item = lease.item
        s = self.settings
        counts_as_page = not item.is_requisite and not is_sitemap(item)
        if counts_as_page and s.max_pages is not None:
            if self._pages_reserved >= s.max_pages:
                self._stop(STATUS_LIMIT, f"max-pages of {s.max_pages} reached")
                return self._skipped(item, SkipReason.BUDGET)
            self._pages_reserved += 1
        if s.max_bytes is not None and self.stats.bytes_received >= s.max_bytes:
            self._stop(STATUS_LIMIT, f"max-bytes of {s.max_bytes} reached")
            return self._skipped(item, SkipReason.BUDGET)
        if self.robots is not None:
            allowed = await self.robots.allowed(
                item, lambda url: self._fetch_archived(url, captures)
            )
            await self._robots_reports()
            if not allowed:
                if counts_as_page and s.max_pages is not None:
                    self._pages_reserved -= 1
                return self._skipped(item, SkipReason.ROBOTS)
            if captures:  # robots.txt was fetched in this lease: the page is one more request
                assert self.frontier is not None
                wait = self.frontier.reserve(lease.host)
                if wait > 0:
                    await asyncio.sleep(wait)
        assert self.fetcher is not None
        previous = self.previous
        revalidation = await previous.revalidation(item.url) if previous is not None else None
        headers = referer_header(item)
        if revalidation is not None:
            headers = {**(headers or {}), **revalidation.headers}
        try:
            exchange = await self.fetcher.fetch(item.url, headers)
        except FetchError as exc:
            if counts_as_page and s.max_pages is not None:
                self._pages_reserved -= 1
            return self._failed(item, exc)
        written = await self._archive(exchange, revalidation)
        captures.append(written)
        if counts_as_page and s.max_pages is not None and 300 <= exchange.status < 400:
            self._pages_reserved -= 1  # a redirect hop is not a page
        content = exchange
        if previous is not None and revalidation is not None and exchange.status == 304:
            # a 304 has no body: links and the page entry come from the earlier capture
            content = await previous.original_exchange(exchange, revalidation)
        await self._discover(item, content)
        return self._outcome(item, exchange, written)

    async def _robots_reports(self) -> None:
        """Log what robots.txt fetches found and queue the sitemaps they list."""
        assert self.robots is not None
        for report in self.robots.take_reports():
            self.log.info(
                "robots",
                url=report.url,
                verdict=report.verdict.value,
                status=report.status,
                redirects=report.redirects,
                crawl_delay=report.crawl_delay,
                sitemaps=len(report.sitemaps),
                truncated=report.truncated,
                kept_cached_copy=report.kept_cached_copy,
                error=report.error,
            )
            if report.sitemaps:
                await self._put(self.sitemaps.from_robots(report.url, report.sitemaps))

    async def _fetch_archived(self, url: str, captures: list[WrittenCapture]) -> Exchange:
        """Fetch and archive ``url`` as part of the current lease (robots.txt, sitemaps)."""
        assert self.fetcher is not None
        exchange = await self.fetcher.fetch(url)
        captures.append(await self._archive(exchange))
        return exchange

    async def _archive(
        self, ex: Exchange, revalidation: Revalidation | None = None
    ) -> WrittenCapture:
        """Records for the exchange (a revisit when the payload was already stored), written.

        An identical payload being written right now by another worker is waited for, so two
        copies fetched at the same moment still become one response and one revisit.
        """
        assert self.writer is not None
        capture: PendingCapture | None = None
        if revalidation is not None and ex.status == 304 and self.previous is not None:
            # a 304 to a conditional request: a server-not-modified revisit (issue 6)
            capture = self.previous.not_modified(self.factory, ex, revalidation)
        digest = ex.payload_digest
        dedupable = capture is None and (
            self.settings.dedup
            and ex.status == 200
            and ex.truncated is None
            and ex.payload_length >= max(self.settings.dedup_min_size, 1)
        )
        pending: asyncio.Future[Original | None] | None = None
        if dedupable:
            in_flight = self._dedup_in_flight.get(digest)
            original = await asyncio.shield(in_flight) if in_flight else None
            if original is None:
                original = await self.dedup.lookup(digest)
            if original is not None:
                capture = self.factory.revisit(ex, original)
                self.stats.dedup_bytes_saved += ex.response_length
            else:
                pending = asyncio.get_running_loop().create_future()
                self._dedup_in_flight[digest] = pending
        if capture is None:
            capture = self.factory.capture(ex)
        revisit = capture.records[0].record_type == "revisit"
        try:
            written = await self.writer.write(capture)
            # not sealed (renamed from .open) until the frontier committed this capture
            self._uncommitted[written.filename] += 1
            primary = written.primary
            if pending is not None and primary is not None:
                original = Original(primary.record_id, primary.target_uri, primary.date)
                await self.dedup.add(digest, original)
                pending.set_result(original)
        finally:
            if pending is not None:
                if not pending.done():
                    pending.set_result(None)  # the write failed: waiters store their own copy
                self._dedup_in_flight.pop(digest, None)
        self.stats.bytes_written = self.writer.stats.bytes
        self.stats.capture(
            url=ex.target_uri,
            host=urls.host_port(ex.target_uri),
            status=ex.status,
            mime=records.cdx_mime(ex.header("Content-Type")),
            size=ex.response_length,
            revisit=revisit,
            is_page=ex.content_type in HTML_TYPES and 200 <= ex.status < 300,
            truncated=ex.truncated.value if ex.truncated else None,
        )
        return written

    async def _discover(self, item: CrawlItem, ex: Exchange) -> None:
        """Queue the redirect target or the links of the response."""
        children: list[CrawlItem] = []
        if 300 <= ex.status < 400:
            location = ex.header("Location")
            if location:
                target = urls.resolve(item.url, location)
                if target is None:
                    self._skip_log(item.url, location, SkipReason.SCHEME)
                elif item.redirects_left <= 0:
                    self._skip_log(item.url, target, SkipReason.REDIRECT_LIMIT)
                else:
                    children.append(item.child(target, Hop.REDIRECT))
        elif is_sitemap(item):
            listed = self.sitemaps.children(item, ex)
            if listed.error is not None:
                self.log.warning("sitemap-error", url=item.url, error=listed.error)
            if listed.sitemap is not None:
                self.log.info(
                    "sitemap",
                    url=item.url,
                    kind=listed.sitemap.kind,
                    urls=len(listed.sitemap.urls),
                    skipped=listed.sitemap.skipped,
                    truncated=listed.sitemap.truncated,
                )
            children.extend(listed.items)
        elif 200 <= ex.status < 300 and ex.body is not None:
            found = self._extract(item, ex)
            if found is not None:
                if ex.content_type in HTML_TYPES and not item.is_requisite:
                    self._record_page(ex, found.title)
                queued, rejected = self._recent_queued, self._recent_rejected
                for url in found.pages:
                    if url not in queued and (url, Hop.LINK) not in rejected:
                        children.append(item.child(url, Hop.LINK))
                for url in found.requisites:
                    if url not in queued and (url, Hop.EMBED) not in rejected:
                        children.append(item.child(url, Hop.EMBED))
        if children:
            await self._put(children)

    def _extract(self, item: CrawlItem, ex: Exchange) -> links.Links | None:
        if ex.content_type not in (*HTML_TYPES, "text/css"):
            return None
        try:
            found = links.extract(
                ex.body or b"",
                item.url,
                ex.content_type,
                ex.header("Content-Encoding"),
                max_links=self.settings.max_links_per_page,
            )
        except links.ContentDecodingError as exc:
            self.log.warning("extract-error", url=item.url, error=str(exc))
            return None
        if found.truncated:
            self.log.warning(
                "links-truncated", url=item.url, limit=self.settings.max_links_per_page
            )
        return found

    def _record_page(self, ex: Exchange, title: str | None) -> None:
        if self._pages_file is None:
            return
        entry = {"url": ex.target_uri, "ts": warc_date(ex.date), "title": title}
        self._pages_file.write(json.dumps(entry, ensure_ascii=False) + "\n")

    async def _put(self, items: list[CrawlItem]) -> None:
        """Scope-check discovered items and queue the accepted ones (the frontier drops the
        ones it has seen). Remembers recent outcomes so the navigation links repeated on every
        page cost a dict lookup, not a scope check and a frontier call (bounded memory)."""
        assert self.frontier is not None and self.scope is not None
        accepted = []
        queued, rejected = self._recent_queued, self._recent_rejected
        for child in items:
            reason = self.scope.check(child)
            if reason is None:
                self.scope.accepted(child)  # counted at once: the next link sees the budget
                accepted.append(child)
                continue
            self.stats.skip(reason)
            self._skip_log(child.via, child.url, reason)
            if reason not in (SkipReason.DEPTH, SkipReason.HOST_BUDGET):
                # depth and budgets can change for the same URL found elsewhere: not cached
                rejected.add((child.url, Hop.EMBED if child.is_requisite else Hop.LINK))
        if accepted:
            new = {item.url for item in await self.frontier.put_many(accepted)}
            for child in accepted:
                if child.url not in new:
                    self.scope.unaccepted(child)  # seen before: not queued, uses no budget
            queued.update(child.url for child in accepted)
        if len(queued) > RECENT_LIMIT:
            queued.clear()
        if len(rejected) > RECENT_LIMIT:
            rejected.clear()

    # -- outcomes ---------------------------------------------------------------------------

    def _skip_log(self, via: str | None, url: str, reason: SkipReason) -> None:
        self.log.info("skip", url=url, via=via, reason=reason.value)

    def _skipped(self, item: CrawlItem, reason: SkipReason) -> TaskResult:
        self.stats.skip(reason)
        self._skip_log(item.via, item.url, reason)
        return TaskResult(Outcome.SKIPPED, reason=reason.value)

    def _retry_delay(self, item: CrawlItem) -> float:
        cap = self.settings.max_retry_after or 600.0
        return float(min(RETRY_BASE_SECONDS * 2**item.tries, cap))

    def _failed(self, item: CrawlItem, exc: FetchError) -> TaskResult:
        if isinstance(exc, BlockedAddressError):
            # the SSRF guard's refusal, not a failure of the host: skipped, never retried, and
            # the host is not paused for it
            self.stats.skip(SkipReason.BLOCKED_ADDRESS)
            self.log.info(
                "skip",
                url=item.url,
                via=item.via,
                reason=SkipReason.BLOCKED_ADDRESS.value,
                error=str(exc),
            )
            return TaskResult(Outcome.SKIPPED, reason=SkipReason.BLOCKED_ADDRESS.value)
        reason = exc.reason
        retry = reason in TRANSIENT and item.tries + 1 < self.settings.max_tries
        self._fetch_log(
            item, None, outcome="retry" if retry else "failed", reason=reason, error=str(exc)
        )
        if retry:
            self.stats.retries += 1
            return TaskResult(
                Outcome.RETRY, reason=reason.value, retry_after=self._retry_delay(item)
            )
        self.stats.failure(reason.value)
        return TaskResult(Outcome.FAILED, reason=reason.value)

    def _outcome(self, item: CrawlItem, ex: Exchange, written: WrittenCapture) -> TaskResult:
        status = ex.status
        retry_after = parse_retry_after(ex.header("Retry-After"))
        if status >= 500 or status == 429:  # noqa: SIM102 - the retry rule reads better apart
            if item.tries + 1 < self.settings.max_tries:
                self.stats.retries += 1
                delay = retry_after if retry_after is not None else self._retry_delay(item)
                self._fetch_log(item, ex, written, outcome="retry")
                return TaskResult(
                    Outcome.RETRY,
                    status=status,
                    retry_after=delay,
                    reason=FailReason.THROTTLED.value
                    if status == 429
                    else FailReason.SERVER_ERROR.value,
                )
        self._fetch_log(item, ex, written, outcome="captured")
        return TaskResult(Outcome.DONE, status=status, retry_after=retry_after)

    def _fetch_log(
        self,
        item: CrawlItem,
        ex: Exchange | None,
        written: WrittenCapture | None = None,
        **extra: Any,
    ) -> None:
        event: dict[str, Any] = {
            "url": item.url,
            "depth": item.depth,
            "hops": item.hops,
            "via": item.via,
            "retries": item.tries,
        }
        if ex is not None:
            event.update(
                status=ex.status,
                size=ex.response_length,
                payload_size=ex.payload_length,
                fetch_began=warc_date(ex.date),
                mime=records.cdx_mime(ex.header("Content-Type")),
                duration=round(ex.duration, 4),
                digest=ex.payload_digest,
                ip=ex.ip_address,
            )
            if ex.truncated is not None:
                event["truncated"] = ex.truncated.value
            if ex.protocol_error:
                event["protocol_error"] = ex.protocol_error
        if written is not None:
            primary = written.primary
            event.update(
                warc=written.filename,
                offset=written.start,
                record=primary.record_type if primary else None,
            )
        task = asyncio.current_task()
        if task is not None:
            event["worker"] = task.get_name()  # "worker-3": crawl.log's thread field "#003"
        event.update(extra)
        self.log.info("fetch", **event)

    # -- resume -----------------------------------------------------------------------------

    async def _repair_open_warcs(self, frontier: Frontier) -> None:
        """Cut each ``.open`` WARC back to its committed captures and close it (issue 5).

        In a directory shared by several processes only this process's own files are touched
        (other processes' are closed by ``index.close_abandoned`` once they are dead)."""
        own = "*.warc.gz.open" if self.process_id is None else f"*-{self.process_id}.warc.gz.open"
        for path in sorted(self.layout.warcs.rglob(own)):
            final_name = path.name.removesuffix(".open")
            committed = await frontier.committed_captures(final_name)
            report = warcfile.repair(
                path, keep=_committed_filter(committed) if frontier.persistent else None
            )
            requeued = await frontier.uncommit_captures(final_name, report.kept_size)
            journal = self.layout.journals / (final_name + index.JOURNAL_SUFFIX)
            index.truncate_journal(journal, report.kept_size)
            self.log.warning(
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

    # -- shutdown ---------------------------------------------------------------------------

    async def _shutdown(self, status: str, reason: str | None) -> tuple[str, str | None]:
        immediate = self._immediate
        if self.writer is not None:
            try:
                await self.writer.close(drain=not immediate)
            except (OSError, WriteError) as exc:
                status, reason = STATUS_INTERRUPTED, f"closing WARC file failed: {exc}"
            if self.writer.failure is not None and status == STATUS_COMPLETED:
                status, reason = STATUS_INTERRUPTED, str(self.writer.failure)
            self.stats.bytes_written = self.writer.stats.bytes
            # files with uncommitted captures (an immediate stop, a failed frontier) stay .open
            # for the resume repair; the others get their final names
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seal_committed(), timeout=60)
        if self.fetcher is not None:
            await self.fetcher.close()
        last = True  # the last process of a shared crawl merges the index and packages it
        if self.frontier is not None:
            with contextlib.suppress(Exception):
                await self.frontier.close()
            last = getattr(self.frontier, "last_to_leave", True)
        with contextlib.suppress(Exception):
            await self.dedup.close()
        if self.previous is not None:
            await self.previous.close()  # idempotent; also when the run stopped before wrapping
        if self._pages_file is not None:
            self._pages_file.close()
        layout = self.layout
        if layout.journals.exists():
            try:
                if layout.process is None:
                    parts = [layout.journals]
                else:  # this process's part; the last one to leave merges every part
                    index.build_index([(layout.journals, "")], layout.part_index)
                    if last:
                        index.close_abandoned(layout.root)  # dead processes' .open files
                    parts = index.journal_dirs(layout.root) if last else []
                if parts:
                    index.build_index(
                        [(journals, "") for journals in parts],
                        layout.index,
                        cdx11=layout.cdx11 if self.settings.cdx11 else None,
                    )
            except (OSError, ArchiverError) as exc:
                status, reason = STATUS_INTERRUPTED, f"writing the index failed: {exc}"
        wacz_error = None
        if self.settings.wacz and status in (STATUS_COMPLETED, STATUS_LIMIT) and last:
            # only a finished crawl is packaged (`archiver wacz DIR` packages any crawl later)
            try:
                await asyncio.to_thread(
                    wacz.write_wacz,
                    layout.root,
                    layout.wacz,
                    description=self.settings.description or None,
                    software=software_string(),
                    seeds=list(self._seeds),
                    depends_on=self.previous.depends_on() if self.previous is not None else [],
                )
            except (OSError, OutputError) as exc:
                wacz_error = str(exc)
                if self.log is not None:
                    self.log.error("wacz-error", error=wacz_error)
        summary = self._summary(status, reason)
        if wacz_error is not None:
            summary["wacz_error"] = wacz_error
        with contextlib.suppress(OSError):
            write_json_atomic(layout.summary, summary)
        if self.log is not None:
            self.log.info(
                "crawl-end",
                status=status,
                reason=reason,
                **{
                    k: summary[k]
                    for k in ("captures", "pages", "bytes_written", "duration_seconds")
                },
            )
        if self._crawl_log is not None:
            self._crawl_log.close()
        return status, reason

    def _summary(self, status: str, reason: str | None) -> dict[str, Any]:
        summary = self.stats.summary()
        frontier_stats = self.frontier.statistics() if self.frontier is not None else None
        summary.update(
            status=status,
            reason=reason,
            output=str(self.layout.root),
            resumed=self.resumed,
            seeds=list(self._seeds),
            warc_files=[
                str(p.relative_to(self.layout.root)) for p in warc_files(self.layout.warcs)
            ],
            index=str(self.layout.index.relative_to(self.layout.root)),
            wacz=self.layout.wacz.name if self.layout.wacz.exists() else None,
            # what later runs deduplicating against this one inherit originals through, and
            # the earlier WARC files this run's revisits need for replay (issue 6)
            dedup_sources=self.previous.source_paths() if self.previous is not None else [],
            depends_on=self.previous.depends_on() if self.previous is not None else [],
            traps=self.scope.trap_summary() if self.scope is not None else [],
            robots=(
                dataclasses.asdict(self.robots.statistics()) if self.robots is not None else None
            ),
            frontier=(
                {
                    "queued": frontier_stats.queued,
                    "in_flight": frontier_stats.in_flight,
                    "done": frontier_stats.done,
                    "failed": frontier_stats.failed,
                    "skipped": frontier_stats.skipped,
                    "seen": frontier_stats.seen,
                }
                if frontier_stats
                else None
            ),
            version=__version__,
        )
        return summary

    def _result(self, status: str, reason: str | None, state: dict[str, Any]) -> CrawlResult:
        finish_status(state, status, reason)
        with contextlib.suppress(OSError):
            write_status(self.layout, state)
        exit_code = {
            STATUS_COMPLETED: EXIT_OK,
            STATUS_LIMIT: EXIT_OK,
            STATUS_INTERRUPTED: EXIT_INTERRUPTED,
        }.get(status, EXIT_FAILED)
        layout = self.layout
        return CrawlResult(
            status=status,
            exit_code=exit_code,
            reason=reason,
            output=layout.root,
            resumed=self.resumed,
            warc_files=warc_files(layout.warcs),
            index=layout.index if layout.index.exists() else None,
            cdx11=layout.cdx11 if layout.cdx11.exists() else None,
            wacz=layout.wacz if layout.wacz.exists() else None,
            summary=_read_json(layout.summary),
        )


def referer_header(item: CrawlItem) -> dict[str, str] | None:
    """``Referer`` as a browser would send it: the page that linked here, unless that would
    leak an https URL to plain http (the default referrer policy's downgrade rule)."""
    via = item.via
    if via is None or (via.startswith("https:") and item.url.startswith("http:")):
        return None
    return {"Referer": via}


def _committed_filter(committed: set[tuple[int, int]]) -> Callable[[warcfile.Capture], bool]:
    """Keep a capture on resume only if the frontier committed it (warcinfo always)."""

    def keep(capture: warcfile.Capture) -> bool:
        first = capture.records[0].record_type if capture.records else ""
        return first == "warcinfo" or (capture.start, capture.end) in committed

    return keep


def software_string() -> str:
    """``archiver/X (aiohttp/Y; warcio/Z; Python W)`` for warcinfo and the summary."""
    parts = []
    for dist in ("aiohttp", "warcio", "selectolax"):
        try:
            parts.append(f"{dist}/{importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    parts.append(f"Python {platform.python_version()}")
    return f"archiver/{__version__} ({'; '.join(parts)})"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


async def crawl(settings: Settings, *, console: IO[str] | None = None) -> CrawlResult:
    """Run a crawl with ``settings`` and return its :class:`CrawlResult` (the Python API)."""
    return await Crawler(settings, console=console).run()


__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_USAGE",
    "MAX_REDIRECTS",
    "CrawlResult",
    "Crawler",
    "crawl",
]
