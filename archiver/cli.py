"""The ``archiver`` command: argument parsing, exit codes, signals. Nothing imports this module.

Exit codes: 0 completed (or stopped at a --max-* limit), 1 failed, 2 wrong usage or setting,
3 interrupted and resumable (re-run the same command to continue), 4 output locked by another
run. Errors are one line on stderr, never a traceback (the crawl log keeps the details).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from archiver import __version__
from archiver.crawler import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_USAGE,
    Crawler,
    CrawlResult,
    software_string,
)
from archiver.errors import ArchiverError, LockedError, SettingsError
from archiver.settings import Settings, load_settings, option_name, setting_fields

PROG = "archiver"


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _default_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return "none" if not value else ", ".join(map(str, value))
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
            group = groups[section] = parser.add_argument_group(f"{section} settings")
        flags = [option_name(f)]
        if meta["short"]:
            flags.insert(0, meta["short"])
        default = f.default
        help_text = f"{meta['help']} (default: {_default_text(default)})"
        if meta["choices"]:
            help_text = (
                f"{meta['help']} Choices: {', '.join(meta['choices'])}. (default: {default})"
            )
        help_text = help_text.replace("%", "%%")
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": help_text}
        if f.type in ("bool", bool):
            group.add_argument(*flags, action=argparse.BooleanOptionalAction, **kwargs)
        elif meta["repeat"]:
            group.add_argument(*flags, action="append", metavar=meta["metavar"], **kwargs)
        else:
            group.add_argument(*flags, metavar=meta["metavar"] or "VALUE", **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="An archiving web crawler: byte-exact WARC/1.1, CDXJ, WACZ.",
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
            "CDXJ. WARC files without a journal (e.g. left .open by a killed process) are read "
            "record by record."
        ),
    )
    idx.add_argument("paths", nargs="+", metavar="DIR", help="crawl directories or WARC files")
    idx.add_argument("-o", "--output", metavar="FILE", help="index file (default: DIR/index.cdxj)")
    idx.add_argument("--cdx11", action="store_true", help="also write the 11-field CDX next to it")

    ver = sub.add_parser(
        "verify",
        help="check WARC files and their index",
        description=(
            "Walk every gzip member and record of every WARC file under DIR, recompute block "
            "and payload digests (payload: transfer coding removed, content coding kept), check "
            "request/response pairing, and that every index line points at its record."
        ),
    )
    ver.add_argument("paths", nargs="+", metavar="PATH", help="crawl directory, WARC dir or files")
    ver.add_argument(
        "--index", metavar="FILE", help="CDXJ index to check (default: DIR/index.cdxj)"
    )
    ver.add_argument("--json", action="store_true", help="print the report as JSON")

    rep = sub.add_parser(
        "report",
        help="render an HTML report of a crawl",
        description="Render a self-contained HTML report (charts, tables) of a crawl directory.",
    )
    rep.add_argument("path", metavar="DIR", help="crawl directory")
    rep.add_argument(
        "-o", "--output", metavar="FILE", help="report file (default: DIR/report.html)"
    )

    rpl = sub.add_parser(
        "replay",
        help="replay a crawl in pywb",
        description=(
            "Start pywb on a crawl's WARC files and index and print the URL to open. Needs "
            "pywb (pip install pywb, in its own environment: see README)."
        ),
    )
    rpl.add_argument("path", metavar="DIR", help="crawl directory")
    rpl.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default: 8080)")

    sample = sub.add_parser(
        "serve-sample",
        help="serve a small local sample site to try a crawl on",
        description="Serve a small sample site (pages, images, CSS, redirects) on 127.0.0.1.",
    )
    sample.add_argument("--port", type=int, default=8000, help="port (default: 8000)")

    sub.add_parser("version", help="print the version of archiver and its libraries")
    return parser


def _settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for f in setting_fields():
        value = getattr(args, f.name, None)
        if value is not None:
            overrides[f.name] = value
    if args.seeds:
        overrides["seeds"] = tuple(args.seeds)
    if args.verbose:
        overrides["verbose"] = args.verbose
    config = Path(args.config) if args.config else None
    return load_settings(config, overrides)


def _fmt_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if count < 1000 or unit == "TB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1000
    return f"{count:.1f} TB"


def print_summary(result: CrawlResult, out: Any = None) -> None:
    """The one-screen summary at the end of a crawl."""
    out = out or sys.stderr
    s = result.summary
    if not s:
        return
    lines = [
        f"archiver: {result.status}" + (f" ({result.reason})" if result.reason else ""),
        f"  captures {s.get('captures', 0)}  pages {s.get('pages', 0)}  revisits "
        f"{s.get('revisits', 0)}  in {s.get('duration_seconds', 0):.1f} s "
        f"({s.get('pages_per_second', 0):.1f} pages/s)",
        f"  received {_fmt_bytes(s.get('bytes_received', 0))}  WARC written "
        f"{_fmt_bytes(s.get('bytes_written', 0))}  dedup saved "
        f"{_fmt_bytes(s.get('dedup_bytes_saved', 0))}",
    ]
    if s.get("by_status_class"):
        lines.append("  status   " + "  ".join(f"{k} {v}" for k, v in s["by_status_class"].items()))
    if s.get("by_mime"):
        top = list(s["by_mime"].items())[:6]
        lines.append("  types    " + "  ".join(f"{k} {v}" for k, v in top))
    if s.get("failures"):
        lines.append("  failed   " + "  ".join(f"{k} {v}" for k, v in s["failures"].items()))
    if s.get("skips"):
        lines.append("  skipped  " + "  ".join(f"{k} {v}" for k, v in s["skips"].items()))
    for trap in s.get("traps", [])[:3]:
        lines.append(f"  trap     {trap['kind']}: {trap['pattern']} ({trap['skipped']} URLs)")
    lines.append(f"  output   {result.output}")
    for path in result.warc_files[:3]:
        lines.append(f"           {path}")
    if len(result.warc_files) > 3:
        lines.append(f"           ... and {len(result.warc_files) - 3} more WARC files")
    if result.index:
        lines.append(f"  index    {result.index}")
    if result.status == "interrupted":
        lines.append("  resume   run the same command again to continue this crawl")
    out.write("\n".join(lines) + "\n")


async def _run_crawl(settings: Settings) -> CrawlResult:
    crawler = Crawler(settings)
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal(signame: str) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            sys.stderr.write(
                f"\narchiver: {signame}: finishing in-flight fetches, then stopping "
                "(again to stop at once)\n"
            )
            crawler.request_stop(reason=f"stopped by {signame}")
        else:
            sys.stderr.write(f"\narchiver: {signame}: stopping now\n")
            crawler.request_stop(immediate=True, reason=f"stopped by {signame}")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        if crawler.layout.status_file.exists() and not settings.overwrite:
            sys.stderr.write(f"archiver: resuming the crawl in {crawler.layout.root}\n")
        return await crawler.run()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _run(coro: Any) -> Any:
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up

        return uvloop.run(coro)
    except ImportError:  # pragma: no cover
        return asyncio.run(coro)


def cmd_crawl(args: argparse.Namespace) -> int:
    settings = _settings_from_args(args)
    result = _run(_run_crawl(settings))
    if not settings.quiet:
        print_summary(result)
    elif result.exit_code != EXIT_OK:
        sys.stderr.write(f"archiver: {result.status}: {result.reason}\n")
    return int(result.exit_code)


def cmd_index(args: argparse.Namespace) -> int:
    from archiver import index as index_mod  # noqa: PLC0415

    paths = [Path(p) for p in args.paths]
    output = Path(args.output) if args.output else None
    count, written = index_mod.index_paths(paths, output, cdx11=args.cdx11)
    print(f"archiver: wrote {count} index lines to {written}")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from archiver import verify  # noqa: PLC0415

    paths = [Path(p) for p in args.paths]
    index_path = Path(args.index) if args.index else None
    if index_path is None and len(paths) == 1 and (paths[0] / "index.cdxj").exists():
        index_path = paths[0] / "index.cdxj"
    targets = [p / "warcs" if (p / "warcs").is_dir() else p for p in paths]
    report = verify.verify(targets, index=index_path)
    if args.json:
        print(json.dumps(verify.to_json(report), indent=2))
    else:
        print(verify.render(report))
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_report(args: argparse.Namespace) -> int:
    from archiver import report  # noqa: PLC0415

    path = Path(args.path)
    output = Path(args.output) if args.output else path / "report.html"
    report.write_report(path, output)
    print(f"archiver: report written to {output}")
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from archiver import replay  # noqa: PLC0415

    return replay.serve(Path(args.path), port=args.port)


def cmd_serve_sample(args: argparse.Namespace) -> int:
    from archiver import sample  # noqa: PLC0415

    return sample.serve(port=args.port)


def cmd_version(_: argparse.Namespace) -> int:
    print(software_string())
    return EXIT_OK


COMMANDS = {
    "crawl": cmd_crawl,
    "index": cmd_index,
    "verify": cmd_verify,
    "report": cmd_report,
    "replay": cmd_replay,
    "serve-sample": cmd_serve_sample,
    "version": cmd_version,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[args.command](args)
    except SettingsError as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc}\n")
        return EXIT_USAGE
    except LockedError as exc:
        sys.stderr.write(f"{PROG} {args.command}: locked: {exc}\n")
        return EXIT_LOCKED
    except ArchiverError as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except OSError as exc:
        sys.stderr.write(f"{PROG} {args.command}: error: {exc}\n")
        return EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
