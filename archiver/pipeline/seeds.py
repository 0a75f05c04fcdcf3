"""What the pipeline does with per-seed rules (:mod:`archiver.policy.seeds`) beyond the scope:
the rules of a lease's seed learned before it is admitted, the seed's page budget, and the
spacing of the hosts its URLs are fetched from.

* A lease's seed may be one this process has not read (another process of a shared crawl
  read it from its seeds file, or an earlier run did): its rules are asked of the frontier's
  :class:`~archiver.policy.seeds.SeedStore` once (:meth:`SeedTable.learn`).
* ``max_pages`` of a seed: its pages reserve their place when their lease is admitted, as the
  crawl's ``--max-pages`` does, and give it back when they are not captured as pages; past it,
  the seed's pages are skipped (``seed-budget``) and the crawl goes on with the other seeds.
  Like ``--max-pages``, it counts the pages of this run (of this process, under
  ``--processes N``, which shares it out).
* ``per_host_delay`` of a seed: the hosts its URLs are queued or leased on are spaced by it
  (:meth:`~archiver.frontier.base.HostPoliteness.set_host_spacing`), told once per host.
"""

from __future__ import annotations

from collections import Counter

from archiver.frontier.base import HostPoliteness
from archiver.models import CrawlItem
from archiver.policy.seeds import SeedRules, SeedTable

#: Hosts remembered as spaced already (the set is cleared past this: telling again is harmless).
SPACED_HOSTS = 100_000


class SeedRuns:
    """The per-seed part of admission for one run: rules learned, page budgets, spacing."""

    def __init__(self, table: SeedTable, politeness: HostPoliteness) -> None:
        self.table = table
        self._politeness = politeness
        self._pages: Counter[int] = Counter()
        self._spaced: dict[str, float] = {}

    async def rules(self, item: CrawlItem, host: str) -> SeedRules:
        """The rules of the seed that judges ``item`` (asked of the store when unknown here);
        its delay applied to ``host``."""
        rules = await self.table.learn(item.seed)
        self.space(host, rules)
        return rules

    def space(self, host: str, rules: SeedRules) -> None:
        """Space ``host`` by the seed's ``per_host_delay``, when it gives one."""
        delay = rules.per_host_delay
        if delay is None or self._spaced.get(host, -1.0) >= delay:
            return
        if len(self._spaced) >= SPACED_HOSTS:
            self._spaced.clear()
        self._spaced[host] = delay
        self._politeness.set_host_spacing(host, delay)

    def reserve_page(self, seed: int, rules: SeedRules) -> bool:
        """A page of ``seed`` reserves its place in the seed's ``max_pages``; False when the
        budget is spent."""
        if rules.max_pages is None:
            return True
        if self._pages[seed] >= rules.max_pages:
            return False
        self._pages[seed] += 1
        return True

    def give_back_page(self, seed: int, rules: SeedRules) -> None:
        """A page that reserved its place was not captured as a page."""
        if rules.max_pages is not None and self._pages[seed] > 0:
            self._pages[seed] -= 1


__all__ = ["SPACED_HOSTS", "SeedRuns"]
