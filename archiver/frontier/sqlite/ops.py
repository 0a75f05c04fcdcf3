"""What the SQLite frontier hands its store thread: operations in issue order, and the
thread's statistics.

An operation is ``(kind, payload, callback, commit)``. The thread coalesces a batch of them into
a few set-based statements (:class:`~archiver.frontier.sqlite.database.Batch`) and answers those
with a callback on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Callback = Callable[[Any, BaseException | None], None]

# Operation kinds; the thread coalesces a batch of them into a few set-based statements.
HOST = 0  #: (host id, name)
INSERT = 1  #: [url row, ...]: URLs known to be new
MAYBE = 2  #: [url row, ...]: URLs the Bloom filter could not rule out -> [new?, ...]
UPDATE = 3  #: (url, columns, values, [(file, start, end), ...])
REFILL = 4  #: (host id, count) -> rows of the host's oldest queued URLs, now WINDOWED
DIGEST_ADD = 5  #: (digest, record id, target uri, date)
DIGEST_GET = 6  #: digest -> (record id, target uri, date) | None
CALL = 7  #: (function, argument): run alone, after everything issued before it

Op = tuple[int, Any, Callback | None, bool]

#: columns an UPDATE may set, in statement order
COLUMNS = ("state", "seq", "tries", "not_before", "status", "reason")
SET_STATE = ("state",)
SET_REQUEUE = ("state", "seq", "not_before")
SET_FINISH = ("state", "status", "reason")
SET_RETRY = ("state", "tries", "not_before", "status", "reason")

Results = list[tuple[Callback, Any, BaseException | None]]


def op_weight(kind: int, payload: Any) -> int:
    """How much an operation counts towards the backlog limit."""
    return len(payload) if kind in (INSERT, MAYBE) else 1


@dataclass(slots=True)
class StoreStats:
    """What the SQLite thread has done (for benchmarks and the debug log)."""

    batches: int = 0
    operations: int = 0
    statements: int = 0
    commits: int = 0
    max_batch_seconds: float = 0.0
    max_commit_seconds: float = 0.0
    thread_cpu_seconds: float = 0.0  #: CPU time of the SQLite thread (GIL-bound part included)
