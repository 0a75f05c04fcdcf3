"""``archiver crawl --processes N``: one crawl run by N crawler processes, from one command.

One event loop is one core; a crawl that is CPU-bound (many small pages, fast servers) goes
faster with one process per core. The supervisor is this command's own process; it crawls
nothing itself::

    supervisor ── locks OUTPUT, decides fresh start or resume (state/crawl.json)
       │         ── waits for processes of an earlier run that are still stopping
       ├─ keeper ── redis-server (state/redis/: Unix socket, append-only file)
       │         ── repairs the state of processes this run does not start again
       ├─ crawl-process p0 ┐ each: ``archiver crawl`` with --frontier unix://…, its own
       ├─ crawl-process p1 ┘ state/HOST-pK/ and WARC series; stats lines on stderr
       └── once all have exited: index.cdxj from every journal, WACZ, summary.json,
           crawl.json's status, one exit code

Who owns what. Each crawler process is today's crawler (:class:`~archiver.run.crawler.Crawler`)
on the Redis frontier (:mod:`archiver.frontier.redis`, whose docstring has the protocol), under
a name that stays the same across restarts and resumes (``HOST-p0``, ``HOST-p1``, …): a process
started again under the name of a dead one hands that one's leases back to the queue at once
(RENEW with recover), cuts its ``.open`` WARC files back to the captures the frontier committed
and closes them (:mod:`archiver.run.resume`), so a ``kill -9`` loses nothing and captures
nothing twice. The crawler processes do not merge the index or package the crawl: the
supervisor does, once they have all stopped.

Signals. The crawler processes and the keeper run in process groups of their own, so a Ctrl-C
on the terminal reaches the supervisor alone. Its first SIGINT or SIGTERM is passed on as one
SIGTERM to every process (finish in-flight fetches, then stop), a second as another (stop at
once); the crawl ends interrupted (exit 3) and the same command resumes it.

Crashes. A crawler process killed by a signal (``kill -9``, the OOM killer) is started again
under its name; three deaths in a row, each soon after its start, stop the crawl as failed. A
process that fails (exit 1) or stops by itself (disk full: exit 3) stops the others. A process
that stops at a ``--max-*`` limit lets the others reach theirs (``--max-pages`` and
``--max-bytes`` are shared out between the processes). If the supervisor itself dies, every
crawler process sees its standard input close (and gets SIGTERM from the kernel: prctl(2)
``PR_SET_PDEATHSIG``), stops at once and exits; the keeper then stops redis-server. Nothing is
left running, and the next run resumes: it waits for processes still stopping, reaps a
redis-server left behind (:mod:`archiver.processes.redisserver`), and starts the same names again.

Figures. Each crawler process prints a JSON stats line every second; the supervisor keeps the
latest of each and shows their sum (:meth:`archiver.run.stats.Snapshot.merged`), and writes the
crawl's ``summary.json`` from the processes' own summaries
(:meth:`archiver.run.stats.Summary.merged`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import pickle
import signal
import socket
import struct
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import IO, Any

from archiver.config.assemble import (
    check_browser,
    cookie_file,
    frontier_config,
    wacz_signer,
    wants_wacz,
)
from archiver.config.settings import SeedEntry, Settings
from archiver.errors import ArchiverError, LockedError
from archiver.frontier import open_backend
from archiver.frontier.config import REDIS_SCHEMES
from archiver.processes.redisserver import PrivateRedis, redis_binary
from archiver.run import finish, wiring
from archiver.run.finish import CrawlResult
from archiver.run.log import crawl_logger
from archiver.run.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    OutputLock,
    layouts,
    prepare,
    read_json,
    write_json_atomic,
    write_status,
)
from archiver.run.resume import repair_open_warcs
from archiver.run.seeds import starting_seeds
from archiver.run.stats import SUMMARY_SEEDS, Snapshot, Summary
from archiver.sign.signer import Signer
from archiver.urls import redact_url
from archiver.version import __version__
from archiver.warc.naming import safe_name_part, warc_files

#: The hidden command a crawler process of ``--processes N`` runs (``archiver crawl-process``).
CHILD_COMMAND = "crawl-process"
#: Seconds between a crawler process's stats lines.
STATS_SECONDS = 1.0
#: A process that dies sooner than this after its start counts towards a crash loop...
QUICK_DEATH = 30.0
#: ...and this many such deaths in a row stop the crawl.
MAX_QUICK_DEATHS = 3
#: Seconds to wait for the processes of an earlier run that are still stopping.
EARLIER_RUN_WAIT = 180.0
#: Longest line read from a crawler process's stderr at once.
LINE_LIMIT = 1 << 20
#: Crawl id in the private redis-server when none is given.
DEFAULT_CRAWL_ID = "crawl"
_STATS_PREFIX = b'{"event":"stats"'


def child_message(settings: Settings, process_id: str) -> bytes:
    """What a crawler process reads first on its standard input: its settings and name,
    length-prefixed (the settings hold secrets: a pipe, never the command line)."""
    body = pickle.dumps({"settings": settings, "process_id": process_id})
    return struct.pack(">I", len(body)) + body


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def read_child_message(fd: int) -> tuple[Settings, str] | None:
    """The settings and name a crawler process was given, read from ``fd`` (its standard
    input, unbuffered: a thread then waits on the same descriptor for EOF, and Python's
    buffered reader must not be left locked by it at exit); None when the supervisor is
    gone. Unpickled: it was written by our own supervisor, over a pipe only it holds."""
    head = _read_exactly(fd, 4)
    if len(head) != 4:
        return None
    size = struct.unpack(">I", head)[0]
    body = _read_exactly(fd, size)
    if len(body) != size:
        return None
    message = pickle.loads(body)
    return message["settings"], message["process_id"]


def share(total: int | None, processes: int, number: int) -> int | None:
    """Process ``number``'s part of a crawl-wide budget (at least 1: 0 would mean no limit)."""
    if total is None:
        return None
    return max(total // processes + (1 if number < total % processes else 0), 1)


def shared_seed(entry: SeedEntry, processes: int, number: int) -> SeedEntry:
    """Process ``number``'s part of a seed's ``max_pages`` (the crawl's is shared alike)."""
    own = tuple(
        (key, share(value, processes, number) if key == "max_pages" else value)
        for key, value in entry.own
    )
    return dataclasses.replace(entry, own=own)


@dataclass(slots=True)
class Slot:
    """One crawler process of the crawl, across its restarts."""

    number: int
    process_id: str
    settings: Settings
    process: asyncio.subprocess.Process | None = None
    started: float = 0.0  #: monotonic time of the current start
    signals: int = 0  #: SIGTERMs sent to the current process
    snapshot: Snapshot | None = None  #: its latest stats line
    views: list[Snapshot] = field(default_factory=list)  #: ended runs, for the display
    quick_deaths: int = 0
    status: str | None = None  #: how it ended for good
    reason: str | None = None
    said: deque[str] = field(default_factory=lambda: deque(maxlen=5))  #: its last log lines


class Supervisor:
    """``await Supervisor(settings).run()``; ``request_stop()`` from a signal; ``snapshot()``
    for the progress display (the same interface as :class:`archiver.run.crawler.Crawler`)."""

    def __init__(self, settings: Settings, *, console: IO[str] | None = None) -> None:
        self.settings = settings
        self.console = console or sys.stderr
        self.layout = wiring.output_layout(settings, None)
        self.private = not settings.frontier.startswith(REDIS_SCHEMES)
        self.crawl_id = settings.crawl_id or DEFAULT_CRAWL_ID
        self.slots: list[Slot] = []
        self.redis: PrivateRedis | None = None
        self.log: Any = None
        self._stopping = False
        self._immediate = False
        self._final: tuple[str, str | None] | None = None
        self._started = time.time()
        self._clock = time.monotonic()
        #: the latest stats line of any process: the shared queue's figures
        self._latest: Snapshot | None = None
        self._ended: list[tuple[float, Summary]] = []  #: (offset, summary), in order
        self._runs: list[dict[str, Any]] = []
        self._signer: Signer | None = None
        #: state/crawl.json's data, kept up to date by this run
        self._state: dict[str, Any] = {}

    # -- control ----------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    def request_stop(self, *, immediate: bool = False, reason: str = "stopped by signal") -> None:
        """First call: every process finishes its in-flight fetches and stops. With
        ``immediate``: they stop at once."""
        self._stop(STATUS_INTERRUPTED, reason, immediate=immediate)

    def _stop(self, status: str, reason: str | None, *, immediate: bool = False) -> None:
        if self._final is None or (status == STATUS_FAILED != self._final[0]):
            self._final = (status, reason)
        self._stopping = True
        self._immediate = self._immediate or immediate
        for slot in self.slots:
            self._signal(slot)

    def _signal(self, slot: Slot) -> None:
        """One signal to stop, a second to stop at once (as the crawler counts them): SIGTERM
        then SIGINT, two kinds, because two SIGTERMs sent before the process handles the
        first are one pending signal, and "at once" would be lost."""
        wanted = 2 if self._immediate else 1 if self._stopping else 0
        process = slot.process
        while process is not None and process.returncode is None and slot.signals < wanted:
            slot.signals += 1
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM if slot.signals == 1 else signal.SIGINT)

    def snapshot(self) -> Snapshot:
        """The crawl's figures: the processes' latest stats lines and their ended runs, added
        up (:meth:`archiver.run.stats.Snapshot.merged`)."""
        parts = [view for slot in self.slots for view in slot.views]
        live = [slot.snapshot for slot in self.slots if slot.snapshot is not None]
        merged = Snapshot.merged(
            [*parts, *live],
            queue=self._latest,
            elapsed=time.monotonic() - self._clock,
            stopping=self._stopping,
            processes=sum(
                1 for s in self.slots if s.process is not None and s.process.returncode is None
            ),
        )
        # the processes watch one directory: paused when they say so
        return dataclasses.replace(merged, paused=any(snapshot.paused for snapshot in live))

    # -- the run ----------------------------------------------------------------------------

    async def run(self) -> CrawlResult:
        """Run the crawl in its processes to completion, a limit, a stop request or an error."""
        settings = self.settings
        start = starting_seeds(settings)  # usage errors come first, before anything is written
        if start.file is not None:
            start.file.close()  # each crawler process reads the seeds file itself
        seeds = tuple(seed.url for seed in start.seeds)
        cookie_file(settings)
        check_browser(settings, start.seeds)
        self._signer = wacz_signer(settings)
        binary = redis_binary() if self.private else None
        self.layout.root.mkdir(parents=True, exist_ok=True)
        lock = OutputLock(self.layout.lock_file)
        lock.acquire()
        try:
            return await self._run_locked(seeds, binary)
        finally:
            lock.release()

    async def _run_locked(self, seeds: tuple[str, ...], binary: str | None) -> CrawlResult:
        settings, layout = self.settings, self.layout
        if settings.overwrite and binary is not None:
            await asyncio.to_thread(PrivateRedis(layout.state, binary).reap_leftover)
        start = prepare(
            layout,
            overwrite=settings.overwrite,
            settings_json=settings.to_json(),
            processes=settings.processes,
        )
        if start.resumed and start.previous_status == STATUS_COMPLETED:
            return finish.already_completed(layout)
        self._state = start.status
        write_status(layout, start.status)
        crawl_log = crawl_logger(
            layout.log, quiet=settings.quiet, verbose=settings.verbose, console=self.console
        )
        self.log = crawl_log.bind()
        status: str = STATUS_FAILED
        reason: str | None = "not started"
        try:
            status, reason = await self._crawl(binary, seeds, resumed=start.resumed)
        except ArchiverError as exc:
            status, reason = finish.error_status(exc)
            self.log.error("crawl-error", error=str(exc))
        finally:
            status, reason = await self._finish(status, reason, seeds, resumed=start.resumed)
            crawl_log.close()
        return finish.crawl_result(layout, status, reason, start.status, resumed=start.resumed)

    async def _crawl(
        self, binary: str | None, seeds: tuple[str, ...], *, resumed: bool
    ) -> tuple[str, str | None]:
        """Start the server and the processes, wait for them all, stop the server."""
        await self._wait_for_earlier_run()
        url = self.settings.frontier
        if binary is not None:
            self.redis = PrivateRedis(self.layout.state, binary)
            await self.redis.start()
            url = self.redis.url
        try:
            self.log.info(
                "crawl-start",
                seeds=list(seeds[:SUMMARY_SEEDS]),
                output=str(self.layout.root),
                resumed=resumed,
                processes=self.settings.processes,
                frontier=redact_url(url),
                version=__version__,
            )
            names = [self._process_id(n) for n in range(self.settings.processes)]
            await self._adopt(url, names)
            self.slots = [self._slot(n, name, url) for n, name in enumerate(names)]
            await self._run_slots()
        finally:
            if self.redis is not None:
                await self.redis.stop()
        return self._nothing_captured(*self._verdict(), resumed=resumed)

    def _nothing_captured(
        self, status: str, reason: str | None, *, resumed: bool
    ) -> tuple[str, str | None]:
        """A completed first run in which every fetch failed and nothing was archived failed,
        as a single process's does (a scheduled run must not report an empty success)."""
        parts = [part for _, part in self._ended]
        if status != STATUS_COMPLETED or resumed or any(p.captures for p in parts):
            return status, reason
        failures: Counter[str] = Counter()
        for part in parts:
            failures.update(part.failures)
        if not failures:
            return status, reason
        counts = ", ".join(f"{name}: {n}" for name, n in failures.most_common())
        return STATUS_FAILED, (
            f"nothing was captured: every fetch failed ({counts}); see the processes' logs in "
            "state/, fix the cause and run again with --overwrite"
        )

    def _process_id(self, number: int) -> str:
        return safe_name_part(f"{socket.gethostname()}-p{number}")

    def _slot(self, number: int, process_id: str, url: str) -> Slot:
        s, n = self.settings, self.settings.processes
        child = dataclasses.replace(
            s,
            processes=1,
            frontier=url,
            crawl_id=self.crawl_id,
            output=self.layout.root,
            job=None,
            overwrite=False,
            quiet=False,
            progress="off",
            stats_interval=STATS_SECONDS,
            max_pages=share(s.max_pages, n, number),
            max_bytes=share(s.max_bytes, n, number),
            seed=tuple(shared_seed(entry, n, number) for entry in s.seed),
            # one writer of the file (the jar itself is shared in Redis)
            save_cookies=s.save_cookies if number == 0 else None,
            status_port=None,  # the supervisor serves the crawl's status, the sum of theirs
        )
        return Slot(number, process_id, child)

    async def _run_slots(self) -> None:
        """Every slot's process until it ends for good; the server watched meanwhile."""
        tasks = {asyncio.create_task(self._keep(slot), name=slot.process_id) for slot in self.slots}
        server = asyncio.create_task(self.redis.wait_exited()) if self.redis else None
        try:
            pending: set[asyncio.Task[Any]] = set(tasks)
            while pending:
                watched = pending | ({server} if server and not server.done() else set())
                done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
                if server is not None and server in done and not self._stopping:
                    self._stop(
                        STATUS_INTERRUPTED,
                        f"the crawl's redis-server exited; see {self.redis.log_file}"
                        if self.redis
                        else None,
                        immediate=True,
                    )
                for task in done & tasks:
                    task.result()  # a bug in the supervisor: raise it
                pending -= done
        finally:
            self._immediate = self._stopping = True
            for slot in self.slots:
                self._signal(slot)
            await asyncio.gather(*tasks, return_exceptions=True)
            if server is not None:
                server.cancel()
                await asyncio.gather(server, return_exceptions=True)
            await self._reap_browsers()

    async def _keep(self, slot: Slot) -> None:
        """Run the slot's process, and again after it was killed, until it ends for good."""
        while not self._stopping:
            code = await self._run_once(slot)
            if not self._after_exit(slot, code):
                return
        slot.status = slot.status or STATUS_INTERRUPTED

    async def _run_once(self, slot: Slot) -> int:
        """Start the slot's process, pass its output on, and return its exit status."""
        layout = Layout(self.layout.root, process=slot.process_id)
        layout.summary.unlink(missing_ok=True)  # a summary found after the exit is this run's
        redis = self.redis
        lifeline = () if redis is None or redis.lifeline is None else (redis.lifeline,)
        process = slot.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "archiver",
            CHILD_COMMAND,
            "--parent",
            str(os.getpid()),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=lifeline,
            start_new_session=True,  # a Ctrl-C on the terminal reaches the supervisor alone
            limit=LINE_LIMIT,
        )
        slot.started, slot.signals, slot.snapshot = time.monotonic(), 0, None
        self.log.info("process-start", process=slot.process_id, pid=process.pid)
        assert process.stdin is not None and process.stderr is not None
        process.stdin.write(child_message(slot.settings, slot.process_id))
        with contextlib.suppress(ConnectionError):
            await process.stdin.drain()
        self._signal(slot)  # a stop asked for while it was starting
        await self._read_output(slot, process.stderr)
        code = await process.wait()
        process.stdin.close()  # held open until now: its EOF means "the supervisor is gone"
        return code

    async def _read_output(self, slot: Slot, stream: asyncio.StreamReader) -> None:
        """Stats lines are kept; everything else (warnings, -v lines) is passed on."""
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                line = await stream.read(LINE_LIMIT)
            if not line:
                return
            if line.startswith(_STATS_PREFIX):
                with contextlib.suppress(ValueError):
                    data = json.loads(line)
                    if isinstance(data, dict):
                        slot.snapshot = self._latest = Snapshot.from_json(data)
                continue
            text = line.decode("utf-8", "replace")
            slot.said.append(text.strip())
            if not self.settings.quiet:
                self.console.write(text if text.endswith("\n") else text + "\n")
                self.console.flush()

    def _after_exit(self, slot: Slot, code: int) -> bool:
        """Record how the slot's process ended; True to start it again."""
        assert slot.process is not None
        pid = slot.process.pid
        written = read_json(Layout(self.layout.root, process=slot.process_id).summary)
        offset = slot.started - self._clock
        if written:
            summary: Summary | None = Summary.from_json(written)
            part = summary
        else:  # killed before it could write one: what its last stats line said
            summary = None
            part = Summary.from_snapshot(slot.snapshot or Snapshot())
        assert part is not None
        self._ended.append((offset, part))
        slot.views.append(part.as_snapshot())
        slot.snapshot = None
        status = summary.status if summary is not None else None
        self._runs.append({"process": slot.process_id, "pid": pid, "exit": code, "status": status})
        self.log.info("process-exit", process=slot.process_id, pid=pid, exit=code, status=status)
        if code < 0 or code > 4:  # killed by a signal (or a runtime that died)
            return self._died(slot, pid, code)
        slot.quick_deaths = 0
        reason = summary.reason if summary else (slot.said[-1] if slot.said else None)
        slot.status, slot.reason = status or _status_of(code), reason
        if slot.status == STATUS_FAILED or code in (1, 2, 4):
            slot.status = STATUS_FAILED
            self._stop(STATUS_FAILED, f"process {slot.process_id}: {reason or f'exit {code}'}")
        elif slot.status == STATUS_INTERRUPTED and not self._stopping:
            self._stop(STATUS_INTERRUPTED, f"process {slot.process_id}: {reason}")
        return False

    def _died(self, slot: Slot, pid: int, code: int) -> bool:
        how = _signal_name(code)
        if self._stopping:
            slot.status = STATUS_INTERRUPTED
            return False
        quick = time.monotonic() - slot.started < QUICK_DEATH
        slot.quick_deaths = slot.quick_deaths + 1 if quick else 0
        if slot.quick_deaths >= MAX_QUICK_DEATHS:
            slot.status = STATUS_FAILED
            self._stop(
                STATUS_FAILED,
                f"process {slot.process_id} died {slot.quick_deaths} times in a row soon after "
                f"starting (last: {how}); see state/{slot.process_id}/crawl.log.jsonl",
            )
            return False
        self.log.warning(
            "process-died",
            process=slot.process_id,
            pid=pid,
            signal=how,
            then="started again: its URLs in flight go back to the queue",
        )
        return True

    def _verdict(self) -> tuple[str, str | None]:
        statuses = [slot.status for slot in self.slots]
        if STATUS_FAILED in statuses or (self._final and self._final[0] == STATUS_FAILED):
            failed = self._final if self._final and self._final[0] == STATUS_FAILED else None
            return STATUS_FAILED, failed[1] if failed else "a process failed"
        if statuses and all(s == STATUS_COMPLETED for s in statuses):
            return STATUS_COMPLETED, None
        if self._final is not None or STATUS_INTERRUPTED in statuses or None in statuses:
            return STATUS_INTERRUPTED, self._final[1] if self._final else None
        limits = [slot.reason for slot in self.slots if slot.status == STATUS_LIMIT]
        return STATUS_LIMIT, self._limit_reason(limits[0] if limits else None)

    def _limit_reason(self, reason: str | None) -> str | None:
        """A process's share of a budget said as the crawl's budget."""
        s, n = self.settings, self.settings.processes
        for name, total in (("max-pages", s.max_pages), ("max-bytes", s.max_bytes)):
            if reason and reason.startswith(name) and total is not None:
                return f"{name} of {total} reached (shared out between {n} processes)"
        return reason

    # -- before and after -------------------------------------------------------------------

    async def _wait_for_earlier_run(self) -> None:
        """Processes of an earlier run may still be stopping (their supervisor was killed):
        wait until each has released its state directory."""
        for layout in layouts(self.layout.root):
            if layout.process is None:
                continue
            deadline = time.monotonic() + EARLIER_RUN_WAIT
            said = False
            while True:
                lock = OutputLock(layout.lock_file)
                try:
                    lock.acquire()
                except LockedError:
                    if time.monotonic() >= deadline:
                        raise
                    if not said:
                        self.console.write(
                            f"archiver: waiting for process {layout.process} of an earlier "
                            "run to stop\n"
                        )
                        said = True
                    await asyncio.sleep(0.1)
                    continue
                lock.release()
                break

    async def _adopt(self, url: str, names: list[str]) -> None:
        """Processes of earlier runs that this run does not start again (fewer processes,
        another host name): their leases go back to the queue and their ``.open`` files are
        cut back to what the frontier committed, as their own restart would do."""
        for layout in layouts(self.layout.root):
            if layout.process is None or layout.process in names:
                continue
            lock = OutputLock(layout.lock_file)
            lock.acquire()
            try:
                config = frontier_config(
                    dataclasses.replace(self.settings, frontier=url, crawl_id=self.crawl_id),
                    state_db=layout.frontier_db,
                    process_id=layout.process,
                )
                backend = open_backend(config, log=self.log)
                await backend.frontier.open()
                try:
                    await repair_open_warcs(
                        layout, backend.frontier, self.log, process_id=layout.process
                    )
                finally:
                    await backend.frontier.close()
            finally:
                lock.release()

    async def _reap_browsers(self) -> None:
        """Chromium left by a killed crawler process (its own exit is normally enough). Found by
        the processes' browser state directories, not by ``--browser``: a seed's own
        ``browser`` and ``--qa`` start Chromium too."""
        root = self.layout.root
        every = [Layout(root, process=slot.process_id).state / "browser" for slot in self.slots]
        states = [state for state in every if state.is_dir()]
        if not states:
            return
        from archiver.browser.chromium import reap_leftovers  # noqa: PLC0415

        for state in states:
            with contextlib.suppress(OSError, ArchiverError):
                await reap_leftovers(state)

    async def _finish(
        self, status: str, reason: str | None, seeds: tuple[str, ...], *, resumed: bool
    ) -> tuple[str, str | None]:
        """index.cdxj from every process's journals, the WACZ, summary.json."""
        layout, s = self.layout, self.settings
        finished = status in (STATUS_COMPLETED, STATUS_LIMIT)
        try:
            await asyncio.to_thread(
                finish.merge_index, layout.root, close_dead=finished, cdx11=s.cdx11
            )
        except (OSError, ArchiverError) as exc:
            status, reason = STATUS_INTERRUPTED, f"writing the index failed: {exc}"
        summary = self._summary(status, reason, seeds, resumed=resumed)
        if wants_wacz(s) and status in (STATUS_COMPLETED, STATUS_LIMIT) and layout.index.exists():
            packaged = await asyncio.to_thread(
                finish.package_signed,
                layout.root,
                layout.wacz,
                self._signer,
                finish.Described(s.description or None, list(seeds), summary.depends_on),
            )
            summary = packaged.added_to(summary)
            if packaged.signing_error is not None:
                status, reason = STATUS_FAILED, f"the WACZ is unsigned: {packaged.signing_error}"
                summary = dataclasses.replace(summary, status=status, reason=reason)
                if self.log is not None:
                    self.log.error("wacz-signing-error", error=packaged.signing_error)
            wacz = layout.wacz.name if layout.wacz.exists() else None
            summary = dataclasses.replace(summary, wacz=wacz)
        with contextlib.suppress(OSError):
            write_json_atomic(layout.summary, summary.to_json())
        if self.log is not None:
            finish.log_end(self.log, summary)
        return status, reason

    def _summary(
        self, status: str, reason: str | None, seeds: tuple[str, ...], *, resumed: bool
    ) -> Summary:
        layout = self.layout
        summary = Summary.merged(
            self._ended, started=self._started, duration=time.monotonic() - self._clock
        )
        whole = [part for _, part in self._ended if part.status is not None]
        last = whole[-1] if whole else Summary()
        this_run = dataclasses.replace(
            summary,
            status=status,
            reason=reason,
            output=str(layout.root),
            resumed=resumed,
            seeds=seeds[:SUMMARY_SEEDS],
            warc_files=tuple(str(p.relative_to(layout.root)) for p in warc_files(layout.warcs)),
            index=str(layout.index.relative_to(layout.root)),
            wacz=None,
            dedup_sources=last.dedup_sources,
            depends_on=last.depends_on,
            frontier=last.frontier,
            processes={"count": self.settings.processes, "runs": self._runs},
            version=__version__,
            qa=finish.qa_totals(layout.root) if self.settings.qa else None,
        )
        runs = self._state.get("runs")
        if isinstance(runs, list) and runs:  # this run's own figures, for the next runs
            runs[-1].update(finish.run_figures(this_run))
        return this_run.across_runs(finish.earlier_summary(layout), finish.run_history(self._state))


def _status_of(code: int) -> str:
    """A crawler process's status read from its exit code, when it wrote no summary (the codes
    of the ``archiver`` command, :mod:`archiver.commands.exits`)."""
    return {0: STATUS_COMPLETED, 3: STATUS_INTERRUPTED}.get(code, STATUS_FAILED)


def _signal_name(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
    return f"exit {code}"


__all__ = [
    "CHILD_COMMAND",
    "STATS_SECONDS",
    "Slot",
    "Supervisor",
    "child_message",
    "read_child_message",
    "share",
]
