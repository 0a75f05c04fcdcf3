"""What a frontier is built from: one small frozen config, made from the user's settings by
:func:`archiver.config.assemble.frontier_config` (the frontier does not read settings itself).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from archiver.policy.politeness import BACKOFF, Backoff, Clock, HostGate

#: URL schemes of a Redis frontier: the ones the Redis client reads (``rediss`` is Redis over
#: TLS; ``unix:///PATH?db=N`` a Unix socket, as the private server of ``--processes N`` listens
#: on: no TCP port to find, and file permissions say who may connect).
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    """The frontier's backend and parameters."""

    #: ``memory``, ``sqlite``, or a Redis URL (a crawl shared in Redis: :data:`REDIS_SCHEMES`)
    backend: str = "memory"
    #: the SQLite database (the crawl's ``state/frontier.sqlite``)
    state_db: Path | None = None
    #: Redis: the shared crawl's name, and this process's name among its processes
    crawl_id: str | None = None
    process_id: str | None = None
    #: Redis: seconds after which a URL claimed by a silent process is re-queued
    lease_timeout: float = 120.0
    #: Redis: URLs claimed per round trip at most (the number of workers)
    max_claim: int = 64
    #: politeness per host (:class:`~archiver.policy.politeness.HostGate`)
    concurrency: int = 2
    delay: float = 0.5
    max_pause: float = 600.0
    max_crawl_delay: float = math.inf
    backoff: Backoff = field(default=BACKOFF)

    @property
    def shared(self) -> bool:
        """True for a crawl that several processes share (Redis)."""
        return self.backend.startswith(REDIS_SCHEMES)

    def host_gate(self, clock: Clock = time.monotonic) -> HostGate:
        """A politeness gate with these parameters (``clock``: tests inject one)."""
        return HostGate(
            concurrency=self.concurrency,
            delay=self.delay,
            max_pause=self.max_pause,
            max_crawl_delay=self.max_crawl_delay,
            backoff=self.backoff,
            clock=clock,
        )
