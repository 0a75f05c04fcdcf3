"""``--browser auto --qa``: whether a page the static rule kept static needs the browser after
all, judged from its replay rather than guessed from its HTML.

The static rule (:func:`archiver.browser.needs_browser`) reads the HTML; a page that a server
rendered whole and that a framework then hydrates (Docusaurus, VitePress and their like: text,
links, a module script, no empty root, no marker the rule knows) passes it as static, yet its
scripts load a chunk and data per page that no static link names. Replayed from the archive
right after its static capture, such a page says so itself, in one of two ways:

- **it asks for URLs the archive lacks**: what its scripts load (each named, with its
  initiator, by the check);
- **it shows markedly less text than its HTML holds**: the framework, failing to load what it
  needs, replaced the server's rendering with an error or a "page not found" view. *Markedly*
  is under :data:`LESS_TEXT` of the HTML's visible text, so that a menu collapsed or a cookie
  banner removed by a script does not count.

Either is evidence that a live load would capture more; the reason returned says which, with
the figures, for the crawl log and ``qa.jsonl``.
"""

from __future__ import annotations

from archiver.qa.check import PageCheck

#: The share of the HTML's visible text under which a replay shows "markedly less".
LESS_TEXT = 0.5
#: Misses named in a reason (the rest are counted).
NAMED = 3


def replay_evidence(check: PageCheck, html_text: str) -> str | None:
    """Why the page needs the browser, from its replay (see the module docstring); None when
    the replay gives no reason (or failed: a check that failed proves nothing)."""
    if check.result is None:
        return None
    reasons = []
    if check.misses:
        named = ", ".join(miss.url for miss in check.misses[:NAMED])
        more = len(check.misses) - NAMED
        reasons.append(
            f"its replay lacked {len(check.misses)} URL(s): {named}"
            + (f" and {more} more" if more > 0 else "")
        )
    shown, promised = visible_length(check.result.text), visible_length(html_text)
    if promised and shown < LESS_TEXT * promised:
        reasons.append(f"its replay showed {shown} of the {promised} characters of its HTML")
    return "; ".join(reasons) or None


def visible_length(text: str) -> int:
    """Characters of text, white space runs counted as one."""
    return len(" ".join(text.split()))


__all__ = ["LESS_TEXT", "replay_evidence", "visible_length"]
