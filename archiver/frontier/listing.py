"""A crawl's frontier read from outside the crawl (``archiver queue``): how many URLs are in
each state, and the URLs themselves, streamed.

Read while the crawl runs or after it stopped, without disturbing it: the SQLite frontier is
opened read-only (WAL lets a reader in beside the crawl's writer, and it reads what the crawl
committed, at most a commit interval old); the Redis frontier is read with non-blocking scans
(``SCAN``, ``LRANGE`` and ``HSCAN`` a chunk at a time). Either way memory stays that of one
chunk, whatever the number of URLs: a million are listed as they are read, never gathered.

The states are the frontier's outcomes (:class:`archiver.models.FrontierStats`): ``queued``
(waiting for a fetch, a retry's due time included), ``in-flight`` (leased to a worker),
``done``, ``failed``, ``skipped``; the counts are the ones the frontier itself keeps.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

#: The states a URL of the frontier is in, as ``archiver queue --state`` names them.
STATES = ("queued", "in-flight", "done", "failed", "skipped")


@dataclass(frozen=True, slots=True)
class StateCounts:
    """How many URLs are in each state (and so how many the frontier has seen)."""

    queued: int = 0
    in_flight: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0

    def of(self, state: str) -> int:
        return int(getattr(self, state.replace("-", "_")))

    @property
    def seen(self) -> int:
        return self.queued + self.in_flight + self.done + self.failed + self.skipped


class FrontierView(Protocol):
    """A frontier read from outside its crawl."""

    #: the states whose URLs it can list (Redis keeps finished URLs as keys, not URLs)
    listable: frozenset[str]

    def counts(self) -> StateCounts:
        """The frontier's own counts."""
        ...

    def urls(self, states: Collection[str]) -> Iterator[tuple[str, str]]:
        """``(state, url)`` for every URL in ``states``, as read (a chunk in memory at once)."""
        ...

    def close(self) -> None: ...


__all__ = ["STATES", "FrontierView", "StateCounts"]
