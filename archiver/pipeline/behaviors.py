"""What the behaviours did to a page loaded in the browser, for the crawl: what they found
queued, their work counted and logged.

The browser's behaviours (:mod:`archiver.browser.behaviors`) report, per page, what each did: its
steps and clicks, media played, search boxes typed into, the URLs it found (links a click
inserted into the document, targets of navigations it stopped, links a user behaviour added), the
media sources the browser chose, and whether it ran to its end or stopped at a bound. Here:

- the URLs become children of the page's item: links (``L``), and the media sources page
  requisites (``E``) unless the browser already loaded them; windows the page tried to open are
  links too;
- the crawl log's ``browser-page`` event lists each behaviour's work; a behaviour that stopped at
  its step limit or its time (an endless "load more", an infinite feed) is logged apart as a
  ``behavior-bounds`` warning;
- the run's browser counters add it all up (``summary.json``'s ``browser`` object).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from archiver.browser.page import PageResult
from archiver.models import CrawlItem, Hop
from archiver.pipeline.counters import BrowserCounters


def behavior_children(
    item: CrawlItem,
    result: PageResult,
    answered: Collection[str],
    normal: Callable[[str], str | None],
) -> list[CrawlItem]:
    """What the page's behaviours found, as children of ``item``: links, and media sources the
    browser has not loaded (``answered``); ``normal`` normalises a URL (None: not crawlable)."""
    children = []
    for url in _each(normal, (link for report in result.behaviors for link in report.links)):
        children.append(item.child(url, Hop.LINK))
    for url in _each(normal, result.popups):
        children.append(item.child(url, Hop.LINK))
    sources = (source for report in result.behaviors for source in report.sources)
    for url in _each(normal, sources):
        if url not in answered:
            children.append(item.child(url, Hop.EMBED))
    return children


def count_behaviors(counters: BrowserCounters, result: PageResult) -> None:
    """Add what the page's behaviours did to the run's browser counters."""
    for report in result.behaviors:
        counters.behaviors[report.name] += 1
        counters.behavior_links[report.name] += len(report.links)
        counters.clicks += report.clicks
        counters.plays += report.plays
        counters.typed += report.typed
        counters.navigations_blocked += report.navigations_blocked
        counters.popups_blocked += report.popups_blocked
        if report.stopped != "done":
            counters.behavior_bounds[report.name] += 1
    counters.popups_blocked += len(result.popups)
    # the page's own navigations by script (those during a behaviour are counted above)
    counters.navigations_blocked += len(result.navigations) - sum(r.held for r in result.behaviors)


def behavior_fields(result: PageResult) -> dict[str, Any]:
    """The ``browser-page`` event's account of the behaviours: each one's work by name, and the
    windows the page opened by itself."""
    fields: dict[str, Any] = {}
    if result.navigations:
        fields["navigations_blocked"] = len(result.navigations)
    if result.behaviors:
        fields["behaviors"] = {report.name: report.to_json() for report in result.behaviors}
    if result.popups:
        fields["popups_blocked"] = len(result.popups)
    return fields


def bounds_reached(result: PageResult) -> list[dict[str, Any]]:
    """One ``behavior-bounds`` warning's fields per behaviour that stopped at a bound."""
    return [
        {"behavior": report.name, "stopped": report.stopped, "steps": report.steps}
        for report in result.behaviors
        if report.stopped != "done"
    ]


def _each(normal: Callable[[str], str | None], urls: Any) -> list[str]:
    """The crawlable URLs among ``urls``, normalised, each once, in order."""
    found: dict[str, None] = {}
    for url in urls:
        normalised = normal(str(url))
        if normalised is not None:
            found[normalised] = None
    return list(found)


__all__ = ["behavior_children", "behavior_fields", "bounds_reached", "count_behaviors"]
