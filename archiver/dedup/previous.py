"""Earlier crawls as sources: cross-crawl deduplication and conditional recrawls.

``--dedup-from PREVIOUS`` turns a payload already stored by an earlier crawl into an
identical-payload-digest ``revisit`` (WARC 1.1 section 6.7.2); ``--revalidate-from PREVIOUS``
makes requests conditional (``If-None-Match`` / ``If-Modified-Since``, RFC 9110 sections 13.1.2
and 13.1.3) and turns a ``304`` into a server-not-modified ``revisit`` (section 6.7.3,
:mod:`archiver.dedup.revalidation`). Both read earlier crawls through their CDXJ index, without a
server: which crawls count, and the lookup file each is read through, are
:mod:`archiver.dedup.sources`'s.

**Dependencies.** Every earlier WARC file a revisit of this run refers to is recorded
(:meth:`PreviousCrawls.depends_on`): the run's summary and its WACZ list them, because a revisit
cannot be replayed without its original.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.dedup.revalidation import Revalidation, find_revalidation, not_modified_revisit
from archiver.dedup.sources import Capture, Source, SourceLookup, open_source
from archiver.errors import ArchiverError
from archiver.models import Exchange, Original
from archiver.warc.records import PendingCapture, RecordFactory


@dataclass(slots=True)
class _Dependency:
    warc: Path
    via: Source
    revisits: int = 0


@dataclass(slots=True)
class PreviousCrawls:
    """The opened ``--dedup-from`` and ``--revalidate-from`` sources of one run.

    A :class:`~archiver.dedup.digests.DigestIndex` for the crawler's payload lookups (earlier
    crawls are read-only: :meth:`add` does nothing, since a run's own captures only count once
    it completes);
    :meth:`revalidation` for conditional requests; :meth:`not_modified` and
    :meth:`original_exchange` for a ``304``; :meth:`depends_on` for the summary and the WACZ.
    """

    dedup: list[SourceLookup] = field(default_factory=list)
    revalidate: list[SourceLookup] = field(default_factory=list)
    #: sources whose own sources could not be used (worth a log line each)
    warnings: list[str] = field(default_factory=list)
    deps: dict[Path, _Dependency] = field(default_factory=dict)
    #: every lookup file opened (sources, and the sources they inherit from), each once
    opened: list[SourceLookup] = field(default_factory=list)
    cache_dir: Path | None = None  #: where lookup files go when a source's place is read-only

    @classmethod
    def open_sync(
        cls,
        dedup_from: Iterable[Path],
        revalidate_from: Iterable[Path] = (),
        *,
        cache_dir: Path | None = None,
    ) -> PreviousCrawls:
        """Check every source (raising :class:`SettingsError`) and open its lookup file."""
        dedup_sources = [open_source(p, option="--dedup-from") for p in dedup_from]
        revalidate_sources = [open_source(p, option="--revalidate-from") for p in revalidate_from]
        self = cls(cache_dir=cache_dir)
        try:
            self.dedup = [self._open_lookup(s, frozenset()) for s in dedup_sources]
            self.revalidate = [self._open_lookup(s, frozenset()) for s in revalidate_sources]
        except BaseException:
            self.close_sync()
            raise
        return self

    def _open_lookup(self, source: Source, trail: frozenset[Path]) -> SourceLookup:
        for lookup in self.opened:
            if lookup.source.cdxj == source.cdxj:
                return lookup
        trail = trail | {source.cdxj}

        def parent(path: Path) -> SourceLookup | None:
            return self._open_parent(source, path, trail)

        lookup = SourceLookup.open(source, fallback_dir=self.cache_dir, parent_lookup=parent)
        self.opened.append(lookup)
        return lookup

    def _open_parent(
        self, child: Source, path: Path, trail: frozenset[Path]
    ) -> SourceLookup | None:
        """A source's own source, to inherit originals from. When it is gone or unusable the
        child's revisits simply find no original (their payloads are stored again): a warning,
        not an error."""
        try:
            source = open_source(path)
            if source.cdxj in trail:
                return None  # a cycle: nothing new to inherit
            return self._open_lookup(source, trail)
        except ArchiverError as exc:
            self.warnings.append(
                f"{child.label}: its dedup source is not usable, so the originals of its "
                f"revisits are not inherited: {exc}"
            )
            return None

    def close_sync(self) -> None:
        for lookup in self.opened:
            with contextlib.suppress(sqlite3.Error):
                lookup.close()
        self.opened.clear()

    def source_paths(self) -> list[str]:
        """Every source of this run, as the summary's ``dedup_sources`` (inherited by later runs
        that deduplicate against this one)."""
        seen: dict[str, None] = {}
        for lookup in (*self.dedup, *self.revalidate):
            seen.setdefault(lookup.source.label, None)
        return list(seen)

    # -- DigestIndex -----------------------------------------------------------------------

    async def lookup(self, digest: str) -> Original | None:
        for lookup in self.dedup:
            found = lookup.usable_original(digest)
            if found is not None:
                original, capture = found
                self._depend(lookup.source, capture)
                return original
        return None

    async def add(self, digest: str, original: Original) -> None:
        """Earlier crawls are read-only."""

    async def close(self) -> None:
        self.close_sync()

    def _depend(self, via: Source, capture: Capture) -> None:
        dep = self.deps.get(capture.warc)
        if dep is None:
            dep = self.deps[capture.warc] = _Dependency(capture.warc, via)
        dep.revisits += 1

    # -- revalidation ----------------------------------------------------------------------

    async def revalidation(self, url: str) -> Revalidation | None:
        """Conditional request headers for ``url`` from its newest capture in the
        ``--revalidate-from`` sources, or None (:func:`archiver.dedup.revalidation.find`)."""
        return find_revalidation(self.revalidate, url)

    def not_modified(
        self, factory: RecordFactory, ex: Exchange, revalidation: Revalidation
    ) -> PendingCapture:
        """The server-not-modified revisit for a ``304`` (:func:`not_modified_revisit`); its
        original's WARC file becomes a dependency of this run."""
        capture = not_modified_revisit(factory, ex, revalidation)
        self._depend(revalidation.source, revalidation.content)
        return capture

    # -- dependencies ----------------------------------------------------------------------

    def depends_on(self) -> list[dict[str, Any]]:
        """The earlier WARC files this run's revisits refer to: replay needs them too.

        Each entry names the WARC file (absolute path), the crawl directory it belongs to and
        that crawl's WACZ when there is one (what a ReplayWeb.page user must load alongside),
        the source it was found through (``via``: the crawl or CDXJ given on the command line,
        which differs when the original was inherited) and how many revisits point into it.
        """
        out = []
        for dep in sorted(self.deps.values(), key=lambda d: str(d.warc)):
            crawl = _crawl_of(dep.warc)
            wacz = crawl / f"{crawl.name}.wacz" if crawl is not None else None
            out.append(
                {
                    "warc": str(dep.warc),
                    "filename": dep.warc.name,
                    "crawl": str(crawl) if crawl is not None else None,
                    "wacz": str(wacz) if wacz is not None and wacz.is_file() else None,
                    "via": dep.via.label,
                    "revisits": dep.revisits,
                }
            )
        return out


def _crawl_of(warc: Path) -> Path | None:
    """The archiver crawl directory holding ``warc`` (``CRAWL/warcs/…``), if it is one."""
    for parent in warc.parents:
        if parent.name == "warcs" and (parent.parent / "state" / "crawl.json").is_file():
            return parent.parent
    return None


async def open_previous(
    dedup_from: Iterable[Path],
    revalidate_from: Iterable[Path] = (),
    *,
    cache_dir: Path | None = None,
) -> PreviousCrawls:
    """:meth:`PreviousCrawls.open_sync` in a worker thread (building a lookup file streams a
    whole CDXJ, which must not stall the event loop)."""
    return await asyncio.to_thread(
        PreviousCrawls.open_sync,
        list(dedup_from),
        list(revalidate_from),
        cache_dir=cache_dir,
    )


__all__ = ["PreviousCrawls", "open_previous"]
