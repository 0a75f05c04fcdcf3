"""What a fuzz target is, and the small helpers targets share.

A target's ``check`` must return normally for every input. It raises :class:`Disagreement`
when the parser and its oracle differ, and lets through any exception that is neither one of
the parser's documented errors (``Target.errors``) nor handled: libFuzzer records both as a
crash with the input that caused it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

#: Every target, by name, in the order ``scripts/fuzz`` runs them.
NAMES = (
    "response",
    "chunked",
    "request",
    "html",
    "css",
    "srcset",
    "urls",
    "robots",
    "sitemap",
    "warc",
    "warcwalk",
    "cdxj",
    "cookies",
    "ignores",
    "feed",
    "json",
    "hls",
    "dash",
    "pdf",
)


#: Third-party packages archiver hands a target's input to (protego parses robots.txt for
#: us): their coverage guides the fuzzer too. atheris instruments whole top-level packages, so
#: all of archiver's code is instrumented; only what a target runs adds features.
_EXTRA_INSTRUMENTED = {"robots": ("protego",)}


def instrumented(name: str) -> tuple[str, ...]:
    """The packages whose code coverage guides the fuzzer for target ``name``."""
    return ("archiver", *_EXTRA_INSTRUMENTED.get(name, ()))


class Disagreement(AssertionError):  # noqa: N818 - an AssertionError, named for what it is
    """The parser and its oracle read the same input differently."""


@dataclass(frozen=True)
class Target:
    name: str
    #: the parser and its oracle; returns normally when they agree
    check: Callable[[bytes], None]
    #: longest input libFuzzer generates (``-max_len``)
    max_len: int = 8192
    #: one line for ``scripts/fuzz --list`` and the docs: the parser and the oracle
    summary: str = ""
    #: tokens libFuzzer splices into inputs (``-dict``): the format's keywords
    dictionary: tuple[bytes, ...] = ()
    #: an input for this target from a seed document (the leading decision bytes added)
    seed: Callable[[bytes], bytes] = bytes


def load(name: str) -> Target:
    module = importlib.import_module(f"tests.fuzz.targets.{name}")
    target = module.TARGET
    assert isinstance(target, Target) and target.name == name, name
    return target


def agree(condition: bool, *context: object) -> None:
    """Raise :class:`Disagreement` with ``context`` unless ``condition`` holds."""
    if not condition:
        raise Disagreement(*context)


class Bytes:
    """Reads an input as a sequence of small decisions then a rest (libFuzzer mutates bytes;
    a few leading bytes choosing how the rest is fed lets one input drive several paths)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, size: int) -> bytes:
        piece = self.data[self.pos : self.pos + size]
        self.pos += len(piece)
        return piece

    def until(self, separator: bytes) -> bytes:
        """The bytes up to ``separator`` (consumed, not returned), or the rest."""
        end = self.data.find(separator, self.pos)
        if end < 0:
            end = len(self.data)
        piece = self.data[self.pos : end]
        self.pos = end + len(separator)
        return piece

    def rest(self) -> bytes:
        piece = self.data[self.pos :]
        self.pos = len(self.data)
        return piece


def whole(document: bytes) -> bytes:
    """The input that feeds ``document`` at once: a zero decision byte, then the document."""
    return b"\x00" + document


def pieces(data: bytes, sizes: bytes) -> list[bytes]:
    """``data`` cut into pieces whose sizes cycle through ``sizes`` (1 to 256; an empty
    ``sizes`` means whole): how a network or a reader could deliver it."""
    if not sizes:
        return [data]
    out: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(data):
        step = sizes[i % len(sizes)] + 1
        out.append(data[pos : pos + step])
        pos += step
        i += 1
    return out
