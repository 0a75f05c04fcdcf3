"""The Redis frontier: several crawler processes, on one machine or many, share one crawl.

``--frontier redis://HOST:PORT/DB --crawl-id NAME`` keeps the queue, the seen set, the leases,
per-host politeness, the join count, dedup digests and the robots.txt cache in Redis. Any number
of ``archiver crawl`` processes with the same crawl id work on one crawl; giving the same seeds
twice is harmless (they are seen already).

Data model. Every key starts with ``archiver:{NAME}:`` (``P:``); the braces are a Redis Cluster
hash tag (one slot), but the scripts touch keys they do not declare, so one server (or a
replica set with failover) is supported, not Cluster::

    P:meta          HASH    format, created: the crawl exists (missing mid-crawl: state lost)
    P:seen          HASH    url-key -> q (pending: queued, waiting or leased) | d | f | s
    P:q:HOST        LIST    queued items of one host, FIFO (codec: url-key + item JSON)
    P:ready         ZSET    hosts with queued items and a free slot -> when they may start
    P:host:HOST     HASH    n (in flight), last, next (spacing), pause, delay (Crawl-delay),
                            spacing (a seed's per_host_delay), fails
    P:delayed       ZSET    "HOST\\0item" -> due time of a RETRY
    P:leases        ZSET    token -> lease deadline
    P:lease         HASH    token -> "owner\\0HOST\\0item"
    P:counts        HASH    unfinished (the join count), queued, leased, d, f, s, seen, hosts,
                            token, and reaped / late / dup / stale (diagnostics)
    P:procs         ZSET    process id -> last heartbeat
    P:politeness    HASH    delay, concurrency, by: the crawl's per-host limits as last changed
                            through a process's control.toml (archiver.run.control)
    P:commits:FILE  HASH    "start end" -> "HOST\\0item" per capture committed in WARC FILE
    P:digests       HASH    payload digest -> [record id, URI, date]      (services.py)
    P:robots:ORIGIN STRING  a robots.txt with status and fetch time, 24 h TTL  (services.py)
    P:cookies       HASH    cookie identity -> its cookies.txt line (the jar) (services.py)
    P:cookies:v     STRING  bumped after every change of P:cookies (services.py)
    P:seeds         HASH    seed key -> the seed's table of rules (JSON)  (services.py)

Every state change is a Lua script (``scripts/*.lua``, loaded by :mod:`.lua`), atomic across
processes; each checks ``P:meta`` first and reads the time from Redis, so politeness and lease
deadlines use one clock for every machine. A worker's claim is a lease (CLAIM); its outcome
(ACK) releases the host slot, applies the host verdict
(:func:`archiver.policy.politeness.host_verdict`, whose numbers the script receives as
arguments) and marks the URL finished only if it is still pending, so a URL is never counted
twice. Per-host limits hold for all processes together: slots and start times live in
``P:host:HOST`` and are taken inside CLAIM, with the URL.

Leases and join. A process renews its leases every ``lease_timeout / 3`` (RENEW); after
``lease_timeout`` without renewal (kill -9, a lost machine), the next claim by any process puts
the URLs back at the front of their queues. A process reaps only after it has itself been
connected for a whole ``lease_timeout``: after a restart or an outage every deadline may have
passed, and each live process gets that long to renew first. ``join()`` returns when
``unfinished`` is 0; a worker's children are in Redis before its outcome (``put_many`` is awaited
before ``task_done``, and one process's outcomes go out in call order), so the count never
touches 0 while work remains. All traffic of a process goes through its pump (:mod:`.pump`), one
pipelined round trip at a time.

Failures. Redis unreachable at ``open()`` is :class:`~archiver.errors.FrontierUnavailableError`.
Afterwards connection errors are retried with backoff (50 ms doubling to 2 s, or a quarter of
the lease timeout); workers wait, outcomes already reported are kept in order and sent when
Redis answers, and every script is safe to send twice (outcomes are keyed by lease token and URL
state; a lost claim reply is repaired by the next RENEW). A Redis that comes back *empty* is a
:class:`~archiver.errors.FrontierError` for every worker: a Redis that may restart needs
persistence (``appendonly yes``).

Several processes, one output. The process id ``{hostname}-{pid}`` names the process's WARC
series and state directory; the last process to leave (:attr:`RedisFrontier.last_to_leave`)
merges every process's index. A dead process's ``.open`` files are closed keeping their whole
captures; the URLs it had in flight are fetched again elsewhere, so those may be captured twice.

The files map onto the SQLite frontier's (:mod:`archiver.frontier.sqlite` has the table): the
backend and its life cycle in :mod:`.frontier`, the queue in :mod:`.queue`, host politeness in
:mod:`.politeness`, the capture ledger in :mod:`.ledger`, what else lives in the crawl's keys in
:mod:`.services`, items as stored in :mod:`.codec`, the scripts in ``scripts/*.lua`` (read by
:mod:`.lua`), and the way to the server in :mod:`.pump` (round trips) and :mod:`.link` (the
connection).
"""

from archiver.frontier.redis.codec import decode_item, encode_item, url_key
from archiver.frontier.redis.frontier import STATE_FORMAT, RedisFrontier
from archiver.frontier.redis.ledger import RedisLedger
from archiver.frontier.redis.link import RedisLink
from archiver.frontier.redis.politeness import RedisPoliteness
from archiver.frontier.redis.queue import RedisQueue
from archiver.frontier.redis.services import (
    RedisCapturedUrls,
    RedisCookieStore,
    RedisDigestIndex,
    RedisMediaBytes,
    RedisRobotsCache,
    RedisSeedStore,
)

__all__ = [
    "STATE_FORMAT",
    "RedisCapturedUrls",
    "RedisCookieStore",
    "RedisDigestIndex",
    "RedisFrontier",
    "RedisLedger",
    "RedisLink",
    "RedisMediaBytes",
    "RedisPoliteness",
    "RedisQueue",
    "RedisRobotsCache",
    "RedisSeedStore",
    "decode_item",
    "encode_item",
    "url_key",
]
