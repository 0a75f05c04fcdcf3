"""``autoclick``: elements that reveal content clicked one at a time, as a reader would.

What is clicked, in document order, each element once unless said otherwise:

- disclosure widgets: anything with ``aria-expanded="false"`` (accordions, "read more"
  toggles; WAI-ARIA 1.2 ``aria-expanded``), a closed ``<details>``'s ``<summary>`` (HTML
  Standard 4.11.1), a tab not selected (``role="tab"`` without ``aria-selected="true"``);
- buttons and links with no navigation target: ``<button>`` that does not submit a form,
  ``role="button"``, ``<a>`` without ``href`` or with ``href="#"`` or a ``javascript:`` URL;
- "load more" controls, recognised by their text (load/show/view/see more, more results...),
  links included: these are clicked again while each click changes the document, up to
  :data:`MAX_REPEATS` times (a feed that never ends stops there, or at its time);
- what the user's ``--click-selector`` CSS selectors match.

Left alone: hidden or disabled elements, controls whose text says they log out, delete, buy,
subscribe, print, report or share (clicking those acts for a reader, it reveals nothing), and
an element that is open already. Each click is the element's own ``click()`` (a synthetic
click, what Browsertrix Behaviors' autoclick also does); after it the network is let go quiet,
and the links the document gained are read (:data:`~archiver.browser.behaviors.control.NEW_LINKS`),
so that a link a click inserted is found even if the next click replaces it. A click that
would take the tab to another document is stopped by the page's guard and its target kept as
a link (:mod:`archiver.browser.behaviors.control`).
"""

from __future__ import annotations

import json

from archiver.browser.behaviors.control import (
    NEW_LINKS,
    BehaviorOptions,
    BehaviorReport,
    PageControl,
    after_step,
)

#: The most clicks on one page.
MAX_CLICKS = 300
#: The most clicks on one "load more" control.
MAX_REPEATS = 100
#: The text of a "load more" control (JavaScript regular expression, case-insensitive).
MORE_TEXT = (
    r"^\W*(load|show|view|see|display|read)\s+(more|all|older|newer|next)\b|^\W*more\W*$"
    r"|\bmore (results|items|posts|comments|stories|articles|replies)\b"
    r"|\b(older|newer) (posts|entries|stories)\b"
)
#: The text of a control that acts for the reader instead of revealing something: not clicked
#: (unless a ``--click-selector`` names it).
RISKY_TEXT = (
    r"\b(log\s?out|sign\s?out|log\s?off|delete|remove|unsubscribe|subscribe|buy|purchase"
    r"|checkout|check out|add to (cart|basket|bag)|pay|donate|print|report|flag|block|share"
    r"|tweet|like|vote|upvote|downvote)\b"
)

# Find the next element to click (see the module docstring), click it, and say what it was:
# {kind, label} or null when nothing is left. State lives in archiver's isolated world.
NEXT_CLICK = """(() => {
  const config = %s;
  const userSelectors = config.selectors;
  const maxRepeats = config.maxRepeats;
  const state = globalThis.__archiverClicks || (globalThis.__archiverClicks = {
    clicks: new WeakMap(), invalid: []});
  const MORE = new RegExp(config.more, "i");
  const RISKY = new RegExp(config.risky, "i");
  const nodes = () => document.getElementsByTagName("*").length;
  const label = (el) => ((el.innerText || "") + " " + (el.getAttribute("aria-label") || "") +
    " " + (el.getAttribute("title") || "") + " " + (el.value || "")).replace(/\\s+/g, " ").trim();
  const shown = (el) => {
    if (!el.isConnected) return false;
    const box = el.getBoundingClientRect();
    if (!box.width && !box.height) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  };
  const disabled = (el) => el.disabled === true || el.getAttribute("aria-disabled") === "true";
  const submits = (el) => el.tagName === "BUTTON" && el.form &&
    (el.getAttribute("type") || "submit").toLowerCase() === "submit";
  const inertLink = (el) => {
    if (el.tagName !== "A") return false;
    const href = el.getAttribute("href");
    return href === null || href.trim() === "#" || /^\\s*javascript:/i.test(href);
  };
  const kindOf = (el, text) => {
    if (MORE.test(text)) return "more";
    if (el.getAttribute("aria-expanded") === "false") return "expand";
    if (el.tagName === "SUMMARY") {
      return el.parentElement && el.parentElement.open ? null : "details";
    }
    if (el.getAttribute("role") === "tab") {
      return el.getAttribute("aria-selected") === "true" ? null : "tab";
    }
    if (el.tagName === "BUTTON") return submits(el) ? null : "button";
    if (el.getAttribute("role") === "button") return "button";
    if (inertLink(el)) return "button";
    return null;
  };
  const candidates = [];
  const builtIn = '[aria-expanded="false"], details > summary, [role="tab"], button, ' +
    '[role="button"], a:not([href]), a[href="#"], a[href^="javascript:" i], a[href]';
  candidates.push(...document.querySelectorAll(builtIn));
  const chosen = new Set();
  for (const selector of userSelectors) {
    try {
      for (const el of document.querySelectorAll(selector)) { chosen.add(el); candidates.push(el); }
    } catch (e) {
      if (!state.invalid.includes(selector)) state.invalid.push(selector);
    }
  }
  const count = nodes();
  for (const el of candidates) {
    const text = label(el);
    let kind = kindOf(el, text);
    if (chosen.has(el)) kind = kind === "more" ? "more" : "selector";
    if (!kind || (el.tagName === "A" && el.hasAttribute("href") && !inertLink(el) &&
                  kind !== "more" && kind !== "selector")) continue;
    if (kind !== "selector" && RISKY.test(text)) continue;
    if (!shown(el) || disabled(el)) continue;
    const before = state.clicks.get(el);
    if (before) {
      // clicked already: only a "load more" is clicked again, and only while clicking it
      // changes the document
      if (kind !== "more" || before.times >= maxRepeats || before.nodes === count) continue;
    }
    state.clicks.set(el, {times: (before ? before.times : 0) + 1, nodes: count});
    try { el.scrollIntoView({block: "center"}); } catch (e) {}
    try { el.click(); } catch (e) {}
    return {kind: kind, label: text.slice(0, 80), repeat: before ? before.times : 0,
            invalid: state.invalid};
  }
  return {kind: null, invalid: state.invalid};
})()"""

#: Two animation frames after a click, so that what it started is under way.
FRAMES = """new Promise((resolve) => {
  let done = false;
  const finish = () => { if (!done) { done = true; resolve(true); } };
  requestAnimationFrame(() => requestAnimationFrame(finish));
  setTimeout(finish, 300);
})"""


async def autoclick(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Click what reveals content, one element at a time (see the module docstring)."""
    config = {
        "selectors": list(options.click_selectors),
        "maxRepeats": MAX_REPEATS,
        "more": MORE_TEXT,
        "risky": RISKY_TEXT,
    }
    script = NEXT_CLICK % json.dumps(config)
    for _click in range(MAX_CLICKS):
        if page.now() >= until:
            report.stopped = "time"
            return
        clicked = await page.evaluate(script, until=until)
        for selector in clicked.get("invalid") or ():
            note = f"--click-selector {selector!r} is not a valid CSS selector"
            if note not in report.notes:
                report.note(note)
        if not clicked.get("kind"):
            return
        report.steps += 1
        report.clicks += 1
        await page.evaluate(FRAMES, until=until)
        await after_step(page, until)
        report.found(await page.evaluate(NEW_LINKS, until=until))
    report.stopped = "steps"


__all__ = ["MAX_CLICKS", "MAX_REPEATS", "autoclick"]
