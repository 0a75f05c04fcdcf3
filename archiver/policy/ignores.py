"""Exclusion patterns an operator changes while a crawl runs: the crawl directory's ``ignores``
file, in grab-site's format (one regular expression per line, ``#`` comments). (pure)

A URL is ignored when any pattern *searches* it (Python ``re`` syntax, as ``--exclude``). A line
that is not a valid regular expression is reported with its line number and left out; the
others apply.

How the patterns are searched depends on how many there are:

* up to :data:`SMALL` lines (an ``--exclude`` list, a hand-kept file): combined into as few
  regexes as they combine into (:func:`combine`), usually one alternation, one search per URL;
* more (grab-site's shared lists reach 100,000 lines): one alternation would take minutes to
  compile and milliseconds per URL to search. Each line is filed instead under one
  :data:`GRAM`-character piece of the literal text every match of it contains
  (:mod:`archiver.policy.literals`), the piece fewest lines share; a URL is searched only with
  the lines filed under the pieces it contains (each bucket of lines combined, once, the first
  time a URL needs it), and with the few lines that have no such text. Loading costs one
  ``re.compile`` per line.

A new version of the file is read incrementally (:func:`parse_ignores` with ``previous``): the
lines the previous version had keep their compiled form and their place, so appending a line
to 100,000 costs that line, not the file.

:class:`Exclusions` is what the crawler asks at lease time: the scope's ``--exclude`` patterns
and the ``ignores`` together, the two reasons a URL queued earlier may no longer be wanted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from archiver.models import SkipReason
from archiver.policy.literals import required_runs

#: up to this many lines, one combined search per URL (no prefilter)
SMALL = 64
#: the length of the piece of literal text a line is filed under
GRAM = 4
#: up to this many regexes are searched one by one; more are combined first
_LINE_BY_LINE = 4
#: the case-folded text a case-insensitive line can be filed under: ASCII without "i" and "s",
#: the characters re's IGNORECASE matches beyond their lower- and upper-case forms (U+0130,
#: U+0131, U+017F: a URL's lower case would not show them as "i" or "s")
_FOLD_SAFE_TEXT = re.compile("[^is\u0080-\U0010ffff]+")

Matcher = Callable[[str], object]


@dataclass(frozen=True, slots=True)
class _Line:
    """One valid line: its compiled form and the pieces it can be filed under."""

    pattern: str
    regex: re.Pattern[str]
    #: the :data:`GRAM`-character pieces of its required literal text (case-folded when
    #: ``folded``); empty when it has none and is searched for every URL
    grams: tuple[str, ...]
    folded: bool
    #: the longest required text (case-folded when ``folded``): a URL without it is not
    #: searched with the line
    anchor: str


def _read_line(pattern: str) -> _Line:
    """Compile one line (raises ``re.error``) and find the pieces it can be filed under."""
    regex = re.compile(pattern)
    literals = required_runs(pattern)
    texts = literals.runs
    if literals.ignore_case:  # only what case-folds safely: see _FOLD_UNSAFE
        texts = tuple(t for run in texts for t in _FOLD_SAFE_TEXT.findall(run.lower()))
    grams = tuple(dict.fromkeys(t[i : i + GRAM] for t in texts for i in range(len(t) - GRAM + 1)))
    anchor = max(texts, key=len) if grams else ""
    return _Line(pattern, regex, grams, literals.ignore_case, anchor)


class _Bucket:
    """Lines filed under one piece: each searched when the URL holds its anchor."""

    __slots__ = ("lines",)

    def __init__(self, lines: tuple[_Line, ...]) -> None:
        self.lines = lines

    def with_line(self, line: _Line) -> _Bucket:
        return _Bucket((*self.lines, line))

    def search(self, text: str, url: str) -> bool:
        return any(line.anchor in text and line.regex.search(url) for line in self.lines)


@dataclass(frozen=True, slots=True)
class _Index:
    """The lines filed under their pieces (case-sensitive and case-folded apart)."""

    exact: dict[str, _Bucket] = field(default_factory=dict)
    folded: dict[str, _Bucket] = field(default_factory=dict)
    #: how many lines could be filed under each piece (what the choice of piece minimises)
    counts: Counter[str] = field(default_factory=Counter)
    #: the lines with no piece, searched for every URL
    rest: tuple[_Line, ...] = ()

    def search(self, url: str, rest: Matcher | None) -> bool:
        if rest is not None and rest(url):
            return True
        if self.exact and _probe(self.exact, url, url):
            return True
        return bool(self.folded) and _probe(self.folded, url.lower(), url)


def _probe(table: dict[str, _Bucket], text: str, url: str) -> bool:
    """Search ``url`` with the buckets filed under a piece of ``text``."""
    for gram in {text[i : i + GRAM] for i in range(len(text) - GRAM + 1)}:
        bucket = table.get(gram)
        if bucket is not None and bucket.search(text, url):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Ignores:
    """The compiled patterns of one version of an ``ignores`` file."""

    patterns: tuple[str, ...] = ()
    #: ``line N: pattern: error`` for each line that is not a valid regular expression
    errors: tuple[str, ...] = ()
    _lines: dict[str, _Line] = field(default_factory=dict, repr=False, compare=False)
    _index: _Index | None = field(default=None, repr=False, compare=False)
    #: the search of the lines not filed under a piece (or of every line, when few)
    _rest: Matcher | None = field(default=None, repr=False, compare=False)

    def search(self, url: str) -> bool:
        """True when a pattern matches anywhere in ``url``."""
        if self._index is None:
            return self._rest is not None and bool(self._rest(url))
        return self._index.search(url, self._rest)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matcher(self) -> Matcher | None:
        """The fastest callable answering "does a pattern match?" (truthy when one does), or
        None when there is no pattern: the combined regex's own ``search`` when few."""
        if not self.patterns:
            return None
        if self._index is None and self._rest is not None:
            return self._rest
        return self.search


NO_IGNORES = Ignores()


def parse_ignores(text: str, previous: Ignores = NO_IGNORES) -> Ignores:
    """The patterns of an ``ignores`` file: blank lines and ``#`` comment lines are skipped,
    surrounding whitespace is not part of a pattern. Lines ``previous`` (the version read
    before) had are not compiled again."""
    known = previous._lines
    patterns: list[str] = []
    lines: dict[str, _Line] = {}
    errors: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        if pattern not in lines:
            line = known.get(pattern)
            if line is None:
                try:
                    line = _read_line(pattern)
                except re.error as exc:
                    errors.append(f"line {number}: {pattern!r}: {exc}")
                    continue
            lines[pattern] = line
        patterns.append(pattern)
    return _build(tuple(patterns), lines, tuple(errors), previous)


def compile_patterns(patterns: Iterable[str], errors: tuple[str, ...] = ()) -> Ignores:
    """Valid ``patterns`` (``--exclude``), searched as an ``ignores`` file's lines are."""
    ordered = tuple(patterns)
    lines = {pattern: _read_line(pattern) for pattern in ordered}
    return _build(ordered, lines, errors, NO_IGNORES)


def _build(
    patterns: tuple[str, ...], lines: dict[str, _Line], errors: tuple[str, ...], previous: Ignores
) -> Ignores:
    """The search over ``lines`` (the distinct ``patterns``), extending ``previous``'s when
    the file only grew."""
    if len(lines) <= SMALL:
        rest = _matcher([line.regex for line in lines.values()]) if lines else None
        return Ignores(patterns, errors, lines, None, rest)
    old = previous._index
    before = previous._lines
    if old is not None and before.keys() <= lines.keys():
        index = _extend(old, [line for p, line in lines.items() if p not in before])
    else:
        index = _file(list(lines.values()))
    rest = _matcher([line.regex for line in index.rest]) if index.rest else None
    return Ignores(patterns, errors, lines, index, rest)


def _file(lines: list[_Line]) -> _Index:
    """Every line filed under its piece that the fewest lines could be filed under."""
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(line.grams)
    exact: dict[str, list[_Line]] = {}
    folded: dict[str, list[_Line]] = {}
    rest: list[_Line] = []
    for line in lines:
        if not line.grams:
            rest.append(line)
            continue
        gram = min(line.grams, key=counts.__getitem__)  # the first of the rarest
        (folded if line.folded else exact).setdefault(gram, []).append(line)
    return _Index(
        {g: _Bucket(tuple(b)) for g, b in exact.items()},
        {g: _Bucket(tuple(b)) for g, b in folded.items()},
        counts,
        tuple(rest),
    )


def _extend(index: _Index, added: list[_Line]) -> _Index:
    """``index`` with lines appended: the others keep their piece and their compiled bucket;
    the new ones are filed by the counts so far."""
    if not added:
        return index
    counts = index.counts.copy()
    exact, folded, rest = dict(index.exact), dict(index.folded), list(index.rest)
    for line in added:
        counts.update(line.grams)
    for line in added:
        if not line.grams:
            rest.append(line)
            continue
        gram = min(line.grams, key=counts.__getitem__)
        table = folded if line.folded else exact
        bucket = table.get(gram)
        table[gram] = bucket.with_line(line) if bucket is not None else _Bucket((line,))
    return _Index(exact, folded, counts, tuple(rest))


def _matcher(regexes: list[re.Pattern[str]]) -> Matcher:
    """One callable searching with every regex in ``regexes``."""
    if len(regexes) == 1:
        return regexes[0].search
    if len(regexes) <= _LINE_BY_LINE:
        return lambda url: any(r.search(url) for r in regexes)
    combined = combine(regexes)
    if len(combined) == 1:
        return combined[0].search
    return lambda url: any(r.search(url) for r in combined)


#: a numbered backreference, a named group or reference, a conditional on a group
_GROUP_NAMES_OR_NUMBERS = re.compile(r"\\[1-9]|\(\?P[<=]|\(\?\(")
_LEADING_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _split_flags(pattern: str) -> tuple[str, str]:
    """A pattern's leading global flags (``(?i)``) and the rest."""
    flags = _LEADING_FLAGS.match(pattern)
    return ("", pattern) if flags is None else (flags.group(0), pattern[flags.end() :])


def combine(regexes: list[re.Pattern[str]]) -> list[re.Pattern[str]]:
    """``regexes`` as few regexes as possible: one alternation per set of leading global
    flags (a ``(?i)`` line joins the other ``(?i)`` lines), because Python refuses a global
    flag inside an alternation, and a case-insensitive branch among case-sensitive ones stops
    the regex engine from skipping ahead (measured 25 times slower with 100 lines). A line
    with a global flag further in stays on its own, and so does a line that numbers or names
    groups (its group numbers would change in an alternation)."""
    groups: dict[str, list[re.Pattern[str]]] = {}
    alone: list[re.Pattern[str]] = []
    for regex in regexes:
        key, body = _split_flags(regex.pattern)
        if _GROUP_NAMES_OR_NUMBERS.search(body):
            # "\1" or "(?(1)..)" would mean another line's group once combined, and two lines
            # naming a group alike cannot share a regex: such a line stays on its own
            alone.append(regex)
            continue
        try:
            re.compile(f"{key}(?:{body})|(?:)")  # can it be one branch of an alternation?
        except re.error:
            alone.append(regex)
            continue
        groups.setdefault(key, []).append(regex)
    combined = [
        members[0]
        if len(members) == 1
        else re.compile(key + "|".join(f"(?:{_split_flags(r.pattern)[1]})" for r in members))
        for key, members in groups.items()
    ]
    return combined + alone


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


__all__ = ["NO_IGNORES", "Exclusions", "Ignores", "combine", "compile_patterns", "parse_ignores"]
