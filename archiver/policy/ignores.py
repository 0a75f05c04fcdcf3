"""Exclusion patterns an operator changes while a crawl runs: the crawl directory's ``ignores``
file, in grab-site's format (one regular expression per line, ``#`` comments). (pure)

A URL is ignored when any pattern *searches* it (Python ``re`` syntax, as ``--exclude``). The
patterns are compiled once per change of the file, into one alternation when they combine (one
regex search per URL, whatever the number of lines), else into a tuple tried in turn (a line
with a global flag such as ``(?i)`` cannot be put inside an alternation). A line that is not a
valid regular expression is reported with its line number and left out; the others apply.

:class:`Exclusions` is what the crawler asks at lease time: the scope's ``--exclude`` patterns
and the ``ignores`` together, the two reasons a URL queued earlier may no longer be wanted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from archiver.models import SkipReason


@dataclass(frozen=True, slots=True)
class Ignores:
    """The compiled patterns of one version of an ``ignores`` file."""

    patterns: tuple[str, ...] = ()
    #: ``line N: pattern: error`` for each line that is not a valid regular expression
    errors: tuple[str, ...] = ()
    _combined: re.Pattern[str] | None = None
    _each: tuple[re.Pattern[str], ...] = ()

    def search(self, url: str) -> bool:
        """True when a pattern matches anywhere in ``url``."""
        combined = self._combined
        if combined is not None:
            return combined.search(url) is not None
        return any(p.search(url) for p in self._each)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matcher(self) -> Callable[[str], object] | None:
        """The fastest callable answering "does a pattern match?" (truthy when one does), or
        None when there is no pattern: the combined regex's own ``search`` when there is one."""
        if not self.patterns:
            return None
        if self._combined is not None:
            return self._combined.search
        return self.search


NO_IGNORES = Ignores()


def parse_ignores(text: str) -> Ignores:
    """The patterns of an ``ignores`` file: blank lines and ``#`` comment lines are skipped,
    surrounding whitespace is not part of a pattern."""
    patterns: list[str] = []
    compiled: list[re.Pattern[str]] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            errors.append(f"line {number}: {pattern!r}: {exc}")
            continue
        patterns.append(pattern)
    return compile_patterns(tuple(patterns), tuple(errors), tuple(compiled))


def compile_patterns(
    patterns: tuple[str, ...],
    errors: tuple[str, ...] = (),
    compiled: tuple[re.Pattern[str], ...] | None = None,
) -> Ignores:
    """One alternation of valid ``patterns`` when they combine, else each on its own."""
    if not patterns:
        return Ignores(errors=errors)
    try:
        combined = re.compile("|".join(f"(?:{p})" for p in patterns))
    except re.error:  # a global flag in the middle of the alternation: try each in turn
        each = compiled if compiled is not None else tuple(re.compile(p) for p in patterns)
        return Ignores(patterns, errors, None, each)
    return Ignores(patterns, errors, combined)


_IGNORED, _EXCLUDED = SkipReason.IGNORED, SkipReason.EXCLUDED  # module globals: the hot path


class Exclusions:
    """``--exclude`` and the live ``ignores``, asked for every URL a worker leases.

    Cheap by construction: an attribute read and at most two precompiled regex searches; the
    ``ignores`` are replaced whole (:meth:`replace`) when the file changes, never recompiled
    per URL."""

    __slots__ = ("_excluded", "_ignored", "excludes", "ignores", "version")

    def __init__(self, excludes: Ignores = NO_IGNORES, ignores: Ignores = NO_IGNORES) -> None:
        self.excludes = excludes
        self._excluded = excludes.matcher()
        self.ignores = ignores
        self._ignored = ignores.matcher()
        #: bumped with every new version of the ignores (caches of earlier verdicts expire)
        self.version = 0

    def replace(self, ignores: Ignores) -> None:
        """Use a new version of the ``ignores`` from now on (no URL sees half of a change:
        nothing awaits in between)."""
        self.ignores, self._ignored = ignores, ignores.matcher()
        self.version += 1

    def ignored(self, url: str) -> bool:
        """Whether a line of the ignores matches ``url`` (at discovery: the scope has checked
        ``--exclude`` already)."""
        ignored = self._ignored
        return ignored is not None and bool(ignored(url))

    def check(self, url: str) -> SkipReason | None:
        """``excluded`` or ``ignored`` when a pattern matches ``url``, else None."""
        excluded = self._excluded
        if excluded is not None and excluded(url):
            return _EXCLUDED
        ignored = self._ignored
        if ignored is not None and ignored(url):
            return _IGNORED
        return None


__all__ = ["NO_IGNORES", "Exclusions", "Ignores", "compile_patterns", "parse_ignores"]
