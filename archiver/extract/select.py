"""Does an HTML document hold an element matching a CSS selector (Selectors Level 4, as Lexbor
implements it)? What ``--logged-out css:SELECTOR`` asks of each page: a login form on a page
that should be a member's page is the surest sign that a session ended.

Pure: bytes and a selector in, a boolean out; the document is read with the link extractor's
encoding rule (:func:`archiver.extract.links._html_input`).
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from archiver.extract.links import _html_input


def selector_error(selector: str) -> str | None:
    """Why ``selector`` is no CSS selector Lexbor can use, or None when it is one."""
    if not selector.strip():
        return "an empty selector"
    try:
        LexborHTMLParser("<p></p>").css_first(selector)
    except SelectolaxError as exc:
        return str(exc).rstrip(".")
    return None


def has_element(html: bytes, selector: str) -> bool:
    """True when the document ``html`` holds at least one element matching ``selector`` (a
    selector :func:`selector_error` accepted)."""
    tree = LexborHTMLParser(_html_input(html))
    return tree.css_first(selector) is not None


__all__ = ["has_element", "selector_error"]
