"""Following a page's internal links *in the page*, as a reader's click would.

A page loaded once shows what its first route needs. A client-rendered application (a single
page application, a documentation site built with a framework that hydrates) fetches more when
a reader clicks a link: its router intercepts the click (``preventDefault``), changes the URL
with the History API (or the fragment) and loads the code chunk and the data of the new route.
Those requests are made by no page load, so neither a static crawl nor a browser crawl that
loads each page once sees them; a replay misses them.

:class:`LinkWalk` clicks up to ``limit`` same-origin links of the page one at a time, letting
the network go quiet after each click, and calls ``on_click(link)`` before each so that the
caller can attribute the requests that follow to that navigation. Whether a click was handled
in the page is read from the event itself (DOM Standard, "dispatching events": a listener added
last on ``window`` in the bubbling phase runs after the application's listeners on the link,
the document and the window, and sees ``defaultPrevented``): a click the application did not
handle is a full navigation to another document, which is prevented (that page is loaded on
its own), and does not count toward ``limit``; a link to another fragment of the same document
is followed as the browser follows it (``hashchange``: a hash router runs). A link the walk
clicked is not clicked again; at most :data:`ATTEMPTS_PER_STEP` times ``limit`` links are
tried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from archiver.browser.behaviors import PageControl

#: Links tried per navigation wanted: full-navigation links are tried and prevented.
ATTEMPTS_PER_STEP = 3
#: After a click: how long no request may be in flight, and the most that is waited for it.
CLICK_QUIET = 0.5
CLICK_WAIT = 10.0

# The next same-origin link not clicked yet, by its resolved URL.
NEXT_LINK = """(() => {
  const clicked = new Set(%s);
  for (const link of document.querySelectorAll("a[href]")) {
    if (link.origin !== location.origin || !link.protocol.startsWith("http")) continue;
    if (link.hasAttribute("download") || (link.target && link.target !== "_self")) continue;
    if (clicked.has(link.href) || link.href === location.href) continue;
    const box = link.getBoundingClientRect();
    if (box.width || box.height) return link.href;
  }
  return null;
})()"""

# Click the link with this URL; report whether the page handled the click itself.
CLICK = """(async () => {
  const href = %s;
  const link = [...document.querySelectorAll("a[href]")].find((a) => a.href === href);
  if (!link) return null;
  const samePage = href.split("#")[0] === location.href.split("#")[0] && href.includes("#");
  let handled = null;
  const judge = (event) => {
    handled = event.defaultPrevented;
    if (!handled && !samePage) event.preventDefault();
  };
  addEventListener("click", judge);
  try { link.click(); } finally { removeEventListener("click", judge); }
  await new Promise((resolve) => {
    let done = false;
    const finish = () => { if (!done) { done = true; resolve(); } };
    requestAnimationFrame(() => requestAnimationFrame(finish));
    setTimeout(finish, 500);
  });
  return handled === true || samePage;
})()"""


@dataclass(frozen=True, slots=True)
class Navigation:
    """One click of the walk."""

    link: str
    """The link's URL (``href``, resolved): the page handled the click itself (its router
    ran), or it was a same-document fragment."""
    landed: str
    """``location.href`` once the network went quiet after the click."""


@dataclass
class LinkWalk:
    """An ``explore`` step for :func:`archiver.browser.page.load_page` (see the module doc)."""

    limit: int
    on_click: Callable[[str], None] = lambda _link: None
    navigations: list[Navigation] = field(default_factory=list)
    #: links whose click the page left to the browser (a full navigation, prevented)
    full_navigations: int = 0
    #: the walk stopped at the deadline with links left to try
    cut_short: bool = False

    async def __call__(self, page: PageControl, until: float) -> None:
        clicked: list[str] = []
        followed = 0
        for _attempt in range(self.limit * ATTEMPTS_PER_STEP):
            if followed >= self.limit:
                break
            if page.now() >= until:
                self.cut_short = True
                break
            link = await page.evaluate(NEXT_LINK % json.dumps(clicked), until=until)
            if not isinstance(link, str):
                break  # no link left to try
            clicked.append(link)
            self.on_click(link)
            clicked_at = page.now()
            handled = await page.evaluate(CLICK % json.dumps(link), until=until)
            if not handled:
                self.full_navigations += 1
                continue
            # quiet after the click: the page may have been quiet long before it, and what the
            # router asks for can come a moment later (a transition) or reach the interceptor
            # after the click's own answer
            await page.settle(CLICK_QUIET, min(until, page.now() + CLICK_WAIT), since=clicked_at)
            landed = await page.evaluate("location.href", until=until)
            self.navigations.append(Navigation(link, str(landed or "")))
            followed += 1
        self.on_click("")


__all__ = ["ATTEMPTS_PER_STEP", "LinkWalk", "Navigation"]
