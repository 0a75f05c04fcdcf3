"""Exclusion patterns an operator changes while a crawl runs: the crawl directory's ``ignores``
file, in grab-site's format (one regular expression per line, ``#`` comments). (pure)

A URL is ignored when any pattern *searches* it (Python ``re`` syntax, as ``--exclude``). The
patterns are compiled once per change of the file, into as few regexes as they combine into
(:func:`compile_patterns`): usually one alternation, one search per URL whatever the number of
lines. A line that is not a valid regular expression is reported with its line number and left
out; the others apply.

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
    #: the patterns as few regexes as they combine into (see :func:`compile_patterns`)
    regexes: tuple[re.Pattern[str], ...] = ()

    def search(self, url: str) -> bool:
        """True when a pattern matches anywhere in ``url``."""
        return any(r.search(url) for r in self.regexes)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matcher(self) -> Callable[[str], object] | None:
        """The fastest callable answering "does a pattern match?" (truthy when one does), or
        None when there is no pattern: the one regex's own ``search`` when they combined."""
        if not self.regexes:
            return None
        if len(self.regexes) == 1:
            return self.regexes[0].search
        return self.search


NO_IGNORES = Ignores()


def parse_ignores(text: str) -> Ignores:
    """The patterns of an ``ignores`` file: blank lines and ``#`` comment lines are skipped,
    surrounding whitespace is not part of a pattern."""
    patterns: list[str] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        try:
            re.compile(pattern)
        except re.error as exc:
            errors.append(f"line {number}: {pattern!r}: {exc}")
            continue
        patterns.append(pattern)
    return compile_patterns(tuple(patterns), tuple(errors))


_LEADING_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")
#: a numbered backreference, a named group or reference, a conditional on a group
_GROUP_NAMES_OR_NUMBERS = re.compile(r"\\[1-9]|\(\?P[<=]|\(\?\(")


def compile_patterns(patterns: tuple[str, ...], errors: tuple[str, ...] = ()) -> Ignores:
    """Valid ``patterns`` as few regexes as possible: one alternation per set of leading
    global flags (a ``(?i)`` line joins the other ``(?i)`` lines), because Python refuses a
    global flag inside an alternation, and a case-insensitive branch among case-sensitive ones
    stops the regex engine from skipping ahead (measured 25 times slower with 100 lines). A
    line with a global flag further in stays on its own, and so does a line that numbers or
    names groups (its group numbers would change in an alternation)."""
    groups: dict[str, list[str]] = {}
    alone: list[re.Pattern[str]] = []
    for pattern in patterns:
        flags = _LEADING_FLAGS.match(pattern)
        key, body = ("", pattern) if flags is None else (flags.group(0), pattern[flags.end() :])
        if _GROUP_NAMES_OR_NUMBERS.search(body):
            # "\1" or "(?(1)..)" would mean another line's group once combined, and two lines
            # naming a group alike cannot share a regex: such a line stays on its own
            alone.append(re.compile(pattern))
            continue
        try:
            re.compile(f"{key}(?:{body})|(?:)")  # can it be one branch of an alternation?
        except re.error:
            alone.append(re.compile(pattern))
            continue
        groups.setdefault(key, []).append(body)
    regexes = [
        re.compile(key + "|".join(f"(?:{body})" for body in bodies))
        for key, bodies in groups.items()
    ]
    return Ignores(patterns, errors, tuple(regexes + alone))


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
