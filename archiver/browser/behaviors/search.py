"""``search``: the site's search box opened and typed into, so that its search works in replay.

Documentation sites (VitePress, Docusaurus, MkDocs, Sphinx) and many others load their search
index, or the code that queries it, only when a reader opens the search box or types in it: a
crawl that never searches leaves search broken in the archive. This behaviour finds a shown
search box (``input type="search"``, a ``role="search"`` landmark's input, ``role="searchbox"``,
inputs named or labelled for search); when there is none, it clicks a button that opens one
(labelled "search", the DocSearch button) and looks again. It focuses the box, types
:data:`QUERY` with trusted key input (what frameworks listen to), lets the network go quiet,
reads the links the results added, and presses Escape to close what it opened. It never
presses Enter: no form is submitted.
"""

from __future__ import annotations

from archiver.browser.behaviors.control import (
    NEW_LINKS,
    BehaviorOptions,
    BehaviorReport,
    PageControl,
    after_step,
)

#: What is typed: one common letter, enough for every search to answer with results.
QUERY = "a"

# The first shown search box, focused: true; else a search opener clicked: "opened"; else null.
FIND = """(() => {
  const boxes = 'input[type="search"], ' +
    '[role="search"] input:not([type="hidden"]):not([type="submit"]), ' +
    'input[role="searchbox"], input[role="combobox"][aria-label*="search" i], ' +
    'input[name="q"], input[name="s"], input[name="search"], input[name="query"], ' +
    'input[placeholder*="search" i], input[aria-label*="search" i], ' +
    'input[id*="search" i]:not([type="hidden"]):not([type="checkbox"])';
  const openers = '.DocSearch-Button, button[aria-label*="search" i], ' +
    '[role="button"][aria-label*="search" i], button[title*="search" i], ' +
    'button[class*="search" i], a[href="#search"], [data-toggle="search"]';
  const shown = (el) => {
    const box = el.getBoundingClientRect();
    if (!box.width && !box.height) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  };
  const box = [...document.querySelectorAll(boxes)].find(
    (el) => shown(el) && !el.disabled && !el.readOnly);
  if (box) {
    box.scrollIntoView({block: "center"});
    box.focus();
    return document.activeElement === box ? "box" : null;
  }
  if (%s) return null;
  const opener = [...document.querySelectorAll(openers)].find((el) => shown(el) && !el.disabled);
  if (!opener) return null;
  opener.click();
  return "opened";
})()"""


async def search(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Open the site's search and type into it (see the module docstring)."""
    found = await page.evaluate(FIND % "false", until=until)
    if found == "opened":
        report.steps += 1
        report.clicks += 1
        await after_step(page, until)
        found = await page.evaluate(FIND % "true", until=until)
    if found != "box":
        return
    if page.now() >= until:
        report.stopped = "time"
        return
    await page.insert_text(QUERY, until=until)
    report.steps += 1
    report.typed += 1
    await after_step(page, until)
    report.found(await page.evaluate(NEW_LINKS, until=until))
    await page.press_key("Escape", until=until)
    await after_step(page, until)


__all__ = ["QUERY", "search"]
