"""The shape of an HTML page: the facts that tell whether its content is built by scripts.

Pure: bytes in, a frozen :class:`PageShape` out, one Lexbor parse (selectolax, as in
:mod:`archiver.extract.links`). The decision made from these facts belongs to the browser stage
(:func:`archiver.browser.detect.needs_browser`); this module only measures.

What is measured:

- the reader-visible text of the body: every text node outside ``script``, ``style``,
  ``noscript``, ``template`` and ``svg``, counted in non-whitespace characters;
- the scripts that run (``<script>`` without a ``type`` or with a JavaScript one, or
  ``type=module``), with their ``src`` or the start of their inline code, so that the caller can
  tell analytics snippets from application code; data blocks (``application/json``,
  ``application/ld+json``, templates) are not scripts;
- the navigational links (``a[href]``, ``area[href]``);
- the application mount points (the elements the common frameworks render into) that are empty:
  no link and hardly any text inside;
- the markers that frameworks leave in server-rendered HTML;
- whether a ``<noscript>`` asks the reader to enable JavaScript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver import urls
from archiver.extract.links import _html_input

#: The elements single-page applications mount into, by the selector that finds them:
#: Create React App / Vite (``#root``, ``#app``), Next.js (``#__next``), Nuxt (``#__nuxt``),
#: Gatsby (``#___gatsby``), SvelteKit's template (``#svelte``), Angular CLI (``app-root``),
#: AngularJS (``[ng-app]``), Ember (``.ember-application``... has no fixed root: not listed).
APP_ROOTS = (
    "#root",
    "#app",
    "#__next",
    "#__nuxt",
    "#___gatsby",
    "#svelte",
    "app-root",
    "[ng-app]",
    "[data-reactroot]",
)
#: Framework markers in server-rendered HTML, by the selector that finds them.
MARKERS = (
    ("script#__NEXT_DATA__", "next.js"),
    ("#__nuxt", "nuxt"),
    ("[data-n-head]", "nuxt"),
    ("#___gatsby", "gatsby"),
    ("[ng-version]", "angular"),
    ("[ng-app]", "angularjs"),
    ("[data-server-rendered]", "vue"),
    ("[data-reactroot]", "react"),
    ("[data-sveltekit-hydrate]", "sveltekit"),
)
#: Inline-script globals that frameworks set to hydrate the page.
INLINE_MARKERS = (
    ("window.__NUXT__", "nuxt"),
    ("__sveltekit_", "sveltekit"),
    ("window.__remixContext", "remix"),
    ("self.__next_f", "next.js"),
)
#: Text below this many characters inside a mount point counts as empty ("Loading...").
EMPTY_ROOT_TEXT = 40
INLINE_HEAD = 300

_NOT_TEXT = ["script", "style", "noscript", "template", "svg"]
_JAVASCRIPT_TYPES = frozenset(
    {
        "",
        "module",
        "text/javascript",
        "application/javascript",
        "application/ecmascript",
        "text/ecmascript",
        "application/x-javascript",
        "text/jsx",
        "text/babel",
    }
)
_ASKS_FOR_JAVASCRIPT = re.compile(
    r"(enable|turn on|activate|allow|requires?|need|needs|must have|without)\b"
    r".{0,60}\bjava\s?script|java\s?script\b.{0,40}\b(required|disabled|must be|needs to be"
    r"|is off|is not enabled|to be enabled|enabled to)",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class PageShape:
    text_chars: int
    """Non-whitespace characters of reader-visible body text."""
    script_sources: tuple[str, ...]
    """The ``src`` of each external script that runs, as written."""
    inline_scripts: tuple[str, ...]
    """The first characters of each non-empty inline script that runs."""
    links: int
    """Navigational links (``a[href]``, ``area[href]``)."""
    route_links: int
    """Links to hash routes of the document itself (``href="#/guide"``, ``#!/post/3``:
    :func:`archiver.urls.is_route`): the pages of an application that routes by fragment."""
    empty_roots: tuple[str, ...]
    """The selectors of application mount points that are empty."""
    markers: tuple[str, ...]
    """Frameworks whose server-rendering markers are present."""
    noscript_asks_for_javascript: bool

    @property
    def scripts(self) -> int:
        return len(self.script_sources) + len(self.inline_scripts)


def page_shape(html: bytes) -> PageShape:
    """Measure an HTML document (already content-decoded); never raises on bad markup."""
    tree = LexborHTMLParser(_html_input(html), encoding=True)
    sources: list[str] = []
    inline: list[str] = []
    inline_markers: list[str] = []
    for script in tree.css("script"):
        kind = (script.attributes.get("type") or "").strip().lower()
        kind = kind.split(";", 1)[0].strip()
        if kind not in _JAVASCRIPT_TYPES:
            continue
        src = (script.attributes.get("src") or "").strip()
        if src:
            sources.append(src)
            continue
        code = script.text().strip()
        if code:
            inline.append(code[:INLINE_HEAD])
            inline_markers += [name for marker, name in INLINE_MARKERS if marker in code]
    markers = [name for selector, name in MARKERS if tree.css_first(selector) is not None]
    noscript = any(_ASKS_FOR_JAVASCRIPT.search(node.text()) for node in tree.css("noscript"))
    anchors = tree.css("a[href], area[href]")
    links = len(anchors)
    route_links = sum(1 for node in anchors if _is_route_link(node.attributes.get("href")))
    tree.strip_tags(_NOT_TEXT)
    body = tree.body
    text = body.text(separator=" ") if body is not None else ""
    return PageShape(
        text_chars=_visible_chars(text),
        script_sources=tuple(sources),
        inline_scripts=tuple(inline),
        links=links,
        route_links=route_links,
        empty_roots=tuple(selector for selector in APP_ROOTS if _empty_root(tree, selector)),
        markers=tuple(dict.fromkeys(markers + inline_markers)),
        noscript_asks_for_javascript=noscript,
    )


def _is_route_link(href: str | None) -> bool:
    """A link to a hash route of the same document (``#/...``, ``#!...``)."""
    reference = (href or "").strip()
    return reference.startswith("#") and urls.is_route(reference[1:])


def _visible_chars(text: str) -> int:
    return sum(len(word) for word in text.split())


def _empty_root(tree: LexborHTMLParser, selector: str) -> bool:
    """Whether the first element matching ``selector`` holds no link and hardly any text."""
    node: LexborNode | None = tree.css_first(selector)
    if node is None:
        return False
    if node.css_first("a[href], img, video, article, main, p, li, table") is not None:
        return False
    return _visible_chars(node.text(separator=" ")) < EMPTY_ROOT_TEXT
