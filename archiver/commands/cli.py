"""The ``archiver`` command: argument parsing, exit codes, signals. Nothing imports this module.

Exit codes: 0 completed (or stopped at a --max-* limit), 1 failed, 2 wrong usage or setting,
3 interrupted and resumable (re-run the same command to continue), 4 output locked by another
run. Errors are one line on stderr, never a traceback (the crawl log keeps the details).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from archiver.commands import login as login_command
from archiver.commands.exits import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_USAGE,
    exit_code,
)
from archiver.commands.hangup import hangup_stops
from archiver.commands.progress import Display
from archiver.config.assemble import software_string
from archiver.config.settings import Settings, load_settings, option_name, setting_fields
from archiver.errors import ArchiverError, LockedError, SettingsError, SignatureError, StateError
from archiver.frontier.listing import STATES
from archiver.processes.keeper import die_with_parent
from archiver.processes.supervisor import CHILD_COMMAND, Supervisor, read_child_message
from archiver.run.crawler import CrawlControl, Crawler, CrawlResult
from archiver.run.stats import Summary, human_bytes
from archiver.version import __version__

if TYPE_CHECKING:
    from archiver.index.cdxj import ScanReport

PROG = "archiver"
#: Seconds a crawler process of ``--processes N`` may take to stop once its supervisor is
#: gone, before it exits whatever it was doing (its state is repaired at the next run).
ORPHAN_EXIT = 60.0


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _size_text(value: int) -> str:
    for unit, size in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


def _duration_text(value: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    return f"{value:g}s"


def default_text(value: Any, metavar: str | None = None, help_text: str = "") -> str:
    """A setting's default as a person would write it: ``1GB``, ``30s``, ``on``, ``no limit``."""
    if value is None or value == ():
        return "no limit" if "no limit" in help_text else "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    if metavar == "SIZE" and isinstance(value, int):
        return _size_text(value)
    if metavar == "DURATION" and isinstance(value, int | float):
        return _duration_text(float(value))
    if isinstance(value, str) and not value:
        return "empty"
    return str(value)


def _add_setting_options(parser: argparse.ArgumentParser) -> None:
    groups: dict[str, argparse._ArgumentGroup] = {}
    for f in setting_fields():
        meta = f.metadata
        if not meta["cli"]:
            continue
        section = meta["section"]
        group = groups.get(section)
        if group is None:
            group = groups[section] = parser.add_argument_group(
                f"{section} settings", f"(TOML: the [{section}] table of --config)"
            )
        flags = [option_name(f)]
        if meta["short"]:
            flags.insert(0, meta["short"])
        help_text = str(meta["help"])
        metavar = meta["metavar"]
        if meta["choices"]:
            metavar = metavar or "{" + ",".join(meta["choices"]) + "}"
        if "(default:" not in help_text:
            help_text += f" (default: {default_text(f.default, metavar, help_text)})"
        help_text = help_text.replace("%", "%%")
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": help_text}
        if f.type in ("bool", bool) and meta.get("negative"):
            group.add_argument(*flags, action="store_false", **kwargs)
        elif f.type in ("bool", bool):
            group.add_argument(*flags, action=argparse.BooleanOptionalAction, **kwargs)
        elif meta["repeat"]:
            group.add_argument(*flags, action="append", metavar=metavar, **kwargs)
        else:
            group.add_argument(*flags, metavar=metavar or "VALUE", **kwargs)


def _port(text: str) -> int:
    """A TCP port for argparse: its error names the allowed values."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return port


def _add_steering_commands(sub: Any) -> None:
    """``pause``, ``unpause``, ``add`` and ``queue``: a running (or stopped) crawl steered
    through its directory."""
    pause = sub.add_parser(
        "pause",
        help="pause a crawl: no new fetch starts until it is unpaused",
        description=(
            "Make DIR/paused. The crawl running in DIR (every process of it) starts no new "
            "fetch within a second; fetches in flight finish and are recorded, nothing is "
            "lost. The progress display, /status and /metrics say paused; a signal still "
            "stops the crawl. A stopped crawl resumes paused while the file is there."
        ),
    )
    pause.add_argument("path", metavar="DIR", help="crawl directory")
    unpause = sub.add_parser(
        "unpause",
        help="let a paused crawl fetch again",
        description="Remove DIR/paused: the crawl in DIR goes on within a second.",
    )
    unpause.add_argument("path", metavar="DIR", help="crawl directory")

    add = sub.add_parser(
        "add",
        help="queue URLs into a running or stopped crawl",
        description=(
            "Check each URL against the crawl's scope (its seeds and their rules, --include, "
            "--exclude, DIR/ignores) and write them to DIR/add/ for the crawl to queue: a "
            "running crawl takes them within seconds, a stopped one when it resumes. Each is "
            "logged as added by the operator. A URL that is malformed or out of scope is an "
            "error (exit 2) and nothing is added."
        ),
    )
    add.add_argument("path", metavar="DIR", help="crawl directory")
    add.add_argument("urls", nargs="*", metavar="URL", help="URLs to queue")
    add.add_argument(
        "--file",
        metavar="FILE",
        help="also the URLs of FILE, one a line, # comments allowed (default: none)",
    )

    queue = sub.add_parser(
        "queue",
        help="list a crawl's frontier: its URLs by state, and the counts",
        description=(
            "List the URLs of the crawl in DIR, running or stopped, one a line as they are "
            "read (STATE<TAB>URL when more than one state is listed), then on standard error "
            "the frontier's counts by state. Memory stays small whatever the crawl's size. A "
            "Redis frontier keeps finished URLs as keys only: it lists queued and in-flight "
            "URLs, and counts the rest."
        ),
    )
    queue.add_argument("path", metavar="DIR", help="crawl directory")
    queue.add_argument(
        "--state",
        action="append",
        choices=STATES,
        help="only URLs in this state (repeatable; default: every state the frontier lists)",
    )
    queue.add_argument(
        "--match",
        metavar="REGEX",
        help="only URLs this regular expression finds (default: every URL)",
    )
    queue.add_argument(
        "--frontier",
        metavar="URL",
        help="the crawl's Redis URL with its password, which the crawl records without "
        "(default: the recorded one)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="An archiving web crawler: byte-exact WARC/1.1, CDXJ, WACZ.",
        epilog=(
            "Try it: archiver serve-sample, then archiver crawl http://127.0.0.1:8000/ -o "
            "crawls/sample, archiver report crawls/sample, archiver replay crawls/sample. "
            "archiver COMMAND --help explains every option."
        ),
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    crawl = sub.add_parser(
        "crawl",
        help="crawl a site into WARC files and an index",
        description=(
            "Crawl from the seed URLs into OUTPUT (WARC files, index.cdxj, crawl.log.jsonl, "
            "summary.json). Re-running the same command on the same output resumes an "
            "interrupted crawl. Every option can also be set in a TOML file (--config); "
            "command-line options override it. Exit codes: 0 completed, 1 failed, 2 usage, "
            "3 interrupted (resumable), 4 locked."
        ),
    )
    crawl.add_argument("seeds", nargs="*", metavar="URL", help="seed URLs")
    crawl.add_argument(
        "--config", metavar="FILE", help="TOML settings file (see config/default.toml)"
    )
    crawl.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=None,
        help="more console output: -v every fetch, -vv debug (default: warnings only)",
    )
    _add_setting_options(crawl)

    idx = sub.add_parser(
        "index",
        help="build or merge the CDXJ index of crawl directories or WARC files",
        description=(
            "Merge the per-WARC index journals of one or more crawl directories (for example "
            "the output directories of several processes of one Redis crawl) into one sorted "
            "CDXJ. WARC and ARC files without a journal (other tools' files, or files left "
            ".open by a killed process) are read record by record; a damaged record is left "
            "out, reported on stderr, and reading goes on after it."
        ),
    )
    idx.add_argument("paths", nargs="+", metavar="DIR", help="crawl directories or WARC files")
    idx.add_argument("-o", "--output", metavar="FILE", help="index file (default: DIR/index.cdxj)")
    idx.add_argument(
        "--allow-partial",
        action="store_true",
        help="exit 0 even when damaged records were left out of the index (each is still "
        "reported on stderr; default: exit 1)",
    )
    idx.add_argument(
        "--cdx11",
        action="store_true",
        help="also write the classic 11-field CDX (index.cdx) next to it (default: off)",
    )

    ver = sub.add_parser(
        "verify",
        help="check WARC files and their index, or a WACZ package and its signature",
        description=(
            "Walk every gzip member and record of every WARC and ARC file under DIR, going on "
            "after a damaged one; recompute block and payload digests (payload: transfer coding "
            "removed, content coding kept); judge every file by WARC 1.x (its own version) and "
            "the files archiver wrote by archiver's own rules too; check that every index line "
            "points at its record. Given a .wacz file: check every file's sha256 against "
            "datapackage.json, datapackage.json against datapackage-digest.json, and the "
            "signature, and say who signed and when."
        ),
    )
    ver.add_argument(
        "paths", nargs="+", metavar="PATH", help="crawl directory, WARC dir or files, or .wacz"
    )
    ver.add_argument(
        "--index", metavar="FILE", help="CDXJ index to check (default: DIR/index.cdxj)"
    )
    ver.add_argument(
        "--trusted-roots",
        metavar="FILE",
        help=(
            "PEM file of root certificates to trust for domain signatures and time stamps "
            "(default: authsign's roots only: Let's Encrypt, FreeTSA, DigiCert)"
        ),
    )
    ver.add_argument("--json", action="store_true", help="print the report as JSON (default: text)")
    ver.add_argument(
        "--archiver-rules",
        action="store_true",
        help="judge every file by archiver's own stricter rules too (WARC/1.1 only, warcinfo "
        "first, each response followed by its request); default: only the files archiver wrote",
    )

    keygen = sub.add_parser(
        "keygen",
        help="make a key to sign WACZ packages with (--wacz-sign-key)",
        description=(
            "Write a new ECDSA P-384 private key to FILE (PEM, mode 0600, never over an "
            "existing file) and its public key to FILE.pub, and print the public key's sha-256 "
            "fingerprint. Packages signed with it carry the public key (the anonymous identity "
            "of WACZ signing): publish the fingerprint so readers can tell the key is yours."
        ),
    )
    keygen.add_argument("path", metavar="FILE", help="private key file to create")

    wz = sub.add_parser(
        "wacz",
        help="package a crawl as a WACZ file",
        description=(
            "Package a crawl directory as a WACZ 1.1.1 file for ReplayWeb.page: its WARC files, "
            "its index (ZipNum), its pages with titles, datapackage.json. --wacz does this at "
            "the end of a finished crawl; this command packages any crawl later."
        ),
    )
    wz.add_argument("path", metavar="DIR", help="crawl directory")
    wz.add_argument("-o", "--output", metavar="FILE", help="WACZ file (default: DIR/DIR-NAME.wacz)")

    rep = sub.add_parser(
        "report",
        help="render an HTML report of a crawl",
        description=(
            "Render a self-contained HTML report of a crawl directory from its summary.json "
            "and crawl.log.jsonl: captures over time, status and MIME breakdown, top hosts, "
            "largest resources, failures and skips with example URLs, files written. The file "
            "loads nothing from the network."
        ),
    )
    rep.add_argument("path", metavar="DIR", help="crawl directory")
    rep.add_argument(
        "-o", "--output", metavar="FILE", help="report file (default: DIR/report.html)"
    )

    rpl = sub.add_parser(
        "replay",
        help="replay a crawl in pywb",
        description=(
            "Start pywb on a crawl's WARC files and index, print the URL to open, and serve "
            "until Ctrl-C. pywb is not a dependency of archiver (it pins conflicting "
            "libraries): install it in its own environment, e.g. pipx install pywb, or "
            "python3 -m venv ~/.pywb && ~/.pywb/bin/pip install pywb==2.10.0."
        ),
    )
    rpl.add_argument("path", metavar="DIR", help="crawl directory")
    rpl.add_argument(
        "--port",
        type=_port,
        default=8080,
        help="port on 127.0.0.1; 0 picks a free one (default: 8080)",
    )
    rpl.add_argument(
        "--pywb-venv",
        metavar="DIR",
        default=os.environ.get("ARCHIVER_PYWB") or None,
        help=(
            "the environment pywb is installed in (a venv directory, or its wayback script) "
            "(default: $ARCHIVER_PYWB, else wayback on PATH)"
        ),
    )

    from archiver.commands.qa import add_parser as add_qa  # noqa: PLC0415
    from archiver.commands.qa import add_patch_parser  # noqa: PLC0415

    add_qa(sub)
    add_patch_parser(sub)

    sample = sub.add_parser(
        "serve-sample",
        help="serve a small local sample site to try a crawl on",
        description=(
            "Serve a small sample site on 127.0.0.1 until Ctrl-C: about twenty pages, CSS with "
            "@import and url() images, a srcset, redirects, a 404, a gzip-encoded page, the "
            "same image at two URLs (a revisit), robots.txt and sitemap.xml."
        ),
    )
    sample.add_argument(
        "--port",
        type=_port,
        default=8000,
        help="port on 127.0.0.1; 0 picks a free one (default: 8000)",
    )

    login_command.add_parser(sub, _port)

    ign = sub.add_parser(
        "ignore",
        help="skip URLs matching a pattern in a crawl, even while it runs",
        description=(
            "Append PATTERN (a Python regular expression, searched in each URL) to DIR/ignores. "
            "A running crawl reads the file again within seconds: URLs it discovers or leases "
            "from then on that match are skipped (reason 'ignored'), those already queued "
            "included. The file may be edited by hand too: one pattern per line, # comments."
        ),
    )
    ign.add_argument("path", metavar="DIR", help="crawl directory")
    ign.add_argument("pattern", metavar="PATTERN", help="regular expression")

    reb = sub.add_parser(
        "rebuild-frontier",
        help="rebuild a stopped crawl's lost or damaged frontier database from its WARC files",
        description=(
            "Make DIR/state/frontier.sqlite again from the crawl's WARC files and "
            "state/crawl.json: every captured URL done, the dedup digests, and the queue "
            "found by walking the crawl again from its seeds through what it captured. A "
            "damaged database is kept beside it. Then the crawl's command resumes the crawl, "
            "capturing nothing twice."
        ),
    )
    reb.add_argument("path", metavar="DIR", help="crawl directory")

    _add_steering_commands(sub)

    sub.add_parser(
        "version",
        help="print the version of archiver and its libraries",
        description="Print archiver's version and those of the libraries that shape its output.",
    )
    return parser


def typed_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the user typed on the command line, and only those.

    Every setting option defaults to ``None`` (absent), so a value from ``--config`` is
    overridden only by an option actually given. The positional seed list is the one argument
    argparse fills even when nothing was typed (``nargs="*"`` gives ``[]``): an empty list is
    absent too, or a job file's ``seeds`` would be replaced by no seeds at all.
    """
    overrides: dict[str, Any] = {}
    for f in setting_fields():
        value = getattr(args, f.name, None)
        if value is None or (f.name == "seeds" and not value):
            continue
        overrides[f.name] = tuple(value) if f.name == "seeds" else value
    return overrides


def _settings_from_args(args: argparse.Namespace) -> Settings:
    config = Path(args.config) if args.config else None
    return load_settings(config, typed_overrides(args))


async def _run_crawl(settings: Settings, display: Display) -> CrawlResult:
    if settings.job is None:
        await _log_in(settings, display)
        return await _run_crawler(settings, display)
    from archiver.run import jobs  # noqa: PLC0415 - only scheduled runs need it

    # the job lock is held for the whole run: a second run of the job raises LockedError (4)
    with jobs.open_run(settings.job, settings) as run:
        for note in run.notes:
            display.log_stream.write(f"archiver: job {run.job.name}: {note}\n")
        await _log_in(run.settings, display)
        result = await _run_crawler(run.settings, display)
        run.finish(result.status, exit_code(result.status), result.reason, result.summary)
        return result


async def _log_in(settings: Settings, display: Display) -> None:
    """``--login-script``: log in afresh (into ``--profile``) before the crawl starts."""
    if settings.login_script is not None:
        await login_command.log_in_for_crawl(settings, display.log_stream)


async def _run_crawler(settings: Settings, display: Display) -> CrawlResult:
    crawler: CrawlControl
    if settings.processes > 1:
        crawler = Supervisor(settings, console=display.log_stream)
    else:
        crawler = Crawler(settings, console=display.log_stream)
    if crawler.layout.status_file.exists() and not settings.overwrite:
        display.log_stream.write(f"archiver: resuming the crawl in {crawler.layout.root}\n")
    return await _run_with_signals(crawler, display)


async def _run_with_signals(crawler: CrawlControl, display: Display) -> CrawlResult:
    """Run ``crawler`` with the progress display; SIGINT and SIGTERM stop it (the first
    gracefully, the second at once), and so does SIGHUP unless the command was detached from
    its terminal (:func:`hangup_stops`)."""
    loop = asyncio.get_running_loop()
    signals = 0
    say = display.log_stream
    terminals = [fd for fd in (1, 2) if _isatty(fd)]  # after a hang-up isatty() says no

    def on_signal(signame: str) -> None:
        nonlocal signals
        signals += 1
        if signame == "SIGHUP":
            _leave_terminal(terminals)  # it is gone: what would be shown there goes nowhere
        try:
            if signals == 1:
                say.write(
                    f"archiver: {signame}: finishing in-flight fetches, then stopping "
                    "(again to stop at once)\n"
                )
            else:
                say.write(f"archiver: {signame}: stopping now\n")
        except (OSError, ValueError):
            pass  # nowhere to say it: the crawl log and crawl.json still will
        crawler.request_stop(immediate=signals > 1, reason=f"stopped by {signame}")

    watched = [signal.SIGINT, signal.SIGTERM]
    hangup = signal.getsignal(signal.SIGHUP)
    if hangup_stops(hangup, os.environ):
        watched.append(signal.SIGHUP)
    else:  # detached: a SIGHUP must not kill the crawl (its default action would)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    for sig in watched:
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        settings = crawler.settings
        async with (
            _status_server(crawler, settings) as server,
            display.watching(crawler),
        ):
            if server is not None and not settings.quiet:
                say.write(f"archiver: status at {server.url} (metrics, status, healthz)\n")
            return await crawler.run()
    finally:
        for sig in watched:
            loop.remove_signal_handler(sig)
        if signal.SIGHUP not in watched:
            signal.signal(signal.SIGHUP, hangup)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _leave_terminal(fds: Sequence[int]) -> None:
    """Point the descriptors that were a terminal at /dev/null: after a hang-up every write
    there fails (EIO), and the crawl must finish without a word to it."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)


def _status_server(crawler: CrawlControl, settings: Settings) -> Any:
    """The status endpoint's server while the crawl runs (``--status-port``), or nothing; the
    endpoint's modules (prometheus-client, aiohttp.web) are loaded only when asked for."""
    if settings.status_port is None:
        return contextlib.nullcontext(None)
    from archiver.commands import status  # noqa: PLC0415 - only with --status-port

    return status.serving(
        crawler,
        settings.status_host,
        settings.status_port,
        stall_after=settings.stall_after or 300.0,
    )


def _run(coro: Any) -> Any:
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)


def final_line(result: CrawlResult) -> str:
    """The one line ``--quiet`` prints: how the crawl ended, what it wrote, where."""
    reason = f" ({result.reason})" if result.reason else ""
    counts = ""
    if result.summary:
        s = Summary.from_json(result.summary)
        counts = (
            f": {s.captures} captures, {human_bytes(s.bytes_written)} of WARC "
            f"in {s.duration_seconds:.1f} s"
        )
    return f"archiver: {result.status}{reason}{counts} -> {result.output}"


def cmd_crawl(args: argparse.Namespace) -> int:
    settings = _settings_from_args(args)
    display = Display(settings, sys.stderr)
    result = _run(_run_crawl(settings, display))
    with contextlib.suppress(OSError, ValueError):  # the terminal may be gone (a hang-up)
        if not settings.quiet:
            display.print_summary(result)
        else:
            sys.stderr.write(final_line(result) + "\n")
    if settings.qa and exit_code(result.status) == EXIT_OK and result.output is not None:
        return _prove(settings, Path(result.output))
    return exit_code(result.status)


def _prove(settings: Settings, crawl_dir: Path) -> int:
    """``--qa``: every page was checked as it was captured; the pages that were not (listed by
    an earlier run without ``--qa``, or whose lease ended in a browser failure) are checked
    now and what they lack patched (``archiver patch``). The outcome is printed; the crawl's
    exit code stands (``archiver qa DIR --fail-on-miss`` afterwards exits 1 while pages stay
    incomplete, without checking them again)."""
    from archiver.commands.qa import patch_summary, totals_text  # noqa: PLC0415
    from archiver.qa.options import QaOptions  # noqa: PLC0415
    from archiver.run.output import read_json  # noqa: PLC0415
    from archiver.run.patch import check_the_rest  # noqa: PLC0415

    options = QaOptions(
        tabs=settings.browser_tabs,
        page_timeout=max(settings.page_timeout, 45.0),
        chromium=settings.chromium,
    )
    patched = _run(check_the_rest(crawl_dir, options))
    if patched is not None:
        sys.stderr.write(patch_summary(patched))
    summary = Summary.from_json(read_json(crawl_dir / "summary.json"))
    if summary.qa is not None:
        sys.stderr.write(f"archiver: replay check (--qa): {totals_text(summary.qa)}\n")
    return EXIT_OK


def crawl_process(argv: Sequence[str]) -> int:
    """``archiver crawl-process --parent PID``: one crawler process of ``--processes N``,
    started by its supervisor (:mod:`archiver.processes.supervisor`), never by hand.

    Its settings and name come on standard input, which then stays open: EOF means the
    supervisor is gone. The kernel also sends SIGTERM then (prctl(2) ``PR_SET_PDEATHSIG``, set
    here in the process itself, as setting it between fork and exec is unsafe in a process
    with threads; ``getppid()`` afterwards catches a supervisor that died before the call).
    Either way the crawl stops at once, and the process exits within :data:`ORPHAN_EXIT`
    seconds even if stopping hangs."""
    parent = int(argv[argv.index("--parent") + 1]) if "--parent" in argv else -1
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:
        return EXIT_INTERRUPTED  # the supervisor died before we could ask to follow it
    message = read_child_message(sys.stdin.fileno())
    if message is None:
        return EXIT_INTERRUPTED
    settings, process_id = message
    display = Display(settings, sys.stderr)
    crawler = Crawler(settings, console=display.log_stream, supervised_as=process_id)
    result: CrawlResult = _run(_run_child(crawler, display))
    return exit_code(result.status)


async def _run_child(crawler: Crawler, display: Display) -> CrawlResult:
    loop = asyncio.get_running_loop()

    def orphaned() -> None:
        loop.call_soon_threadsafe(
            lambda: crawler.request_stop(immediate=True, reason="the supervisor exited")
        )
        time.sleep(ORPHAN_EXIT)
        os._exit(EXIT_INTERRUPTED)

    def watch_stdin() -> None:
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        orphaned()

    threading.Thread(target=watch_stdin, name="supervisor-watch", daemon=True).start()
    return await _run_with_signals(crawler, display)


def cmd_index(args: argparse.Namespace) -> int:
    from archiver.index.cdxj import ScanReport  # noqa: PLC0415
    from archiver.run.finish import index_paths  # noqa: PLC0415

    paths = [Path(p) for p in args.paths]
    output = Path(args.output) if args.output else None
    report = ScanReport()
    count, written = index_paths(paths, output, cdx11=args.cdx11, report=report)
    for line in scan_messages(report):
        sys.stderr.write(f"{PROG} index: {line}\n")
    print(f"archiver: wrote {count} index lines to {written}")
    if report.complete:
        return EXIT_OK
    left = len(report.left_out) + len(report.unindexable)
    if args.allow_partial:
        sys.stderr.write(
            f"{PROG} index: {left} left out (listed above), accepted by --allow-partial\n"
        )
        return EXIT_OK
    sys.stderr.write(
        f"{PROG} index: error: {left} left out (listed above): the index lacks them; "
        "--allow-partial accepts an index without them\n"
    )
    return EXIT_FAILED


def scan_messages(report: ScanReport) -> list[str]:
    """One line per region or record an index scan left out, then one per kind of quirk it
    read past (with how many records had it and where the first was)."""
    lines = [
        f"left out {path}@{damage.offset}: {damage.reason} ({damage.skipped})"
        for path, damage in report.left_out
    ]
    lines += [f"left out {path}@{offset}: {why}" for path, offset, why in report.unindexable]
    first: dict[str, tuple[Path, int]] = {}
    counts: Counter[str] = Counter()
    for path, offset, quirk in report.quirks:
        counts[quirk] += 1
        first.setdefault(quirk, (path, offset))
    for quirk, n in counts.items():
        path, offset = first[quirk]
        lines.append(f"warning: read past {n} record(s) where {quirk} (first: {path}@{offset})")
    return lines


def cmd_verify(args: argparse.Namespace) -> int:
    from archiver.commands import verify  # noqa: PLC0415

    paths = [Path(p) for p in args.paths]
    if any(p.suffix == ".wacz" for p in paths):
        return verify_packages(paths, args)
    index_path = Path(args.index) if args.index else None
    if index_path is None and len(paths) == 1 and (paths[0] / "index.cdxj").exists():
        index_path = paths[0] / "index.cdxj"
    targets = [p / "warcs" if (p / "warcs").is_dir() else p for p in paths]
    report = verify.verify(targets, index=index_path, archiver_rules=args.archiver_rules)
    if args.json:
        print(json.dumps(verify.to_json(report), indent=2))
    else:
        print(verify.render(report))
    return EXIT_OK if report.ok else EXIT_FAILED


def verify_packages(paths: list[Path], args: argparse.Namespace) -> int:
    """``archiver verify PACKAGE.wacz...`` (:mod:`archiver.index.waczcheck`)."""
    from archiver.index.waczcheck import render_wacz, verify_wacz, wacz_to_json  # noqa: PLC0415
    from archiver.sign.certs import TrustedRoots  # noqa: PLC0415

    others = [p for p in paths if p.suffix != ".wacz"]
    if others:
        raise SettingsError("verify", f"give .wacz files or WARC paths, not both: {others[0]}")
    roots = TrustedRoots()
    if args.trusted_roots:
        try:
            roots = roots.with_file(Path(args.trusted_roots))
        except SignatureError as exc:
            raise SettingsError("--trusted-roots", str(exc)) from None
    reports = [verify_wacz(path, roots) for path in paths]
    if args.json:
        data = [wacz_to_json(r) for r in reports]
        print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    else:
        print("\n".join(render_wacz(r) for r in reports))
    return EXIT_OK if all(r.ok for r in reports) else EXIT_FAILED


def cmd_keygen(args: argparse.Namespace) -> int:
    from archiver.sign.keys import write_new_key  # noqa: PLC0415

    path = Path(args.path)
    key = write_new_key(path)
    print(f"archiver: wrote the private key {path} (ECDSA P-384; keep it secret) and {path}.pub")
    print(f"public key sha-256 fingerprint: {key.fingerprint}")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from archiver.commands import report  # noqa: PLC0415

    path = Path(args.path)
    output = Path(args.output) if args.output else path / "report.html"
    report.write_report(path, output)
    print(f"archiver: report written to {output}")
    return EXIT_OK


def cmd_wacz(args: argparse.Namespace) -> int:
    from archiver.run.finish import package_crawl  # noqa: PLC0415

    output = Path(args.output) if args.output else None
    written = package_crawl(Path(args.path), output)
    print(f"archiver: WACZ written to {written}")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from archiver.commands import replay  # noqa: PLC0415

    pywb = Path(args.pywb_venv) if args.pywb_venv else None
    return replay.serve(Path(args.path), args.port, pywb=pywb)


def cmd_qa(args: argparse.Namespace) -> int:
    from archiver.commands import qa  # noqa: PLC0415

    return qa.cmd_qa(args)


def cmd_patch(args: argparse.Namespace) -> int:
    from archiver.commands import qa  # noqa: PLC0415

    return qa.cmd_patch(args)


def cmd_serve_sample(args: argparse.Namespace) -> int:
    from archiver.commands import sample  # noqa: PLC0415

    return sample.serve(port=args.port)


def cmd_ignore(args: argparse.Namespace) -> int:
    from archiver.run.control import append_ignore  # noqa: PLC0415

    path = append_ignore(Path(args.path), args.pattern)
    print(f"archiver: added to {path}: {args.pattern}")
    return EXIT_OK


def cmd_pause(args: argparse.Namespace) -> int:
    from archiver.run.control import set_paused  # noqa: PLC0415

    changed = set_paused(Path(args.path), True)
    state = "paused" if changed else "paused already"
    print(f"archiver: {args.path} {state}: no new fetch starts (archiver unpause {args.path})")
    return EXIT_OK


def cmd_unpause(args: argparse.Namespace) -> int:
    from archiver.run.control import set_paused  # noqa: PLC0415

    changed = set_paused(Path(args.path), False)
    print(f"archiver: {args.path} {'unpaused' if changed else 'was not paused'}")
    return EXIT_OK


def cmd_add(args: argparse.Namespace) -> int:
    from archiver.run.control import check_additions, read_url_lines, write_additions  # noqa: PLC0415

    given = list(args.urls)
    if args.file:
        try:
            given += read_url_lines(Path(args.file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError("--file", f"cannot read {args.file}: {exc}") from None
    crawl_dir = Path(args.path)
    urls = check_additions(crawl_dir, given)
    written = write_additions(crawl_dir, urls)
    print(
        f"archiver: {len(urls)} URL{'s' if len(urls) != 1 else ''} for the crawl in "
        f"{args.path} ({written.name}): a running crawl queues them within seconds, a stopped "
        "one when it resumes"
    )
    return EXIT_OK


def cmd_queue(args: argparse.Namespace) -> int:
    from archiver.commands import queue  # noqa: PLC0415

    try:
        counts = queue.run(
            Path(args.path), states=args.state, match=args.match, frontier=args.frontier
        )
    except BrokenPipeError:  # a reader that stopped early (| head): what it read is right
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    sys.stderr.write(counts + "\n")
    return EXIT_OK


def cmd_rebuild_frontier(args: argparse.Namespace) -> int:
    from archiver.run.rebuild import rebuild_frontier  # noqa: PLC0415

    report = rebuild_frontier(Path(args.path))
    kept = f"; the damaged database is kept as {report.damaged.name}" if report.damaged else ""
    print(
        f"archiver: rebuilt {Path(args.path) / 'state' / 'frontier.sqlite'} from "
        f"{report.warc_files} WARC files: {report.captured} URLs done, {report.queued} queued, "
        f"{report.digests} payload digests{kept}; run the crawl's command again to go on"
    )
    for note in report.notes:
        print(f"archiver: {note}")
    return EXIT_OK


def cmd_version(_: argparse.Namespace) -> int:
    print(software_string())
    return EXIT_OK


COMMANDS = {
    "crawl": cmd_crawl,
    "index": cmd_index,
    "verify": cmd_verify,
    "keygen": cmd_keygen,
    "report": cmd_report,
    "wacz": cmd_wacz,
    "replay": cmd_replay,
    "qa": cmd_qa,
    "patch": cmd_patch,
    "serve-sample": cmd_serve_sample,
    "ignore": cmd_ignore,
    "login": login_command.cmd_login,
    "pause": cmd_pause,
    "unpause": cmd_unpause,
    "add": cmd_add,
    "queue": cmd_queue,
    "rebuild-frontier": cmd_rebuild_frontier,
    "version": cmd_version,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == [CHILD_COMMAND]:  # not in --help: only a supervisor starts it
        return _guarded("crawl", lambda: crawl_process(argv[1:]))
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return _guarded(args.command, lambda: COMMANDS[args.command](args))


def _guarded(command: str, run: Callable[[], int]) -> int:
    """Run a command; its errors become one line on stderr and an exit code."""
    try:
        return run()
    except SettingsError as exc:
        sys.stderr.write(f"{PROG} {command}: error: {exc}\n")
        return EXIT_USAGE
    except LockedError as exc:
        sys.stderr.write(f"{PROG} {command}: locked: {exc}\n")
        return EXIT_LOCKED
    except StateError as exc:  # not resumable as it is: running it again changes nothing
        sys.stderr.write(f"{PROG} {command}: state: {exc}\n")
        return EXIT_USAGE
    except ArchiverError as exc:
        sys.stderr.write(f"{PROG} {command}: error: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as exc:
        sys.stderr.write(f"{PROG} {command}: error: {exc}\n")
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
