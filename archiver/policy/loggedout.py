"""Signs that a login session ended: ``--logged-out RULE``, judged on every response a crawl
with a session captures.

A crawl behind a login that goes on after the session expired archives login walls in place
of the members' pages, and a scheduled run would do so quietly, night after night. The site
itself says when it happened, in one of a few ways, one rule kind each:

``css:SELECTOR``
    an HTML page holds an element matching the selector: a login form where a member's page
    should be (``css:form#login``);
``location:REGEX``
    a redirect (3xx) whose ``Location``, resolved against the URL, matches: most sites send a
    logged-out reader to their login page (``location:/login``);
``status:CODE[,CODE...]``
    the status is one of these (``status:401``, what an API answers);
``text:REGEX`` (or a bare REGEX)
    the body of a text response (HTML, plain text, JSON, XML) matches, read as UTF-8
    (``text:Your session has expired``).

A response matching any rule is a sign; the pipeline then archives nothing of it and stops the
crawl resumably (:mod:`archiver.pipeline.session`). The sign names the rule, never what the
page said: a login page may echo what was sent. Pure functions over an
:class:`~archiver.models.Exchange`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from archiver import urls
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.links import HTML_TYPES
from archiver.extract.select import has_element, selector_error
from archiver.models import Exchange

KINDS = ("css", "location", "status", "text")
#: only the start of a body is looked at (login walls are small pages)
BODY_LIMIT = 2 * 1024 * 1024
_TEXT_SUFFIXES = ("+json", "+xml", "/json", "/xml", "/javascript", "/ecmascript")


@dataclass(frozen=True, slots=True)
class LoggedOutRule:
    """One ``--logged-out`` rule, as given and ready to match."""

    kind: str
    pattern: str
    """The rule's argument as written (the selector, the regex, the codes)."""
    regex: re.Pattern[str] | None = None
    statuses: frozenset[int] = frozenset()

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"


@dataclass(frozen=True, slots=True)
class SessionPolicy:
    """How the crawl tells that its session ended, and what to tell the operator then."""

    rules: tuple[LoggedOutRule, ...] = ()
    check_url: str | None = None
    hint: str = ""
    """What to do about it (log in again, then run the same command to resume)."""

    @property
    def active(self) -> bool:
        return bool(self.rules) or self.check_url is not None


def parse_rule(text: str) -> LoggedOutRule:
    """A rule from its written form; raises :class:`ValueError` saying what is wrong."""
    kind, sep, pattern = text.partition(":")
    if not sep or kind not in KINDS:
        kind, pattern = "text", text
    if not pattern.strip():
        raise ValueError(f"{text!r}: nothing after '{kind}:'")
    if kind == "css":
        problem = selector_error(pattern)
        if problem is not None:
            raise ValueError(f"{text!r} is not a CSS selector: {problem}")
        return LoggedOutRule(kind, pattern)
    if kind == "status":
        try:
            codes = frozenset(int(code) for code in pattern.split(","))
        except ValueError:
            raise ValueError(f"{text!r}: expected status codes such as status:401,403") from None
        if not all(100 <= code <= 599 for code in codes):
            raise ValueError(f"{text!r}: status codes are 100 to 599")
        return LoggedOutRule(kind, pattern, statuses=codes)
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{text!r} is not a regular expression: {exc}") from None
    return LoggedOutRule(kind, pattern, regex=regex)


def parse_rules(texts: Sequence[str]) -> tuple[LoggedOutRule, ...]:
    return tuple(parse_rule(text) for text in texts)


def logged_out(ex: Exchange, rules: Sequence[LoggedOutRule]) -> str | None:
    """The sign this response gives that the session ended, or None.

    The sign says which rule matched and the status, never the matched text (see the module
    docstring)."""
    if not rules:
        return None
    body: str | None = None
    html: bytes | None = None
    for rule in rules:
        matched = False
        if rule.kind == "status":
            matched = ex.status in rule.statuses
        elif rule.kind == "location":
            matched = _redirects_to(ex, rule)
        elif rule.kind == "css":
            if html is None:
                html = _decoded(ex) if ex.content_type in HTML_TYPES else b""
            matched = bool(html) and has_element(html, rule.pattern)
        else:
            if body is None:
                raw = _decoded(ex) if _is_text(ex.content_type) else b""
                body = raw.decode("utf-8", "replace")
            assert rule.regex is not None
            matched = bool(body) and rule.regex.search(body) is not None
        if matched:
            return f"answered {ex.status}, matching --logged-out {rule}"
    return None


def _redirects_to(ex: Exchange, rule: LoggedOutRule) -> bool:
    location = ex.header("Location")
    if not 300 <= ex.status < 400 or not location:
        return False
    target = urls.resolve(ex.target_uri, location.strip()) or location
    assert rule.regex is not None
    return rule.regex.search(target) is not None


def _decoded(ex: Exchange) -> bytes:
    """The start of the body, content-decoded (the bytes as sent when they cannot be); empty
    when the body was too large to be kept."""
    body = ex.body
    if not body:
        return b""
    try:
        return decode_content(body, ex.header("Content-Encoding"), limit=BODY_LIMIT)
    except ContentDecodingError:
        return body[:BODY_LIMIT]


def _is_text(content_type: str) -> bool:
    return content_type.startswith("text/") or content_type.endswith(_TEXT_SUFFIXES)


def session_hint(
    *, profile: str | None, login_url: str | None, login_script: bool, cookies_file: bool
) -> str:
    """What the operator does once the session ended, for the crawl's final message."""
    if login_script:
        return "run the same command again: the login script logs in afresh and the crawl resumes"
    if profile is not None:
        where = login_url or "URL"
        return (
            f"the profile has expired: log in again (archiver login {where} --profile "
            f"{profile}), then run the same command to resume"
        )
    if cookies_file:
        return "renew the --cookies file, then run the same command to resume"
    return "renew the session, then run the same command to resume"


__all__ = [
    "KINDS",
    "LoggedOutRule",
    "SessionPolicy",
    "logged_out",
    "parse_rule",
    "parse_rules",
    "session_hint",
]
