"""A capture taken back out of the crawl's figures leaves them as if it had never been made:
the figures of a lease abandoned uncommitted (the login session ended) are the WARC files'."""

from __future__ import annotations

import dataclasses

from archiver.pipeline import counters
from archiver.pipeline.counters import CrawlStats


def figures(stats: CrawlStats) -> dict[str, object]:
    kept = dataclasses.asdict(stats)
    for name in ("started", "started_monotonic", "_largest"):
        kept.pop(name)
    return kept


def capture(stats: CrawlStats, url: str, *, host: str = "a.test", **kw: object) -> counters.Counted:
    args: dict[str, object] = {
        "status": 200, "mime": "text/html", "size": 100, "revisit": False, "is_page": True,
    } | kw  # fmt: skip
    return stats.capture(url=url, host=host, **args)  # type: ignore[arg-type]


def test_a_capture_withdrawn_leaves_the_figures_as_before_it() -> None:
    stats = CrawlStats()
    capture(stats, "http://a.test/")
    before = figures(stats)
    taken = [
        capture(stats, "http://a.test/wall", status=302, mime=None, is_page=False, size=7),
        capture(stats, "http://a.test/page"),
        capture(stats, "http://b.test/r", host="b.test", revisit=True, truncated="length"),
    ]
    assert figures(stats) != before
    for counted in taken:
        stats.withdraw(counted)
    assert figures(stats) == before
    assert stats.captures == 1 and stats.pages == 1 and stats.bytes_received == 100


def test_a_capture_counted_as_other_in_a_full_table_is_taken_from_other() -> None:
    stats = CrawlStats()
    for number in range(counters.MAX_TABLE):
        capture(stats, f"http://h{number}.test/", host=f"h{number}.test")
    before = figures(stats)
    late = capture(stats, "http://late.test/", host="late.test")
    assert stats.by_host[counters.OTHER] == 1
    stats.withdraw(late)
    assert figures(stats) == before and counters.OTHER not in stats.by_host
