"""archiver.urls: URL normalisation and resolution as the WHATWG URL Standard does them, the
fast path held to the general one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.urls import (
    _SIMPLE_REF,
    _resolve_general,
    _resolve_simple,
    is_route,
    normalize_url,
    resolve,
    route_url,
    seed_url,
    split_route,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a/../b/./c?x=1#frag", "http://example.com/b/c?x=1"),
        ("http://faß.de/café?q=é", "http://xn--fa-hia.de/caf%C3%A9?q=%C3%A9"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0x7f.1:8080/x", "http://127.0.0.1:8080/x"),
        ("http://017700000001/", "http://127.0.0.1/"),
        ("http://[0:0:0:0:0:0:0:1]:80/", "http://[::1]/"),
        ("https://a.b/%7e/%zz/100%", "https://a.b/%7e/%25zz/100%25"),
        ("http://a.b/p|q^r", "http://a.b/p%7Cq%5Er"),
        (" http://a.b/x\r\ny ", "http://a.b/xy"),
        ("http://user:pw@host.x/", "http://host.x/"),
        ("http://a.b", "http://a.b/"),
        ("https://a.b:443/x", "https://a.b/x"),
        ("http:\\\\a.b\\p?q=\\", "http://a.b/p?q=%5C"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("../img/x.png#f", "http://a.b/img/x.png"),
        ("javascript:void(0)", None),
        ("mailto:x@y", None),
        ("data:image/png;base64,xx", None),
        ("//other.c/x y", "http://other.c/x%20y"),
        ("?q=1", "http://a.b/dir/page.html?q=1"),
        ("#top", "http://a.b/dir/page.html"),
        ("\\\\other.c\\path", "http://other.c/path"),
        # found by fuzzing: a backslash is a slash only before the query (URL Standard)
        ("\\p\\q?a\\b#c\\d", "http://a.b/p/q?a%5Cb"),
        ("?x=\\y", "http://a.b/dir/page.html?x=%5Cy"),
        # found by fuzzing: what cutting the fragment leaves at the end is data, not stripped
        ("a #top", "http://a.b/dir/a%20"),
        ("a\x00#top", "http://a.b/dir/a%00"),
        ("?q= #top", "http://a.b/dir/page.html?q=%20"),
        # found by fuzzing: every slash before the host of an http(s) URL is skipped
        ("///other.c/x", "http://other.c/x"),
        ("http:////other.c", "http://other.c/"),
        ("https:///other.c/", "https://other.c/"),
        ("///", None),
        ("//[::1%25eth0]/", None),  # found by fuzzing: no IPv6 zone ids (URL Standard)
        ("//0x7fle/", "http://0x7fle/"),  # found by fuzzing: not a number, so a domain
        ("http://0x/a", "http://0.0.0.0/a"),  # found by fuzzing: the fast path took it as a name
        ("http://1.0x1a/", "http://1.0.0.26/"),
        ("https://a.b:84432/x", None),  # found by fuzzing: the fast path took any 5 digits
        # found by fuzzing: int() took a sign and '_' in IPv4 numbers; the URL Standard does not
        ("//+127.1/", None),
        ("//1_0.1/", None),
        ("%0D%0AWARC-Type:%20x", "http://a.b/dir/%0D%0AWARC-Type:%20x"),
    ],
)
def test_resolve(ref: str, expected: str | None) -> None:
    assert resolve("http://a.b/dir/page.html", ref) == expected


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        # routes of hash routers (#/...) and of the AJAX crawling scheme's hashbang (#!...)
        ("http://A.b/app/#/guide", "http://a.b/app/#/guide"),
        ("http://a.b/app/#/guide/intro?x=1", "http://a.b/app/#/guide/intro?x=1"),
        ("http://a.b/app#!/post/3", "http://a.b/app#!/post/3"),
        ("http://a.b/app#!post-3", "http://a.b/app#!post-3"),
        ('http://a.b/x#/a b"c<d>`', "http://a.b/x#/a%20b%22c%3Cd%3E%60"),
        ("http://a.b/x#/%C3%A9", "http://a.b/x#/%C3%A9"),  # kept as the browser serialised it
        # places in the document, and the document's own first route: no route
        ("http://a.b/app/#section", "http://a.b/app/"),
        ("http://a.b/app/#", "http://a.b/app/"),
        ("http://a.b/app/#/", "http://a.b/app/"),
        ("http://a.b/app/#!", "http://a.b/app/"),
        ("http://a.b/app/#!/", "http://a.b/app/"),
        ("http://a.b/app/", "http://a.b/app/"),
        ("mailto:x@a.b#/route", None),
        ("javascript:void(0)#/route", None),
    ],
)
def test_route_url_keeps_only_route_fragments(link: str, expected: str | None) -> None:
    assert route_url(link) == expected
    if expected is not None:
        document, route = split_route(expected)
        assert document == normalize_url(link)  # what is requested: never a fragment
        assert route == (expected.partition("#")[2])
        assert is_route(route) == bool(route)


def test_normalised_urls_have_no_control_characters() -> None:
    for ref in ("/a\x00b", "/a\x7fb", "/a\tb\nc", "/ü\x01"):
        url = resolve("http://a.b/", ref)
        assert (
            url is not None and url.isascii() and not any(ord(c) < 33 or ord(c) == 127 for c in url)
        )


@given(
    ref=st.text(alphabet="ab./?#=&-_~:%@!$'()*+,;", max_size=24),
    base=st.sampled_from(
        ["http://a.b/", "http://a.b/dir/page.html", "https://a.b:8443/x/y/?q=1", "http://a.b/d/"]
    ),
)
@settings(max_examples=3000, deadline=None)
def test_resolve_fast_path_equals_general_path(ref: str, base: str) -> None:
    fast = _resolve_simple(base, ref) if _SIMPLE_REF.match(ref) and ref[:2] != "//" else None
    if fast is not None:
        assert fast == _resolve_general(base, ref), (base, ref)


@pytest.mark.parametrize(
    ("base", "ref", "expected"),
    [
        ("https://example.com/", "/a/%2e%2e/b", "https://example.com/b"),
        ("https://example.com/list?page=2", "?", "https://example.com/list?"),
        ("https://example.com/", "/a?", "https://example.com/a?"),
        ("http://a.b/x/", "http://A.B:80/y", "http://a.b/y"),
        ("http://a.b/x/", "http://a.b/y#z", "http://a.b/y"),
        ("http://a.b/x/", "https://127.1/", "https://127.0.0.1/"),
        ("http://a.b/x/y/z.html", "../../q.html?a=/../b", "http://a.b/q.html?a=/../b"),
        ("http://a.b/x/", "../../../q", "http://a.b/q"),
        ("http://a.b/x/y/", "./../z/./w", "http://a.b/x/z/w"),
        ("http://a.b/x/y/", "../", "http://a.b/x/"),
        ("http://a.b/x/y/", "../..", "http://a.b/"),
    ],
)
def test_resolve_edge_cases(base: str, ref: str, expected: str) -> None:
    assert resolve(base, ref) == expected


@pytest.mark.parametrize(
    ("typed", "seed"),
    [
        ("example.org", "http://example.org/"),
        ("example.org:8080/x", "http://example.org:8080/x"),  # a host and port, not a scheme
        ("http:example.org/a", "http://example.org/a"),  # the URL Standard needs no slashes
        ("HTTPS:/example.org", "https://example.org/"),
        ("https://example.org/", "https://example.org/"),
    ],
)
def test_a_seed_as_typed(typed: str, seed: str) -> None:
    assert seed_url(typed) == seed
