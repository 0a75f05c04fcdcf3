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
import math
import os
import shutil
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from archiver import __version__
from archiver.config.assemble import (
    address_policy,
    default_output,
    fetch_config,
    scope_rules,
    seed_list,
    software_string,
    warcinfo_fields,
)
from archiver.config.settings import Settings
from archiver.dedup.digests import DigestIndex, MemoryDigestIndex
from archiver.dedup.previous import LayeredDigestIndex, PreviousCrawls, open_previous
from archiver.errors import (
    ArchiverError,
    FrontierError,
    FrontierUnavailableError,
    OutputError,
    WriteError,
)
from archiver.fetch.fetcher import Fetcher
from archiver.frontier.base import Frontier
from archiver.frontier.memory import MemoryFrontier
from archiver.frontier.sqlite import SqliteDigestIndex, SqliteFrontier
from archiver.index import cdxj as index
from archiver.index import wacz
from archiver.models import (
    MAX_REDIRECTS,
    CrawlItem,
    FailReason,
    Outcome,
    TaskResult,
    WrittenCapture,
)
from archiver.policy.politeness import HostGate
from archiver.policy.robots import Robots
from archiver.policy.scope import Scope
from archiver.policy.sitemaps import SitemapPolicy
from archiver.run.log import CrawlLog, crawl_logger
from archiver.run.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    OutputLock,
    cut_torn_line,
    finish_status,
    prepare,
    read_json,
    write_json_atomic,
    write_status,
)
from archiver.run.pipeline import WORKER_NAME, Pipeline
from archiver.run.resume import repair_open_warcs
from archiver.run.stats import CrawlStats
from archiver.warc.records import Clock, RecordFactory, utcnow
from archiver.warc.writer import Writer, WriterConfig, safe_name_part, warc_files

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 3
EXIT_LOCKED = 4

DISK_CHECK_SECONDS = 2.0


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


class Crawler:
    """One crawl run. ``await Crawler(settings).run()``; ``request_stop()`` from a signal."""

    #: what processes each lease (a subclass can be given, e.g. to test how a bug is handled)
    pipeline_class: type[Pipeline] = Pipeline

    def __init__(
        self,
        settings: Settings,
        *,
        console: IO[str] | None = None,
        frontier: Frontier | None = None,
        write_fn: Callable[..., int] | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.settings = settings
        #: the time source of WARC-Dates (fetches and warcinfo records)
        self.clock = clock
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
        self.robots: Robots | None = None
        self.pipeline: Pipeline | None = None
        self.sitemaps = SitemapPolicy(enabled=False)
        self.dedup: DigestIndex = MemoryDigestIndex()
        #: --dedup-from / --revalidate-from sources (issue 6), opened when the run starts
        self.previous: PreviousCrawls | None = None
        self.factory = RecordFactory(algorithm=settings.digest, clock=clock)
        self.log: Any = None
        self._crawl_log: CrawlLog | None = None
        self._write_fn = write_fn
        self._stopping = False
        self._immediate = False
        self._stop_event: asyncio.Event | None = None
        self._final: tuple[str, str | None] | None = None
        self._busy = 0
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

    def _make_frontier(self, gate: HostGate) -> Frontier:
        backend = self.settings.frontier
        if backend == "memory":
            return MemoryFrontier(gate)
        if backend == "sqlite":
            return SqliteFrontier(self.layout.frontier_db, gate)
        from archiver.frontier.redis import RedisFrontier  # noqa: PLC0415 - optional backend

        return RedisFrontier(
            backend,
            self.settings.crawl_id or "",
            gate=gate,
            settings=self.settings,
            process_id=self.process_id,
            log=self.log,
        )

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        """Run the crawl to completion, a limit, a stop request or a fatal error."""
        self._stop_event = asyncio.Event()
        seeds = seed_list(self.settings)
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
                summary=read_json(layout.summary),
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
            elif (shared_index := getattr(frontier, "digest_index", None)) is not None:
                self.dedup = shared_index()  # revisits across every process of the crawl
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
                await repair_open_warcs(layout, frontier, self.log, process_id=self.process_id)
            self.scope = Scope(scope_rules(s, seeds))
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
            policy = await address_policy(s, seeds)
            self.fetcher = Fetcher(fetch_config(s, seeds), policy, clock=self.clock)
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
                    warcinfo_fields=warcinfo_fields(s, layout.root.name),
                ),
                self.factory,
                write_fn=self._write_fn or os.write,
                auto_seal=False,
            )
            self.writer.start()
            cut_torn_line(layout.pages)  # a killed run's half line (see output.cut_torn_line)
            self._pages_file = open(layout.pages, "a", encoding="utf-8")  # noqa: SIM115, ASYNC230
            self.pipeline = self.pipeline_class(
                settings=s,
                stats=self.stats,
                log=self.log,
                frontier=frontier,
                fetcher=self.fetcher,
                writer=self.writer,
                scope=self.scope,
                robots=self.robots,
                sitemaps=self.sitemaps,
                dedup=self.dedup,
                previous=self.previous,
                factory=self.factory,
                pages_file=self._pages_file,
            )
            await self.pipeline.put(
                [CrawlItem(url=seed, redirects_left=s.max_redirects) for seed in seeds]
                + self.sitemaps.start_items(seeds)
            )
            status, reason = await self._crawl(frontier)
            if status == STATUS_COMPLETED:
                status, reason = self._nothing_captured() or (status, reason)
            if status == STATUS_COMPLETED and reason is None:
                reason = self._no_page_reason()
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

    def _nothing_captured(self) -> tuple[str, str] | None:
        """A crawl that ended with every fetch failed and nothing archived but robots.txt, in
        this run or an earlier one, failed (exit code 1): a scheduled run whose seed's DNS or
        server is down, or whose every page is a bot challenge, must not report success with
        an empty archive."""
        failures = self.stats.failures
        robots = self.pipeline.robots_captures if self.pipeline is not None else 0
        if self.stats.captures > robots or not failures:
            return None
        if self.resumed and warc_files(self.layout.warcs, include_open=True):
            return None  # an earlier run captured something
        if self.process_id is not None:
            return None  # a shared crawl: other processes may have
        counts = ", ".join(f"{name}: {n}" for name, n in failures.most_common())
        but = " but robots.txt" if robots else ""
        reason = (
            f"nothing was captured{but}: every fetch failed ({counts}); see crawl.log.jsonl, "
            "fix the cause and run again with --overwrite"
        )
        if self.log is not None:
            self.log.error("crawl-error", error=reason)
        return STATUS_FAILED, reason

    def _no_page_reason(self) -> str | None:
        """Why a completed crawl archived no page, when policy skipped what it would have
        fetched (a seed disallowed by robots.txt, out of scope, a blocked address): still a
        completed crawl (exit 0), but a scheduled run must say so rather than look like an
        ordinary success with an empty archive."""
        shared = self.process_id is not None  # other processes of the crawl may have pages
        if self.stats.pages or not self.stats.skips or self.resumed or shared:
            return None
        counts = ", ".join(f"{name}: {n}" for name, n in self.stats.skips.most_common())
        reason = f"no page was captured: every URL it reached was skipped ({counts})"
        if self.log is not None:
            self.log.warning("no-page-captured", reason=reason)
        return reason

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
        writer, frontier, pipeline = self.writer, self.frontier, self.pipeline
        if writer is None or frontier is None:
            return
        uncommitted = pipeline.uncommitted if pipeline is not None else collections.Counter()
        names = [name for name in writer.retired() if uncommitted[name] <= 0]
        if not names:
            return
        try:
            await frontier.flush()
            await asyncio.to_thread(writer.seal, names)
        except (FrontierError, WriteError, OSError) as exc:
            self.log.warning("seal-deferred", files=names, error=str(exc))
            return
        for name in names:
            uncommitted.pop(name, None)

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
        frontier, pipeline = self.frontier, self.pipeline
        assert frontier is not None and pipeline is not None
        WORKER_NAME.set(f"worker-{number}")  # this task's own context: the fetch log names it
        while not self._stopping:
            lease = await frontier.get()
            if self._stopping:
                frontier.give_back(lease)
                return
            self._busy += 1
            captures: list[WrittenCapture] = []
            try:
                result = await pipeline.process(lease, captures)
                if pipeline.limit is not None:
                    self._stop(STATUS_LIMIT, pipeline.limit)
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
            pipeline.committed(captures)

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
            summary=read_json(layout.summary),
        )


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
