"""Behaviours: what is done to a loaded page so that it loads what a reader would make it load.

``autoscroll`` scrolls to the end of the page one step (nine tenths of a viewport) at a time,
letting two animation frames pass and the network settle after each step, so that images and
content loaded when scrolled into view (IntersectionObserver, ``loading=lazy``) are requested;
jumping straight to the bottom would skip everything in between. It stops at the end of the
page once the page stops growing, after :data:`MAX_SCROLL_STEPS` steps (an infinite feed), or at
the deadline, then scrolls back to the top. A page that scrolls an inner element rather than the
document (a common app layout) has its largest scrollable element scrolled instead.

``none`` does nothing. The scripts run in an isolated world: the page's own scripts cannot
change the functions they call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

#: Upper bound of scroll steps (about 60 viewports): infinite feeds end here.
MAX_SCROLL_STEPS = 64
#: After each step: how long no request may be in flight, and the most that is waited for it.
STEP_QUIET = 0.1
STEP_WAIT = 3.0

# One scroll step: the scroller is the document's, or else the largest element that scrolls
# vertically; the promise resolves after two animation frames (IntersectionObserver callbacks
# run before the next frame's rendering), or after 500 ms if frames are not produced.
SCROLL_STEP = """(async () => {
  const pick = () => {
    const doc = document.scrollingElement || document.documentElement;
    if (!doc || doc.scrollHeight > innerHeight + 1) return null;
    let best = null, bestArea = 0;
    for (const el of document.querySelectorAll("body *")) {
      if (el.scrollHeight <= el.clientHeight + 50) continue;
      const overflow = getComputedStyle(el).overflowY;
      if (overflow !== "auto" && overflow !== "scroll") continue;
      const area = el.clientWidth * el.clientHeight;
      if (area > bestArea) { best = el; bestArea = area; }
    }
    return best;
  };
  if (globalThis.__archiverScroller === undefined) globalThis.__archiverScroller = pick();
  const inner = globalThis.__archiverScroller;
  const doc = document.scrollingElement || document.documentElement;
  const box = inner || doc;
  const view = inner ? inner.clientHeight : innerHeight;
  const before = inner ? inner.scrollTop : scrollY;
  if (inner) inner.scrollTop += Math.max(Math.floor(view * 0.9), 100);
  else scrollBy(0, Math.max(Math.floor(view * 0.9), 100));
  await new Promise((resolve) => {
    let done = false;
    const finish = () => { if (!done) { done = true; resolve(); } };
    requestAnimationFrame(() => requestAnimationFrame(finish));
    setTimeout(finish, 500);
  });
  const after = inner ? inner.scrollTop : scrollY;
  return [before, after, view, box ? box.scrollHeight : 0];
})()"""

SCROLL_TOP = """(() => {
  const inner = globalThis.__archiverScroller;
  if (inner) inner.scrollTop = 0;
  scrollTo(0, 0);
  return true;
})()"""


class PageControl(Protocol):
    """What a behaviour may do to the page it runs on."""

    async def evaluate(self, expression: str, *, until: float) -> Any:
        """Run ``expression`` in the page's isolated world; a promise is awaited."""

    async def settle(self, quiet: float, until: float, *, since: float | None = None) -> bool:
        """Wait for the page's network to be quiet for ``quiet`` seconds, or until ``until``;
        with ``since`` (a loop time), quiet for ``quiet`` seconds after it at least (a quiet
        that began before an action does not say what the action set off)."""

    def now(self) -> float:
        """The loop time deadlines are expressed in."""


Behavior = Callable[[PageControl, float], Awaitable[None]]


async def autoscroll(page: PageControl, until: float) -> None:
    """Scroll to the end of the page step by step (see the module docstring)."""
    last_height = -1
    for _step in range(MAX_SCROLL_STEPS):
        if page.now() >= until:
            break
        before, after, view, height = await page.evaluate(SCROLL_STEP, until=until)
        await page.settle(STEP_QUIET, min(until, page.now() + STEP_WAIT))
        at_end = after <= before or after + view >= height - 1
        if at_end and height <= last_height:
            break
        last_height = height if at_end else -1
    if page.now() < until:
        await page.evaluate(SCROLL_TOP, until=until)


async def no_behavior(page: PageControl, until: float) -> None:
    """Leave the page as it loaded."""


BEHAVIORS: dict[str, Behavior] = {"autoscroll": autoscroll, "none": no_behavior}
