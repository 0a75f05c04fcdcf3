"""Behaviours: what is done to a loaded page so that it loads what a reader would make it load.

Each is named in ``--behaviors``; they run in this order whatever the order given
(:data:`ORDER`), each within its share of the page's time (what is left of it divided among the
behaviours still to run, so that time one does not use goes to the next) and within a step
limit of its own:

- ``consent`` (:mod:`.consent`): a consent dialog of a widespread framework accepted, first, so
  that nothing after it works under an overlay and the page is read without it;
- ``autoscroll`` (:mod:`.scroll`): scrolled to the end step by step (lazy images, infinite
  scroll);
- ``autoclick`` (:mod:`.click`): elements that reveal content clicked one at a time (tabs,
  accordions, ``<details>``, "load more", ``--click-selector``);
- ``autoplay`` (:mod:`.media`): each video and audio played until its media is requested;
- ``search`` (:mod:`.search`): the site's search box opened and typed into;
- user behaviour files (``--behavior-script``, :mod:`.scripts`), last, whenever given.

``none`` runs none. :data:`DEFAULT_BEHAVIORS` are the ones safe on any site: they change
nothing a reader's visit would not (``consent`` clicks only the listed buttons of consent
dialogs; ``autoplay`` plays muted and pauses), while ``autoclick`` clicks controls it cannot
know the effect of and ``search`` types into a form: both are for the crawls that ask.

Before the first behaviour the page gets a guard against leaving it (a click or a submit that
would navigate the tab is prevented, its target kept; a navigation by script is held by the
page itself), taken off after the last one; after each behaviour the links the document
gained, the targets stopped and the windows the page tried to open are added to that
behaviour's :class:`BehaviorReport`: the crawl log lists each behaviour's work per page and the
summary adds it up.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from archiver.browser.behaviors.click import autoclick
from archiver.browser.behaviors.consent import consent
from archiver.browser.behaviors.control import (
    GUARD,
    NEW_LINKS,
    TAKE_GUARDED,
    UNGUARD,
    BehaviorOptions,
    BehaviorReport,
    BehaviorScript,
    PageControl,
)
from archiver.browser.behaviors.media import autoplay
from archiver.browser.behaviors.scripts import scripts
from archiver.browser.behaviors.scroll import autoscroll
from archiver.browser.behaviors.search import search

Behavior = Callable[[PageControl, float, BehaviorReport, BehaviorOptions], Awaitable[None]]


async def no_behavior(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Leave the page as it loaded."""


#: Every behaviour by its name in ``--behaviors``, in the order they run.
BEHAVIORS: dict[str, Behavior] = {
    "consent": consent,
    "autoscroll": autoscroll,
    "autoclick": autoclick,
    "autoplay": autoplay,
    "search": search,
    "none": no_behavior,
}
ORDER = tuple(name for name in BEHAVIORS if name != "none")
#: Safe on any site (see the module docstring).
DEFAULT_BEHAVIORS = ("consent", "autoscroll", "autoplay")
#: The name user behaviour files report under.
SCRIPTS = "script"


def planned(names: tuple[str, ...], options: BehaviorOptions) -> tuple[str, ...]:
    """The behaviours that run, in their order (user scripts last, when given)."""
    chosen = tuple(name for name in ORDER if name in names)
    return (*chosen, SCRIPTS) if options.scripts else chosen


async def run_behaviors(
    page: PageControl,
    names: tuple[str, ...],
    options: BehaviorOptions,
    *,
    until: float,
    on_stage: Callable[[str], None] = lambda _stage: None,
) -> tuple[BehaviorReport, ...]:
    """Run the behaviours ``names`` (and the user's scripts) on ``page`` before the loop time
    ``until``; what each did. ``on_stage`` is told which one is running (for the timeout's
    message)."""
    plan = planned(names, options)
    if not plan:
        return ()
    if page.now() >= until:  # the page took all its time to load: none runs
        return tuple(BehaviorReport(name, stopped="time") for name in plan)
    await page.evaluate(GUARD, until=until)
    await page.evaluate(NEW_LINKS, until=until)  # the links the page has before any behaviour
    reports = []
    for index, name in enumerate(plan):
        report = BehaviorReport(name)
        left = until - page.now()
        on_stage(f"running the {name} behaviour")
        if left > 0:
            share = page.now() + left / (len(plan) - index)
            behavior = scripts if name == SCRIPTS else BEHAVIORS[name]
            await behavior(page, share, report, options)
        else:
            report.stopped = "time"
        guarded: dict[str, Any] = await page.evaluate(TAKE_GUARDED, until=until)
        report.found([str(url) for url in guarded.get("targets") or ()])
        report.navigations_blocked += int(guarded.get("blocked") or 0)
        held = page.take_navigations()
        report.found(held)
        report.held += len(held)
        report.navigations_blocked += len(held)
        opened = await page.take_popups(until=until)
        report.popups_blocked += len(opened)
        report.found([url for url in opened if url.startswith(("http://", "https://"))])
        report.found(await page.evaluate(NEW_LINKS, until=until))
        reports.append(report)
    await page.evaluate(UNGUARD, until=until)
    return tuple(reports)


__all__ = [
    "BEHAVIORS",
    "DEFAULT_BEHAVIORS",
    "ORDER",
    "SCRIPTS",
    "Behavior",
    "BehaviorOptions",
    "BehaviorReport",
    "BehaviorScript",
    "PageControl",
    "planned",
    "run_behaviors",
]
