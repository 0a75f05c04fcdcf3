"""``archiver qa DIR``: replay every page of a crawl (or a sample) and write what it showed.

Where the results go, in the crawl directory::

    qa.jsonl                  one line per page checked: status, scores, misses, errors
    qa/replay-ID.png          the replayed page, full length (ID: the page URL's SHA-1, 16 hex)
    qa/reference-ID.png       what the crawl saw: its full-page screenshot, or the live page
    summary.json              its ``qa`` entry: the totals over qa.jsonl
    state/qa/browser/         the checking Chromium's profile (emptied at each start)
    state/qa.lock             held while a check runs (one at a time per crawl)

A run is resumable: pages already in ``qa.jsonl`` are not checked again (``--fresh`` starts over),
so a check stopped by Ctrl-C or a crash goes on where it stopped, and the totals always cover
every line. It is bounded: each page within ``--page-timeout`` (its links followed within the
same time), at most ``--browser-tabs`` pages at once, ``--sample N`` pages at most, chosen at
random with a fixed seed so that a re-run checks the same ones.

What a page is compared with (the *reference*): the text and full-page screenshot the crawl
stored as ``resource`` records when it loaded the page in its browser (``urn:text:URL``,
``urn:screenshot-full:URL``); else, with ``--live``, the page loaded from the site again now;
else nothing, and the page is judged by its misses and errors alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from archiver import atomicfile
from archiver.errors import LockedError, SettingsError
from archiver.qa.archive import Archive, page_timestamp
from archiver.qa.check import (
    DIFFERS_BELOW,
    STATUS_COMPLETE,
    STATUS_DIFFERS,
    STATUS_FAILED,
    STATUS_INCOMPLETE,
    STATUS_UNREPLAYABLE,
    PageCheck,
    SharedArchive,
)
from archiver.qa.image import ImageError, screenshot_similarity
from archiver.qa.options import FULL_SCREENSHOT_PREFIX, TEXT_PREFIX, Page, QaOptions, Reference
from archiver.qa.text import text_similarity

QA_LINES = "qa.jsonl"
QA_DIR = "qa"
SAMPLE_SEED = 28


@dataclass
class QaResult:
    """What a check run found, over every page in ``qa.jsonl``."""

    totals: dict[str, Any]
    checked_now: int
    lines: Path

    @property
    def incomplete(self) -> int:
        return int(self.totals.get("incomplete", 0)) + int(self.totals.get("failed", 0))


def read_pages(crawl_dir: Path) -> list[Page]:
    """The crawl's pages, in the order they were captured, each URL once (its first capture)."""
    paths = [crawl_dir / "state" / "pages.jsonl", *sorted(crawl_dir.glob("state/*/pages.jsonl"))]
    pages: dict[str, Page] = {}
    for path in paths:
        if not path.is_file():
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("url"), str):
                    url = entry["url"]
                    title = entry.get("title")
                    pages.setdefault(
                        url,
                        Page(
                            url, str(entry.get("ts", "")), title if isinstance(title, str) else None
                        ),
                    )
    return list(pages.values())


def choose_pages(pages: list[Page], options: QaOptions) -> list[Page]:
    """The pages to check: those named by ``--url``, else all or a fixed random sample."""
    if options.urls:
        wanted = set(options.urls)
        chosen = [page for page in pages if page.url in wanted]
        unknown = wanted - {page.url for page in chosen}
        if unknown:
            raise SettingsError("--url", f"not a page of this crawl: {sorted(unknown)[0]}")
        return chosen
    if options.sample is not None and options.sample < len(pages):
        picked = random.Random(SAMPLE_SEED).sample(range(len(pages)), options.sample)
        return [pages[n] for n in sorted(picked)]
    return pages


def page_id(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8")).hexdigest()[:16]


@contextlib.contextmanager
def qa_lock(crawl_dir: Path) -> Iterator[None]:
    """One check at a time per crawl (``state/qa.lock``); raises :class:`LockedError`."""
    state = crawl_dir / "state"
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "qa.lock", "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockedError(f"another archiver qa is checking {crawl_dir}") from None
        yield


def done_pages(lines: Path) -> set[str]:
    """The pages already in ``qa.jsonl`` (a line cut by a crash is ignored)."""
    done: set[str] = set()
    if not lines.is_file():
        return done
    with open(lines, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                done.add(str(json.loads(line)["url"]))
    return done


async def reference_of(page: Page, archive: SharedArchive, live: LiveLoader | None) -> Reference:
    """What the crawl saw of the page (see the module docstring)."""
    at = page_timestamp(page.ts)
    text = await asyncio.to_thread(archive.resource, TEXT_PREFIX + page.url, at)
    shot = await asyncio.to_thread(archive.resource, FULL_SCREENSHOT_PREFIX + page.url, at)
    if text is not None or shot is not None:
        decoded = text.decode("utf-8", "replace") if text is not None else None
        return Reference(decoded, shot, "crawl")
    if live is not None:
        return await live.load(page.url)
    return Reference(None, None, None)


class LiveLoader(Protocol):
    async def load(self, url: str) -> Reference: ...


def page_line(
    page: Page, check: PageCheck, reference: Reference, crawl_dir: Path, replayer: str
) -> dict[str, Any]:
    """The page's ``qa.jsonl`` line (screenshots written beside it)."""
    result = check.result
    ident = page_id(page.url)
    line: dict[str, Any] = {
        "url": page.url,
        "ts": page.ts,
        "replayer": replayer,
        "status": check.status,
        "requests": check.requests,
        "served": check.served,
        "misses": [miss.to_json() for miss in check.misses],
        "fuzzy": [answer.to_json() for answer in check.fuzzy],
        "unfixable": check.unfixable,
        "replayer_misses": [miss.to_json() for miss in check.replayer_misses],
        "console": [entry.to_json() for entry in result.console] if result else [],
        "navigations": list(check.navigations),
        "navigations_cut_short": check.walk_cut_short,
        "reference": reference.source,
        "text_similarity": None,
        "screenshot_similarity": None,
        "title": result.title if result else None,
        "duration": round(result.duration, 3) if result else None,
    }
    if check.error:
        line["error"] = check.error
    folder = crawl_dir / QA_DIR
    folder.mkdir(exist_ok=True)
    if result is not None and result.screenshot is not None:
        name = f"replay-{ident}.png"
        (folder / name).write_bytes(result.screenshot)
        line["screenshot"] = f"{QA_DIR}/{name}"
    if reference.screenshot is not None:
        name = f"reference-{ident}.png"
        (folder / name).write_bytes(reference.screenshot)
        line["reference_screenshot"] = f"{QA_DIR}/{name}"
    if result is not None and reference.text is not None:
        line["text_similarity"] = text_similarity(result.text, reference.text)
        if check.status == STATUS_COMPLETE and line["text_similarity"] < DIFFERS_BELOW:
            line["status"] = STATUS_DIFFERS
    if result is not None and result.screenshot and reference.screenshot:
        with contextlib.suppress(ImageError):
            line["screenshot_similarity"] = screenshot_similarity(
                result.screenshot, reference.screenshot
            )
    return line


def totals(lines: Path) -> dict[str, Any]:
    """The ``qa`` entry of ``summary.json``: counts over the pages of ``qa.jsonl``, each page
    by its last line (a page checked again, by a resumed crawl or a patch, counts once).

    ``misses_found`` adds up, page by page, what its checks found missing (``found``: every
    check of a page during the crawl; else its ``misses``), ``misses_patched`` what of that
    its lease captured (``patched``); ``missing_urls`` counts the URLs still missing."""
    pages: dict[str, dict[str, Any]] = {}
    with open(lines, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                pages[str(line.get("url"))] = line
    statuses: Counter[str] = Counter()
    missing: set[str] = set()
    fuzzy: set[str] = set()
    unfixable: set[str] = set()
    replayer: set[str] = set()
    errors = found = patched = 0
    text_scores: list[float] = []
    shot_scores: list[float] = []
    for line in pages.values():
        statuses[str(line.get("status"))] += 1
        missing.update(str(miss["url"]) for miss in line.get("misses", []))
        fuzzy.update(str(answer["url"]) for answer in line.get("fuzzy", []))
        unfixable.update(str(item["url"]) for item in line.get("unfixable", []))
        replayer.update(str(item["url"]) for item in line.get("replayer_misses", []))
        errors += len(line.get("console", []))
        found += len(line.get("found", line.get("misses", [])))
        patched += len(line.get("patched", []))
        if isinstance(line.get("text_similarity"), int | float):
            text_scores.append(float(line["text_similarity"]))
        if isinstance(line.get("screenshot_similarity"), int | float):
            shot_scores.append(float(line["screenshot_similarity"]))
    return {
        "pages": len(pages),
        STATUS_COMPLETE: statuses[STATUS_COMPLETE],
        STATUS_INCOMPLETE: statuses[STATUS_INCOMPLETE],
        STATUS_UNREPLAYABLE: statuses[STATUS_UNREPLAYABLE],
        STATUS_DIFFERS: statuses[STATUS_DIFFERS],
        STATUS_FAILED: statuses[STATUS_FAILED],
        "missing_urls": len(missing),
        "misses_found": found,
        "misses_patched": patched,
        "fuzzy_urls": len(fuzzy),
        "unfixable_urls": len(unfixable),
        "replayer_missed_urls": len(replayer),
        "console_errors": errors,
        "text_similarity": _mean(text_scores),
        "screenshot_similarity": _mean(shot_scores),
    }


def append_line(lines: Path, line: dict[str, Any]) -> None:
    """Add a page's line to ``qa.jsonl`` in one ``write`` to a file opened for appending
    (O_APPEND: each write lands whole at the end, so the workers and the processes of a crawl
    can add lines side by side)."""
    data = (json.dumps(line) + "\n").encode("utf-8")
    fd = os.open(lines, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def write_summary(crawl_dir: Path, qa_totals: dict[str, Any]) -> None:
    """Put the totals in ``summary.json`` (written whole under a temporary name, then renamed,
    so the crawl's summary is never left half-written)."""
    path = crawl_dir / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        summary = {}
    if not isinstance(summary, dict):
        summary = {}
    summary["qa"] = qa_totals
    atomicfile.write_text(path, json.dumps(summary, indent=2) + "\n")


@dataclass
class QaRun:
    """One check run over a crawl directory's pages."""

    crawl_dir: Path
    options: QaOptions
    replayer_name: str = "archive"
    tools: Any = None
    on_page: Callable[[dict[str, Any]], None] | None = None

    @property
    def lines(self) -> Path:
        return self.crawl_dir / QA_LINES

    async def run(self) -> QaResult:
        """Check the crawl (see the module docstring)."""
        crawl_dir = self.crawl_dir
        with qa_lock(crawl_dir):
            if self.options.fresh:
                self.lines.unlink(missing_ok=True)
            pages = choose_pages(read_pages(crawl_dir), self.options)
            done = done_pages(self.lines)
            todo = [page for page in pages if page.url not in done]
            self.lines.touch()
            archive = Archive.open(crawl_dir)
            try:
                checked = await self._check_all(todo, SharedArchive(archive))
            finally:
                archive.close()
            qa_totals = totals(self.lines)
            qa_totals["checked_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            write_summary(crawl_dir, qa_totals)
            return QaResult(qa_totals, checked, self.lines)

    async def _check_all(self, todo: list[Page], archive: SharedArchive) -> int:
        if not todo:
            return 0
        from archiver.qa.replayers import open_replayer  # noqa: PLC0415 - pywb/rwp on demand

        async with contextlib.AsyncExitStack() as stack:
            live: LiveLoader | None = None
            if self.options.live:
                from archiver.qa.live import open_live  # noqa: PLC0415

                live = await stack.enter_async_context(open_live(self.crawl_dir, self.options))
            replayer = await stack.enter_async_context(
                open_replayer(self.replayer_name, self.crawl_dir, archive, self.options, self.tools)
            )
            slots = asyncio.Semaphore(self.options.tabs)
            checked = 0

            async def one(page: Page) -> None:
                nonlocal checked
                async with slots:
                    check = await replayer.check(page.url, page_timestamp(page.ts))
                    reference = await reference_of(page, archive, live)
                line = await asyncio.to_thread(self._write, page, check, reference)
                checked += 1
                if self.on_page is not None:
                    self.on_page(line)

            try:
                async with asyncio.TaskGroup() as group:
                    for page in todo:
                        group.create_task(one(page))
            except ExceptionGroup as failed:  # one line for the command, not a group's trace
                raise failed.exceptions[0] from None
            return checked

    def _write(self, page: Page, check: PageCheck, reference: Reference) -> dict[str, Any]:
        line = page_line(page, check, reference, self.crawl_dir, self.replayer_name)
        append_line(self.lines, line)
        return line


__all__ = [
    "QA_LINES",
    "QaResult",
    "QaRun",
    "append_line",
    "choose_pages",
    "done_pages",
    "page_line",
    "read_pages",
    "reference_of",
    "totals",
]
