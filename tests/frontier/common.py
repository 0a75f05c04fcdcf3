"""Helpers of the frontier tests."""

from __future__ import annotations

from typing import Any

from archiver.models import CrawlItem, Outcome, TaskResult

DONE = TaskResult(Outcome.DONE, status=200)


class FakeClock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def item(path: str, host: str = "a.example", **fields: Any) -> CrawlItem:
    return CrawlItem(f"http://{host}{path}", **fields)
