"""The Redis frontier's Lua scripts: ``scripts/*.lua`` (package data) with the shared prelude in
front, and their SHA-1 for ``EVALSHA``.

Every script takes one key, ``P:meta`` (``KEYS[1]``: the prelude derives the crawl's key prefix
from it and checks that the crawl's state exists), and the arguments its header declares on its
``-- ARGV:`` line: fixed ones, then, after a ``;``, one per item. :meth:`Script.args` checks each
call against that line, so the Python side and the Lua side cannot disagree on positions
silently. The scripts run atomically on the server; each is safe to send twice (see the package
docstring).
"""

from __future__ import annotations

import hashlib
import importlib.resources
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The scripts, by name (``scripts/NAME.lua``).
NAMES = (
    "put",
    "claim",
    "ack",
    "release",
    "renew",
    "leave",
    "uncommit",
    "delay",
    "reserve",
    "politeness",
    "spacing",
)


@dataclass(frozen=True, slots=True)
class Script:
    """One script as loaded into Redis."""

    name: str
    text: str  #: the prelude, then the script
    sha: str  #: SHA-1 of ``text``: what ``SCRIPT LOAD`` returns and ``EVALSHA`` takes
    argv: tuple[str, ...]  #: the fixed arguments, in order
    per_item: str | None  #: what each further argument is; None when there are none

    def args(self, meta_key: str, fixed: Sequence[Any], items: Sequence[Any] = ()) -> list[Any]:
        """The ``EVALSHA`` arguments: the SHA, one key, the fixed arguments, the items."""
        if len(fixed) != len(self.argv) or (items and self.per_item is None):
            raise ValueError(
                f"script {self.name} takes ARGV {', '.join(self.argv)}"
                + (f"; then per item: {self.per_item}" if self.per_item else "")
                + f"; got {len(fixed)} fixed and {len(items)} further arguments"
            )
        return [self.sha, 1, meta_key, *fixed, *items]


def _source(name: str) -> str:
    resource = importlib.resources.files(__package__).joinpath("scripts", f"{name}.lua")
    return resource.read_text("utf-8")


def declared_argv(name: str, body: str) -> tuple[tuple[str, ...], str | None]:
    """The fixed arguments and the per-item description of a script's ``-- ARGV:`` line."""
    lines = [line for line in body.splitlines() if line.startswith("-- ARGV:")]
    if len(lines) != 1:
        raise ValueError(f"scripts/{name}.lua must declare its arguments on one '-- ARGV:' line")
    fixed, _, rest = lines[0].removeprefix("-- ARGV:").partition(";")
    per_item = rest.strip().removeprefix("then per ").strip() or None
    return tuple(part.strip() for part in fixed.split(",") if part.strip()), per_item


def load() -> dict[str, Script]:
    """Every script, read from the package."""
    prelude = _source("prelude")
    scripts = {}
    for name in NAMES:
        body = _source(name)
        text = prelude + "\n" + body
        argv, per_item = declared_argv(name, body)
        sha = hashlib.sha1(text.encode("utf-8")).hexdigest()
        scripts[name] = Script(name, text, sha, argv, per_item)
    return scripts


SCRIPTS = load()
