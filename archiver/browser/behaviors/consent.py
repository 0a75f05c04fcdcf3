"""``consent``: a consent dialog covering the page accepted before the page is read.

A consent overlay (a cookie banner of a consent management platform) covers the page until a
reader answers it: left alone, it is what the screenshot shows and what the replay shows first,
and it may hold back content (embeds load only once consent is given, scrolling is locked). The
accept buttons of the widespread frameworks are listed in ``consent.json`` beside this module
(its ``about`` says where the entries come from); the first one shown on the page is clicked,
the network let go quiet, and the list tried again, since a dialog may have a second layer, at
most :data:`MAX_DIALOGS` times. The buttons are looked up in the document and in its open
shadow roots; a dialog in a frame of another site is out of reach.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from archiver.browser.behaviors.control import (
    NEW_LINKS,
    BehaviorOptions,
    BehaviorReport,
    PageControl,
    after_step,
)

#: The most consent buttons clicked on one page (a dialog and its second layer).
MAX_DIALOGS = 3

# Click the first shown element matching one of the selectors (document, open shadow roots);
# the framework's name, or null.
ACCEPT = """(() => {
  const frameworks = %s;
  const roots = [document];
  for (let i = 0; i < roots.length && roots.length < 200; i++) {
    const walker = document.createTreeWalker(roots[i], NodeFilter.SHOW_ELEMENT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.shadowRoot) roots.push(node.shadowRoot);
    }
  }
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    if (!box.width && !box.height) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  };
  for (const [name, selectors] of frameworks) {
    for (const selector of selectors) {
      for (const root of roots) {
        let found = null;
        try { found = root.querySelector(selector); } catch (e) { continue; }
        if (found && shown(found) && !found.disabled) {
          found.click();
          return name;
        }
      }
    }
  }
  return null;
})()"""


@functools.cache
def consent_buttons() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(framework, accept selectors) from ``consent.json``, in its order."""
    text = resources.files(__package__).joinpath("consent.json").read_text("utf-8")
    listed = json.loads(text)["frameworks"]
    return tuple((str(entry["name"]), tuple(map(str, entry["accept"]))) for entry in listed)


async def consent(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Accept the consent dialog covering the page, if any (see the module docstring)."""
    script = ACCEPT % json.dumps([[name, list(sel)] for name, sel in consent_buttons()])
    for _dialog in range(MAX_DIALOGS):
        if page.now() >= until:
            report.stopped = "time"
            return
        framework = await page.evaluate(script, until=until)
        if not framework:
            return
        report.steps += 1
        report.clicks += 1
        report.ran = str(framework)
        await after_step(page, until)
        report.found(await page.evaluate(NEW_LINKS, until=until))
    report.stopped = "steps"


__all__ = ["MAX_DIALOGS", "consent", "consent_buttons"]
