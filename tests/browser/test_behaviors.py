"""Behaviours on the pages of :mod:`tests.support.behave_site`, in real Chromium, every request
answered from the live site by a handler: what each behaviour makes the page request (the
server's log is the judge: each thing once), what it reports, and where it stops."""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from archiver.browser.behaviors import DEFAULT_BEHAVIORS, BehaviorReport, BehaviorScript
from archiver.browser.behaviors.click import MAX_REPEATS
from archiver.browser.page import PageResult
from archiver.browser.pool import BrowserConfig, BrowserPool
from tests.browser.conftest import SiteHandler
from tests.support.behave_site import (
    CUSTOM_BEHAVIOR,
    FEED_PAGES,
    OVERLAY_RGB,
    PANELS,
    ROUTES,
    TABS,
    BehaveSite,
    feed_item_paths,
    route_fragment,
    route_text,
)
from tests.support.images import decode_png

pytestmark = pytest.mark.usefixtures("chromium_installed")


@pytest.fixture
async def site() -> AsyncIterator[BehaveSite]:
    async with BehaveSite() as behave:
        yield behave


Load = Callable[..., Any]


@pytest.fixture
def load(
    browser_config: Callable[..., BrowserConfig], site: BehaveSite, handler: SiteHandler
) -> Load:
    """``await load(path, behaviors=(...), **config)``: the page loaded in a pool of its own."""

    async def run(path: str, *, route: str = "", **overrides: Any) -> PageResult:
        async with BrowserPool(browser_config(**overrides)) as pool:
            return await pool.load(site.url(path), handler, route=route)

    return run


def report(result: PageResult, name: str) -> BehaviorReport:
    (found,) = [r for r in result.behaviors if r.name == name]
    return found


def assert_each_once(site: BehaveSite) -> None:
    counts = collections.Counter(site.requested())
    assert not {k: n for k, n in counts.items() if n > 1}, counts


async def test_autoclick_reveals_tabs_panels_details_and_inserted_links(
    load: Load, site: BehaveSite
) -> None:
    result = await load("/tabs.html", behaviors=("autoclick",))
    requested = site.requested()
    for name in TABS:
        assert f"GET /api/tab/{name}.json" in requested, requested
    for number in range(1, PANELS + 1):
        assert f"GET /api/panel/{number}.html" in requested, requested
    assert "GET /img/in-details.png" in requested  # lazy, inside the <details> it opened
    assert_each_once(site)
    assert "Answer 3." in result.text and "history tab's own text" in result.text
    clicked = report(result, "autoclick")
    assert clicked.stopped == "done"
    assert clicked.clicks >= len(TABS) - 1 + PANELS + 1 + 4
    # links the clicks inserted; the links handlers clicked (one to a new window) and the
    # location a handler set: all stopped, the tab left in place, the targets kept as links
    leaving = ("/guarded.html", "/new-window.html", "/scripted.html")
    for path in ("/related.html", "/from-panel.html", *leaving):
        assert site.url(path) in clicked.links, clicked.links
    assert clicked.navigations_blocked == len(leaving)
    assert result.final_url == site.url("/tabs.html")
    assert result.title == "Tabs"
    assert not [r for r in requested if r.removeprefix("GET ") in leaving]


async def test_a_click_selector_adds_what_autoclick_would_not_click(
    load: Load, site: BehaveSite
) -> None:
    """``.read-more`` is a plain span: autoclick leaves it alone unless ``--click-selector``
    names it; an invalid selector is noted, not fatal."""
    without = await load("/tabs.html", behaviors=("autoclick",))
    assert "GET /api/read-more.json" not in site.requested()
    assert "for those who read on" not in without.text
    result = await load(
        "/tabs.html", behaviors=("autoclick",), click_selectors=(".read-more", "!!nope")
    )
    assert site.requested().count("GET /api/read-more.json") == 1
    assert "for those who read on" in result.text
    notes = report(result, "autoclick").notes
    assert notes == ["--click-selector '!!nope' is not a valid CSS selector"], notes


async def test_load_more_is_clicked_until_the_list_ends(load: Load, site: BehaveSite) -> None:
    result = await load("/feed.html", behaviors=("autoclick",))
    pages = [f"GET /api/feed?page={n}" for n in range(1, FEED_PAGES + 1)]
    assert [r for r in site.requested() if r.startswith("GET /api/feed")] == pages
    clicked = report(result, "autoclick")
    assert clicked.stopped == "done"
    assert clicked.clicks == FEED_PAGES
    assert set(clicked.links) == {site.url(path) for path in feed_item_paths()}


async def test_a_load_more_that_never_ends_stops_at_the_bounds(
    load: Load, site: BehaveSite
) -> None:
    """The endless list stops at the behaviour's time (or its step limit): the page is read
    all the same, within the page timeout, and the report says where it stopped."""
    result = await load("/endless.html", behaviors=("autoclick",), page_timeout=12.0)
    clicked = report(result, "autoclick")
    assert clicked.stopped in ("time", "steps")
    assert 2 <= clicked.clicks <= MAX_REPEATS
    fetched = [r for r in site.requested() if r.startswith("GET /api/endless")]
    assert len(fetched) == clicked.clicks
    assert f"Endless item {clicked.clicks}.3" in result.text
    assert result.duration < 12.0


async def test_autoplay_requests_each_chosen_source_once(load: Load, site: BehaveSite) -> None:
    result = await load("/media.html", behaviors=("autoplay",))
    requested = site.requested()
    for path in ("/media/lazy.mp4", "/media/clip.mp4", "/media/tone.wav"):
        assert requested.count(f"GET {path}") == 1, requested
    assert "GET /media/clip.unplayable" not in requested  # its type: never chosen
    played = report(result, "autoplay")
    assert played.plays == 3
    assert site.url("/media/clip.mp4") in played.sources
    assert site.url("/media/tone.wav") in played.sources


async def test_consent_is_accepted_before_the_page_is_pictured(
    load: Load, site: BehaveSite
) -> None:
    """With ``consent`` the overlay is gone from the screenshot and the accept was sent;
    without it, the overlay covers the picture."""
    overlay = OVERLAY_RGB
    covered = await load("/consent.html", behaviors=("none",), screenshots=("view",))
    _, _, pixels = decode_png(covered.screenshots["view"])
    assert pixels.count(overlay) > len(pixels) // 2
    assert "POST /api/consent" not in site.requested()
    accepted = await load("/consent.html", behaviors=("consent",), screenshots=("view",))
    _, _, pixels = decode_png(accepted.screenshots["view"])
    assert overlay not in pixels
    assert site.requested().count("POST /api/consent") == 1
    done = report(accepted, "consent")
    assert (done.clicks, done.ran) == (1, "OneTrust")
    assert "We use cookies" not in accepted.text
    assert "What the reader came for" in accepted.text


async def test_search_opens_the_box_loads_the_index_and_finds_result_links(
    load: Load, site: BehaveSite
) -> None:
    result = await load("/search.html", behaviors=("search",))
    assert site.requested().count("GET /search-index.json") == 1
    searched = report(result, "search")
    assert (searched.clicks, searched.typed) == (1, 1)
    assert set(searched.links) == {site.url("/docs/alpha.html"), site.url("/docs/beta.html")}


async def test_a_user_behaviour_class_runs_with_the_browsertrix_api(
    load: Load, site: BehaveSite
) -> None:
    script = BehaviorScript("reveal.js", CUSTOM_BEHAVIOR)
    result = await load("/custom.html", behaviors=("none",), behavior_scripts=(script,))
    assert site.requested().count("GET /api/secret/1.json") == 1
    assert site.requested().count("GET /api/secret/2.json") == 1
    assert "secret number 2" in result.text
    ran = report(result, "script")
    assert ran.ran == "Reveal secrets"
    assert ran.steps == 3
    assert site.url("/custom-added.html") in ran.links
    assert any('"msg":"revealed secret number 1"' in note for note in ran.notes), ran.notes
    assert any('"secrets":2' in note and '"links":1' in note for note in ran.notes), ran.notes
    # on a page it does not match, it does not run
    other = await load("/feed.html", behaviors=("none",), behavior_scripts=(script,))
    assert report(other, "script").ran is None


#: A stand-in for a Browsertrix Behaviors bundle: not a class, it defines the manager the
#: bundle defines (``self.__bx_behaviors`` with init and run) and uses the crawler's functions
#: the bundle calls (``__bx_addLink``, ``__bx_log``, ``__bx_addSet``).
BUNDLE_LIKE = """(function () {
  var loaded = [];
  self.__bx_behaviors = {
    load: function (cls) { loaded.push(cls); },
    init: function (opts) { this.opts = opts; },
    run: async function () {
      await self.__bx_log("bundle run with siteSpecific " + this.opts.siteSpecific +
                          " and " + loaded.length + " loaded");
      var first = await self.__bx_addSet("seen");
      var again = await self.__bx_addSet("seen");
      await self.__bx_log("set " + first + " " + again);
      await self.__bx_addLink("/from-bundle.html");
    }
  };
})();
"""


async def test_a_behaviour_bundle_runs_as_it_is_and_classes_load_into_it(
    load: Load, site: BehaveSite
) -> None:
    scripts = (
        BehaviorScript("behaviors.js", BUNDLE_LIKE),
        BehaviorScript("reveal.js", CUSTOM_BEHAVIOR),
    )
    result = await load("/custom.html", behaviors=("none",), behavior_scripts=scripts)
    ran = report(result, "script")
    assert "bundle run with siteSpecific true and 1 loaded" in ran.notes, ran.notes
    assert "set true false" in ran.notes
    assert site.url("/from-bundle.html") in ran.links


async def test_the_real_browsertrix_behaviors_bundle_runs_a_class_loaded_into_it(
    load: Load, site: BehaveSite, browsertrix_bundle: Path
) -> None:
    """The bundle is run as it is and defines its own manager; the user's class is loaded into
    that manager and run by the bundle's own runner, with the bundle's ``ctx.Lib``: the
    secrets it reveals are fetched once each, the link it adds reaches archiver through
    ``__bx_addLink``, and its log lines through ``__bx_log``."""
    bundle = BehaviorScript("behaviors.js", browsertrix_bundle.read_text("utf-8"))
    scripts = (bundle, BehaviorScript("reveal.js", CUSTOM_BEHAVIOR))
    result = await load("/custom.html", behaviors=("none",), behavior_scripts=scripts)
    ran = report(result, "script")
    assert "Using Site-Specific Behavior: Reveal secrets" in ran.notes, ran.notes
    # the bundle's runner logs a step's failure and ends the class: it ran to its end
    assert '{"msg":"done!","behavior":"Reveal secrets"}' in ran.notes, ran.notes
    assert site.requested().count("GET /api/secret/1.json") == 1
    assert site.requested().count("GET /api/secret/2.json") == 1
    assert "secret number 2" in result.text
    assert site.url("/custom-added.html") in ran.links
    assert any('"secrets":2,"links":1' in note for note in ran.notes), ran.notes


async def test_a_behaviour_that_throws_is_noted_and_the_page_goes_on(
    load: Load, site: BehaveSite
) -> None:
    broken = BehaviorScript(
        "broken.js",
        "class Broken {\n  static id = 'Broken';\n  static isMatch() { return true; }\n"
        "  static init() { return {}; }\n"
        "  async* run(ctx) { yield ctx.Lib.getState(ctx, 'one'); throw new Error('boom'); }\n}",
    )
    unparsable = BehaviorScript("typo.js", "class Typo { static isMatch( { }")
    result = await load(
        "/feed.html", behaviors=("autoclick",), behavior_scripts=(broken, unparsable)
    )
    ran = report(result, "script")
    assert any(note.startswith("typo.js: ") for note in ran.notes), ran.notes
    assert any("Error: boom" in note for note in ran.notes), ran.notes
    assert ran.steps == 1
    assert report(result, "autoclick").clicks == FEED_PAGES  # the other behaviours ran
    assert result.title == "Feed"


def tried_in_order(held: Sequence[str], tries: list[str]) -> bool:
    """Whether ``held`` is ``tries`` in their order, some of them left out but the last."""
    return bool(held) and held[-1] == tries[-1] and list(held) == [t for t in tries if t in held]


async def test_a_page_that_keeps_leaving_and_opening_windows_stays(
    load: Load, site: BehaveSite
) -> None:
    """Every try the browser made is held and listed, in order. A try made while the one
    before is still starting replaces it before it asks for anything (on a loaded machine
    150 ms can be that short), so some of the first four may never be made; the last one,
    replaced by nothing, always is."""
    result = await load("/leave.html", behaviors=DEFAULT_BEHAVIORS)
    assert result.final_url == site.url("/leave.html")
    assert result.title == "Stayed"
    assert tried_in_order(result.navigations, [site.url(f"/away-{n}.html") for n in range(1, 6)])
    assert result.popups == tuple(site.url(f"/popup-{n}.html") for n in range(1, 6))
    assert [r for r in site.requested() if "/away-" in r or "/popup-" in r] == []


async def test_a_hash_route_is_rendered_by_in_page_navigation(
    load: Load, site: BehaveSite, handler: SiteHandler
) -> None:
    """The route is followed in the tab once the document loaded: one document request, the
    route's content fetched, the page read at the route; its links to other routes are listed
    apart from its links (a plain anchor is neither)."""
    result = await load("/app/", route=route_fragment(3)[1:], behaviors=("none",))
    assert result.final_url == site.url("/app/" + route_fragment(3))
    assert result.title == "Guide: Route 3"
    assert route_text(3) in result.text
    documents = [request.url for request in handler.log if request.is_main_frame]
    assert documents == [site.url("/app/")]
    assert site.requested().count("GET /app/content/route-3.md") == 1
    expected = {site.url("/app/" + route_fragment(n)) for n in range(1, ROUTES)}
    assert set(result.routes) == expected
    assert site.url("/app/vendor/router.js") in result.links.requisites
    every = [*result.links.pages, *result.links.requisites]
    assert not [url for url in every if "#" in url], every
