"""``archiver qa DIR``: replay each page of a crawl from its archive in Chromium and say what
is missing (:mod:`archiver.qa`); one line per page while it runs, the totals at the end."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from archiver.commands.exits import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:  # the check's modules load the browser stage: only when a check runs
    from archiver.qa.options import QaOptions
    from archiver.qa.run import QaResult
    from archiver.run.patch import PatchResult


def add_parser(sub: Any) -> None:
    """The ``qa`` subcommand's options."""
    qa = sub.add_parser(
        "qa",
        help="replay every page of a crawl from its archive and name what is missing",
        description=(
            "Load each page of the crawl (pages.jsonl; all, a sample or the ones named) in "
            "headless Chromium with every request answered only from the crawl's own WARC "
            "records, as pywb looks them up (nothing reaches the network); scroll it, follow "
            "links in the page, and record every request the archive could not answer, those "
            "it answered with another capture (pywb's fuzzy matching), console errors, the "
            "text and a full-page screenshot, scored against what the crawl saw. Writes "
            "DIR/qa.jsonl (one line per page), DIR/qa/ (screenshots) and the totals in "
            "DIR/summary.json; archiver report DIR shows them. A stopped check resumes."
        ),
    )
    qa.add_argument("path", metavar="DIR", help="crawl directory")
    qa.add_argument(
        "--browser-tabs", type=int, default=2, metavar="N", help="pages at once (default: 2)"
    )
    qa.add_argument(
        "--page-timeout",
        type=float,
        default=45.0,
        metavar="SECONDS",
        help="the most one page may take, its links followed included (default: 45)",
    )
    qa.add_argument(
        "--sample",
        type=int,
        default=None,
        metavar="N",
        help="check N pages chosen at random, the same ones on every run (default: all)",
    )
    qa.add_argument(
        "--url",
        action="append",
        default=[],
        metavar="URL",
        help="check this page only (repeatable; default: every page, or --sample)",
    )
    qa.add_argument(
        "--follow-links",
        type=int,
        default=3,
        metavar="N",
        help="links clicked in each replayed page, the page's router running (default: 3)",
    )
    qa.add_argument(
        "--live",
        action="store_true",
        help="compare pages the crawl has no rendering of with the live site (default: off)",
    )
    qa.add_argument(
        "--replayer",
        choices=("archive", "pywb", "rwp"),
        default="archive",
        help=(
            "who replays: archiver itself from the records, or as a second opinion pywb or "
            "ReplayWeb.page from the crawl's WACZ (their misses of URLs the archive holds are "
            "reported apart) (default: archive)"
        ),
    )
    qa.add_argument(
        "--replaywebpage",
        metavar="DIR",
        default=None,
        help=(
            "ReplayWeb.page's npm package folder (ui.js, sw.js), for --replayer rwp "
            "(default: $ARCHIVER_REPLAYWEBPAGE)"
        ),
    )
    qa.add_argument(
        "--pywb-venv",
        metavar="DIR",
        default=os.environ.get("ARCHIVER_PYWB") or None,
        help=(
            "the environment pywb is installed in, for --replayer pywb (a venv directory, or "
            "its wayback script) (default: $ARCHIVER_PYWB, else wayback on PATH)"
        ),
    )
    qa.add_argument(
        "--chromium",
        metavar="PATH",
        default=None,
        help="the Chromium to use (default: chromium on PATH)",
    )
    qa.add_argument("--fresh", action="store_true", help="check every page again (default: resume)")
    qa.add_argument(
        "--fail-on-miss",
        action="store_true",
        help="exit 1 when a page stays incomplete or failed (for scheduled runs; default: 0)",
    )


def add_patch_parser(sub: Any) -> None:
    """The ``patch`` subcommand's options."""
    patch = sub.add_parser(
        "patch",
        help="fetch what archiver qa found missing into the crawl, and check again",
        description=(
            "Fetch every URL that DIR/qa.jsonl names as missing (archiver qa runs first when "
            "there is none) as a requisite of the page that needed it, through the crawl's own "
            "rules (scope, robots.txt, politeness, SSRF guard, dedup), resuming the crawl with "
            "the settings it was started with: new WARC files, the index merged, the WACZ "
            "packaged again. Then check those pages again, until nothing new is missing or "
            "--rounds is reached."
        ),
    )
    patch.add_argument("path", metavar="DIR", help="crawl directory")
    patch.add_argument(
        "--rounds", type=int, default=3, metavar="N", help="fetch-and-check rounds (default: 3)"
    )
    patch.add_argument(
        "--browser-tabs", type=int, default=2, metavar="N", help="pages at once (default: 2)"
    )
    patch.add_argument(
        "--page-timeout",
        type=float,
        default=45.0,
        metavar="SECONDS",
        help="the most one page's check may take (default: 45)",
    )
    patch.add_argument(
        "--follow-links",
        type=int,
        default=3,
        metavar="N",
        help="links clicked in each page checked (default: 3)",
    )
    patch.add_argument(
        "--chromium", metavar="PATH", default=None, help="the Chromium to use (default: on PATH)"
    )
    patch.add_argument(
        "--fail-on-miss",
        action="store_true",
        help="exit 1 when URLs stay missing after the last round (default: 0)",
    )


def patch_summary(result: PatchResult) -> str:
    """What a patch did, one line per round and per URL not fetched, then the totals."""
    out = [
        f"  round {done.number}: {done.tried} URLs fetched ({done.captures} captures), "
        f"{done.missing_after} missing after"
        for done in result.rounds
    ]
    out += [f"  not fetched: {url}: {why}" for url, why in sorted(result.left.items())]
    out.append(
        f"archiver patch: {len(result.rounds)} rounds; {result.missing} URLs missing "
        f"({len(result.left)} not fetchable)"
    )
    return "\n".join(out) + "\n"


def cmd_patch(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from archiver.errors import SettingsError  # noqa: PLC0415
    from archiver.qa.options import QaOptions  # noqa: PLC0415
    from archiver.run.patch import patch_crawl  # noqa: PLC0415

    stream = out or sys.stdout
    if args.rounds < 1:
        raise SettingsError("--rounds", "must be at least 1")
    options = QaOptions(
        tabs=args.browser_tabs,
        page_timeout=args.page_timeout,
        follow_links=args.follow_links,
        chromium=args.chromium,
    )
    result = asyncio.run(patch_crawl(Path(args.path), options, rounds=args.rounds))
    stream.write(patch_summary(result))
    return EXIT_FAILED if args.fail_on_miss and result.missing else EXIT_OK


def options_from(args: argparse.Namespace) -> QaOptions:
    from archiver.qa.options import QaOptions  # noqa: PLC0415

    return QaOptions(
        tabs=args.browser_tabs,
        page_timeout=args.page_timeout,
        sample=args.sample,
        urls=tuple(args.url),
        follow_links=args.follow_links,
        live=args.live,
        fresh=args.fresh,
        chromium=args.chromium,
    )


def page_text(line: dict[str, Any]) -> str:
    """One line of progress for a page checked."""
    misses = len(line.get("misses", []))
    scores = []
    if line.get("text_similarity") is not None:
        scores.append(f"text {line['text_similarity']:.2f}")
    if line.get("screenshot_similarity") is not None:
        scores.append(f"screenshot {line['screenshot_similarity']:.2f}")
    extra = f" ({', '.join(scores)})" if scores else ""
    return f"  {line['status']:<12} {misses:>3} missing  {line['url']}{extra}"


def summary_text(result: QaResult) -> str:
    return (
        f"archiver qa: {totals_text(result.totals)} "
        f"({result.checked_now} checked now; details in {result.lines})"
    )


def totals_text(t: Mapping[str, Any]) -> str:
    """The totals of ``summary.json``'s ``qa`` in one line."""
    found = ""
    if t.get("misses_patched"):
        found = f" ({t.get('misses_found', 0)} found, {t['misses_patched']} captured since)"
    return (
        f"{t.get('pages', 0)} pages: {t.get('complete', 0)} complete, "
        f"{t.get('incomplete', 0)} incomplete, {t.get('unreplayable', 0)} unreplayable, "
        f"{t.get('differs', 0)} differ, {t.get('failed', 0)} failed; "
        f"{t.get('missing_urls', 0)} URLs missing{found}, {t.get('fuzzy_urls', 0)} served by "
        "fuzzy matching"
    )


@contextlib.contextmanager
def replay_tool(args: argparse.Namespace) -> Iterator[Any]:
    """The replay tool ``--replayer`` names, started for the check and stopped after it."""
    if args.replayer == "rwp":
        from archiver.commands import rwpserver  # noqa: PLC0415

        package = rwpserver.package_from(args.replaywebpage)
        yield lambda: rwpserver.serving(Path(args.path), package)
        return
    if args.replayer != "pywb":
        yield None
        return
    from archiver.commands.replay import start_pywb  # noqa: PLC0415
    from archiver.qa.tools import ReplayTool  # noqa: PLC0415

    if not (Path(args.path) / "index.cdxj").is_file():
        yield None  # the check says what is wrong with the directory
        return
    pywb = Path(args.pywb_venv) if args.pywb_venv else None
    server = start_pywb(Path(args.path), 0, pywb=pywb, framed=False)
    try:
        yield ReplayTool("pywb", server.base)
    finally:
        server.stop()


def cmd_qa(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from archiver.qa.run import QaRun  # noqa: PLC0415

    stream = out or sys.stdout  # looked up now: a test may have replaced sys.stdout since import

    def show(line: dict[str, Any]) -> None:
        stream.write(page_text(line) + "\n")
        stream.flush()

    with replay_tool(args) as tool:
        run = QaRun(Path(args.path), options_from(args), args.replayer, tool, show)
        result = asyncio.run(run.run())
    stream.write(summary_text(result) + "\n")
    if args.fail_on_miss and result.incomplete:
        return EXIT_FAILED
    return EXIT_OK


__all__ = [
    "add_parser",
    "add_patch_parser",
    "cmd_patch",
    "cmd_qa",
    "patch_summary",
    "totals_text",
]
