"""pywb's general fuzzy rule, as archiver.qa.fuzzy applies it, judged by pywb 2.10's own
``FuzzyMatcher.match_general_fuzzy_query`` (run in the tools venv) on the same cases."""

from __future__ import annotations

import itertools
import json
import subprocess
from dataclasses import dataclass

from archiver.index.surtkey import surt_key
from archiver.qa.fuzzy import fuzzy_match, search_url
from tests.support.tools import tools_python

ORACLE = r"""
import json, sys
from pywb.warcserver.index.fuzzymatcher import FuzzyMatcher
matcher = FuzzyMatcher()
out = []
for url, key, cdx in json.load(sys.stdin):
    out.append(bool(matcher.match_general_fuzzy_query(url, key, cdx, {})))
json.dump(out, sys.stdout)
"""


@dataclass(frozen=True)
class Line:
    key: str
    url: str
    mime: str | None = None
    status: str | None = "200"
    method: str | None = None
    request_body: str | None = None

    def cdx(self) -> dict[str, str]:
        out = {"urlkey": self.key, "url": self.url, "status": self.status or ""}
        if self.mime:
            out["mime"] = self.mime
        if self.method:
            out["method"] = self.method
        if self.request_body:
            out["requestBody"] = self.request_body
        return out


BASE = "http://example.test"
ASKED = [
    "/api/news.json?_=1732791234567",
    "/api/items?_=1732791234567",
    "/api/items?cb=99&page=2",
    "/feed?utm_source=x&id=3",
    "/search.php?q=a",
    "/page?callback=jsonp123&x=1",
    "/data?ts=1732791234567",
    "/img/a.png",
    "/api/search",
    "/list?page=2",
]
HELD = [
    "/api/news.json?_=1700000000000",
    "/api/news.json",
    "/api/items?_=1700000000000",
    "/api/items?page=2",
    "/api/items?page=2&cb=1",
    "/feed?id=3",
    "/search.php?q=b",
    "/page?callback=jsonp999&x=1",
    "/data?ts=1700000000000",
    "/img/a.png?v=2",
    "/list?page=3",
]


def cases() -> list[tuple[str, str, Line]]:
    found = []
    for asked, held in itertools.product(ASKED, HELD):
        url = BASE + asked
        found.append((url, surt_key(url), Line(surt_key(BASE + held), BASE + held)))
    search = BASE + "/api/search"
    post = search + "?__wb_method=post&query=astrolabe&sent=1"
    posted = Line(surt_key(post), search, "application/json", "200", "POST", "query=x")
    found.append((search, surt_key(search + "?__wb_method=post&query=astrolabe&sent=2"), posted))
    manifest = BASE + "/video/master.m3u8x"
    found.append((manifest + "?token=1", surt_key(manifest + "?token=1"),
                  Line(surt_key(manifest + "?token=2"), manifest + "?token=2",
                       "application/vnd.apple.mpegurl")))  # fmt: skip
    return found


def test_the_rule_accepts_exactly_what_pywb_accepts() -> None:
    checked = cases()
    payload = [[url, key, line.cdx()] for url, key, line in checked]
    proc = subprocess.run(
        [str(tools_python()), "-I", "-c", ORACLE],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    pywb = json.loads(proc.stdout)
    ours = [fuzzy_match(url, key, [line]) is not None for url, key, line in checked]
    disagree = [
        (url, line.url, theirs)
        for (url, _, line), mine, theirs in zip(checked, ours, pywb, strict=True)
        if mine != theirs
    ]
    assert disagree == []
    assert sum(ours) >= 10 and sum(ours) < len(ours) - 10  # both kinds of case were tried


def test_the_reason_says_which_part_of_the_rule_matched() -> None:
    url = BASE + "/api/items?_=1732791234567"
    held = Line(surt_key(BASE + "/api/items?_=1700000000000"), BASE + "/api/items?_=1700000000000")
    found = fuzzy_match(url, surt_key(url), [held])
    assert found is not None
    assert found.reason == "the same URL but a cache-busting number (_, cb, uncache)"
    json_url = BASE + "/api/news.json?_=1"
    found = fuzzy_match(json_url, surt_key(json_url), [Line("k", BASE + "/api/news.json?x=2")])
    assert found is not None and found.reason == "the same file (.json) under another query"


def test_the_candidates_are_searched_under_the_url_without_its_query() -> None:
    assert search_url("http://e.test/a/b.json?_=1") == "http://e.test/a/b.json"
    assert search_url("http://e.test/a/?x=1") == "http://e.test/a"
    assert search_url("http://e.test/a") == "http://e.test/a"
