"""Live control of a running crawl through two files of its directory, as grab-site's
``ignores`` and Heritrix's live settings let an operator steer a crawl that runs for hours.

* ``DIR/ignores``: URL patterns to skip (:mod:`archiver.policy.ignores`: one regular expression
  per line, ``#`` comments). Checked when a URL is discovered *and* when a worker leases it, so
  a line added while the crawl runs drops URLs that were queued before: each is logged and
  counted as skipped with reason ``ignored``. A line that is not a valid regular expression is
  a warning naming it; the other lines apply and the crawl goes on. ``archiver ignore DIR
  PATTERN`` appends a line, checked first.
* ``DIR/control.toml``: the ``[politeness]`` settings ``per_host_delay`` and
  ``per_host_concurrency``, in the syntax of ``--config``. A key that is removed (or the whole
  file) gives back the value the crawl was started with. Content that does not parse, an
  unknown key or a wrong value is a warning, and the previous values stay.

* ``DIR/paused``: while it exists, no new fetch starts (``archiver pause DIR`` makes it,
  ``archiver unpause DIR`` removes it, as Heritrix's pause button and grab-site's touch files
  do). Fetches in flight finish and are recorded; a worker waiting for a URL gives it back to
  the frontier untouched (no try counted), so nothing is lost and nothing is fetched twice. A
  paused crawl still stops on a signal, at once (nothing is in flight), and resumes paused
  while the file is there. The progress display, ``/status`` and ``/metrics`` say paused.
* ``DIR/add/*.urls``: URLs the operator adds (``archiver add DIR URL...``, which checks them
  against the crawl's scope first and writes the file whole). Each file is taken by one
  process (a rename into ``add/taken/``), its URLs checked again and queued as links found by
  no page (depth 0), each logged as ``added`` by the operator with what became of it, and the
  file moved to ``add/done/``. A file taken by a run that died is taken up again by the next.

The files are looked at every :data:`POLL_SECONDS` (a ``stat``: modification time, size and
inode, so an editor's save-by-rename is seen) and read again only when they changed; the
patterns are compiled once per change, never per URL. Polling needs no platform API and costs
a few ``stat`` calls a second. When the crawl starts they are read before the first lease, so a
resumed crawl applies them (and a new ``--exclude``) to the URLs it had queued.

In a crawl shared through Redis, each process watches the directory it writes into (processes
on one machine share it: ``--processes N`` pauses, ignores and adds as one). Ignores and a
pause apply in the processes that read them (a ``redis://`` crawl on several machines is paused
machine by machine); added URLs go to the shared queue. Politeness is the crawl's: a change is
published to every process (:meth:`archiver.frontier.base.Frontier.set_politeness`), and this
loop also picks up what another process published
(:meth:`~archiver.frontier.base.Frontier.shared_politeness`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import tomllib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from archiver.config.assemble import crawl_scope
from archiver.config.seeds import crawl_seeds, normalized
from archiver.config.settings import parse_value, recorded_settings
from archiver.errors import FrontierError, OutputExistsError, SettingsError
from archiver.frontier.base import Frontier
from archiver.models import CrawlItem, SkipReason
from archiver.policy.ignores import (
    NO_IGNORES,
    Exclusions,
    Ignores,
    compile_patterns,
    parse_ignores,
)
from archiver.policy.politeness import Politeness
from archiver.run.output import STATUS_COMPLETED, Layout, crawl_status
from archiver.run.seeds import SeedsFile
from archiver.timefmt import rfc3339_at, timestamp17, utcnow
from archiver.urls import InvalidURLError

#: Seconds between two looks at the files ("within a few seconds of a change").
POLL_SECONDS = 1.0
#: The keys of control.toml's [politeness] table, each parsed as the setting of that name.
CONTROL_KEYS = ("per_host_delay", "per_host_concurrency")

#: Patterns named in an ``ignores`` log line (added, removed); the count says the rest.
LOGGED_CHANGES = 20

_Signature = tuple[int, int, int] | None


def _signature(path: Path) -> _Signature:
    """What tells that a file changed (None: it does not exist or cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def parse_control(text: str, defaults: Politeness) -> Politeness:
    """The politeness a ``control.toml`` asks for; keys it leaves out keep ``defaults``.

    Raises :class:`~archiver.errors.SettingsError` for content that is not TOML, an unknown
    table or key, or a value the setting refuses."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError("control.toml", f"not valid TOML: {exc}") from None
    table: Any = data.pop("politeness", {})
    if data or not isinstance(table, dict):
        raise SettingsError("control.toml", "only a [politeness] table is read")
    unknown = sorted(set(table) - set(CONTROL_KEYS))
    if unknown:
        raise SettingsError(
            "control.toml",
            f"unknown key {unknown[0]!r} in [politeness] (known: {', '.join(CONTROL_KEYS)})",
        )
    delay, concurrency = defaults.delay, defaults.concurrency
    if "per_host_delay" in table:
        delay = parse_value("per_host_delay", table["per_host_delay"], source="config") or 0.0
    if "per_host_concurrency" in table:
        concurrency = parse_value(
            "per_host_concurrency", table["per_host_concurrency"], source="config"
        )
    return Politeness(delay=float(delay), concurrency=int(concurrency))


class PauseGate:
    """Whether new fetches may start (``DIR/paused``): the workers wait on it before they ask
    the frontier for a URL; ``on_pause`` callbacks interrupt those already waiting for one."""

    def __init__(self) -> None:
        self._running = asyncio.Event()
        self._running.set()
        self._on_pause: list[Callable[[], None]] = []

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def on_pause(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` each time a pause begins."""
        self._on_pause.append(callback)

    def pause(self) -> None:
        if self.paused:
            return
        self._running.clear()
        for callback in self._on_pause:
            callback()

    def unpause(self) -> None:
        self._running.set()

    async def wait_running(self) -> None:
        """Return once the crawl is not paused."""
        await self._running.wait()


class LiveControl:
    """Watches ``ignores`` and ``control.toml`` for one run; answers the lease-time check.

    ``defaults`` is the politeness the run was started with (``--per-host-delay``,
    ``--per-host-concurrency``); ``exclusions`` holds ``--exclude`` and receives each new
    version of the ignores."""

    def __init__(
        self,
        layout: Layout,
        *,
        exclusions: Exclusions,
        frontier: Frontier,
        defaults: Politeness,
        log: Any,
    ) -> None:
        self._ignores_path = layout.ignores
        self._control_path = layout.control
        self._paused_path = layout.paused
        self.exclusions = exclusions
        #: the operator's pause (``DIR/paused``), which the workers wait on
        self.gate = PauseGate()
        #: the operator's added URLs (``DIR/add/``), taken up once the pipeline exists
        self.additions: Additions | None = None
        self._frontier = frontier
        self.defaults = defaults
        self.politeness = defaults
        self._log = log
        #: why the latest control.toml was refused (None: it was applied, or there is none)
        self.control_error: str | None = None
        self._ignores_seen: _Signature = None
        self._control_seen: _Signature = None
        self._paused_seen: _Signature = None

    def check(self, item: CrawlItem) -> SkipReason | None:
        """At lease time: ``excluded`` or ``ignored`` when the URL is no longer wanted."""
        return self.exclusions.check(item.url)

    # -- watching --------------------------------------------------------------------------

    def load(self) -> None:
        """Read both files now (before the first lease)."""
        self._ignores_seen = _signature(self._ignores_path)
        self._apply_ignores(self._parse_ignores(self._ignores_seen))
        self._look_at_control()

    @property
    def paused(self) -> bool:
        return self.gate.paused

    async def watch(self, interval: float = POLL_SECONDS) -> None:
        """Look at the files every ``interval`` seconds until cancelled. A changed ``ignores``
        is read and compiled on a thread: a file of 100,000 lines, rewritten whole, must not
        stop the workers while it compiles."""
        while True:
            await asyncio.sleep(interval)
            signature = _signature(self._ignores_path)
            if signature != self._ignores_seen:
                self._ignores_seen = signature
                self._apply_ignores(await asyncio.to_thread(self._parse_ignores, signature))
            self._look_at_control()
            if self.additions is not None:
                await self.additions.take()
            try:
                shared = await self._frontier.shared_politeness()
            except FrontierError:
                continue  # the workers meet the same failure and stop the crawl on it
            if shared is not None:
                self.politeness = Politeness(*shared)
                self._log.info(
                    "control",
                    per_host_delay=shared[0],
                    per_host_concurrency=shared[1],
                    source="another process of the crawl",
                )

    def _look_at_control(self) -> None:
        signature = _signature(self._control_path)
        if signature != self._control_seen:
            self._control_seen = signature
            self._reload_control(signature is not None)
        signature = _signature(self._paused_path)
        if signature != self._paused_seen:
            self._paused_seen = signature
            self._pause(signature is not None)

    def _pause(self, paused: bool) -> None:
        if paused == self.gate.paused:
            return
        if paused:
            self.gate.pause()
            self._log.info(
                "paused",
                file=str(self._paused_path),
                note="no new fetch starts; fetches in flight finish (archiver unpause DIR)",
            )
        else:
            self.gate.unpause()
            self._log.info("unpaused", file=str(self._paused_path))

    def _read(self, path: Path) -> str | None:
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self._log.warning("control-unreadable", file=str(path), error=str(exc))
            return None

    def _parse_ignores(self, signature: _Signature) -> Ignores | str:
        """The new version of the ignores (compiled incrementally from the current one), or
        why the file cannot be read (the current patterns then stay). No logging here: this
        runs on a thread."""
        if signature is None:
            return NO_IGNORES
        try:
            text = self._ignores_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return str(exc)
        return parse_ignores(text, previous=self.exclusions.ignores)

    def _apply_ignores(self, ignores: Ignores | str) -> None:
        if isinstance(ignores, str):
            self._log.warning("control-unreadable", file=str(self._ignores_path), error=ignores)
            return
        for error in ignores.errors:
            self._log.warning(
                "ignores-invalid",
                file=str(self._ignores_path),
                error=error,
                note="this line is left out; the others apply",
            )
        current = self.exclusions.ignores
        if ignores.patterns != current.patterns or ignores.errors:
            self.exclusions.replace(ignores)
            before, now = set(current.patterns), set(ignores.patterns)
            self._log.info(
                "ignores",
                file=str(self._ignores_path),
                patterns=len(ignores.patterns),
                added=[p for p in ignores.patterns if p not in before][:LOGGED_CHANGES],
                removed=[p for p in current.patterns if p not in now][:LOGGED_CHANGES],
            )

    def _reload_control(self, exists: bool) -> None:
        if not exists:
            wanted = self.defaults
        else:
            text = self._read(self._control_path)
            if text is None:
                return
            try:
                wanted = parse_control(text, self.defaults)
            except SettingsError as exc:
                self.control_error = str(exc)
                self._log.warning(
                    "control-invalid",
                    file=str(self._control_path),
                    error=str(exc),
                    note="the previous values stay",
                    per_host_delay=self.politeness.delay,
                    per_host_concurrency=self.politeness.concurrency,
                )
                return
        self.control_error = None
        if wanted == self.politeness:
            return
        self.politeness = wanted
        self._frontier.set_politeness(wanted.delay, wanted.concurrency)
        self._log.info(
            "control",
            file=str(self._control_path),
            per_host_delay=wanted.delay,
            per_host_concurrency=wanted.concurrency,
            source="control.toml" if exists else "the crawl's settings (control.toml removed)",
        )


#: The suffix of a file of added URLs the crawl takes up (written whole under another name,
#: then renamed: a crawl never reads half a file).
ADDED_SUFFIX = ".urls"

#: What queues the operator's URLs: ``(url, outcome)`` for each (``queued``, ``seen``, or why
#: it was refused), :meth:`archiver.pipeline.discovery.Discovery.add`.
QueueUrls = Callable[[list[str]], Awaitable[list[tuple[str, str]]]]


def read_url_lines(text: str) -> list[str]:
    """The URLs of a file of URLs: one a line, blank lines and ``#`` comments skipped."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


class Additions:
    """The operator's added URLs (``DIR/add/*.urls``) for one run: each file taken by one
    process, its URLs queued by ``queue`` and logged, the file kept in ``add/done/``."""

    def __init__(self, layout: Layout, queue: QueueUrls, log: Any) -> None:
        self._dir = layout.additions
        self._taken = self._dir / "taken"
        self._done = self._dir / "done"
        self._queue = queue
        self._log = log
        self._seen: _Signature = None

    def recover(self) -> None:
        """Files a run that died took but did not finish go back to be taken again (queuing is
        idempotent: the frontier queues a URL once)."""
        for path in _listing(self._taken):
            with contextlib.suppress(OSError):
                os.rename(path, self._dir / path.name)

    async def take(self) -> int:
        """Take every file waiting (when the directory changed since the last look); returns
        how many URLs were queued."""
        signature = _signature(self._dir)
        if signature is None or signature == self._seen:
            return 0
        self._seen = signature
        queued = 0
        for path in _listing(self._dir):
            if path.name.endswith(ADDED_SUFFIX):
                queued += await self._take(path)
        return queued

    async def _take(self, path: Path) -> int:
        taken = self._taken / path.name
        try:
            self._taken.mkdir(parents=True, exist_ok=True)
            os.rename(path, taken)  # one process of the crawl wins it
            text = taken.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return 0  # another process took it, or it cannot be read now
        results = await self._queue(read_url_lines(text))
        for url, outcome in results:
            self._log.info("added", url=url, by="operator", file=path.name, outcome=outcome)
        with contextlib.suppress(OSError):
            self._done.mkdir(parents=True, exist_ok=True)
            os.rename(taken, self._done / path.name)
        return sum(1 for _, outcome in results if outcome == "queued")


def _listing(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.is_file())
    except OSError:
        return []


#: Why an added URL is refused, in words (a skip reason otherwise).
_REFUSED = {
    SkipReason.SCOPE: "it is on no seed's site and matches no --include",
    SkipReason.EXCLUDED: "it matches an exclusion (--exclude, or its seed's exclude)",
    SkipReason.IGNORED: "it matches a line of the crawl's ignores",
    SkipReason.TRAP: "it has the shape of a crawler trap",
    SkipReason.URL_TOO_LONG: "it is longer than --max-url-length",
}


def check_additions(crawl_dir: Path, given: list[str]) -> list[str]:
    """The URLs ``given`` for the crawl in ``crawl_dir``, normalised, once each; each checked as
    the crawl will check it (its recorded settings, seeds and ``ignores``). The first one that
    is malformed or out of the crawl's scope, a directory that holds no crawl, or a completed
    crawl, is a :class:`~archiver.errors.SettingsError`: nothing is added then."""
    layout = Layout(crawl_dir)
    status = recorded_status(crawl_dir)
    if status.get("status") == STATUS_COMPLETED:
        raise SettingsError("DIR", f"the crawl in {crawl_dir} is completed: it takes no more URLs")
    if not given:
        raise SettingsError("URL", "give at least one URL (or --file FILE)")
    base = Path(str(status.get("cwd") or crawl_dir))
    settings = recorded_settings(status.get("settings") or {}, base)
    seeds = crawl_seeds(settings)
    scope = crawl_scope(settings, tuple(seed.url for seed in seeds), seeds)
    if settings.seeds_file is not None and settings.seeds_file.is_file():
        rest = SeedsFile(settings.seeds_file, settings)  # every seed's site is in scope
        rest.open()
        for batch in rest:
            scope.add_seeds(batch.seeds)
    exclusions = Exclusions(compile_patterns(scope.exclusions()))
    if layout.ignores.exists():
        exclusions.replace(parse_ignores(layout.ignores.read_text(encoding="utf-8")))
    found: list[str] = []
    for text in given:
        try:
            url = normalized(text)
        except InvalidURLError as exc:
            raise SettingsError("URL", f"{text!r} is not an http(s) URL: {exc}") from None
        reason = exclusions.check(url) or scope.admit_added(url, settings.max_redirects)[0]
        if reason is not None:
            why = _REFUSED.get(reason, reason.value)
            raise SettingsError("URL", f"{url} is out of the crawl's scope: {why}")
        found.append(url)
    return list(dict.fromkeys(found))


def write_additions(crawl_dir: Path, urls: list[str]) -> Path:
    """Write ``urls`` for the crawl in ``crawl_dir`` to take up (``DIR/add/``): written whole
    under a temporary name, then renamed, so no crawl reads half of it. Returns the file."""
    directory = Layout(crawl_dir).additions
    name = f"{timestamp17(utcnow())}-{os.getpid()}"  # in the order they were written
    try:
        directory.mkdir(exist_ok=True)
        tmp = directory / f".{name}.tmp"
        tmp.write_text("".join(url + "\n" for url in urls), encoding="utf-8")
        final = directory / f"{name}{ADDED_SUFFIX}"
        os.rename(tmp, final)
    except OSError as exc:
        raise SettingsError("add", f"cannot write {directory}: {exc.strerror or exc}") from None
    return final


def recorded_status(crawl_dir: Path) -> dict[str, Any]:
    """What the crawl in ``crawl_dir`` recorded (:func:`archiver.run.output.crawl_status`); a
    directory that holds no crawl, or whose state does not read, is a usage error."""
    try:
        status = crawl_status(crawl_dir)
    except OutputExistsError as exc:
        raise SettingsError("DIR", str(exc)) from None
    if status is None:
        raise SettingsError("DIR", f"no crawl in {crawl_dir} (no state/crawl.json)")
    return status


def set_paused(crawl_dir: Path, paused: bool) -> bool:
    """Pause (make ``DIR/paused``) or unpause (remove it) the crawl in ``crawl_dir``; returns
    whether that changed anything. A directory that holds no crawl is a usage error."""
    recorded_status(crawl_dir)
    layout = Layout(crawl_dir)
    try:
        if not paused:
            layout.paused.unlink()
            return True
        with open(layout.paused, "x", encoding="utf-8") as fh:
            fh.write(f"paused by archiver pause at {rfc3339_at(time.time())}\n")
    except (FileExistsError, FileNotFoundError):
        return False
    except OSError as exc:
        raise SettingsError(
            "DIR", f"cannot change {layout.paused}: {exc.strerror or exc}"
        ) from None
    return True


def append_ignore(crawl_dir: Path, pattern: str) -> Path:
    """Append ``pattern`` to the crawl directory's ``ignores`` file (created if missing) and
    return the file. A pattern that is not a valid regular expression, one that spans lines,
    or a directory that does not exist is a :class:`~archiver.errors.SettingsError`: the file
    only ever gets lines a crawl can use."""
    text = pattern.strip()
    if not text or "\n" in text or "\r" in text:
        raise SettingsError("PATTERN", "give one pattern on one line")
    if text.startswith("#"):
        raise SettingsError("PATTERN", f"{text!r} would be a comment line; write \\# for a '#'")
    errors = parse_ignores(text).errors
    if errors:
        raise SettingsError("PATTERN", f"invalid regular expression {errors[0].split(': ', 1)[1]}")
    if not crawl_dir.is_dir():
        raise SettingsError("DIR", f"no such crawl directory: {crawl_dir}")
    path = Layout(crawl_dir).ignores
    try:
        with open(path, "a+b") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":  # a hand-edited last line without its newline
                    text = "\n" + text
            fh.write((text + "\n").encode("utf-8"))  # one write: the crawl never reads half
    except OSError as exc:
        raise SettingsError("ignore", f"cannot write {path}: {exc.strerror or exc}") from None
    return path


__all__ = [
    "ADDED_SUFFIX",
    "CONTROL_KEYS",
    "POLL_SECONDS",
    "Additions",
    "LiveControl",
    "PauseGate",
    "append_ignore",
    "check_additions",
    "parse_control",
    "read_url_lines",
    "recorded_status",
    "set_paused",
    "write_additions",
]
