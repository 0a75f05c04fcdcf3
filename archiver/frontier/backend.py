"""One call from a :class:`~archiver.frontier.config.FrontierConfig` to everything a crawl needs
from its frontier backend, so the crawler never asks what kind of frontier it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from archiver.errors import FrontierError
from archiver.frontier.base import Frontier
from archiver.frontier.config import FrontierConfig
from archiver.frontier.memory import MemoryFrontier
from archiver.frontier.sqlite import (
    SqliteCapturedUrls,
    SqliteDigestIndex,
    SqliteFrontier,
    SqliteMediaBytes,
    SqliteSeedStore,
)

if TYPE_CHECKING:
    from archiver.frontier.redis import (
        RedisCapturedUrls,
        RedisCookieStore,
        RedisDigestIndex,
        RedisFrontier,
        RedisMediaBytes,
        RedisRobotsCache,
        RedisSeedStore,
    )


@dataclass(frozen=True, slots=True)
class Backend:
    """A frontier and the services that live in the same store.

    ``digests`` is the crawl's own payload-digest index (an
    :class:`archiver.dedup.digests.DigestIndex`): in the SQLite database (it survives a resume)
    or shared in Redis (revisits across processes); None for the memory backend, whose caller
    keeps digests in memory. ``captured`` is, in the same way, where the URLs the crawl captured
    are remembered (an :class:`archiver.dedup.captured.CapturedUrls`). ``robots_cache`` is the
    robots.txt cache that the processes of a shared crawl share (None otherwise), and
    ``cookies`` their cookie jar's storage (an :class:`archiver.fetch.cookies.CookieStore`;
    None otherwise: the run keeps its own). ``media`` is where the media bytes each page's
    requisites took are counted (an :class:`archiver.pipeline.mediabudget.MediaBytes`; None
    for the memory backend, whose caller counts in memory). ``seeds`` keeps the rules of the
    seeds that have their own (an :class:`archiver.policy.seeds.SeedStore`) for a resumed run
    and the other processes; None for the memory backend (the run keeps them in memory).
    """

    frontier: Frontier
    digests: SqliteDigestIndex | RedisDigestIndex | None = None
    captured: SqliteCapturedUrls | RedisCapturedUrls | None = None
    robots_cache: RedisRobotsCache | None = None
    cookies: RedisCookieStore | None = None
    media: SqliteMediaBytes | RedisMediaBytes | None = None
    seeds: SqliteSeedStore | RedisSeedStore | None = None
    #: the frontier of a crawl shared in Redis, for :attr:`is_last`
    shared: RedisFrontier | None = None

    @property
    def is_last(self) -> bool:
        """Whether this process is the last of its crawl: the one that merges every process's
        index and packages the WACZ. Known once the frontier is closed; always True for a crawl
        that one process owns."""
        return self.shared is None or self.shared.last_to_leave


def open_backend(config: FrontierConfig, *, log: Any = None) -> Backend:
    """The backend ``config`` names, built but not connected: ``await
    backend.frontier.open()`` connects (Redis) or reads the database (SQLite), where the caller
    handles its errors. The Redis client library is imported only for a Redis backend."""
    gate = config.host_gate()
    if config.backend == "memory":
        return Backend(MemoryFrontier(gate))
    if config.backend == "sqlite":
        if config.state_db is None:
            raise FrontierError("the SQLite frontier needs a database path")
        sqlite = SqliteFrontier(config.state_db, gate)
        return Backend(
            sqlite,
            digests=sqlite.digest_index(),
            captured=sqlite.captured_urls(),
            media=sqlite.media_bytes(),
            seeds=sqlite.seed_store(),
        )
    if not config.shared:
        raise FrontierError(f"unknown frontier backend {config.backend!r}")
    from archiver.frontier.redis import RedisFrontier  # noqa: PLC0415 - only when used

    redis = RedisFrontier(
        config.backend,
        config.crawl_id or "",
        gate=gate,
        lease_timeout=config.lease_timeout,
        max_claim=config.max_claim,
        process_id=config.process_id,
        log=log,
    )
    return Backend(
        redis,
        digests=redis.digest_index(),
        captured=redis.captured_urls(),
        robots_cache=redis.robots_cache(),
        cookies=redis.cookie_store(),
        media=redis.media_bytes(),
        seeds=redis.seed_store(),
        shared=redis,
    )
