"""User behaviours (``--behavior-script FILE``): Browsertrix Behaviors classes and bundles, run.

Browsertrix Crawler and ArchiveWeb.page run behaviours written against the Browsertrix Behaviors
API (https://crawler.docs.browsertrix.com/user-guide/behaviors/): a class with a ``static id``,
``static isMatch()`` (does it apply to this page), ``static init()`` (its initial ``state`` and
``opts``) and ``async* run(ctx)``, which yields after each step; ``ctx.Lib`` offers helpers
(``sleep``, ``waitUntil``, ``waitUntilNode``, ``xpathNode(s)``, ``scrollAndClick``,
``getState``, ``addLink``...). The same files run here unchanged:

- a file whose first word is ``class`` is such a class; it is handed to
  ``self.__bx_behaviors.load(...)``, as Browsertrix Crawler does with ``--customBehaviors``;
- any other file is run as it is, first: a Browsertrix Behaviors bundle (``behaviors.js``,
  which defines ``self.__bx_behaviors`` with its own site-specific behaviours) is such a file.
  The bundle is AGPL-3.0-licensed: archiver does not ship it; a user who wants it passes their
  own copy.

When no bundle is given, ``scripts.js`` (beside this module, written for archiver from the API's
documentation) provides ``self.__bx_behaviors`` and ``ctx.Lib``. Either way the crawler-side
functions a behaviour calls (``__bx_addLink``, ``__bx_fetch``, ``__bx_log``, ``__bx_addSet``)
are archiver's: a link added is queued, a fetch is made by the page (so archiver captures it), a
log line is kept in the report. The first matching class runs, in the page's own world, with
``init({siteSpecific: true, timeout})`` (a bundle's autoscroll, autoplay and autofetch stay off:
archiver's own ``--behaviors`` do that), and is read every :data:`POLL` seconds until it ends or
its time is up (then it is asked to stop at its next ``yield``). A script that throws is noted in
the report and the page goes on. Behaviours run in the top document only (``runInIframe`` is
not honoured).
"""

from __future__ import annotations

import asyncio
import functools
from importlib import resources
from typing import Any

from archiver.browser.behaviors.control import (
    BehaviorOptions,
    BehaviorReport,
    PageControl,
)
from archiver.browser.errors import PageScriptError

#: How often a running user behaviour is read, in seconds.
POLL = 0.25

START = """(() => {
  const state = self.__archiverScripts;
  const manager = self.__bx_behaviors;
  if (!manager || typeof manager.run !== "function") {
    state.error = "no __bx_behaviors manager was defined";
    state.done = true;
    return false;
  }
  try {
    if (typeof manager.init === "function") {
      manager.init({autofetch: false, autoplay: false, autoscroll: false, autoclick: false,
                    siteSpecific: true, timeout: %d, log: "__bx_log"});
    }
  } catch (error) {
    state.error = String(error && error.stack || error);
  }
  Promise.resolve().then(() => manager.run()).then(
    () => { state.done = true; },
    (error) => { state.error = String(error && error.stack || error); state.done = true; });
  return true;
})()"""

TAKE = """(() => {
  const state = self.__archiverScripts;
  if (!state) return null;
  const taken = {links: state.links, log: state.log, steps: state.steps, done: state.done,
                 error: state.error, ran: state.ran};
  state.links = [];
  state.log = [];
  return taken;
})()"""

STOP = "(() => { if (self.__archiverScripts) self.__archiverScripts.stop = true; return true; })()"


@functools.cache
def runtime() -> tuple[str, str]:
    """``scripts.js``: the prelude (the crawler-side functions) and the manager."""
    text = resources.files(__package__).joinpath("scripts.js").read_text("utf-8")
    prelude, _, manager = text.partition("//MANAGER")
    return prelude, manager


def load_class(source: str) -> str:
    """The expression that hands a behaviour class to the manager (a class expression: a
    trailing semicolon would end it)."""
    return "self.__bx_behaviors.load(\n" + source.strip().rstrip(";").rstrip() + "\n);"


async def scripts(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Run the user's behaviour files on the page (see the module docstring)."""
    prelude, manager = runtime()
    await page.evaluate_main(prelude, until=until)
    for script in options.scripts:
        if not script.is_class:
            await _run_script(page, until, report, script.name, script.source)
    await page.evaluate_main(manager, until=until)
    for script in options.scripts:
        if script.is_class:
            await _run_script(page, until, report, script.name, load_class(script.source))
    timeout_ms = max(int((until - page.now()) * 1000), 1)
    await page.evaluate_main(START % timeout_ms, until=until)
    while True:
        taken = await page.evaluate_main(TAKE, until=until)
        done = _absorb(report, taken)
        if done:
            return
        left = until - page.now()
        if left <= 0:
            report.stopped = "time"
            await page.evaluate_main(STOP, until=until)
            return
        await asyncio.sleep(min(POLL, left))


async def _run_script(
    page: PageControl, until: float, report: BehaviorReport, name: str, source: str
) -> None:
    try:
        await page.evaluate_main(source, until=until)
    except PageScriptError as exc:
        report.note(f"{name}: {exc}")


def _absorb(report: BehaviorReport, taken: Any) -> bool:
    """Add what the running behaviour reported; True once it has ended."""
    if not isinstance(taken, dict):
        return True
    report.found([str(url) for url in taken.get("links") or ()])
    for line in taken.get("log") or ():
        report.note(str(line))
    report.steps = max(report.steps, int(taken.get("steps") or 0))
    if taken.get("ran"):
        report.ran = str(taken["ran"])
    if taken.get("error"):
        report.note(f"error: {taken['error']}")
    return bool(taken.get("done"))


__all__ = ["POLL", "load_class", "runtime", "scripts"]
