"""The literal text every match of a regular expression contains. (pure)

An ``ignores`` file can hold 100,000 patterns: searching each URL with all of them is too slow,
one alternation of them too slow to compile. Nearly every such pattern contains literal text
that any match must contain (``^https?://www\\.example\\.com/`` cannot match a URL without
``://www.example.com/``), so :mod:`archiver.policy.ignores` files patterns under a piece of that
text and searches a URL only with the patterns whose piece it contains (the prefilter of
Hyperscan and RE2's ``FilteredRE2``, done on Python ``re`` syntax).

:func:`required_runs` reads a pattern's top level only and is conservative: whatever it cannot
prove required (a group, a class, an escape that is not a plain character, a character a
quantifier may repeat zero times, anything in a pattern with a top-level ``|`` or verbose
mode) ends a run or empties the answer. Losing a run costs speed; claiming text a match need
not contain would wrongly leave a URL unignored, so every rule here errs on losing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: leading global flag groups: ``(?i)``, ``(?s)(?i)`` (Python 3.11 allows them only first)
_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))+")
#: a repeat count (``{2}``, ``{2,}``, ``{,3}``, ``{2,3}``) where one may stand
_COUNT = re.compile(r"\{\d*(?:,\d*)?\}")
#: ordinary characters: each matches itself (a brace may, and is read on its own)
_PLAIN = re.compile(r"[^\\\[\](){}|*+?.^$]+")
#: how many characters follow an escape letter as its argument (``\x41``, ``\u00e9``)
_ESCAPE_ARGUMENT = {"x": 2, "u": 4, "U": 8}


@dataclass(frozen=True, slots=True)
class Literals:
    """What :func:`required_runs` found in a pattern."""

    #: text every match contains, each run contiguous (empty: nothing could be proven)
    runs: tuple[str, ...]
    #: the pattern is case-insensitive (a leading ``(?i)``): the runs must be compared
    #: case-folded
    ignore_case: bool


def required_runs(pattern: str) -> Literals:
    """The contiguous runs of literal text any match of ``pattern`` must contain.

    ``pattern`` must compile (``re.compile``): the scanner relies on its groups and classes
    being closed."""
    flags = _LEADING_FLAGS.match(pattern)
    flag_letters = flags.group(0) if flags else ""
    ignore_case = "i" in flag_letters
    if "x" in flag_letters:  # verbose: whitespace and # comments are not literal
        return Literals((), ignore_case)
    runs = _Runs()
    i = flags.end() if flags else 0
    while i < len(pattern):
        plain = _PLAIN.match(pattern, i)
        if plain is not None:  # a stretch of ordinary characters, each itself
            runs.add(plain.group(0))
            i = plain.end()
        elif pattern[i] == "|":
            return Literals((), ignore_case)  # an alternative may contain none of it
        elif pattern[i] == "\\":
            i = _escape(pattern, i, runs)
        elif pattern[i] in "*?+{":
            i = _quantifier(pattern, i, runs)
        else:  # a class, a group, or "." "^" "$": the run ends
            runs.end()
            i = _SKIP.get(pattern[i], _skip_one)(pattern, i)
    runs.end()
    return Literals(tuple(runs.done), ignore_case)


class _Runs:
    """The runs found so far and the one being read."""

    __slots__ = ("current", "done", "last_in_run")

    def __init__(self) -> None:
        self.done: list[str] = []
        self.current = ""
        #: the last atom read is the last character of ``current``
        self.last_in_run = False

    def add(self, text: str) -> None:
        self.current += text
        self.last_in_run = True

    def end(self) -> None:
        if self.current:
            self.done.append(self.current)
        self.current = ""
        self.last_in_run = False


def _escape(pattern: str, i: int, runs: _Runs) -> int:
    """Read the escape at ``i``: a plain character joins the run, anything else ends it."""
    following = pattern[i + 1] if i + 1 < len(pattern) else ""
    if following.isascii() and following.isalnum():
        runs.end()  # \d, \b, \A, a back-reference, \x41 …: not a plain character
        return _skip_escape(pattern, i)
    runs.add(following)
    return i + 2


def _quantifier(pattern: str, i: int, runs: _Runs) -> int:
    """Read the quantifier at ``i`` (or a brace that counts nothing, which is itself)."""
    count = _COUNT.match(pattern, i) if pattern[i] == "{" else None
    if pattern[i] == "{" and count is None:
        runs.add("{")
        return i + 1
    if runs.last_in_run and pattern[i] != "+":  # repeated maybe zero times: not required
        runs.current = runs.current[:-1]
    runs.end()
    i = count.end() if count else i + 1
    if i < len(pattern) and pattern[i] in "?+":  # lazy or possessive
        i += 1
    return i


def _skip_one(pattern: str, i: int) -> int:
    return i + 1


def _skip_escape(pattern: str, i: int) -> int:
    """The index after the escape at ``i`` (a backslash and a letter or digit)."""
    letter = pattern[i + 1]
    j = i + 2
    if letter.isdigit():  # a back-reference or an octal escape: its digits
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
    elif letter in _ESCAPE_ARGUMENT:
        j += _ESCAPE_ARGUMENT[letter]
    elif letter == "N":  # \N{NAME}
        close = pattern.find("}", j)
        j = close + 1 if close >= 0 else len(pattern)
    return min(j, len(pattern))


def _skip_class(pattern: str, i: int) -> int:
    """The index after the character class opening at ``i``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":  # a leading ] is a member
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
        elif pattern[j] == "]":
            return j + 1
        else:
            j += 1
    return len(pattern)


def _skip_group(pattern: str, i: int) -> int:
    """The index after the group opening at ``i`` (classes and escapes inside skipped)."""
    depth = 0
    j = i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _skip_class(pattern, j)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(pattern)


_SKIP = {"[": _skip_class, "(": _skip_group}

__all__ = ["Literals", "required_runs"]
