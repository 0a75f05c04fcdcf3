"""What a behaviour works with: the page it may act on, the bounds it keeps, what it reports.

A behaviour is ``async def behaviour(page, until, report, options)``: it acts on ``page`` (a
:class:`PageControl`, the tab of :mod:`archiver.browser.page`) until the loop time ``until`` at
the latest and within a step limit of its own, and fills ``report`` (a :class:`BehaviorReport`)
with what it did. It never raises for what the page does: a script of the page that throws, an
element that disappears, a click that leads nowhere are the page's business; only the tab
failing (a :class:`~archiver.browser.errors.BrowserError`) stops the page.

Two page scripts are shared by every behaviour and run by the page between behaviours:

- :data:`NEW_LINKS`: the links (``a``/``area`` ``href``) the live document holds that it did not
  hold before, resolved by the browser. Read after every step, so that a link a click inserted
  is found even when a later click replaces it (a "load more" that pages rather than appends);
- :data:`GUARD`: a reader's click on a link to another document, or a form submitted, would
  navigate the tab away from the page being captured. A ``click`` listener on the window, added
  last in the bubbling phase, runs after the application's own listeners (DOM Standard,
  "dispatching events") and sees whether one of them handled the click
  (``defaultPrevented``, as a router does); a click nobody handled that would leave the document
  is prevented and its target kept, to be queued as a link; a click to another fragment of the
  same document is let through (a hash router runs). A submit nobody handled is prevented too.
  It is taken off (:data:`UNGUARD`) once the behaviours are done.
  Navigation by a script (``location.href = ...``) is no event: the page holds the tab there
  (:mod:`archiver.browser.page`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

#: How a behaviour ended: it ran out of work, hit its step limit, or its time was up.
Stop = Literal["done", "steps", "time"]
#: After a step: how long no request may be in flight, and the most that is waited for it.
STEP_QUIET = 0.3
STEP_WAIT = 5.0
#: The most URLs one behaviour reports for one page (the rest are still queued by the read).
MAX_REPORTED_LINKS = 2_000


class PageControl(Protocol):
    """What a behaviour may do to the page it runs on."""

    async def evaluate(self, expression: str, *, until: float) -> Any:
        """Run ``expression`` in archiver's isolated world (the page's scripts cannot see or
        change its functions); a promise is awaited; the value comes back as JSON."""

    async def evaluate_main(self, expression: str, *, until: float) -> Any:
        """Run ``expression`` in the page's own world, where its scripts live (user behaviour
        scripts written for Browsertrix Behaviors expect it)."""

    async def insert_text(self, text: str, *, until: float) -> None:
        """Type ``text`` into the focused element, as a keyboard does (trusted ``input``
        events)."""

    async def press_key(self, key: str, *, until: float) -> None:
        """Press and release one key (``Escape``, ``Enter``...)."""

    async def settle(self, quiet: float, until: float, *, since: float | None = None) -> bool:
        """Wait for the page's network to be quiet for ``quiet`` seconds, or until ``until``;
        with ``since`` (a loop time), quiet for ``quiet`` seconds after it at least (a quiet
        that began before an action does not say what the action set off: its requests may
        be a moment away)."""

    def now(self) -> float:
        """The loop time deadlines are expressed in."""

    async def take_popups(self, *, until: float) -> list[str]:
        """The URLs of the windows the page tried to open since the last call (none opened:
        the page got what a popup blocker gives)."""

    def take_navigations(self) -> list[str]:
        """The URLs the page's scripts tried to take the tab to since the last call (the tab
        was held on the page: :mod:`archiver.browser.intercept`)."""


@dataclass
class BehaviorReport:
    """What one behaviour did to one page: the crawl log lists it, the summary adds it up."""

    name: str
    steps: int = 0
    """Steps taken (a scroll, a click, a play, a yield of a user behaviour)."""
    clicks: int = 0
    plays: int = 0
    """Media elements played until their source was requested."""
    typed: int = 0
    """Search boxes typed into."""
    links: list[str] = field(default_factory=list)
    """URLs found by this behaviour (new in the document, a blocked navigation's target, one a
    user behaviour added), as the browser resolved them; queued as links."""
    sources: list[str] = field(default_factory=list)
    """Media sources the browser chose (``currentSrc``): page requisites."""
    navigations_blocked: int = 0
    """Clicks and submits that would have navigated the tab away, prevented, and navigations
    by script the tab was held from."""
    held: int = 0
    """Of ``navigations_blocked``, the navigations by script (listed in the page's result as
    well)."""
    popups_blocked: int = 0
    """Windows the page tried to open, closed."""
    stopped: Stop = "done"
    ran: str | None = None
    """Which user behaviour ran (its ``id``), for scripts."""
    notes: list[str] = field(default_factory=list)
    """What a user behaviour yielded or logged, and scripts' errors (bounded)."""

    def found(self, urls: list[str]) -> None:
        for url in urls:
            if len(self.links) >= MAX_REPORTED_LINKS:
                return
            if url not in self.links:
                self.links.append(url)

    def note(self, text: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(text[:300])

    def to_json(self) -> dict[str, Any]:
        """The crawl log's view: counts, and the stop reason when it was not the end of the
        work."""
        shown: dict[str, Any] = {"steps": self.steps, "links": len(self.links)}
        for name in ("clicks", "plays", "typed", "navigations_blocked", "popups_blocked"):
            value = getattr(self, name)
            if value:
                shown[name] = value
        if self.sources:
            shown["sources"] = len(self.sources)
        if self.ran is not None:
            shown["ran"] = self.ran
        if self.notes:
            shown["notes"] = self.notes
        shown["stopped"] = self.stopped
        return shown


@dataclass(frozen=True, slots=True)
class BehaviorScript:
    """A user behaviour file (``--behavior-script``): its name and source text."""

    name: str
    source: str

    @property
    def is_class(self) -> bool:
        """A behaviour class (wrapped in ``__bx_behaviors.load(...)``), else a script run as
        it is (a Browsertrix Behaviors bundle)."""
        return _first_word(self.source) == "class"


@dataclass(frozen=True, slots=True)
class BehaviorOptions:
    """What the behaviours are given besides the page: the user's click selectors and
    behaviour scripts."""

    click_selectors: tuple[str, ...] = ()
    scripts: tuple[BehaviorScript, ...] = ()


async def after_step(page: PageControl, until: float) -> None:
    """Let what a step started finish: the network quiet for :data:`STEP_QUIET` seconds
    counted from now (the step's action just done: a click's fetch or a play's request may
    start a moment later, so an earlier quiet says nothing), waited for :data:`STEP_WAIT`
    seconds at most (and not past ``until``)."""
    now = page.now()
    await page.settle(STEP_QUIET, min(until, now + STEP_WAIT), since=now)


def _first_word(source: str) -> str:
    """The first word of a script, past comments and white space."""
    text = source.lstrip("\ufeff")
    while True:
        text = text.lstrip()
        if text.startswith("//"):
            text = text.partition("\n")[2]
        elif text.startswith("/*"):
            text = text.partition("*/")[2]
        else:
            break
    word = ""
    for char in text:
        if not (char.isalnum() or char in "_$"):
            break
        word += char
    return word


# The links the document holds now that it did not hold at the last call (the first call
# only records them): a[href] and area[href], resolved by the browser, at most LIMIT.
NEW_LINKS = """(() => {
  const limit = LIMIT;
  const seen = globalThis.__archiverLinks || (globalThis.__archiverLinks = new Set());
  const first = seen.size === 0 && !globalThis.__archiverLinksRead;
  globalThis.__archiverLinksRead = true;
  const found = [];
  for (const link of document.querySelectorAll("a[href], area[href]")) {
    const href = link.href;
    if (typeof href !== "string" || !/^https?:/i.test(href) || seen.has(href)) continue;
    seen.add(href);
    if (!first && found.length < limit) found.push(href);
  }
  return found;
})()""".replace("LIMIT", str(MAX_REPORTED_LINKS))

# See the module docstring. Installed once per document; TAKE_GUARDED hands over what it
# stopped since the last call.
GUARD = """(() => {
  if (globalThis.__archiverGuard) return true;
  const guard = globalThis.__archiverGuard = {targets: [], blocked: 0};
  const here = () => location.href.split("#")[0];
  guard.click = (event) => {
    if (event.defaultPrevented) return;
    const link = event.composedPath().find(
      (node) => node instanceof HTMLAnchorElement || node instanceof HTMLAreaElement);
    if (!link || !link.hasAttribute("href") || link.hasAttribute("download")) return;
    const href = link.href;
    if (!/^https?:/i.test(href)) return;
    const sameDocument = href.split("#")[0] === here() && href.includes("#");
    const target = (link.target || "").toLowerCase();
    if (sameDocument && (!target || target === "_self")) return;
    event.preventDefault();
    guard.blocked += 1;
    if (guard.targets.length < 1000) guard.targets.push(href);
  };
  guard.submit = (event) => {
    if (event.defaultPrevented) return;
    event.preventDefault();
    guard.blocked += 1;
  };
  addEventListener("click", guard.click);
  addEventListener("submit", guard.submit);
  return true;
})()"""

#: The guard taken off once the behaviours are done (what runs after them judges clicks by
#: themselves: a click the guard prevented would look handled by the page).
UNGUARD = """(() => {
  const guard = globalThis.__archiverGuard;
  if (!guard) return false;
  removeEventListener("click", guard.click);
  removeEventListener("submit", guard.submit);
  delete globalThis.__archiverGuard;
  return true;
})()"""

TAKE_GUARDED = """(() => {
  const guard = globalThis.__archiverGuard;
  if (!guard) return {targets: [], blocked: 0};
  const taken = {targets: guard.targets, blocked: guard.blocked};
  guard.targets = [];
  guard.blocked = 0;
  return taken;
})()"""


__all__ = [
    "GUARD",
    "MAX_REPORTED_LINKS",
    "NEW_LINKS",
    "STEP_QUIET",
    "STEP_WAIT",
    "TAKE_GUARDED",
    "BehaviorOptions",
    "BehaviorReport",
    "BehaviorScript",
    "PageControl",
    "Stop",
    "after_step",
]
