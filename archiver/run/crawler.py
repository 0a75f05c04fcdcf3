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
import contextlib
import os
import time
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any, Protocol

from archiver.config.assemble import check_browser, check_media, cookie_file, wacz_signer
from archiver.config.settings import Settings
from archiver.dedup.previous import PreviousCrawls
from archiver.errors import (
    ArchiverError,
    FrontierError,
    OutputError,
    SessionEndedError,
    StateError,
    WriteError,
)
from archiver.fetch.cookiestxt import CookieLine
from archiver.frontier import Backend
from archiver.frontier.base import CrawlQueue, Lease
from archiver.models import MAX_REDIRECTS, CrawlItem, FailReason, Outcome, TaskResult
from archiver.pipeline.capture import Capturer
from archiver.pipeline.counters import CrawlStats
from archiver.pipeline.outcomes import WORKER_NAME
from archiver.pipeline.parts import KeptRequest
from archiver.pipeline.pipeline import Pipeline
from archiver.run import finish, wiring
from archiver.run.disk import DiskGuard, Reserve
from archiver.run.finish import CrawlResult
from archiver.run.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    OutputLock,
    RunStart,
    write_status,
)
from archiver.run.seeds import SeedsFile, StartingSeeds, starting_seeds
from archiver.run.state import CRAWL_KEY, check_state, new_identity, record_settled, stamp
from archiver.run.stats import (
    SNAPSHOT_HOSTS,
    TOP_HOSTS,
    BrowserSnapshot,
    QaSnapshot,
    Snapshot,
    Summary,
)
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
        kept_requests: Mapping[str, KeptRequest] | None = None,
    ) -> None:
        self.settings = settings
        #: ``archiver patch``: resume the crawl (completed or not) with these items only
        #: (:mod:`archiver.run.patch`), not from its seeds; ``kept_requests``: those to be
        #: requested with a body (a POST a replayed page made)
        self._patch = patch
        self.options = wiring.Options(
            console=console,
            backend=backend,
            write_fn=write_fn or os.write,
            clock=clock,
            pipeline_class=self.pipeline_class,
            supervised=supervised_as is not None,
            kept_requests=kept_requests or {},
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
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seeds_file: SeedsFile | None = None
        self._run: wiring.Run | None = None
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
        if self.stages is not None and self.stages.frontier is not None:
            self.stages.frontier.stop_waiting()  # an outage of its backend ends the wait
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
            qa=QaSnapshot.of(stats.qa) if stats.qa is not None else None,
        )

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        """Run the crawl to completion, a limit, a stop request or a fatal error."""
        self._stop_event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        start_seeds = starting_seeds(self.settings)  # a bad seed is a usage error, first
        self._seeds_file = start_seeds.file
        self._cookies = cookie_file(self.settings)  # a bad file is a usage error, before output
        self._signer = wacz_signer(self.settings)  # so is an unusable signing key
        check_browser(self.settings, start_seeds.seeds)  # no Chromium: a usage error, first
        check_media(self.settings)  # so is yt-dlp for --media yt-dlp
        self.layout.root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(self.layout.lock_file)
        lock.acquire()
        try:
            return await self._run_locked(start_seeds)
        finally:
            lock.release()
            if self._seeds_file is not None:
                self._seeds_file.close()

    async def _run_locked(self, start_seeds: StartingSeeds) -> CrawlResult:
        settings, layout = self.settings, self.layout
        start, previous = await wiring.open_output(settings, layout)
        patching = self._patch is not None
        if start.resumed and start.previous_status == STATUS_COMPLETED and not patching:
            if previous is not None:
                await previous.close()
            return finish.already_completed(layout)
        try:
            stages = self.stages = self._first_writes(start, previous)
        except (OSError, OutputError, StateError) as exc:
            if previous is not None:
                await previous.close()
            if isinstance(exc, StateError):
                raise  # nothing was written: a state that disagrees is left as it is
            why = str(exc) if isinstance(exc, OutputError) else _cannot_write(exc)
            return finish.not_started(layout, start.status, why, resumed=start.resumed)
        run = self._run = wiring.Run(
            settings,
            layout,
            tuple(seed.url for seed in start_seeds.seeds),
            self.stats,
            start.resumed,
            self.process_id,
            cookie_file=self._cookies,
            signer=self._signer,
            seed_rules=tuple(seed for seed in start_seeds.seeds if seed.spec is not None),
            state=start.status,
        )
        status: str = STATUS_FAILED
        reason: str | None = "not started"
        try:
            self._check_space(stages, at_start=True)
            await wiring.assemble(run, stages, self.options)
            self._stamp(start.status)
            assert stages.pipeline is not None
            await stages.pipeline.verify_session()
            if self._patch is not None:
                self._seeds_file = None  # a patch run fetches its patches, not the seeds
                await stages.pipeline.put(list(self._patch))
            else:
                self._invalid_seeds(start_seeds.invalid)
                self.stats.seeds = len(run.seeds)
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
        self._record_figures()
        assert stages.guard is not None
        if stages.guard.check_held() is not None:
            return finish.unrecorded_result(layout, status, reason, resumed=run.resumed)
        if self._own_sqlite:
            stamp(layout, start.status)
        return finish.crawl_result(layout, status, reason, start.status, resumed=run.resumed)

    @property
    def _own_directory(self) -> bool:
        """The crawl directory is this process's alone (not one of a shared crawl)."""
        return self.process_id is None

    @property
    def _own_sqlite(self) -> bool:
        """The crawl's frontier is its own SQLite database (what :mod:`archiver.run.state`
        cross-checks)."""
        return self.settings.frontier == "sqlite" and self.process_id is None

    def _first_writes(self, start: RunStart, previous: PreviousCrawls | None) -> wiring.Stages:
        """The state checked (a resumed crawl's), then the run's first writes: crawl.json, the
        reserve, the log. A disk already full stops here (OSError, OutputError), before
        anything else; a state that disagrees with itself before even these (StateError)."""
        layout = self.layout
        if self._own_sqlite and start.resumed:
            check_state(layout, start.status)
        start.status.setdefault(CRAWL_KEY, new_identity())
        reserve = Reserve(layout)
        try:
            write_status(layout, start.status)
            reserve.hold()
            crawl_log = wiring.open_log(
                self.settings, layout, self.options.console, on_failure=self._log_failed
            )
        except BaseException:
            reserve.release()
            raise
        return wiring.Stages(
            crawl_log,
            crawl_log.bind(),
            previous=previous,
            frontier=self.options.backend.frontier if self.options.backend else None,
            guard=DiskGuard(layout, self.settings.min_free_disk),
            reserve=reserve,
        )

    def _stamp(self, state: dict[str, Any]) -> None:
        """What the frontier database settled into crawl.json, once the frontier is open and
        repaired (:func:`archiver.run.state.record_settled`)."""
        if not self._own_sqlite:
            return
        record_settled(self.layout, state)
        try:
            write_status(self.layout, state)
        except OSError as exc:
            raise OutputError(f"crawl.json: {_cannot_write(exc)}") from None

    def _log_failed(self, exc: OSError) -> None:
        """The crawl log cannot be written (a full disk): stop, resumably. Called from whatever
        was logging, maybe not on the event loop's thread."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(
                self._stop, STATUS_INTERRUPTED, f"crawl log: {_cannot_write(exc)}"
            )

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
        """Every seed fed (a seeds file is fed while the workers run: the frontier may empty
        meanwhile), then every URL done, and none added by the operator meanwhile (a file of
        added URLs that came in after the last look is taken before the crawl calls itself
        done)."""
        assert self.stages is not None and self.stages.frontier is not None
        if self._seeds_file is not None and not self._seeds_file.done:
            await self._feed_seeds(self._seeds_file)
        while True:
            await self.stages.frontier.join()
            if not await self._take_additions():
                return

    async def _take_additions(self) -> int:
        control = self.stages.control if self.stages is not None else None
        if control is None or control.additions is None:
            return 0
        return await control.additions.take()

    async def _feed_seeds(self, file: SeedsFile) -> None:
        """The rest of the seeds file, one batch per turn of the event loop (a batch takes
        tens of milliseconds: signals and limits are answered between two), until it ends or
        the crawl stops."""
        assert self.stages is not None and self._run is not None
        for batch in file:
            if self._stopping:
                break
            self._invalid_seeds(batch.invalid)
            if batch.seeds:
                await wiring.more_seeds(self._run, self.stages, batch.seeds)
                self.stats.seeds += len(batch.seeds)
            await asyncio.sleep(0)

    def _invalid_seeds(self, invalid: list[tuple[int, str, str]]) -> None:
        assert self.stages is not None
        for line, text, why in invalid:
            self.stages.log.warning(
                "seed-invalid",
                file=str(self.settings.seeds_file),
                line=line,
                seed=text,
                error=why,
                note="this line is left out; the others are crawled",
            )

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
        """Time limit, the output directory and free disk space, checked every couple of
        seconds (the writer checks the directory and the space before every batch too);
        committed WARC files sealed as they are."""
        assert self.stages is not None and self.stages.guard is not None
        guard = self.stages.guard
        limit = self.settings.max_duration
        while True:
            wait = DISK_CHECK_SECONDS
            if limit is not None:  # wake when the limit is reached, not up to a check later
                wait = min(wait, max(limit - self.stats.elapsed, 0.0))
            await asyncio.sleep(wait)
            if limit is not None and self.stats.elapsed >= limit:
                self._stop(STATUS_LIMIT, f"max-duration of {limit:g} s reached")
                return
            lost = guard.check_held()
            if lost is not None:  # whatever is in flight would be written into nothing
                self.stages.log.error("output-lost", error=lost)
                self._stop(STATUS_INTERRUPTED, lost, immediate=True)
                return
            try:
                self._check_space(self.stages)
            except OutputError as exc:
                self.stages.log.error("disk-space", error=str(exc))
                self._stop(STATUS_INTERRUPTED, str(exc))
                return
            await finish.seal_committed(self.stages)
            self._checkpoint()

    def _record_figures(self) -> None:
        """This run's figures so far, in its entry of crawl.json's runs."""
        run, stages = self._run, self.stages
        if run is None or not isinstance(run.state.get("runs"), list) or not run.state["runs"]:
            return
        if stages is not None and stages.writer is not None:
            self.stats.bytes_written = stages.writer.stats.bytes
        run.state["runs"][-1].update(finish.run_figures(Summary.counted(self.stats)))

    def _checkpoint(self) -> None:
        """The figures into crawl.json every couple of seconds (not fsynced: a kill -9 keeps
        them, a power cut may lose the last ones): a run killed before it wrote its summary is
        still counted by the next one (:meth:`archiver.run.stats.Summary.across_runs`)."""
        self._record_figures()
        if self._run is not None and self._own_directory:
            with contextlib.suppress(OSError):
                write_status(self.layout, self._run.state, fsync=False)

    @staticmethod
    def _check_space(stages: wiring.Stages, *, at_start: bool = False) -> None:
        assert stages.guard is not None
        low = stages.guard.check_space(at_start=at_start)
        if low is not None:
            raise OutputError(low)

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
            except FrontierError as exc:  # the backend failed, or is gone while stopping
                self._stop(STATUS_INTERRUPTED, str(exc))
                self.stages.log.error("frontier-error", error=str(exc))
                return None
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
        except SessionEndedError as exc:
            # the page showed a login wall: not archived, not done; a resumed crawl (after a
            # new login) fetches it again. What the lease wrote is not committed (the resume
            # cuts it): it leaves the figures too
            capturer.withdraw()
            self._stop(STATUS_INTERRUPTED, str(exc))
            log.error("session-ended", url=exc.url, lease=lease.item.url, sign=exc.sign)
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


def _cannot_write(exc: OSError) -> str:
    """``cannot write PATH: No space left on device``."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot write{where}: {exc.strerror or exc}"


def _captured(url: str, result: TaskResult, capturer: Capturer) -> bool:
    """Whether the lease's own URL is in the archive: done, or a response written for it
    whatever followed (a page the browser then failed to load is still captured), or recalled
    from an earlier try's capture."""
    if result.outcome is Outcome.DONE or capturer.lease_recalled:
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
