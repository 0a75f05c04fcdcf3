"""The in-memory frontier: per-host FIFO queues and a seen set, in this process only.

For small crawls and tests; nothing survives the process. Dispatch, counters and the cancel-safe
delegations are :class:`~archiver.frontier.local.LocalFrontier`'s, shared with the SQLite backend.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from archiver.frontier.base import Lease
from archiver.frontier.local import LocalFrontier
from archiver.models import CrawlItem, FrontierStats, ResumeInfo, TaskResult
from archiver.policy.politeness import HostGate
from archiver.urls import host_port


class MemoryFrontier(LocalFrontier):
    """A frontier that lives in this process only (not resumable)."""

    persistent = False

    def __init__(self, gate: HostGate | None = None) -> None:
        self._seen: set[str] = set()
        self._queues: dict[str, deque[CrawlItem]] = {}
        self._queued = 0
        super().__init__(gate)

    async def open(self) -> ResumeInfo:
        return ResumeInfo()

    async def close(self) -> None:
        return None

    def _pop_item(self, host: str) -> CrawlItem | None:
        queue = self._queues.get(host)
        if not queue:
            return None
        self._queued -= 1
        return queue.popleft()

    def _has_items(self, host: str) -> bool:
        return bool(self._queues.get(host))

    def _requeue(self, item: CrawlItem, front: bool = False) -> str:
        host = host_port(item.url)
        queue = self._queues.get(host)
        if queue is None:
            queue = self._queues[host] = deque()
        if front:
            queue.appendleft(item)
        else:
            queue.append(item)
        self._queued += 1
        return host

    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        hosts: set[str] = set()
        new: list[CrawlItem] = []
        for item in items:
            if item.url in self._seen:
                continue
            self._seen.add(item.url)
            hosts.add(self._requeue(item))
            new.append(item)
        self.scheduler.added(len(new))
        for host in hosts:
            self.scheduler.schedule(host)
        return new

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        self._account(lease, result)

    def statistics(self) -> FrontierStats:
        return self._stats(
            queued=self._queued + self.scheduler.delayed,
            seen=len(self._seen),
            hosts=len(self._queues),
        )

    async def flush(self) -> None:
        return None

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        return set()  # nothing persists: a memory crawl is never resumed

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        return 0
