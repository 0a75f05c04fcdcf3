"""Finishing a crawl run, in one place: the stages stopped in the reverse of their building
order (:mod:`archiver.run.wiring`), then what a finished crawl leaves behind::

    workers stopped (crawler) ─> writer drained and closed ─> WARC files sealed once committed
    ─> fetcher ─> frontier (the last process of a shared crawl learns it is the last)
    ─> digest indexes, earlier crawls ─> pages.jsonl
    ─> index.cdxj merged from the writers' journals ─> WACZ (only a finished crawl)
    ─> summary.json ─> crawl-end logged, log closed ─> crawl.json's status ─> CrawlResult

Also the crawl-directory operations of ``archiver index`` and ``archiver wacz``, which finish a
crawl after the fact: they work on whatever a run (or a dead one) left in the directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.config.assemble import software_string, wants_wacz
from archiver.errors import (
    ArchiverError,
    FrontierError,
    FrontierUnavailableError,
    OutputError,
    SessionEndedError,
    WriteError,
)
from archiver.fetch.cookies import write_private
from archiver.index import cdxj, wacz
from archiver.run.output import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_INTERRUPTED,
    STATUS_LIMIT,
    Layout,
    finish_status,
    journal_dirs,
    layouts,
    read_json,
    write_json_atomic,
    write_status,
)
from archiver.run.resume import close_abandoned
from archiver.run.stats import SUMMARY_SEEDS, QaSnapshot, RunEntry, Summary
from archiver.run.wiring import Run, Stages
from archiver.sign.check import Identity
from archiver.sign.signer import Signer, SigningAttempt
from archiver.version import __version__
from archiver.warc.naming import archive_files, warc_files

#: How long the final sealing of committed WARC files may wait on the frontier.
SEAL_TIMEOUT = 60.0


@dataclass(slots=True)
class CrawlResult:
    """What a crawl returns to the CLI and to Python callers."""

    status: str  #: completed, limit, interrupted or failed
    reason: str | None
    output: Path
    resumed: bool = False
    warc_files: list[Path] = field(default_factory=list)
    index: Path | None = None
    cdx11: Path | None = None
    wacz: Path | None = None
    summary: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------ the verdict


def error_status(exc: ArchiverError) -> tuple[str, str]:
    """How an error that stopped the run ends it. A full disk, a frontier failing mid-crawl or
    an expired login session is resumable once fixed (interrupted); a backend that cannot be
    reached at all, a wrong setting or a bug is a failed run."""
    resumable = (
        (
            isinstance(exc, (WriteError, FrontierError))
            and not isinstance(exc, FrontierUnavailableError)
        )
        or type(exc) is OutputError
        or isinstance(exc, SessionEndedError)
    )
    return (STATUS_INTERRUPTED if resumable else STATUS_FAILED), str(exc)


def verdict(run: Run, stages: Stages, status: str, reason: str | None) -> tuple[str, str | None]:
    """A completed crawl that archived nothing, or no page, says so."""
    if status != STATUS_COMPLETED:
        return status, reason
    failed = _nothing_captured(run, stages) or _no_seed_captured(run)
    if failed is not None:
        stages.log.error("crawl-error", error=failed)
        return STATUS_FAILED, failed
    if reason is None and (no_page := _no_page_reason(run)) is not None:
        stages.log.warning("no-page-captured", reason=no_page)
        return status, no_page
    return status, reason


def _nothing_captured(run: Run, stages: Stages) -> str | None:
    """A crawl that ended with every fetch failed and nothing archived but robots.txt, in this
    run or an earlier one, failed (exit code 1): a scheduled run whose seed's DNS or server is
    down, or whose every page is a bot challenge, must not report success with an empty
    archive."""
    stats = run.stats
    robots = stages.pipeline.robots_captures if stages.pipeline is not None else 0
    if stats.captures > robots or not stats.failures:
        return None
    if run.resumed and warc_files(run.layout.warcs, include_open=True):
        return None  # an earlier run captured something
    if run.process_id is not None:
        return None  # a shared crawl: other processes may have
    counts = ", ".join(f"{name}: {n}" for name, n in stats.failures.most_common())
    but = " but robots.txt" if robots else ""
    return (
        f"nothing was captured{but}: every fetch failed ({counts}); see crawl.log.jsonl, "
        "fix the cause and run again with --overwrite"
    )


def _no_seed_captured(run: Run) -> str | None:
    """A crawl none of whose seeds was captured failed (exit code 1), whatever ended them: a
    seed robots.txt disallows or whose robots.txt cannot be fetched, an address the SSRF guard
    refuses, a failed fetch. What a scheduled run was asked to archive is not in the archive,
    and it must not report success."""
    stats = run.stats
    if not stats.seeds_ended or stats.seeds_captured or run.resumed or run.process_id is not None:
        return None
    ended = stats.skips + stats.failures
    counts = ", ".join(f"{name}: {n}" for name, n in ended.most_common())
    return (
        f"no seed was captured ({counts}); see crawl.log.jsonl, fix the cause and run again "
        "with --overwrite"
    )


def _no_page_reason(run: Run) -> str | None:
    """Why a completed crawl archived no page, when policy skipped what it would have fetched
    (a seed disallowed by robots.txt, out of scope, a blocked address): still a completed crawl
    (exit 0), but a scheduled run must say so rather than look like an ordinary success with an
    empty archive."""
    stats = run.stats
    shared = run.process_id is not None  # other processes of the crawl may have pages
    if stats.pages or not stats.skips or run.resumed or shared:
        return None
    counts = ", ".join(f"{name}: {n}" for name, n in stats.skips.most_common())
    return f"no page was captured: every URL it reached was skipped ({counts})"


# ------------------------------------------------------------------------------ stopping


async def seal_committed(stages: Stages) -> None:
    """Give rotated WARC files their final names once every capture in them is committed by
    the frontier. Until then they stay ``.open``, so a crash leaves them to the resume repair,
    which keeps only committed captures: nothing is captured twice."""
    writer, frontier, pipeline = stages.writer, stages.frontier, stages.pipeline
    if writer is None or frontier is None or pipeline is None:
        return
    uncommitted = pipeline.uncommitted
    names = [name for name in writer.retired() if uncommitted[name] <= 0]
    if not names:
        return
    try:
        await frontier.flush()
        await asyncio.to_thread(writer.seal, names)
    except (FrontierError, WriteError, OSError) as exc:
        stages.log.warning("seal-deferred", files=names, error=str(exc))
        return
    for name in names:
        uncommitted.pop(name, None)


async def finish(
    run: Run, stages: Stages, status: str, reason: str | None, *, immediate: bool
) -> tuple[str, str | None]:
    """Stop every stage in reverse order, then write the index, the WACZ and the summary.
    Returns the final status and reason (a failure while finishing can still change them).

    Nothing is written into a crawl directory that is no longer the run's (removed, replaced,
    unmounted: :class:`archiver.run.disk.DiskGuard`). A write that fails here (a full disk)
    makes a finished run an interrupted one, which the same command finishes once there is
    room; the first reason a run stopped for is the one it keeps."""
    if stages.reserve is not None:
        stages.reserve.release()  # room for the last words on a full disk
    await _close_browser(stages)
    await _close_media_resolver(stages)
    status, reason = await _close_writer(run, stages, status, reason, immediate=immediate)
    await _close_stages(stages)
    save_cookies(run, stages)
    lost = stages.guard.check_held() if stages.guard is not None else None
    if lost is not None:
        stages.log.error("output-lost", error=lost)
        stages.crawl_log.close()
        return _worse(status, reason, lost, always=True)
    last = stages.is_last()  # the last process of a shared crawl merges and packages
    status, reason = _write_index(run, stages, last, status, reason)
    packaged = Packaged()
    if wants_wacz(run.settings) and status in (STATUS_COMPLETED, STATUS_LIMIT) and last:
        # only a finished crawl is packaged (`archiver wacz DIR` packages any crawl later)
        packaged = await _package(run, stages)
        if packaged.signing_error is not None:
            # the WARCs, the index and the package are there; re-running the command
            # resumes the finished crawl and tries the signature again
            status, reason = STATUS_FAILED, f"the WACZ is unsigned: {packaged.signing_error}"
    summary = crawl_summary(run, stages, status, reason)
    summary = packaged.added_to(summary)
    try:
        write_json_atomic(run.layout.summary, summary.to_json())
    except OSError as exc:
        stages.log.error("summary-error", error=_cannot_write(exc))
        status, reason = _worse(status, reason, f"summary: {_cannot_write(exc)}")
    log_end(stages.log, summary)
    stages.crawl_log.close()
    failure = stages.crawl_log.failure
    if failure is not None:
        status, reason = _worse(status, reason, f"crawl log: {_cannot_write(failure)}")
    return status, reason


def _worse(
    status: str, reason: str | None, problem: str, *, always: bool = False
) -> tuple[str, str | None]:
    """A run that was to end well is interrupted by ``problem``; one that already stopped
    keeps its first reason (``always``: the problem is the reason whatever it was)."""
    if always or status in (STATUS_COMPLETED, STATUS_LIMIT):
        return STATUS_INTERRUPTED, problem
    return status, reason


def _cannot_write(exc: OSError) -> str:
    """``cannot write PATH: No space left on device``."""
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot write{where}: {exc.strerror or exc}"


async def _close_browser(stages: Stages) -> None:
    """Chromium stopped, every process of its group gone (the workers are done with it); the
    archive the checks of ``--qa`` replayed from closed."""
    if stages.checked_archive is not None:
        stages.checked_archive.close()
    if stages.browser is None:
        return
    try:
        await stages.browser.close()
    except ArchiverError as exc:
        stages.log.error("browser-close", error=str(exc))


async def _close_media_resolver(stages: Stages) -> None:
    """yt-dlp's child processes stopped (the workers are done with them)."""
    if stages.media_resolver is not None:
        await stages.media_resolver.close()


async def _close_writer(
    run: Run, stages: Stages, status: str, reason: str | None, *, immediate: bool
) -> tuple[str, str | None]:
    """Write what is queued (unless stopping at once), close the file, seal what was
    committed. Files with uncommitted captures (an immediate stop, a failed frontier) stay
    ``.open`` for the resume repair."""
    writer = stages.writer
    if writer is None:
        return status, reason
    try:
        await writer.close(drain=not immediate)
    except (OSError, WriteError) as exc:
        status, reason = STATUS_INTERRUPTED, f"closing WARC file failed: {exc}"
    if writer.failure is not None and status == STATUS_COMPLETED:
        status, reason = STATUS_INTERRUPTED, str(writer.failure)
    run.stats.bytes_written = writer.stats.bytes
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(seal_committed(stages), timeout=SEAL_TIMEOUT)
    return status, reason


async def _close_stages(stages: Stages) -> None:
    """The session's check, the fetcher, the frontier, the digest indexes, the earlier crawls,
    the page list."""
    if stages.session is not None:
        await stages.session.close()
    if stages.fetcher is not None:
        await stages.fetcher.close()
    if stages.frontier is not None:
        with contextlib.suppress(Exception):
            await stages.frontier.close()
    with contextlib.suppress(Exception):
        await stages.dedup.close()
    if stages.previous is not None:
        await stages.previous.close()  # idempotent; also when the run stopped before wrapping
    if stages.pages is not None:
        stages.pages.close()


def save_cookies(run: Run, stages: Stages) -> None:
    """``--save-cookies FILE``: the jar as cookies.txt, once the fetcher is closed. Also says
    when the jar's state file could not be kept (a resume would miss recent cookies). Cookie
    values are never logged."""
    cookies = stages.fetcher.cookies if stages.fetcher is not None else None
    if cookies is None:
        return
    if cookies.failure is not None:
        stages.log.warning("cookie-state", error=cookies.failure)
    path = run.settings.save_cookies
    if path is None:
        return
    try:
        write_private(path, cookies.export())
    except OSError as exc:
        stages.log.error("save-cookies", path=str(path), error=exc.strerror or str(exc))
    else:
        stages.log.info("cookies-saved", path=str(path), cookies=len(cookies.jar))


def _write_index(
    run: Run, stages: Stages, last: bool, status: str, reason: str | None
) -> tuple[str, str | None]:
    layout = run.layout
    if not layout.journals.exists():
        return status, reason
    try:
        crawl_index(layout, last=last, cdx11=run.settings.cdx11)
    except OSError as exc:
        stages.log.error("index-error", error=_cannot_write(exc))
        return _worse(status, reason, f"writing the index failed: {_cannot_write(exc)}")
    except ArchiverError as exc:
        stages.log.error("index-error", error=str(exc))
        return _worse(status, reason, f"writing the index failed: {exc}")
    return status, reason


def crawl_index(layout: Layout, *, last: bool = True, cdx11: bool = False) -> None:
    """The crawl's index.cdxj from the writers' journals. A process of a shared crawl writes
    its own part; the last one to leave closes what dead processes left ``.open`` and merges
    every part."""
    if layout.process is None:
        parts = [layout.journals]
    else:
        cdxj.build_index([(layout.journals, "")], layout.part_index)
        if last:
            close_abandoned(layout.root)
        parts = journal_dirs(layout.root) if last else []
    if parts:
        cdxj.build_index(
            [(journals, "") for journals in parts],
            layout.index,
            cdx11=layout.cdx11 if cdx11 else None,
        )


def merge_index(crawl_dir: Path, *, close_dead: bool, cdx11: bool = False) -> None:
    """The index.cdxj of a crawl made by several processes (``--processes N``), from every
    process's journals, once they have all stopped. ``close_dead``: first close the ``.open``
    files that processes left (only for a finished crawl: an interrupted one keeps them for
    the resume repair, which keeps only the captures the frontier committed)."""
    layout = Layout(crawl_dir)
    if close_dead:
        close_abandoned(crawl_dir)
    parts = journal_dirs(crawl_dir)
    if parts:
        cdxj.build_index(
            [(journals, "") for journals in parts],
            layout.index,
            cdx11=layout.cdx11 if cdx11 else None,
        )


@dataclass(slots=True)
class Packaged:
    """How packaging went: the WACZ's error (not written), the signature's (written
    unsigned), or who signed it."""

    error: str | None = None
    signing_error: str | None = None
    signed_by: Identity | None = None

    def added_to(self, summary: Summary) -> Summary:
        """``summary`` saying how packaging went."""
        return dataclasses.replace(
            summary,
            wacz_error=self.error,
            wacz_signing_error=self.signing_error,
            wacz_signed_by=self.signed_by.describe() if self.signed_by is not None else None,
        )


def package_signed(
    crawl_dir: Path, output: Path, signer: Signer | None, described: Described
) -> Packaged:
    """:func:`package_crawl`, signed by ``signer`` when there is one."""
    attempt = SigningAttempt(signer) if signer is not None else None
    try:
        write_package(crawl_dir, output, described, attempt)
    except (OSError, OutputError) as exc:
        return Packaged(error=str(exc))
    if attempt is None:
        return Packaged()
    return Packaged(signing_error=attempt.error, signed_by=attempt.identity)


async def _package(run: Run, stages: Stages) -> Packaged:
    """The crawl's WACZ, signed if asked; what went wrong is logged (one line each)."""
    previous = stages.previous
    packaged = await asyncio.to_thread(
        package_signed,
        run.layout.root,
        run.layout.wacz,
        run.signer,
        Described(
            run.settings.description or None,
            list(run.seeds),
            previous.depends_on() if previous is not None else [],
        ),
    )
    if packaged.error is not None:
        stages.log.error("wacz-error", error=packaged.error)
    if packaged.signing_error is not None:
        stages.log.error("wacz-signing-error", error=packaged.signing_error)
    if packaged.signed_by is not None:
        stages.log.info("wacz-signed", by=packaged.signed_by.describe())
    return packaged


# ------------------------------------------------------------------------------ what is left


def log_end(log: Any, summary: Summary) -> None:
    """The log's last event: how the run ended, and its main figures."""
    log.info(
        "crawl-end",
        status=summary.status,
        reason=summary.reason,
        captures=summary.captures,
        pages=summary.pages,
        bytes_written=summary.bytes_written,
        duration_seconds=summary.duration_seconds,
    )


def crawl_summary(run: Run, stages: Stages, status: str, reason: str | None) -> Summary:
    """summary.json: the counters, how the run ended, and what it wrote; for a crawl directory
    of its own, the whole crawl across its runs (:meth:`Summary.across_runs`). A process of a
    shared crawl writes this run's figures, which its supervisor or the report adds up."""
    this_run = _run_summary(run, stages, status, reason)
    if run.process_id is not None:
        return this_run
    return this_run.across_runs(earlier_summary(run.layout), run_history(run.state))


def earlier_summary(layout: Layout) -> Summary | None:
    """What summary.json said before this run (None without one)."""
    written = read_json(layout.summary)
    return Summary.from_json(written) if written else None


def run_history(state: Mapping[str, Any]) -> list[RunEntry]:
    """The crawl's runs before this one as crawl.json records them (the last is this one)."""
    runs = state.get("runs")
    if not isinstance(runs, list):
        return []
    return [RunEntry.from_json(entry) for entry in runs[:-1] if isinstance(entry, Mapping)]


def run_figures(summary: Summary) -> dict[str, Any]:
    """The figures crawl.json keeps for a run (:class:`RunEntry`'s)."""
    entry = RunEntry.of(summary)
    return {
        "duration_seconds": entry.duration_seconds,
        "captures": entry.captures,
        "pages": entry.pages,
        "bytes_received": entry.bytes_received,
        "bytes_written": entry.bytes_written,
    }


def _run_summary(run: Run, stages: Stages, status: str, reason: str | None) -> Summary:
    layout, previous = run.layout, stages.previous
    frontier_stats = stages.frontier.statistics() if stages.frontier is not None else None
    seed_name = stages.scope.table.url if stages.scope is not None else lambda _: None
    return dataclasses.replace(
        Summary.counted(run.stats, seed_name),
        status=status,
        reason=reason,
        output=str(layout.root),
        resumed=run.resumed,
        seeds=run.seeds[:SUMMARY_SEEDS],
        warc_files=tuple(str(p.relative_to(layout.root)) for p in warc_files(layout.warcs)),
        index=str(layout.index.relative_to(layout.root)),
        wacz=layout.wacz.name if layout.wacz.exists() else None,
        # what later runs deduplicating against this one inherit originals through, and
        # the earlier WARC files this run's revisits need for replay
        dedup_sources=tuple(previous.source_paths()) if previous is not None else (),
        depends_on=tuple(previous.depends_on()) if previous is not None else (),
        traps=tuple(stages.scope.trap_summary()) if stages.scope is not None else (),
        robots=(
            dataclasses.asdict(stages.robots.statistics()) if stages.robots is not None else None
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
        qa=qa_figures(run, whole=stages.is_last()),
    )


def qa_figures(run: Run, *, whole: bool) -> dict[str, Any] | None:
    """``--qa``: summary.json's ``qa``, the totals over the crawl's ``qa.jsonl``
    (:func:`archiver.qa.run.totals`); for a process of a shared crawl that is not the last to
    leave (``whole`` False), the figures of the pages it checked, in the same fields (the
    crawl's totals are written by the last, or the supervisor of ``--processes N``)."""
    if not run.settings.qa:
        return None
    counters = run.stats.qa
    if not whole:
        return None if counters is None else QaSnapshot.of(counters).as_totals()
    return qa_totals(run.layout.root)


def qa_totals(crawl_dir: Path) -> dict[str, Any] | None:
    """The totals over ``crawl_dir``'s ``qa.jsonl`` (None when there is none)."""
    from archiver.qa.run import QA_LINES, totals  # noqa: PLC0415 - only for --qa

    lines = crawl_dir / QA_LINES
    return totals(lines) if lines.is_file() else None


def crawl_result(
    layout: Layout,
    status: str,
    reason: str | None,
    state: dict[str, Any],
    *,
    resumed: bool,
) -> CrawlResult:
    """Record how the run ended in crawl.json, and say what it left. A crawl.json that cannot
    be written leaves the run interrupted whatever it did (it says "running": the next run
    resumes and records the end)."""
    finish_status(state, status, reason)
    try:
        write_status(layout, state)
    except OSError as exc:
        status, reason = _worse(status, reason, f"crawl.json: {_cannot_write(exc)}")
    return unrecorded_result(layout, status, reason, resumed=resumed)


def not_started(
    layout: Layout, state: dict[str, Any], reason: str, *, resumed: bool
) -> CrawlResult:
    """A run that could not start writing (the disk full already): interrupted, with the
    reason in crawl.json when it can be written there."""
    finish_status(state, STATUS_INTERRUPTED, reason)
    with contextlib.suppress(OSError):
        write_status(layout, state)
    return unrecorded_result(layout, STATUS_INTERRUPTED, reason, resumed=resumed)


def unrecorded_result(
    layout: Layout, status: str, reason: str | None, *, resumed: bool
) -> CrawlResult:
    """What the run left, without a word written into the directory (the crawl directory is
    not the run's any more: nothing may be written into what replaced it)."""
    files = warc_files(layout.warcs) if layout.warcs.is_dir() else []
    return CrawlResult(
        status=status,
        reason=reason,
        output=layout.root,
        resumed=resumed,
        warc_files=files,
        index=layout.index if layout.index.exists() else None,
        cdx11=layout.cdx11 if layout.cdx11.exists() else None,
        wacz=layout.wacz if layout.wacz.exists() else None,
        summary=read_json(layout.summary),
    )


def already_completed(layout: Layout) -> CrawlResult:
    """A resumed crawl that had completed: nothing to do."""
    return CrawlResult(
        STATUS_COMPLETED,
        "already completed (use --overwrite to crawl again)",
        layout.root,
        resumed=True,
        warc_files=warc_files(layout.warcs),
        index=layout.index if layout.index.exists() else None,
        summary=read_json(layout.summary),
    )


# ------------------------------------------------------------------------------ after the fact


def index_paths(
    paths: Iterable[Path],
    output: Path | None = None,
    *,
    cdx11: bool = False,
    report: cdxj.ScanReport | None = None,
) -> tuple[int, Path]:
    """``archiver index``: one sorted CDXJ over crawl directories and/or WARC files.

    Crawl directories contribute their writers' journals (abandoned ``.open`` files are closed
    first); WARC and ARC files without a journal (any other directory's ``*.warc.gz``,
    ``*.warc``, ``*.arc.gz``, ``*.arc``) are read record by record, and what that left out goes
    to ``report``. File names in the index are base names: the WARC files of all the inputs
    belong in one archive directory for replay.
    """
    paths = list(paths)
    if not paths:
        raise ValueError("no paths to index")
    found_dirs: list[Path] = []
    loose: list[Path] = []
    for path in paths:
        if path.is_dir() and journal_dirs(path):
            close_abandoned(path)
            here = journal_dirs(path)
            found_dirs += here
            journaled = {
                p.name.removesuffix(cdxj.JOURNAL_SUFFIX) for d in here for p in cdxj.journals(d)
            }
            loose += [warc for warc in warc_files(path / "warcs") if warc.name not in journaled]
        elif path.is_dir():
            loose += archive_files(path)
        else:
            loose.append(path)
    if output is None:
        base = paths[0] if paths[0].is_dir() else paths[0].parent
        output = base / "index.cdxj"
    count = cdxj.build_index(
        [(directory, "") for directory in found_dirs],
        output,
        warcs=loose,
        cdx11=output.with_suffix(".cdx") if cdx11 else None,
        report=report,
    )
    return count, output


@dataclass(frozen=True, slots=True)
class Described:
    """What a crawl says about itself in its package (``None``: what summary.json says)."""

    description: str | None = None
    seeds: Sequence[str] | None = None
    depends_on: Sequence[Mapping[str, Any]] | None = None


def package_crawl(
    crawl_dir: Path,
    output: Path | None = None,
    *,
    description: str | None = None,
    seeds: Sequence[str] | None = None,
    depends_on: Sequence[Mapping[str, Any]] | None = None,
) -> Path:
    """Package a crawl directory as a WACZ (``CRAWL/CRAWL-NAME.wacz`` unless ``output``).

    The crawl's ``index.cdxj`` must be current (the crawler builds it before calling this).
    ``seeds`` and ``depends_on`` default to what the crawl's ``summary.json`` says (the crawler
    passes them, as it writes the WACZ before the summary). Raises :class:`OutputError` when
    the crawl has no WARC files or no index.
    """
    return write_package(crawl_dir, output, Described(description, seeds, depends_on))


def write_package(
    crawl_dir: Path, output: Path | None, described: Described, sign: wacz.Sign | None = None
) -> Path:
    """:func:`package_crawl`, signed by ``sign`` when given (:func:`package_signed`)."""
    seeds, depends_on = described.seeds, described.depends_on
    layout = Layout(crawl_dir)
    warcs = warc_files(layout.warcs)
    if not warcs:
        raise OutputError(f"{crawl_dir} has no WARC files to package")
    if not layout.index.is_file():
        raise OutputError(f"{crawl_dir} has no index.cdxj to package")
    summary = read_json(layout.summary)
    if seeds is None:
        listed = summary.get("seeds")
        seeds = [s for s in listed if isinstance(s, str)] if isinstance(listed, list) else []
    if depends_on is None:
        listed = summary.get("depends_on")
        depends_on = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    with _page_list(crawl_dir) as pages:
        contents = wacz.WaczContents(
            warcs=warcs,
            index=layout.index,
            pages=pages,
            title=crawl_dir.name,
            description=described.description,
            software=software_string(),
            seeds=seeds,
            depends_on=depends_on,
        )
        return wacz.write_wacz(contents, output or layout.wacz, sign=sign)


@contextlib.contextmanager
def _page_list(crawl_dir: Path) -> Iterator[Path]:
    """The crawl's page list: ``state/pages.jsonl``, or for a crawl of several processes
    (each lists its own pages in ``state/PROCESS/``) their lists joined in a temporary file."""
    sources = [layout.pages for layout in layouts(crawl_dir) if layout.pages.is_file()]
    if len(sources) <= 1:
        yield sources[0] if sources else Layout(crawl_dir).pages
        return
    joined = crawl_dir / "state" / "pages.jsonl.joined"
    try:
        with open(joined, "wb") as out:
            for source in sources:
                with open(source, "rb") as fh:
                    shutil.copyfileobj(fh, out)
        yield joined
    finally:
        joined.unlink(missing_ok=True)


__all__ = [
    "CrawlResult",
    "Described",
    "Packaged",
    "already_completed",
    "crawl_index",
    "crawl_result",
    "crawl_summary",
    "error_status",
    "finish",
    "index_paths",
    "log_end",
    "merge_index",
    "not_started",
    "package_crawl",
    "package_signed",
    "qa_totals",
    "seal_committed",
    "unrecorded_result",
    "verdict",
    "write_package",
]
