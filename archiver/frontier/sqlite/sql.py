"""The SQLite frontier's SQL: ``scripts/schema.sql`` (the tables) and ``scripts/queries.sql``
(every statement, by name), read from the package, the way :mod:`archiver.frontier.redis.lua`
reads the Redis frontier's Lua scripts.

A statement's text names the per-URL states of :mod:`.codec` as ``$QUEUED`` ... (filled in here,
once: SQLite uses the partial index on queued URLs only for a constant state) and, where a batch
decides its size, ``$rows`` / ``$marks`` / ``$sets`` / ``$parts``, which :func:`sized` fills.
"""

from __future__ import annotations

import importlib.resources
import re
from string import Template

from archiver.frontier.sqlite.codec import STATES

_NAME = re.compile(r"^-- name: ([a-z-]+)$", re.MULTILINE)


def _source(name: str) -> str:
    resource = importlib.resources.files(__package__).joinpath("scripts", name)
    return resource.read_text("utf-8")


def _strip_comments(text: str) -> str:
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("--")]
    return " ".join(" ".join(lines).split())


def parse_queries(text: str) -> dict[str, str]:
    """``{name: statement}`` of a queries file: each statement from its ``-- name:`` line to
    the next, comments dropped, the states filled in, runs of whitespace made one space."""
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"scripts/queries.sql names {name!r} twice")
        queries[name] = Template(_strip_comments(body)).safe_substitute(STATES)
    return queries


def schema_statements() -> list[str]:
    """The statements of ``schema.sql``, in order (separated by semicolons)."""
    text = _source("schema.sql")
    return [statement for statement in text.split(";") if statement.strip()]


def sized(statement: str, **parts: str) -> str:
    """``statement`` with its size-dependent parts (``rows``, ``marks``, ``sets``, ``parts``)
    filled in; a part it names but is not given is an error."""
    return Template(statement).substitute(parts)


def values(rows: int, width: int) -> str:
    """``(?,?),(?,?)...``: ``rows`` rows of ``width`` parameters, for ``$rows``."""
    row = "(" + ",".join("?" * width) + ")"
    return ",".join([row] * rows)


def marks(count: int) -> str:
    """``?,?,...``: ``count`` parameters, for ``$marks``."""
    return ",".join("?" * count)


#: Every statement of ``scripts/queries.sql``, by name.
QUERIES = parse_queries(_source("queries.sql"))
