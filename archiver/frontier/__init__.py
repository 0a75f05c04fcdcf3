"""The frontier stage: a joinable, host-aware queue of URLs behind one interface
(:class:`~archiver.frontier.base.Frontier`), in memory, in SQLite (resumable) or in Redis (shared
by processes). Its callers use three roles of it, each a protocol: the queue
(:class:`~archiver.frontier.base.CrawlQueue`), host politeness
(:class:`~archiver.frontier.base.HostPoliteness`) and the ledger of committed captures
(:class:`~archiver.frontier.base.CaptureLedger`).

:func:`open_backend` builds the backend a :class:`FrontierConfig` names, with the digest index
and robots.txt cache that live in the same store. The frontier imports only the leaf modules and
:mod:`archiver.policy.politeness`.
"""

from archiver.frontier.backend import Backend, open_backend
from archiver.frontier.base import CaptureLedger, CrawlQueue, Frontier, HostPoliteness, Lease
from archiver.frontier.config import FrontierConfig
from archiver.frontier.local import HostScheduler
from archiver.frontier.memory import MemoryFrontier

__all__ = [
    "Backend",
    "CaptureLedger",
    "CrawlQueue",
    "Frontier",
    "FrontierConfig",
    "HostPoliteness",
    "HostScheduler",
    "Lease",
    "MemoryFrontier",
    "open_backend",
]
