"""``--browser auto``: does a statically fetched page need a browser to be captured whole?

A browser costs one to two orders of magnitude more than a static fetch, so it is used only
when the static HTML shows that scripts build what a reader sees or what the page links to.
The rules, first match wins, each giving the reason that is logged:

1. **An empty application root** (``<div id="root">``, ``#app``, ``#__next``, ``<app-root>``...,
   :data:`archiver.extract.shape.APP_ROOTS`) while application scripts are present: the page is
   a single-page-application shell (Create React App, Vite, Angular CLI, Vue CLI all produce
   exactly this); its content and links arrive through scripts.
2. **A framework's hydration marker** (``__NEXT_DATA__``, ``ng-version``, ``data-reactroot``,
   ``data-server-rendered``, Nuxt's ``__NUXT__``, Gatsby, SvelteKit, Remix): the HTML is server
   rendered, but the framework takes the page over in the browser and loads code split into
   chunks and data (``/_next/data/...json``) that no static link names, for navigation, lazy
   components and "load more" lists; without them the archived page breaks once hydrated.
3. **Links to hash routes** (``href="#/guide"``, ``#!/post/3``: :func:`archiver.urls.is_route`)
   beside application scripts: the page is a hash-routed application (docsify, Vue Router's or
   React Router's hash mode); its routes are pages only a browser renders.
4. **A ``<noscript>`` that asks for JavaScript, on a page with little text** (under
   :data:`NOSCRIPT_TEXT` characters): the site says itself that the page is incomplete without
   scripts. On a page full of text the same banner is boilerplate and does not count.
5. **Almost no text, and application scripts**: under :data:`LITTLE_TEXT` visible characters and
   :data:`FEW_LINKS` links, with at least one script that is not analytics. Script redirects
   (``location.replace``) and loaders that fetch the content land here.

Analytics and tag-manager snippets (:data:`ANALYTICS`) never build content: they do not count
as application scripts, so an ordinary page with Google Analytics or Matomo stays static. Pages
without scripts never need the browser.
"""

from __future__ import annotations

from archiver.extract.links import HTML_TYPES
from archiver.extract.shape import PageShape, page_shape

LITTLE_TEXT = 200
FEW_LINKS = 5
NOSCRIPT_TEXT = 1000
#: Script sources and inline code that only measure or track, by a fragment they contain.
ANALYTICS = (
    "googletagmanager.com",
    "google-analytics.com",
    "gtag(",
    "dataLayer",
    "_gaq",
    "ga('create'",
    'ga("create"',
    "matomo",
    "piwik",
    "_paq",
    "plausible.io",
    "statcounter.com",
    "hotjar.com",
    "cdn.segment.com",
    "connect.facebook.net",
    "fbq(",
    "static.cloudflareinsights.com",
    "cloudflare-static/email-decode",
    "mc.yandex.ru",
    "clarity.ms",
    "quantserve.com",
    "scorecardresearch.com",
    "cdn.usefathom.com",
    "umami",
    "newrelic",
    "nr-data.net",
)


def needs_browser(html: bytes, content_type: str) -> str | None:
    """The reason a page needs a browser, or None. ``html`` is the content-decoded body."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type not in HTML_TYPES:
        return None
    return shape_needs_browser(page_shape(html))


def shape_needs_browser(shape: PageShape) -> str | None:
    """The rules of the module docstring, over measured facts."""
    app_scripts = application_scripts(shape)
    if not app_scripts and not shape.markers:
        return None
    if shape.empty_roots and app_scripts:
        return f"empty application root {shape.empty_roots[0]}"
    if shape.markers:
        return f"hydrated by {shape.markers[0]}"
    if shape.route_links and app_scripts:
        return f"{shape.route_links} link(s) to hash routes"
    if shape.noscript_asks_for_javascript and shape.text_chars < NOSCRIPT_TEXT:
        return "a <noscript> asks for JavaScript"
    if shape.text_chars < LITTLE_TEXT and shape.links < FEW_LINKS:
        return f"{shape.text_chars} characters of text beside {app_scripts} script(s)"
    return None


def application_scripts(shape: PageShape) -> int:
    """The scripts that are not analytics."""
    return sum(
        1
        for code in (*shape.script_sources, *shape.inline_scripts)
        if not any(fragment.lower() in code.lower() for fragment in ANALYTICS)
    )
