"""The SQLite frontier: the crawl's queue, seen set and per-URL state on disk, resumable.

The workers see the same joinable queue as with
:class:`~archiver.frontier.memory.MemoryFrontier` (the same
:class:`~archiver.frontier.local.HostScheduler` in front), but memory stays bounded for millions
of URLs and a killed crawl resumes from ``state/frontier.sqlite``. Four rules shape it:

**The event loop does not wait on SQLite.** One thread owns the one connection. ``put_many``,
``get`` and ``task_done`` update in-memory structures synchronously and queue their writes; only
a seen-set check the caches cannot answer, a refill of a host's window and the resume
bookkeeping wait for the thread, and then only the calling coroutine waits, never the loop. Past
:data:`.store.HIGH_WATER` unapplied writes, callers wait (backpressure) instead of growing the
heap.

**Few statements, many rows.** The operations issued during one loop iteration reach the thread
as one list; the thread applies everything that has arrived as one batch, coalesced into a
handful of set-based statements whose rows travel as the parameters of one multi-row statement
(or one JSON text read with ``json_each``). The reason is the GIL: the sqlite3 module releases
it around every step, and behind a busy event loop each re-acquisition waits up to the switch
interval (5 ms), so one statement per row managed a few hundred rows a second under load, where
a statement per batch keeps up with tens of thousands.

**What is on disk is always a prefix of what was issued.** Operations go through one FIFO into
the thread; a batch is applied inside the current transaction, and a commit (every
``commit_interval``: group commit) only ever falls between batches. After a SIGKILL the state is
therefore the state at some earlier moment: a page's links (``put_many``) are persisted before
its ``task_done``, so a URL is never "done" without its children. WAL with
``synchronous=NORMAL``: a commit is a ``write`` to the WAL, which survives a killed process;
after a power loss the last commits may roll back, which is still a prefix (``FULL`` would fsync
every 100 ms for a guarantee the WARC files, fsynced every few seconds, do not give either).
Captures committed with a ``task_done`` but missing from an ``.open`` WARC after a crash are re-
queued by :meth:`SqliteFrontier.uncommit_captures` when the crawl resumes.

**Memory is bounded.** Per host only a window of the oldest queued URLs lives in memory
(refilled from disk in batches when it runs low). The seen set is SQLite's ``UNIQUE`` index on
the URL, in front of which sit a bounded cache of recent URLs (navigation links repeat on every
page: one set lookup) and a Bloom filter over Python's string hash (a URL it never saw is new
without asking SQLite; ~1.3 bytes per URL). Only URLs neither can decide go to the database,
which answers exactly. The filter is rebuilt from the table on ``open`` (the string hash is
salted per process): about a second per million URLs.

Per-URL states (``urls.state``): see the ``QUEUED`` ... ``WINDOWED`` constants of
:mod:`.codec`. ``WINDOWED`` and ``IN_FLIGHT`` only mean something to the process that set
them: ``open`` turns both back into ``QUEUED`` (tries unchanged).

The files map onto the Redis frontier's (:mod:`archiver.frontier.redis`), one concern each:

=====================  ==========================================  ===========================
concern                here                                        Redis
=====================  ==========================================  ===========================
the backend, its life  :mod:`.frontier` (:class:`SqliteFrontier`)  ``frontier.py``
the queue              :mod:`.queue`                               ``queue.py``
host politeness        :mod:`archiver.frontier.local` (in-process) ``politeness.py``
the capture ledger     :mod:`.ledger`                              ``ledger.py``
what else it stores    :mod:`.services` (digests, captured URLs,   ``services.py``
                       media bytes per page, seeds' rules)
items as stored        :mod:`.codec` (rows, states)                ``codec.py``
the scripts            ``scripts/*.sql``, read by :mod:`.sql`      ``scripts/*.lua``, ``lua.py``
the way to the store   :mod:`.store` (a thread, group commit),     ``pump.py`` (round trips),
                       :mod:`.ops`, :mod:`.database` (statements)  ``link.py`` (connection)
=====================  ==========================================  ===========================

:mod:`.bloom` holds the seen-set caches in front of the ``UNIQUE`` index, and
:mod:`.identity` whose crawl a database is (read and stamped from outside).
"""

from archiver.frontier.sqlite.bloom import Bloom
from archiver.frontier.sqlite.frontier import SqliteFrontier
from archiver.frontier.sqlite.identity import FrontierIdentity, read_identity, write_identity
from archiver.frontier.sqlite.ledger import SqliteLedger
from archiver.frontier.sqlite.ops import StoreStats
from archiver.frontier.sqlite.queue import SqliteQueue
from archiver.frontier.sqlite.services import (
    SqliteCapturedUrls,
    SqliteDigestIndex,
    SqliteMediaBytes,
    SqliteSeedStore,
)

__all__ = [
    "Bloom",
    "FrontierIdentity",
    "SqliteCapturedUrls",
    "SqliteDigestIndex",
    "SqliteFrontier",
    "SqliteLedger",
    "SqliteMediaBytes",
    "SqliteQueue",
    "SqliteSeedStore",
    "StoreStats",
    "read_identity",
    "write_identity",
]
