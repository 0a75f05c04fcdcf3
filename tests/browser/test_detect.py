"""The ``auto`` heuristic on realistic pages: application shells and hydrated framework pages need
the browser; server-rendered documentation, blogs and news with analytics, and small static pages
do not.

The fixtures in ``pages/`` are modelled on what the tools emit (Create React App, Vite, Angular
CLI, Next.js, Nuxt, WordPress, Sphinx). The Python documentation installed by Debian's
python3-doc is checked whole when it is there; the Sphinx fixture stands for it otherwise.
"""

from __future__ import annotations

import glob
import gzip
from pathlib import Path

import pytest

from archiver.browser.detect import needs_browser
from archiver.commands.sample import site_resources
from archiver.extract.decoding import decode_content
from archiver.extract.shape import page_shape
from tests.support.spa_site import INDEX, ITEM_PAGE

PAGES = Path(__file__).parent / "pages"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("cra-shell.html", "empty application root #root"),
        ("vite-vue-shell.html", "empty application root #app"),
        ("angular-shell.html", "empty application root app-root"),
        ("nextjs-ssr.html", "hydrated by next.js"),
        ("nuxt-ssr.html", "hydrated by nuxt"),
        ("noscript-shell.html", "a <noscript> asks for JavaScript"),
        ("loading-shell.html", "8 characters of text beside 2 script(s)"),
        ("js-redirect.html", "0 characters of text beside 1 script(s)"),
        # a hash-routed guide: server-rendered text, its chapters only a browser renders
        ("hash-router-guide.html", "4 link(s) to hash routes"),
    ],
)
def test_script_built_pages_need_the_browser(name: str, reason: str) -> None:
    assert needs_browser((PAGES / name).read_bytes(), "text/html; charset=utf-8") == reason


@pytest.mark.parametrize(
    "name",
    [
        "wordpress-post.html",  # jQuery, theme scripts and Google Analytics around real content
        "news-article.html",  # Matomo, an ad tag and a site script around real content
        "sphinx-docs.html",
        "tiny-static.html",  # little text, no script
        "tiny-with-analytics.html",  # little text, only analytics
        "gallery-no-scripts.html",
        "anchors-article.html",  # in-page anchors (#history) are places, not routes
    ],
)
def test_server_rendered_pages_stay_static(name: str) -> None:
    assert needs_browser((PAGES / name).read_bytes(), "text/html") is None


def test_documentation_stays_static() -> None:
    """The Sphinx fixture, and every page of Debian's python3-doc when it is installed (530
    pages of Python 3.11's) except the search page, which says itself that it needs JavaScript
    to show anything."""
    files = sorted(
        {Path(path).resolve() for path in glob.glob("/usr/share/doc/python3*/html/**/*.html")}
    )
    files.append(PAGES / "sphinx-docs.html")
    reasons = {str(path): needs_browser(path.read_bytes(), "text/html") for path in files}
    fired = {path: reason for path, reason in reasons.items() if reason is not None}
    assert {Path(path).name for path in fired} <= {"search.html"}, fired
    assert set(fired.values()) <= {"a <noscript> asks for JavaScript"}
    assert reasons[str(PAGES / "sphinx-docs.html")] is None


def test_the_sample_site_sends_no_page_to_the_browser() -> None:
    checked = 0
    for path, resource in site_resources().items():
        if not resource.content_type.startswith("text/html"):
            continue
        coding = dict(resource.headers).get("Content-Encoding")
        html = decode_content(resource.body, coding, limit=1 << 24)
        assert needs_browser(html, resource.content_type) is None, path
        checked += 1
    assert checked > 10


def test_the_client_rendered_test_site_needs_the_browser() -> None:
    assert needs_browser(INDEX.encode(), "text/html") == "empty application root #root"
    assert needs_browser(ITEM_PAGE.encode(), "text/html") == "empty application root #app"


def test_only_html_is_considered() -> None:
    shell = (PAGES / "cra-shell.html").read_bytes()
    assert needs_browser(shell, "application/xhtml+xml") is not None
    assert needs_browser(shell, "text/plain") is None
    assert needs_browser(gzip.compress(shell), "application/gzip") is None


def test_page_shape_facts() -> None:
    shape = page_shape((PAGES / "nextjs-ssr.html").read_bytes())
    assert shape.markers == ("next.js",)
    assert shape.empty_roots == ()
    assert len(shape.script_sources) == 6
    assert shape.inline_scripts == ()  # __NEXT_DATA__ is a JSON data block, not a script
    assert shape.links == 5
    assert shape.text_chars > 300
    shell = page_shape((PAGES / "cra-shell.html").read_bytes())
    assert shell.empty_roots == ("#root",)
    assert shell.noscript_asks_for_javascript
    assert shell.text_chars == 0  # the noscript text is not the page's text


def test_bad_markup_never_raises() -> None:
    assert needs_browser(b"", "text/html") is None
    assert needs_browser(b"\xff\xfe\x00<", "text/html") is None
    assert needs_browser(b"<div id=root>" * 1000, "text/html") is None  # no script
    unterminated = b"<div id=app><script>" + b"x" * 10_000
    assert needs_browser(unterminated, "text/html") == "empty application root #app"
