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

Both files are looked at every :data:`POLL_SECONDS` (a ``stat``: modification time, size and
inode, so an editor's save-by-rename is seen) and read again only when they changed; the
patterns are compiled once per change, never per URL. Polling needs no platform API and costs
two ``stat`` calls a second. When the crawl starts they are read before the first lease, so a
resumed crawl applies them (and a new ``--exclude``) to the URLs it had queued.

In a crawl shared through Redis, each process watches the directory it writes into (processes
on one machine share it). Ignores apply in the processes that read them. Politeness is the
crawl's: a change is published to every process
(:meth:`archiver.frontier.base.Frontier.set_politeness`), and this loop also picks up what
another process published (:meth:`~archiver.frontier.base.Frontier.shared_politeness`).
"""

from __future__ import annotations

import asyncio
import os
import tomllib
from pathlib import Path
from typing import Any

from archiver.config.settings import parse_value
from archiver.errors import FrontierError, SettingsError
from archiver.frontier.base import Frontier
from archiver.models import CrawlItem, SkipReason
from archiver.policy.ignores import NO_IGNORES, Exclusions, Ignores, parse_ignores
from archiver.policy.politeness import Politeness
from archiver.run.output import Layout

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
        self.exclusions = exclusions
        self._frontier = frontier
        self.defaults = defaults
        self.politeness = defaults
        self._log = log
        #: why the latest control.toml was refused (None: it was applied, or there is none)
        self.control_error: str | None = None
        self._ignores_seen: _Signature = None
        self._control_seen: _Signature = None

    def check(self, item: CrawlItem) -> SkipReason | None:
        """At lease time: ``excluded`` or ``ignored`` when the URL is no longer wanted."""
        return self.exclusions.check(item.url)

    # -- watching --------------------------------------------------------------------------

    def load(self) -> None:
        """Read both files now (before the first lease)."""
        self._ignores_seen = _signature(self._ignores_path)
        self._apply_ignores(self._parse_ignores(self._ignores_seen))
        self._look_at_control()

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
    "CONTROL_KEYS",
    "POLL_SECONDS",
    "LiveControl",
    "append_ignore",
    "parse_control",
]
