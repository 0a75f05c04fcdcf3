"""The command lines the documentation shows, found by one written rule.

Where: ``README.md``, ``docs/*.md`` and every file in ``config/``.

What is a command line:

1. **Markdown code blocks.** In a fenced block labelled as a shell (``bash``, ``sh``,
   ``shell``, ``console``) every line is a command line; in an unlabelled block (diagrams use
   those) a line is one when it starts with a *command word* (below). A line ending in ``\\``
   goes on on the next; a ``$ `` prompt is dropped; ``# ...`` after the command is a comment.
   Blocks in other languages (``toml``, ``python``) are not command lines.
2. **Markdown code spans** (```` `...` ```` in running text, over line breaks too) that start
   with a command word.
3. **Config files** (``config/*``): in a ``#`` comment, a code span that starts with a command
   word, a comment whose text starts with one (``#   archiver crawl --config ...``), or
   ``archiver SUBCOMMAND ...`` met in its text (to the end of the line; in comments
   SUBCOMMAND must be one of archiver's, so that "archiver reads this file" stays a
   sentence); in a systemd unit, the value of every ``Exec*=`` line; in a crontab (a file
   with a ``m h dom mon dow user command`` entry), the command field of every entry.

Command words: ``archiver`` followed by a lower-case word or an option, a path to ``archiver``
(``.venv/bin/archiver``, ``/opt/archiver/.venv/bin/archiver``), the repository's scripts
(``scripts/NAME``, ``./scripts/NAME``: a file in ``scripts/`` that is executable, or none at
all), ``python -m archiver`` and ``python -m tests...`` (any ``python``), ``curl`` and
``systemctl``. Leading ``VAR=value`` assignments and ``sudo`` are looked past, and in a chain
(``&&``, ``||``, ``;``, ``|``) any part may start with one. Commands of other programs shown
in prose, such as installing a dependency (``apt-get install redis-server``, ``pip install
pywb``), are those programs' own, not archiver's: ``scripts/test`` performs the installs the
suite needs.

What is not a command line, though it starts with a command word:

- a **synopsis**: a word is a placeholder, written in capitals (``DIR``, ``URL...``,
  ``--OPTION``, ``N``), in brackets (``[-o FILE]``), or elided (``…``, ``...``):
  ``archiver index DIR [DIR...]``; a quoted word is never one (``--exclude '[?&]x='``), an
  unquoted word in capitals always is (write ``-X POST`` as ``-X 'POST'``);
- in running text (code spans), **a subcommand's bare name**, ``archiver verify`` with
  nothing after it: the prose names the command, as it would a word.

Every command line found must be run by a test (``tests/docs/registry.py`` says how one is
registered), or be marked illustrative in the text: ``illustrative:`` and the reason, after
the command on its own line (a shell ``#`` comment in a code block or config file, an HTML
comment ``<!-- illustrative: ... -->`` or a note in Markdown prose). The reason ends at the
line's end, ``-->`` or ``)``. A marker applies to the nearest command before it on that line.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import re
import shlex
from pathlib import Path

from archiver.commands.cli import build_parser

REPO = Path(__file__).resolve().parents[2]

SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console"})
MARKER = "illustrative:"

_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SUBCOMMAND_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
_PYTHON_MODULE = re.compile(r"^(\S*/)?python3?(\.\d+)?$")


@dataclasses.dataclass(frozen=True)
class DocCommand:
    """One command line as the documentation shows it."""

    path: Path  #: relative to the repository
    line: int  #: 1-based line where the command starts
    text: str  #: the command, continuation lines joined, without its trailing comment
    illustrative: str | None  #: the reason given with the ``illustrative:`` marker, if any

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclasses.dataclass(frozen=True)
class OrphanMarker:
    """An ``illustrative:`` marker with no command before it on its line."""

    path: Path
    line: int


def documentation_files(root: Path = REPO) -> list[Path]:
    """The files the rule reads, relative to ``root``."""
    files = [Path("README.md")]
    files += sorted(p.relative_to(root) for p in (root / "docs").glob("*.md"))
    files += sorted(p.relative_to(root) for p in (root / "config").iterdir() if p.is_file())
    return files


def documented_commands(root: Path = REPO) -> list[DocCommand]:
    """Every command line of the documentation, in file and line order."""
    commands, _ = scan(root)
    return commands


def scan(root: Path = REPO) -> tuple[list[DocCommand], list[OrphanMarker]]:
    """The command lines, and the markers that mark none (a mistake to report)."""
    commands: list[DocCommand] = []
    orphans: list[OrphanMarker] = []
    for path in documentation_files(root):
        text = (root / path).read_text(encoding="utf-8")
        found, lost = (markdown_commands if path.suffix == ".md" else config_commands)(text)
        commands += [dataclasses.replace(c, path=path) for c in found]
        orphans += [dataclasses.replace(o, path=path) for o in lost]
    return commands, orphans


# ------------------------------------------------------------------------ what a command is


def is_command(text: str, *, prose: bool = False) -> bool:
    """Whether ``text`` starts with a command word (in any part of a chain). In ``prose`` (a
    config file's comment) ``archiver`` must be followed by one of its real subcommands:
    ``archiver reads this file`` is a sentence."""
    parts = re.split(r"&&|\|\||;|\|", text)
    return any(_starts_with_command_word(part, prose=prose) for part in parts)


def _starts_with_command_word(part: str, *, prose: bool) -> bool:
    words = part.split()
    while words and (_ASSIGNMENT.match(words[0]) or words[0] == "sudo"):
        words = words[1:]
    if not words:
        return False
    first, rest = words[0], words[1:]
    if first == "archiver":
        if prose:
            return bool(rest) and (rest[0] in subcommands() or rest[0].startswith("-"))
        return bool(rest) and bool(_SUBCOMMAND_WORD.match(rest[0]) or rest[0].startswith("-"))
    if first.endswith("/archiver"):
        return True
    if re.fullmatch(r"(\./)?scripts/[\w.-]+", first):
        script = REPO / first.removeprefix("./")
        return not script.exists() or (script.is_file() and os.access(script, os.X_OK))
    if _PYTHON_MODULE.match(first):
        return len(rest) >= 2 and rest[0] == "-m" and rest[1].split(".")[0] in {"archiver", "tests"}
    return first in {"curl", "systemctl"}


def is_synopsis(text: str) -> bool:
    """A usage line with placeholders, not a command to run (``archiver verify DIR``). Quoted
    words are the command's own (``--exclude '[?&]share='``), never placeholders."""
    if "…" in text:
        return True
    try:
        words = shlex.split(text, posix=False)
    except ValueError:
        words = text.split()
    for word in words:
        if word[:1] in "'\"":
            continue
        if word.startswith("[") or word.endswith("...") or word.endswith("]"):
            return True
        if _PLACEHOLDER.match(word.lstrip("-(").rstrip("),")):
            return True
    return False


def is_bare_subcommand(text: str) -> bool:
    """``archiver verify`` alone: running text naming the subcommand."""
    words = text.split()
    return len(words) == 2 and words[0] == "archiver" and bool(_SUBCOMMAND_WORD.match(words[1]))


@functools.cache
def subcommands() -> frozenset[str]:
    """archiver's subcommands, as its parser has them (hidden ones included)."""
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return frozenset(action.choices)
    raise AssertionError("archiver's parser has no subcommands")


def _archiver_in_text(text: str) -> re.Match[str] | None:
    """``archiver SUBCOMMAND`` met in the prose of a comment."""
    names = "|".join(re.escape(name) for name in sorted(subcommands(), key=len, reverse=True))
    return re.search(rf"(?<![\w/.-])archiver (?=({names})(\s|$))", text)


def split_comment(line: str) -> tuple[str, str]:
    """``line`` cut at its shell comment: a ``#`` that starts a word outside quotes."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i:]
    return line.rstrip(), ""


def marker_reason(text: str) -> str | None:
    """The reason after ``illustrative:`` in ``text``, or None without a marker."""
    at = text.find(MARKER)
    if at < 0:
        return None
    return re.split(r"-->|\)", text[at + len(MARKER) :])[0].strip()


# ---------------------------------------------------------------------------------- Markdown


def markdown_commands(text: str) -> tuple[list[DocCommand], list[OrphanMarker]]:
    lines = text.splitlines()
    commands: list[DocCommand] = []
    prose: list[str] = []  # the text outside code blocks, blank lines where blocks were
    fence: str | None = None
    language = ""
    pending: list[tuple[int, str]] = []  # a command line continued with a backslash
    for number, line in enumerate(lines, 1):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence, language = opening.group(1), opening.group(2).lower()
            prose.append("")
            continue
        if fence is not None:
            prose.append("")
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
                continue
            pending.append((number, line))
            if line.rstrip().endswith("\\"):
                continue
            command = None
            if language in SHELL_LANGUAGES or not language:
                command = _block_command(pending, shell=bool(language))
            pending = []
            if command is not None:
                commands.append(command)
            continue
        prose.append(line)
    span_commands, orphans = _span_commands(prose)
    commands += span_commands
    commands.sort(key=lambda c: c.line)
    return commands, orphans


def _block_command(physical: list[tuple[int, str]], *, shell: bool) -> DocCommand | None:
    """One logical line of a code block as a command, or None when it is not one."""
    first = physical[0][0]
    joined = " ".join(line.strip().removesuffix("\\").strip() for _, line in physical)
    joined = joined.removeprefix("$ ")
    command, comment = split_comment(joined)
    if not command:
        return None
    if not shell and (not is_command(command) or is_synopsis(command)):
        return None
    return DocCommand(Path(), first, command, marker_reason(comment))


def _span_commands(prose: list[str]) -> tuple[list[DocCommand], list[OrphanMarker]]:
    """Command spans of running text, and the markers after them on their line."""
    text = "\n".join(prose)
    starts = [0]
    for physical in prose:
        starts.append(starts[-1] + len(physical) + 1)

    def line_of(offset: int) -> int:
        return next(i for i, start in enumerate(starts) if start > offset)  # 1-based

    found: list[tuple[int, int, str]] = []  # (start offset, end offset, text)
    for match in _SPAN.finditer(text):
        span = " ".join(match.group(2).split())
        if is_command(span) and not is_synopsis(span) and not is_bare_subcommand(span):
            found.append((match.start(), match.end(), span))
    reasons: dict[int, str] = {}
    orphans: list[OrphanMarker] = []
    for marker in re.finditer(re.escape(MARKER), text):
        line = line_of(marker.start())
        before = [i for i, (_, end, _text) in enumerate(found) if end <= marker.start()]
        if before and line_of(found[before[-1]][1] - 1) == line:
            reasons[before[-1]] = marker_reason(text[marker.start() : starts[line] - 1]) or ""
        else:
            orphans.append(OrphanMarker(Path(), line))
    commands = [
        DocCommand(Path(), line_of(start), span, reasons.get(i))
        for i, (start, _, span) in enumerate(found)
    ]
    return commands, orphans


# ------------------------------------------------------------------------------ config files


def config_commands(text: str) -> tuple[list[DocCommand], list[OrphanMarker]]:
    commands: list[DocCommand] = []
    orphans: list[OrphanMarker] = []
    crontab = _looks_like_crontab(text)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith(("#", ";")):
            found, orphan = _comment_commands(line[1:], number)
            commands += found
            if orphan:
                orphans.append(OrphanMarker(Path(), number))
        elif re.match(r"Exec\w*=", line):
            value = line.split("=", 1)[1].lstrip("-@+!:")
            commands.append(DocCommand(Path(), number, value.strip(), None))
        elif crontab and line and not _ASSIGNMENT.match(line):
            fields = line.split(None, 6)
            if len(fields) == 7:
                command, comment = split_comment(fields[6])
                commands.append(DocCommand(Path(), number, command, marker_reason(comment)))
    return commands, orphans


def _looks_like_crontab(text: str) -> bool:
    return any(
        re.match(r"^[\d*/,-]+\s+[\d*/,-]+\s+[\d*/,-]+\s+[\d*/,-]+\s+[\d*/,-]+\s+\S+\s+\S", line)
        for line in text.splitlines()
    )


def _comment_commands(comment: str, number: int) -> tuple[list[DocCommand], bool]:
    """The commands of one comment line, and whether it holds a marker that marks none."""
    spans = [
        (match.start(), match.end(), " ".join(match.group(2).split()))
        for match in _SPAN.finditer(comment)
    ]
    found = [
        (start, end, span)
        for start, end, span in spans
        if is_command(span) and not is_synopsis(span) and not is_bare_subcommand(span)
    ]
    if not found:
        text = comment.strip()
        inline = None if is_command(text, prose=True) else _archiver_in_text(text)
        if inline is not None:
            text = text[inline.start() :]
        if inline is not None or is_command(text, prose=True):
            command, rest = split_comment(text)
            if is_synopsis(command):
                return [], MARKER in rest
            return [DocCommand(Path(), number, command, marker_reason(rest))], False
        return [], MARKER in comment
    at = comment.find(MARKER)
    orphan = at >= 0 and found[0][1] > at
    commands = []
    for i, (_, end, span) in enumerate(found):
        following = found[i + 1][0] if i + 1 < len(found) else len(comment)
        commands.append(DocCommand(Path(), number, span, marker_reason(comment[end:following])))
    return commands, orphan
