"""Large ``ignores`` files: the literal text a pattern requires, the patterns filed under it,
and the incremental reload. The oracle everywhere is the definition: a URL is ignored when one
of the lines, compiled on its own, searches it.
"""

from __future__ import annotations

import re

import pytest

from archiver.policy.ignores import SMALL, Exclusions, parse_ignores
from archiver.policy.literals import required_runs

#: lines that match none of the URLs below and push a file past SMALL, so that it is filed
FILLER = [f"^https?://filler{i}\\.invalid/" for i in range(SMALL + 10)]

#: lines whose literal text is easy to get wrong: escapes, quantifiers, classes, groups, braces,
#: case-insensitive lines (with the letters re folds beyond ASCII), anchors, back-references
TRICKY = [
    r"/calendar/\d{4}/",
    r"\?sessionid=[0-9a-f]+",
    r"(?i)/PRINT/.*\.HTML$",
    r"(?i)/session/",
    r"(?i)/kelvin/",
    r"(?i)/idx/",
    r"colou?r-chart",
    r"abc*def",
    r"ab{0,1}cde-brace",
    r"x{2}yz-count",
    r"lit{eral",
    r"curly\{braces\}",
    r"(ab)\1-backref",
    r"/tag/[^/]+/feed",
    r"^https://www\.example\.com/private/",
    r"\x2fhex\x2fescape",
    r"/\u00e9t\u00e9/",
    r"one|two-alternatives",
    r"(?x) spaced \ out",
    r"(?s)dot.all",
    r"end\.pdf$",
    r"\.(jpe?g|png)$",
    r"(?:/a)?/optional-group",
    r"plus+one",
    r"lazy??q",
    r"wiki/Special:",
    r"\bword\b-boundary",
    r"[]]bracket-class",
]

URLS = [
    "http://h/calendar/2024/01",
    "http://h/calendar/24/",
    "http://h/a?sessionid=deadbeef",
    "http://h/print/page.html",
    "http://h/PRINT/PAGE.HTML",
    "http://h/print/page.htm",
    "http://h/\u017fe\u017f\u017fion/",  # long s: (?i) "s" matches it, its lower() is itself
    "http://h/SESSION/",
    "http://h/\u212aelvin/",  # the Kelvin sign: (?i) "k" matches it
    "http://h/\u0130dx/",  # capital I with dot above
    "http://h/\u0131dx/",  # dotless i
    "http://h/color-chart",
    "http://h/colour-chart",
    "http://h/abdef",
    "http://h/abcccdef",
    "http://h/acde-brace",
    "http://h/xxyz-count",
    "http://h/xyz-count",
    "http://h/lit{eral",
    "http://h/curly{braces}",
    "http://h/abab-backref",
    "http://h/ab-backref",
    "http://h/tag/x/feed",
    "https://www.example.com/private/x",
    "https://www.example.com/public/private/x",
    "http://h/hex/escape",
    "http://h/\u00e9t\u00e9/",
    "http://h/one",
    "http://h/two-alternatives",
    "http://h/spacedout",
    "http://h/dot\nall",
    "http://h/end.pdf",
    "http://h/photo.jpg",
    "http://h/photo.jpeg",
    "http://h/optional-group",
    "http://h/a/optional-group",
    "http://h/pluss-one",
    "http://h/plusone",
    "http://h/lazyq",
    "http://h/wiki/Special:Random",
    "http://h/a word-boundary",
    "http://h/]bracket-class",
    "http://filler3.invalid.example/",
    "http://h/",
]


def oracle(lines: list[str], url: str) -> bool:
    return any(re.search(line, url) for line in lines)


@pytest.mark.parametrize(
    ("pattern", "runs", "ignore_case"),
    [
        (r"^https?://www\.example\.com/", ("http", "://www.example.com/"), False),
        (r"/calendar/\d{4}/", ("/calendar/", "/"), False),
        (r"colou?r", ("colo", "r"), False),
        (r"ab+c", ("ab", "c"), False),
        (r"ab{2,3}c", ("a", "c"), False),
        (r"lit{eral", ("lit{eral",), False),
        (r"(?i)/Print/", ("/Print/",), True),
        (r"one|two", (), False),
        (r"(?x)a b", (), False),
        (r"a(b|c)d", ("a", "d"), False),
        (r"x[yz]w", ("x", "w"), False),
        (r"\x41BC\d", ("BC",), False),
        (r"(a)\1b", ("b",), False),
        (r"\0123x", ("x",), False),
        (r"a*?b", ("b",), False),
        (r"\.pdf$", (".pdf",), False),
    ],
)
def test_required_runs(pattern: str, runs: tuple[str, ...], ignore_case: bool) -> None:
    found = required_runs(pattern)
    assert found.runs == runs and found.ignore_case is ignore_case
    for run in runs:  # what is claimed required is in every match the oracle finds
        for url in URLS:
            match = re.search(pattern, url)
            if match is not None and not ignore_case:
                assert run in match.group(0)


def test_a_large_file_ignores_exactly_what_its_lines_do() -> None:
    """More than SMALL lines are filed under a piece of their literal text: a URL is searched
    only with the lines whose piece it contains, and must get the oracle's verdict."""
    lines = FILLER + TRICKY
    ignores = parse_ignores("\n".join(lines))
    assert ignores.patterns == tuple(lines) and not ignores.errors
    exclusions = Exclusions(ignores=ignores)
    for url in URLS:
        expected = oracle(lines, url)
        assert ignores.search(url) is expected, url
        assert exclusions.ignored(url) is expected, url
    assert ignores.search("http://h/PRINT/PAGE.HTML")
    assert ignores.search("http://h/\u017fe\u017f\u017fion/")  # found through case folding
    assert not ignores.search("http://h/")


def test_each_line_alone_among_many_is_found() -> None:
    """Every tricky line, appended to thousands that share pieces of its literal text, still
    ignores the URLs it searches and only those."""
    many = [f"/calendar/{i}/x{i:05d}" for i in range(3000)]
    base = parse_ignores("\n".join(many))
    by_many = {url: oracle(many, url) for url in URLS}
    for line in TRICKY:
        ignores = parse_ignores("\n".join([*many, line]), previous=base)
        for url in URLS:
            assert ignores.search(url) is (by_many[url] or oracle([line], url)), (line, url)


def test_a_grown_file_reuses_the_lines_it_had() -> None:
    """An appended line costs that line: the others keep their compiled form (the same
    objects), and the verdicts are those of the file read from scratch."""
    lines = FILLER + TRICKY
    before = parse_ignores("\n".join(lines))
    grown = parse_ignores("\n".join([*lines, r"/appended-line$", "(bad"]), previous=before)
    assert grown.errors == (f"line {len(lines) + 2}: '(bad': missing ), unterminated subpattern "
                            "at position 0",)  # fmt: skip
    for pattern in lines:
        assert grown._lines[pattern] is before._lines[pattern]
    fresh = parse_ignores("\n".join([*lines, r"/appended-line$"]))
    for url in URLS:
        assert grown.search(url) is fresh.search(url) is oracle([*lines, r"/appended-line$"], url)
    assert grown.search("http://h/appended-line") and not before.search("http://h/appended-line")


def test_a_line_removed_or_edited_is_forgotten() -> None:
    lines = FILLER + TRICKY
    before = parse_ignores("\n".join(lines))
    kept = [line for line in lines if line != r"(?i)/session/"] + [r"(?i)/SESSIONS/"]
    after = parse_ignores("\n".join(kept), previous=before)
    assert not after.search("http://h/session/") and before.search("http://h/session/")
    for url in [*URLS, "http://h/sessions/"]:
        assert after.search(url) is oracle(kept, url), url
    shrunk = parse_ignores("\n".join(TRICKY), previous=after)  # below SMALL again
    for url in URLS:
        assert shrunk.search(url) is oracle(TRICKY, url), url
