"""Building a crawl run from its settings: every stage, in pipeline order, in one place.

What flows between the stages (a worker carries one lease through all of them; each arrow is a
call, not a queue, except the frontier and the writer's queue)::

    seeds, sitemaps ─> scope ─> frontier.put_many                     discovery
    frontier.get ─> lease(url, redirects_left) ─> budgets, robots.txt   pipeline
        ─> fetcher.fetch ─> Exchange (raw bytes, digests)               fetch
        ─> records: response + request, or a revisit (dedup index,      recording
           earlier crawls) ─> writer queue ─> WARC file + index journal
        ─> Location / links / sitemap entries ─> scope ─> frontier      discovery
        ─> frontier.task_done(lease, outcome)                           outcomes
    at the end (:mod:`archiver.run.finish`, the reverse order): writer closed and sealed,
    fetcher, frontier, indexes closed ─> journals merged into index.cdxj ─> WACZ ─> summary

:func:`assemble` builds the stages in that order into :class:`Stages`, which
:mod:`archiver.run.finish` stops in reverse; a part stays None until it is built, so a run that
fails half-way is finished with what it has. The settings become each component's configuration
in :mod:`archiver.config.assemble`.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from archiver.config.assemble import (
    address_policy,
    allow_seed_addresses,
    browser_config,
    crawl_scope,
    default_output,
    fetch_config,
    frontier_config,
    media_resolver_config,
    politeness,
    record_factory,
    robots_checker,
    session_policy,
    sitemap_policy,
    writer_config,
)
from archiver.config.seeds import crawl_rules, seed_from_spec, wants_browser
from archiver.config.settings import Settings
from archiver.dedup.captured import CapturedUrls, MemoryCapturedUrls
from archiver.dedup.digests import DigestIndex, LayeredDigestIndex, MemoryDigestIndex
from archiver.dedup.previous import PreviousCrawls, open_previous
from archiver.fetch.cookies import CookieStore, FileCookieStore
from archiver.fetch.cookiestxt import CookieLine
from archiver.fetch.fetcher import Fetcher
from archiver.frontier import Backend, open_backend
from archiver.frontier.base import Frontier
from archiver.frontier.config import REDIS_SCHEMES
from archiver.index import cdxj
from archiver.media.resolver import YtDlpResolver
from archiver.models import CrawlItem, ResumeInfo
from archiver.pipeline.counters import CrawlStats
from archiver.pipeline.mediabudget import MediaBytes, MemoryMediaBytes
from archiver.pipeline.parts import BrowserParts, CheckParts, KeptRequest, Parts, RunContext
from archiver.pipeline.pipeline import Pipeline
from archiver.pipeline.session import SessionWatch
from archiver.policy.ignores import Exclusions, compile_patterns
from archiver.policy.netguard import AddressPolicy
from archiver.policy.robots import Robots, RobotsCache
from archiver.policy.scope import Scope
from archiver.policy.seeds import MemorySeedStore, Seed, SeedStore, seed_key
from archiver.policy.sitemaps import SitemapPolicy
from archiver.run.control import Additions, LiveControl
from archiver.run.disk import DiskGuard, Reserve
from archiver.run.log import CrawlLog, console_level
from archiver.run.output import Layout, RunStart, journal_dirs, prepare
from archiver.run.pages import PageList
from archiver.run.resume import repair_open_warcs
from archiver.run.stats import SUMMARY_SEEDS
from archiver.sign.signer import Signer
from archiver.timefmt import Clock, utcnow
from archiver.version import __version__

if TYPE_CHECKING:
    from archiver.browser.pool import BrowserPool
    from archiver.qa.check import SharedArchive
from archiver.warc.naming import safe_name_part
from archiver.warc.writer import WriteFn, Writer, WriterConfig


@dataclass(frozen=True, slots=True)
class Run:
    """Who this run is: what it was asked, where it writes, from which seeds, what it counts."""

    settings: Settings
    layout: Layout
    seeds: tuple[str, ...]
    stats: CrawlStats
    resumed: bool
    #: ``{hostname}-{pid}`` when several processes share the crawl (Redis frontier)
    process_id: str | None
    #: the cookies of ``--cookies FILE``, read before the run started
    cookie_file: tuple[CookieLine, ...] = ()
    #: who signs the WACZ (``--wacz-sign``, ``--wacz-sign-key``), made before the run started
    signer: Signer | None = None
    #: the seeds with rules of their own (``[[seed]]``, a seeds file's JSON lines)
    seed_rules: tuple[Seed, ...] = ()
    #: ``state/crawl.json``'s data, as this run keeps it up to date (its runs and figures)
    state: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Stages:
    """The parts of one run, filled by :func:`assemble` in pipeline order (None until built)."""

    crawl_log: CrawlLog
    log: Any
    previous: PreviousCrawls | None = None  #: --dedup-from / --revalidate-from sources
    frontier: Frontier | None = None
    dedup: DigestIndex = field(default_factory=MemoryDigestIndex)
    #: whether this process is the last of a shared crawl to leave (asked once it closed the
    #: frontier): the last one merges the index and packages the crawl
    is_last: Callable[[], bool] = lambda: True
    #: the URLs the crawl captured, where the backend keeps them (None: in memory)
    captured: CapturedUrls | None = None
    robots_cache: RobotsCache | None = None  #: robots.txt shared by the processes of a crawl
    #: the cookie jar shared by the processes of a crawl (None: this run's state file)
    cookie_store: CookieStore | None = None
    #: the rules of the seeds that have their own, kept for later runs and other processes
    seed_store: SeedStore = field(default_factory=MemorySeedStore)
    #: the media bytes each page took, where the backend counts them (None: in memory)
    media_bytes: MediaBytes | None = None
    #: yt-dlp's child processes (--media yt-dlp)
    media_resolver: YtDlpResolver | None = None
    scope: Scope | None = None
    robots: Robots | None = None
    sitemaps: SitemapPolicy = field(default_factory=lambda: SitemapPolicy(enabled=False))
    fetcher: Fetcher | None = None
    writer: Writer | None = None
    pages: PageList | None = None
    browser: BrowserPool | None = None
    #: ``--qa``: what each page's check replays from (closed at the end)
    checked_archive: SharedArchive | None = None
    session: SessionWatch | None = None  #: --logged-out, --login-check
    pipeline: Pipeline | None = None
    control: LiveControl | None = None  #: the ignores and control.toml, watched
    #: the SSRF guard's addresses (the seeds' own are allowed, batch by batch for a seeds file)
    addresses: AddressPolicy | None = None
    #: the seeds' (host, port) looked up for ``addresses`` so far
    seed_hosts: set[tuple[str, int]] = field(default_factory=set)
    #: the crawl directory as it was when the run started, and the free-space floor
    guard: DiskGuard | None = None
    #: space kept for the run's last writes on a full disk (released when it finishes)
    reserve: Reserve | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """What a caller of the crawler may give besides the settings (tests, mostly)."""

    console: IO[str] | None = None  #: where log lines for a person go
    backend: Backend | None = None  #: a frontier backend built by the caller, used instead
    write_fn: WriteFn = os.write  #: the writer's ``write`` (a full disk can be simulated)
    clock: Clock = utcnow  #: the time source of WARC-Dates
    pipeline_class: type[Pipeline] = Pipeline
    #: one process of ``--processes N``: the supervisor merges the index, packages the WACZ
    #: and writes the crawl's summary once every process has stopped, so this one never does
    supervised: bool = False
    #: URL -> the request with a body to make for it (``archiver patch``: a POST a replayed
    #: page made)
    kept_requests: Mapping[str, KeptRequest] = field(default_factory=dict)


def process_id(settings: Settings) -> str | None:
    """``{hostname}-{pid}`` when several processes share the crawl (a Redis frontier): it names
    this process's state directory and its WARC series, so nothing collides."""
    if settings.frontier.startswith(REDIS_SCHEMES):
        return safe_name_part(f"{socket.gethostname()}-{os.getpid()}")
    return None


def output_layout(settings: Settings, process: str | None) -> Layout:
    return Layout(settings.output or default_output(settings.seeds), process=process)


async def open_output(settings: Settings, layout: Layout) -> tuple[RunStart, PreviousCrawls | None]:
    """Fresh start or resume (with the output lock held), and the earlier crawls it refers to.

    The earlier crawls are checked before anything is written: a source that is not a completed
    crawl is a usage error, not a failed run; their lookup files are built here (streamed,
    cached)."""
    previous = None
    if settings.dedup_from or settings.revalidate_from:
        previous = await open_previous(
            settings.dedup_from, settings.revalidate_from, cache_dir=layout.state / "lookups"
        )
    try:
        start = prepare(layout, overwrite=settings.overwrite, settings_json=settings.to_json())
    except BaseException:
        if previous is not None:
            await previous.close()
        raise
    return start, previous


def open_log(
    settings: Settings,
    layout: Layout,
    console: IO[str] | None,
    *,
    on_failure: Callable[[OSError], None] | None = None,
) -> CrawlLog:
    """The run's log (crawl.log.jsonl, and crawl.log with --heritrix-log), once the
    directories it writes into exist; ``on_failure`` is told when it cannot be written."""
    layout.warcs.mkdir(parents=True, exist_ok=True)
    layout.journals.mkdir(parents=True, exist_ok=True)
    return CrawlLog(
        layout.log,
        console=console or sys.stderr,
        console_level=console_level(quiet=settings.quiet, verbose=settings.verbose),
        heritrix=layout.heritrix_log if settings.heritrix_log else None,
        on_failure=on_failure,
    )


async def assemble(run: Run, stages: Stages, options: Options) -> None:
    """Build and start every stage of the run, in pipeline order, into ``stages``."""
    s, layout, log = run.settings, run.layout, stages.log
    if stages.previous is not None:
        for warning in stages.previous.warnings:
            log.warning("dedup-source", warning=warning)
    info = await open_frontier(run, stages, options.backend)
    if options.supervised:
        stages.is_last = lambda: False
    frontier = stages.frontier
    assert frontier is not None
    log.info(
        "crawl-start",
        seeds=list(run.seeds[:SUMMARY_SEEDS]),
        seeds_file=str(s.seeds_file) if s.seeds_file is not None else None,
        output=str(layout.root),
        resumed=run.resumed,
        frontier=s.frontier,
        version=__version__,
        requeued_in_flight=info.requeued_in_flight,
    )
    if run.resumed:
        await repair_open_warcs(layout, frontier, log, process_id=run.process_id)
    scope = stages.scope = open_scope(run, stages)
    await stages.seed_store.keep_seeds(
        {seed.key: seed.spec for seed in run.seed_rules if seed.spec}
    )
    control = stages.control = live_control(run, stages, scope)
    robots = stages.robots = robots_checker(
        s, set_host_delay=frontier.set_host_delay, shared=stages.robots_cache
    )
    sitemaps = stages.sitemaps = sitemap_policy(s)
    policy = stages.addresses = await address_policy(s, run.seeds)
    fetcher = stages.fetcher = Fetcher(
        fetch_config(s, run.seeds, run.cookie_file),
        policy,
        clock=options.clock,
        cookie_store=stages.cookie_store or FileCookieStore(layout.cookies),
    )
    await fetcher.start()
    if stages.previous is not None:
        # this run's own index first, then the earlier crawls (only lookups reach them)
        stages.dedup = LayeredDigestIndex(stages.dedup, stages.previous)
    factory = record_factory(s, options.clock)
    writer = stages.writer = Writer(
        run_writer_config(run),
        factory,
        write_fn=options.write_fn,
        auto_seal=False,
        guard=stages.guard.check if stages.guard is not None else None,
    )
    writer.start()
    pages = stages.pages = PageList(layout.pages)
    browser = await open_browser(run, stages)
    session = stages.session = session_watch(run, fetcher, frontier)
    media_resolver = await open_media_resolver(run, stages)
    parts = Parts(
        frontier=frontier,
        robots=robots,
        fetcher=fetcher,
        factory=factory,
        dedup=stages.dedup,
        previous=stages.previous,
        writer=writer,
        scope=scope,
        sitemaps=sitemaps,
        pages=pages,
        browser=browser,
        exclusions=control.exclusions,
        kept_requests=options.kept_requests,
        session=session,
        media_bytes=stages.media_bytes or MemoryMediaBytes(),
        media_resolver=media_resolver,
    )
    context = RunContext(s, run.stats, log, stages.crawl_log.info_event)
    pipeline = stages.pipeline = options.pipeline_class(context, parts)
    # the operator's added URLs, now that they can be queued (a dead run's taken up again)
    control.additions = Additions(layout, pipeline.add, log)
    control.additions.recover()


def open_scope(run: Run, stages: Stages) -> Scope:
    """The scope, with every seed's rules: the seeds of this run in their order (a seed with
    rules of its own in its place), and a table that asks the frontier's seed store for the
    seeds of URLs queued by other processes or earlier runs."""
    s, store = run.settings, stages.seed_store

    async def load(keys: Collection[int]) -> list[Seed]:
        specs = await store.seed_specs(keys)
        return [seed for spec in specs.values() if (seed := seed_from_spec(spec, s)) is not None]

    own, default = {seed.url: seed for seed in run.seed_rules}, crawl_rules(s)
    ordered = (own.get(url) or Seed(url, default) for url in run.seeds)
    return crawl_scope(s, run.seeds, ordered, load)


def live_control(run: Run, stages: Stages, scope: Scope) -> LiveControl:
    """The watcher of ``ignores`` and ``control.toml`` (:mod:`archiver.run.control`), with
    both read once already: their patterns and politeness hold from the first lease on."""
    assert stages.frontier is not None
    control = LiveControl(
        run.layout,
        exclusions=Exclusions(compile_patterns(scope.exclusions())),
        frontier=stages.frontier,
        defaults=politeness(run.settings),
        log=stages.log,
    )
    control.load()
    return control


async def open_frontier(run: Run, stages: Stages, injected: Backend | None) -> ResumeInfo:
    """The frontier backend (:func:`archiver.frontier.open_backend`), opened, and what lives in
    its store: the crawl's own digest index (in memory unless the backend keeps one), robots.txt
    fetches shared by the processes of a crawl, and whether this process is the last of the
    crawl to leave."""
    backend = injected or open_backend(
        frontier_config(run.settings, state_db=run.layout.frontier_db, process_id=run.process_id),
        log=stages.log,
    )
    stages.frontier = backend.frontier
    info = await backend.frontier.open()
    if backend.digests is not None:
        # survives a resume (SQLite), or shared by every process of the crawl (Redis)
        stages.dedup = backend.digests
    stages.captured = backend.captured
    stages.robots_cache = backend.robots_cache
    stages.cookie_store = backend.cookies
    if backend.seeds is not None:
        stages.seed_store = backend.seeds
    stages.media_bytes = backend.media
    stages.is_last = lambda: backend.is_last
    return info


async def open_browser(run: Run, stages: Stages) -> BrowserParts | None:
    """The browser stage (``--browser all|auto``, or ``--qa`` whose checks replay pages in
    it): its pool of tabs, started (what an earlier run's Chromium left in the state directory
    is reaped now; Chromium itself starts with the first page), the recall of what the crawl
    captured, and with ``--qa`` the archive the checks replay from."""
    s = run.settings
    if not wants_browser(s, run.seed_rules) and not s.qa:
        return None
    # imported here: a static crawl does not load the browser stage at all
    from archiver.browser.exchange import MAX_FULFILL_BODY  # noqa: PLC0415
    from archiver.browser.pool import BrowserPool  # noqa: PLC0415
    from archiver.pipeline.cookiesync import BrowserCookies  # noqa: PLC0415
    from archiver.pipeline.recall import Recall  # noqa: PLC0415

    pool = stages.browser = BrowserPool(browser_config(s, run.layout.state / "browser"))
    await pool.start()
    recall = Recall(
        stages.captured or MemoryCapturedUrls(), run.layout.warcs, max_body=MAX_FULFILL_BODY
    )
    checks = open_checks(run, stages) if s.qa else None
    jar = stages.fetcher.cookies if stages.fetcher is not None else None
    cookies = BrowserCookies(pool, jar) if jar is not None else None
    return BrowserParts(
        pool,
        recall,
        MAX_FULFILL_BODY,
        references=s.qa,
        checks=checks,
        cookies=cookies,
    )


def open_checks(run: Run, stages: Stages) -> CheckParts:
    """``--qa``: the archive each page's check replays from, what the crawl has written so far
    (every process's journals, followed), and the earlier crawls its revisits refer to."""
    from archiver.browser.exchange import MAX_FULFILL_BODY  # noqa: PLC0415
    from archiver.qa.archive import Archive, earlier_indexes  # noqa: PLC0415
    from archiver.qa.check import SharedArchive  # noqa: PLC0415
    from archiver.qa.journals import JournalIndex  # noqa: PLC0415

    layout = run.layout
    root = layout.root
    journaled = JournalIndex(
        layout.state / "replay-index.sqlite", lambda: journal_dirs(root), layout.warcs
    )
    earlier = earlier_indexes([path for path in run.settings.dedup_from if path.is_dir()])
    archive = stages.checked_archive = SharedArchive(Archive(journaled, earlier, MAX_FULFILL_BODY))
    return CheckParts(archive, root)


def session_watch(run: Run, fetcher: Fetcher, frontier: Frontier) -> SessionWatch | None:
    """What tells the crawl that its login session ended (``--logged-out``,
    ``--login-check``), or None when nothing was asked."""
    policy = session_policy(run.settings)
    return SessionWatch(policy, fetcher, frontier) if policy.active else None


async def open_media_resolver(run: Run, stages: Stages) -> YtDlpResolver | None:
    """yt-dlp's resolver (``--media yt-dlp``), its first child started: yt-dlp that cannot run
    stops the crawl here, before any page is fetched. Its children never reach the network."""
    if run.settings.media != "yt-dlp":
        return None
    resolver = stages.media_resolver = YtDlpResolver(media_resolver_config(run.settings))
    version = await resolver.start()
    stages.log.info("yt-dlp-ready", version=version, network_isolated=resolver.isolated)
    return resolver


def run_writer_config(run: Run) -> WriterConfig:
    """This run's writer: its WARC series in the crawl's ``warcs/``, named after this process
    in a shared crawl (else this machine), its index lines in this process's journals."""
    layout = run.layout
    return writer_config(
        run.settings,
        directory=layout.warcs,
        journal=cdxj.writer_journal(layout.journals),
        crawl_name=layout.root.name,
        host=run.process_id or safe_name_part(socket.gethostname()),
    )


def seed_items(
    run: Run, sitemaps: SitemapPolicy, seeds: tuple[str, ...] | list[str] | None = None
) -> list[CrawlItem]:
    """What the crawl starts from: the seeds (the run's, or a later batch of its seeds file;
    each judged by its own rules), then the sitemaps they imply."""
    seeds = run.seeds if seeds is None else seeds
    redirects = run.settings.max_redirects
    items = [CrawlItem(url=url, redirects_left=redirects, seed=seed_key(url)) for url in seeds]
    return items + sitemaps.start_items(seeds)


async def more_seeds(run: Run, stages: Stages, seeds: list[Seed]) -> None:
    """A later batch of the seeds file (:mod:`archiver.run.seeds`), taken in as the run's
    first seeds were: their rules kept in the frontier's seed store (for the crawl's other
    processes and later runs), their sites in scope, their addresses allowed by the SSRF
    guard, then queued with the sitemaps they imply. (Credential headers stay with the hosts
    of the seeds known at the start and ``--credential-host``; the browser is started for the
    seeds known at the start, or for ``--qa``: without it, a later seed's ``browser`` is
    logged and left aside.)"""
    assert stages.scope is not None and stages.pipeline is not None
    own = {seed.key: seed.spec for seed in seeds if seed.spec is not None}
    if own:
        await stages.seed_store.keep_seeds(own)
    stages.scope.add_seeds(seeds)
    urls = [seed.url for seed in seeds]
    if stages.addresses is not None:
        await allow_seed_addresses(stages.addresses, run.settings, urls, stages.seed_hosts)
    if stages.browser is None:
        for seed in seeds:
            if seed.rules.browser != "off":
                stages.log.warning(
                    "seed-browser-off",
                    seed=seed.url,
                    browser=seed.rules.browser,
                    note="the browser starts for the seeds known at the start only; "
                    "this seed is fetched without it",
                )
    await stages.pipeline.put(seed_items(run, stages.sitemaps, urls))


__all__ = [
    "Options",
    "Run",
    "Stages",
    "assemble",
    "more_seeds",
    "open_frontier",
    "open_log",
    "open_output",
    "output_layout",
    "process_id",
    "run_writer_config",
    "seed_items",
]
