"""The seeds of a ``--seeds-file``, read and handed on in batches while the crawl runs.

A seeds file can hold a million URLs. Read, normalised (WHATWG parsing: tens of microseconds
a URL) and queued in one go, it kept the event loop for about 90 s: no fetch, no signal and
no ``--max-duration`` was answered meanwhile, and every seed was copied into ``summary.json``.
So the file is read :data:`SEED_BATCH` lines at a time. The first batch is read before the
run starts (a small file is then known whole from the start, as the command line's seeds are:
scope, the SSRF guard's allowed addresses, credential hosts); the crawler feeds the rest to
the frontier between its other work, one batch per turn of the event loop, and stops feeding
when the crawl stops. A line that is not an http(s) URL is reported with its number and left
out: one bad line must not stop a crawl of a million. Lines are ``#`` comments or blank, as in
every lines file of archiver; any other line is a URL (the crawl's rules) or a JSON object with
the keys of a ``[[seed]]`` table (its own rules: :func:`archiver.config.seeds.seed_line`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from archiver.config.seeds import crawl_seeds, first_of_each, seed_line
from archiver.config.settings import Settings
from archiver.errors import SettingsError
from archiver.policy.seeds import Seed

#: Lines read and normalised at a time (about 40 ms of work on the development machine: the
#: event loop is never held longer than that by the seeds).
SEED_BATCH = 500


@dataclass(slots=True)
class SeedBatch:
    """One batch of a seeds file: its seeds (URLs normalised, with their rules) and its lines
    that are not seeds."""

    seeds: list[Seed] = field(default_factory=list)
    #: ``(line number, line, why)`` of each line left out
    invalid: list[tuple[int, str, str]] = field(default_factory=list)


class SeedsFile:
    """A ``--seeds-file`` read from its start, batch by batch (one pass; see the module doc);
    a line without rules of its own takes those of ``settings``."""

    def __init__(self, path: Path, settings: Settings, *, batch: int = SEED_BATCH) -> None:
        self.path = path
        self.settings = settings
        self.batch = batch
        self.lines = 0  #: lines read so far
        self.fed = 0  #: seeds handed out so far
        self.invalid = 0  #: lines left out so far
        self._file: TextIO | None = None
        self.done = False

    def open(self) -> None:
        """Open the file; one that cannot be read is a usage error (before anything starts)."""
        try:
            self._file = open(self.path, encoding="utf-8", errors="replace")  # noqa: SIM115
        except OSError as exc:
            raise SettingsError(
                "--seeds-file", f"cannot read {self.path}: {exc.strerror or exc}"
            ) from None

    def next_batch(self) -> SeedBatch:
        """The next :attr:`batch` lines' seeds (an empty batch once the file is done)."""
        found = SeedBatch()
        file = self._file
        if file is None or self.done:
            return found
        for _ in range(self.batch):
            line = file.readline()
            if not line:
                self.close()
                break
            self.lines += 1
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                found.seeds.append(seed_line(text, self.settings, "seed"))
            except SettingsError as exc:
                found.invalid.append((self.lines, text[:200], str(exc)))
        self.fed += len(found.seeds)
        self.invalid += len(found.invalid)
        return found

    def __iter__(self) -> Iterator[SeedBatch]:
        while not self.done:
            yield self.next_batch()

    def close(self) -> None:
        self.done = True
        file, self._file = self._file, None
        if file is not None:
            file.close()


@dataclass(slots=True)
class StartingSeeds:
    """The seeds known when a run starts, and the rest of the seeds file to feed."""

    seeds: tuple[Seed, ...]
    #: the seeds file, opened and read past the starting seeds (None without one)
    file: SeedsFile | None = None
    #: the starting batches' lines that are not URLs (the caller logs them)
    invalid: list[tuple[int, str, str]] = field(default_factory=list)


def starting_seeds(settings: Settings) -> StartingSeeds:
    """The config file's ``[[seed]]`` tables, the command line's seeds and the first batch of
    the seeds file (more batches until one seed is found). No seed at all is a usage error,
    before anything is written."""
    seeds = list(crawl_seeds(settings))
    if settings.seeds_file is None:
        return StartingSeeds(tuple(seeds))
    file = SeedsFile(settings.seeds_file, settings)
    file.open()
    invalid: list[tuple[int, str, str]] = []
    while True:
        batch = file.next_batch()
        seeds += batch.seeds
        invalid += batch.invalid
        if seeds or file.done:
            break
    if not seeds:
        raise SettingsError(
            "--seeds-file", f"{settings.seeds_file} holds no http(s) URL to start from"
        )
    return StartingSeeds(first_of_each(seeds), file, invalid)


__all__ = [
    "SEED_BATCH",
    "SeedBatch",
    "SeedsFile",
    "StartingSeeds",
    "starting_seeds",
]
