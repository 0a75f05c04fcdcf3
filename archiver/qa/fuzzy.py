"""pywb's fuzzy matching: which capture a replay tool still serves for a URL it has no exact
capture of, and why.

A page that asks for ``/api/config.json?_=1732791234567`` (a cache-busting timestamp) or posts a
search whose body holds the time of day never asks twice for the same URL, so no archive holds
an exact capture of what the replayed page asks for. pywb (and ReplayWeb.page, which follows the
same rules) then looks further: the general rule at the end of ``pywb/rules.yaml`` (``url_prefix:
''``, ``fuzzy_lookup: match: '()'``), applied by ``pywb/warcserver/index/fuzzymatcher.py``
(pywb 2.10):

1. the captures whose key starts with the key of the URL cut before its query (a trailing ``/``
   dropped too) are candidates, at most :data:`FUZZY_SEARCH_LIMIT`, in index order;
2. a candidate is served when its URL is the request's without a query, or the same with any
   query, *if* the request's last path segment has an extension that is not a script's (``.php``,
   ``.asp``... :data:`NOT_EXTS`: there the query selects the content), or the capture's type is a
   streaming manifest or Flash (:data:`QUERY_MIMES`), or the capture is of a POST or PUT (its
   ``method`` or ``requestBody`` is set: any body of a request to the same URL);
3. otherwise when the two keys are equal once the known cache-busting parameters are removed
   from both (:data:`URL_NORMALIZE`, applied one after another, compared after each).

The first candidate that passes is served (the fuzzy query does not sort by closeness). This
module applies the same rule to candidates the caller found, and says which part of it
matched, so that a report can tell "present under another key (served by pywb)" from "not in
the archive". pywb's site-specific rules (for a handful of large sites, keyed by their SURT
prefix) are not applied: they concern those sites only.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

#: pywb's ``fuzzy_search_limit``: candidates looked at.
FUZZY_SEARCH_LIMIT = 100
#: Extensions that are not treated as files (pywb's ``not_exts``): the query matters there.
NOT_EXTS = frozenset({"asp", "aspx", "jsp", "php", "pl", "exe", "dll"})
#: Types whose query is ignored (pywb's ``mimes``): Flash, DASH and HLS manifests.
QUERY_MIMES = frozenset(
    {
        "application/x-shockwave-flash",
        "application/dash+xml",
        "application/x-mpegURL",
        "application/vnd.apple.mpegurl",
    }
)
#: pywb's ``url_normalize`` rules, in order, with what each removes.
URL_NORMALIZE: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"[?&](_|cb|uncache)=([\d]+)(?=&|$)"),
        "",
        "a cache-busting number (_, cb, uncache)",
    ),
    (re.compile(r"[?&]utm_[^=]+=[^&]+(?=&|$)"), "", "a campaign tag (utm_*)"),
    (re.compile(r"[?&](callback=jsonp)[^&]+(?=&|$)"), r"\1", "a JSONP callback name"),
    (re.compile(r"[?&]((?:\w+)=jquery)[\d]+_[\d]+"), r"\1", "a jQuery callback timestamp"),
    (
        re.compile(r"[?&](\w*(bust|ts)\w*=1[\d]{12,15})(?=&|$)"),
        "",
        "a timestamp parameter (*bust*, *ts*)",
    ),
    (re.compile(r"[?&](fbclid)=(.*)+(?=&|$)"), "", "a click id (fbclid)"),
)


class Candidate(Protocol):
    """What the rule reads of an index line."""

    @property
    def key(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def mime(self) -> str | None: ...

    @property
    def status(self) -> str | None: ...

    @property
    def method(self) -> str | None: ...

    @property
    def request_body(self) -> str | None: ...


C = TypeVar("C", bound=Candidate)


@dataclass(frozen=True, slots=True)
class FuzzyMatch(Generic[C]):
    capture: C
    reason: str


def search_url(url: str) -> str:
    """The URL whose key starts every candidate's key: ``url`` cut before its query (and a
    ``/`` before the query dropped), as ``FuzzyMatcher.get_fuzzy_match`` cuts it."""
    at = url.find("?")
    if at <= 0:
        return url
    cut = url[:at]
    return cut[:-1] if cut.endswith("/") else cut


def extension(url: str) -> str:
    """The extension of the URL's last path segment, as pywb's ``get_ext`` finds it."""
    last = url.split("?", 1)[0].rsplit("/", 1)[-1]
    return posixpath.splitext(last)[1][1:]


def fuzzy_match(url: str, key: str, candidates: Iterable[C]) -> FuzzyMatch[C] | None:
    """The capture pywb would serve for ``url`` (whose exact key ``key`` has no capture) among
    ``candidates`` (the captures under :func:`search_url`'s key, in index order), and why."""
    for count, candidate in enumerate(candidates):
        if count >= FUZZY_SEARCH_LIMIT:
            break
        reason = _accepts(url, key, candidate)
        if reason is not None:
            return FuzzyMatch(candidate, reason)
    return None


def _accepts(url: str, key: str, cdx: Candidate) -> str | None:
    """pywb's ``match_general_fuzzy_query``, with the reason it accepted."""
    url_no_query = url.split("?", 1)[0]
    if cdx.status == "204" and "__pywb_method=options" in cdx.key:
        return None
    ext = extension(url)
    if ext and ext not in NOT_EXTS:
        why = f"the same file (.{ext}) under another query"
    elif cdx.mime and cdx.mime in QUERY_MIMES:
        why = f"the same {cdx.mime} under another query"
    elif cdx.request_body or cdx.method:
        why = f"a {cdx.method or 'POST'} to the same URL with another body"
    else:
        why = ""
    if why and (cdx.url == url_no_query or cdx.url.startswith(url_no_query + "?")):
        return why
    wanted, found = key, cdx.key
    removed: list[str] = []
    for pattern, replace, what in URL_NORMALIZE:
        new_found = pattern.sub(replace, found)
        new_wanted = pattern.sub(replace, wanted)
        if new_found != found or new_wanted != wanted:
            removed.append(what)
        found, wanted = new_found, new_wanted
        if wanted == found:
            return "the same URL but " + (", ".join(removed) or "its query order")
    return None


__all__ = [
    "FUZZY_SEARCH_LIMIT",
    "Candidate",
    "FuzzyMatch",
    "extension",
    "fuzzy_match",
    "search_url",
]
