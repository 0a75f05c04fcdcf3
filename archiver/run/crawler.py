"""Control of one crawl run: start it, run the workers, stop them; the rest is delegated.

The shape is the 500-lines crawler's (aosabook), with its flaw fixed (every lease is handed back,
even when processing it raised)::

    run():      lock the output -> wiring.assemble (every stage, in pipeline order)
                -> seed -> workers x N -> await frontier.join() -> cancel the workers
                -> finish.finish (every stage stopped in reverse; index, WACZ, summary)
    worker:     lease = frontier.get() -> pipeline.process(lease) -> frontier.task_done(lease)

Failure rules: an expected failure of one URL (network, protocol, bad content) is logged,
counted and recorded as failed or retried by the pipeline; the crawl goes on. A write failure
stops the crawl loudly with a resumable state. An unexpected exception (a bug) stops the crawl
with a clear error instead of hanging it: every lease is always handed back with ``task_done``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
import traceback
from collections.abc import Callable
from typing import IO, Any, Protocol

from archiver.config.assemble import check_browser, cookie_file, wacz_signer
from archiver.config.seeds import crawl_seeds
from archiver.config.settings import Settings
from archiver.errors import ArchiverError, FrontierError, OutputError, WriteError
from archiver.fetch.cookiestxt import CookieLine
from archiver.frontier import Backend
from archiver.frontier.base import CrawlQueue, Lease
from archiver.models import MAX_REDIRECTS, CrawlItem, FailReason, Outcome, TaskResult
from archiver.pipeline.capture import Capturer
from archiver.pipeline.counters import CrawlStats
from archiver.pipeline.outcomes import WORKER_NAME
from archiver.pipeline.pipeline import Pipeline
from archiver.policy.seeds import Seed
from archiver.run import finish, wiring
from archiver.run.finish import CrawlResult
from archiver.run.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    OutputLock,
    write_status,
)
from archiver.run.stats import SNAPSHOT_HOSTS, TOP_HOSTS, BrowserSnapshot, Snapshot
from archiver.sign.signer import Signer
from archiver.timefmt import Clock, utcnow

DISK_CHECK_SECONDS = 2.0


class CrawlControl(Protocol):
    """What the command line runs and watches: one crawl, whether one process crawls it
    (:class:`Crawler`) or several do (:class:`archiver.processes.supervisor.Supervisor`)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def layout(self) -> Layout: ...

    async def run(self) -> CrawlResult:
        """Run the crawl to completion, a limit, a stop request or a fatal error."""
        ...

    def request_stop(self, *, immediate: bool = False, reason: str = "stopped by signal") -> None:
        """First call: finish what is in flight, then stop; with ``immediate``: stop at once."""
        ...

    def snapshot(self) -> Snapshot:
        """The crawl's figures now (cheap: read every half second)."""
        ...


class Crawler:
    """One crawl run. ``await Crawler(settings).run()``; ``request_stop()`` from a signal."""

    #: what processes each lease (a subclass can be given, e.g. to test how a bug is handled)
    pipeline_class: type[Pipeline] = Pipeline

    def __init__(
        self,
        settings: Settings,
        *,
        console: IO[str] | None = None,
        backend: Backend | None = None,
        write_fn: Callable[..., int] | None = None,
        clock: Clock = utcnow,
        supervised_as: str | None = None,
        patch: tuple[CrawlItem, ...] | None = None,
    ) -> None:
        self.settings = settings
        #: ``archiver patch``: resume the crawl (completed or not) with these items only
        #: (:mod:`archiver.run.patch`), not from its seeds
        self._patch = patch
        self.options = wiring.Options(
            console=console,
            backend=backend,
            write_fn=write_fn or os.write,
            clock=clock,
            pipeline_class=self.pipeline_class,
            supervised=supervised_as is not None,
        )
        #: names this process in a shared crawl (``{hostname}-{pid}``); ``supervised_as``: one
        #: process of ``--processes N``, whose name stays the same across restarts so that it
        #: resumes its own state directory and WARC series
        self.process_id = supervised_as or wiring.process_id(settings)
        self.layout = wiring.output_layout(settings, self.process_id)
        self.stats = CrawlStats()
        self.stages: wiring.Stages | None = None
        self._stopping = False
        self._immediate = False
        self._stop_event: asyncio.Event | None = None
        self._final: tuple[str, str | None] | None = None
        self._busy = 0
        self._cookies: tuple[CookieLine, ...] = ()
        #: workers waiting in the frontier's ``get``, and those a pause interrupted there
        self._waiting: set[asyncio.Task[Any]] = set()
        self._interrupted: set[asyncio.Task[Any]] = set()
        self._signer: Signer | None = None

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

    def snapshot(self) -> Snapshot:
        """A cheap view of the crawl for live progress, the status endpoint and stats lines."""
        stats, stages = self.stats, self.stages
        frontier = stages.frontier.statistics() if stages and stages.frontier else None
        writer = stages.writer.stats if stages and stages.writer else None
        elapsed = max(stats.elapsed, 1e-9)
        return Snapshot(
            elapsed=round(stats.elapsed, 1),
            captures=stats.captures,
            pages=stats.pages,
            revisits=stats.revisits,
            pages_per_second=round(stats.pages / elapsed, 2),
            captures_per_second=round(stats.captures / elapsed, 2),
            queued=frontier.queued if frontier else 0,
            in_flight=self._busy,
            done=frontier.done if frontier else 0,
            seen=frontier.seen if frontier else 0,
            bytes_received=stats.bytes_received,
            bytes_written=writer.bytes if writer else 0,
            warc_file=writer.current_file if writer else None,
            failures=dict(stats.failures),
            skips=dict(stats.skips),
            by_status_class=dict(stats.by_status),
            top_hosts=tuple(stats.by_host.most_common(TOP_HOSTS)),
            retries=stats.retries,
            by_host=dict(stats.by_host.most_common(SNAPSHOT_HOSTS)),
            stopping=self._stopping,
            dedup_bytes_saved=stats.dedup_bytes_saved,
            browser=BrowserSnapshot.of(stats.browser) if stats.browser is not None else None,
            paused=stages is not None and stages.control is not None and stages.control.paused,
        )

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        """Run the crawl to completion, a limit, a stop request or a fatal error."""
        self._stop_event = asyncio.Event()
        seeds = crawl_seeds(self.settings)  # a bad seed is a usage error, first
        self._cookies = cookie_file(self.settings)  # a bad file is a usage error, before output
        self._signer = wacz_signer(self.settings)  # so is an unusable signing key
        check_browser(self.settings, seeds)  # Chromium missing: a usage error, before output
        self.layout.root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(self.layout.lock_file)
        lock.acquire()
        try:
            return await self._run_locked(seeds)
        finally:
            lock.release()

    async def _run_locked(self, seeds: tuple[Seed, ...]) -> CrawlResult:
        settings, layout = self.settings, self.layout
        start, previous = await wiring.open_output(settings, layout)
        patching = self._patch is not None
        if start.resumed and start.previous_status == STATUS_COMPLETED and not patching:
            if previous is not None:
                await previous.close()
            return finish.already_completed(layout)
        write_status(layout, start.status)
        crawl_log = wiring.open_log(settings, layout, self.options.console)
        stages = self.stages = wiring.Stages(
            crawl_log,
            crawl_log.bind(),
            previous=previous,
            frontier=self.options.backend.frontier if self.options.backend else None,
        )
        run = wiring.Run(
            settings,
            layout,
            tuple(seed.url for seed in seeds),
            self.stats,
            start.resumed,
            self.process_id,
            cookie_file=self._cookies,
            signer=self._signer,
            seed_rules=tuple(seed for seed in seeds if seed.spec is not None),
        )
        status: str = STATUS_FAILED
        reason: str | None = "not started"
        try:
            self._check_disk(at_start=True)
            await wiring.assemble(run, stages, self.options)
            assert stages.pipeline is not None
            if self._patch is not None:
                await stages.pipeline.put(list(self._patch))
            else:
                await stages.pipeline.put(wiring.seed_items(run, stages.sitemaps))
            await self._take_additions()  # what the operator added while the crawl was stopped
            status, reason = await self._crawl()
            status, reason = finish.verdict(run, stages, status, reason)
        except ArchiverError as exc:
            status, reason = finish.error_status(exc)
            stages.log.error("crawl-error", error=str(exc))
        finally:
            status, reason = await finish.finish(
                run, stages, status, reason, immediate=self._immediate
            )
        return finish.crawl_result(layout, status, reason, start.status, resumed=run.resumed)

    async def _crawl(self) -> tuple[str, str | None]:
        """Workers until the frontier joins (every URL done), a stop request, or a bug."""
        assert self._stop_event is not None and self.stages is not None
        frontier = self.stages.frontier
        assert frontier is not None
        workers = [
            asyncio.create_task(self._worker(n), name=f"worker-{n}")
            for n in range(self.settings.workers)
        ]
        join = asyncio.create_task(self._all_done(), name="frontier-join")
        stop = asyncio.create_task(self._stop_event.wait(), name="stop-wait")
        monitor = asyncio.create_task(self._monitor(), name="monitor")
        assert self.stages.control is not None
        self.stages.control.gate.on_pause(self._interrupt_waiting)
        control = asyncio.create_task(self.stages.control.watch(), name="live-control")
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
            for task in (*workers, join, stop, monitor, control):
                task.cancel()
            await asyncio.gather(*workers, join, stop, monitor, control, return_exceptions=True)
        return self._final or (STATUS_COMPLETED, None)

    async def _all_done(self) -> None:
        """Every URL done, and none added by the operator meanwhile (a file of added URLs
        that came in after the last look is taken before the crawl calls itself done)."""
        assert self.stages is not None and self.stages.frontier is not None
        while True:
            await self.stages.frontier.join()
            if not await self._take_additions():
                return

    async def _take_additions(self) -> int:
        control = self.stages.control if self.stages is not None else None
        if control is None or control.additions is None:
            return 0
        return await control.additions.take()

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
        """Time limit and free disk space, checked every couple of seconds; committed WARC
        files sealed as they are."""
        assert self.stages is not None
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
                self.stages.log.error("disk-space", error=str(exc))
                self._stop(STATUS_INTERRUPTED, str(exc))
                return
            await finish.seal_committed(self.stages)

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
        assert self.stages is not None
        frontier, pipeline = self.stages.frontier, self.stages.pipeline
        assert frontier is not None and pipeline is not None
        WORKER_NAME.set(f"worker-{number}")  # this task's own context: the fetch log names it
        while not self._stopping:
            lease = await self._next_lease(frontier)
            if lease is None:
                return
            capturer = pipeline.capturer(lease)
            result = await self._process(pipeline, capturer)
            if result is None:
                return  # the lease stays in flight: a resumed crawl fetches it again
            try:
                await frontier.task_done(lease, capturer.with_captures(result))
            except FrontierError as exc:
                self._stop(STATUS_INTERRUPTED, str(exc))
                self.stages.log.error("frontier-error", url=lease.item.url, error=str(exc))
                return
            await capturer.committed()

    async def _next_lease(self, frontier: CrawlQueue) -> Lease | None:
        """The next URL to fetch, once the crawl is not paused (``DIR/paused``); None when the
        crawl stops. A worker waiting in ``get`` when a pause begins is interrupted there
        (:meth:`_interrupt_waiting`): ``get`` is cancel-safe, the frontier keeps the URL."""
        assert self.stages is not None and self.stages.control is not None
        gate = self.stages.control.gate
        task = asyncio.current_task()
        assert task is not None
        while not self._stopping:
            if gate.paused:
                await gate.wait_running()
                continue
            self._waiting.add(task)
            try:
                lease = await frontier.get()
            except asyncio.CancelledError:
                if task not in self._interrupted:
                    raise
                self._interrupted.discard(task)
                task.uncancel()  # the pause's cancellation, not the crawl's
                continue
            finally:
                self._waiting.discard(task)
            if self._stopping or gate.paused:
                frontier.give_back(lease)
                continue
            return lease
        return None

    def _interrupt_waiting(self) -> None:
        """A pause began: the workers waiting for a URL stop waiting (and wait for the end of
        the pause instead)."""
        for task in self._waiting:
            if task not in self._interrupted:
                self._interrupted.add(task)
                task.cancel()

    async def _process(self, pipeline: Pipeline, capturer: Capturer) -> TaskResult | None:
        """The lease's outcome; None when the crawl must stop with the lease in flight."""
        assert self.stages is not None
        log = self.stages.log
        lease = capturer.lease
        self._busy += 1
        try:
            result = await pipeline.process(capturer)
            if lease.item.is_seed and result.outcome is not Outcome.RETRY:
                self.stats.seed_ended(captured=_captured(lease.item.url, result, capturer))
            if pipeline.limit is not None:
                self._stop(STATUS_LIMIT, pipeline.limit)
            return result
        except asyncio.CancelledError:
            raise
        except (WriteError, FrontierError) as exc:
            self._stop(STATUS_INTERRUPTED, str(exc))
            log.error("write-error", url=lease.item.url, error=str(exc))
            return None
        except Exception as exc:  # a bug in archiver: stop with a clear error, never hang
            self.stats.failure(FailReason.INTERNAL)
            log.error(
                "internal-error",
                url=lease.item.url,
                error=repr(exc),
                traceback="".join(traceback.format_exception(exc)),
            )
            self._stop(STATUS_FAILED, f"internal error while crawling {lease.item.url}: {exc!r}")
            return TaskResult(Outcome.FAILED, reason=FailReason.INTERNAL)
        finally:
            self._busy -= 1


def _captured(url: str, result: TaskResult, capturer: Capturer) -> bool:
    """Whether the lease's own URL is in the archive: done, or a response written for it
    whatever followed (a page the browser then failed to load is still captured)."""
    if result.outcome is Outcome.DONE:
        return True
    return any(c.primary is not None and c.primary.target_uri == url for c in capturer.captures)


async def crawl(settings: Settings, *, console: IO[str] | None = None) -> CrawlResult:
    """Run a crawl with ``settings`` and return its :class:`CrawlResult` (the Python API)."""
    return await Crawler(settings, console=console).run()


__all__ = [
    "MAX_REDIRECTS",
    "CrawlControl",
    "CrawlResult",
    "Crawler",
    "crawl",
]
