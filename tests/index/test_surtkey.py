"""archiver's SURT keys against the ``surt`` package (what pywb and cdxj-indexer use): byte for
byte on every link of a generated synthetic site, on hand-made odd URLs and on generated ones;
and the fast path must be the one taken for the URLs a crawl writes."""

from __future__ import annotations

import string
import subprocess
import sys
from pathlib import Path

import pytest
import surt
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import urls
from archiver.extract.links import extract
from archiver.index.surtkey import _fast_key, surt_key

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchlib import sitegen

ODD = [
    "http://www.Example.com:80/A//b/?z=1&a",
    "HTTP://EXAMPLE.COM/",
    "http://www2.example.com/x/./y/../z/",
    "http://wwwexample.com/",
    "http://www.www.example.com/",
    "https://example.com:443/",
    "https://example.com:80/",
    "http://example.com:0/",
    "http://example.com:080/",
    "http://example.com:99999/",
    "http://example.com:/",
    "http://example.com.",
    "http://.example.com/",
    "http://exa..mple.com/",
    "http://user:pass@example.com/",
    "http://[::1]:8080/x",
    "http://127.1/",
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://010.1.1.1/",
    "http://1.2.3.4/",
    "http://0.1.2.3/",
    "http://256.1.1.1/",
    "http://example.com/%7Euser/%2F/",
    "http://example.com/a%20b?q=%41",
    "http://example.com/a#frag",
    "http://example.com/?",
    "http://example.com?x=1",
    "http://example.com/x?b=2&a=1&a&a=",
    "http://example.com/x?&",
    "http://example.com/x?=",
    "http://example.com/x;jsessionid=0123456789abcdef0123456789abcdef?a=1",
    "http://example.com/x?jsessionid=0123456789ABCDEF0123456789ABCDEF&a=1",
    "http://example.com/x?a=1&PHPSESSID=0123456789abcdef0123456789abcdef",
    "http://example.com/(S(abcdefghijklmnopqrstuvwx))/page.aspx",
    "http://example.com/x?cfid=1&cftoken=2&y=3",
    "http://http://example.com/",
    "http://https/order.example.com",
    "http:////example.com/x",
    "http://example.com/\u00e9t\u00e9",
    "http://fa\u00df.example/",
    "ftp://example.com/file",
    "dns:example.com",
    "mailto:someone@example.com",
    "filedesc://x.arc",
    "urn:screenshot:http://example.com/",
    "http://example.com/a b",
    "http://example.com/<x>{y}|\\^`",
    "http://example.com/'\"",
    "",
    "http://",
    # a "www" that is not a leading www./wwwN. label stays (found by the urls fuzz target)
    "http://wwwwww.Exe1.Exe1",
    "http://wwwww.com/",
    "http://a.www.example.com/",
]


def test_odd_urls_match_the_package() -> None:
    for url in ODD:
        try:
            want = surt.surt(url)
        except Exception:
            want = url  # cdxj-indexer's fallback
        assert surt_key(url) == want, url


def synthetic_links(tmp_path: Path) -> set[str]:
    """Every URL the pages and stylesheets of a generated synthetic site link to (what a
    crawl of it writes), resolved and normalised as archiver does."""
    sitegen.generate(tmp_path / "site", pages=1000)
    root = tmp_path / "site" / "root"
    found: set[str] = set()
    for path in root.rglob("*"):
        if path.suffix not in (".html", ".css"):
            continue
        url = "http://127.0.0.1:8080/" + path.relative_to(root).as_posix()
        content_type = "text/html" if path.suffix == ".html" else "text/css"
        links = extract(path.read_bytes(), url, content_type, None)
        found.update(links.pages, links.requisites, [url])
    return found


def test_every_link_of_the_synthetic_site_matches_and_takes_the_fast_path(tmp_path: Path) -> None:
    links = synthetic_links(tmp_path)
    assert len(links) > 1500
    fast = 0
    for url in sorted(links):
        assert surt_key(url) == surt.surt(url), url
        fast += _fast_key(url) is not None
    assert fast == len(links), "a normalised crawl URL left the fast path"


SEGMENT = st.text(
    alphabet=string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@%/ \"<>{}|\\^`[]é",
    max_size=8,
)
HOSTS = st.sampled_from(
    [
        "example.com",
        "www.example.com",
        "WWW.Example.COM",
        "www7.a-b.example",
        "sub.www.example.org",
        "127.0.0.1",
        "10.0.0.255",
        "1.2.3.4",
        "example.com.",
        "a_b.example",
        "xn--fa-hia.example",
        "localhost",
    ]
)


@st.composite
def structured_urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp"]))
    host = draw(HOSTS)
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":0", ":65535", ":65536", ":"]))
    path = "/" + "/".join(draw(st.lists(SEGMENT, max_size=5)))
    query = ""
    if draw(st.booleans()):
        keys = st.sampled_from(["a", "B", "id", "sid", "x", "page", "jsessionid", ""])
        pairs = draw(st.lists(st.tuples(keys, SEGMENT), max_size=4))
        query = "?" + "&".join(f"{k}={v}" if v else k for k, v in pairs)
    fragment = "#" + draw(SEGMENT) if draw(st.booleans()) else ""
    return f"{scheme}://{host}{port}{path}{query}{fragment}"


def reference(url: str) -> str:
    try:
        return str(surt.surt(url))
    except Exception:
        return url


@settings(max_examples=1500, deadline=None)
@given(url=structured_urls())
def test_generated_urls_match_the_package(url: str) -> None:
    assert surt_key(url) == reference(url)


@settings(max_examples=1500, deadline=None)
@given(url=structured_urls())
def test_normalised_generated_urls_match_the_package(url: str) -> None:
    """What a crawl actually writes: URLs after archiver's own normalisation."""
    try:
        normal = urls.normalize_url(url)
    except urls.InvalidURLError:
        return
    assert surt_key(normal) == reference(normal)


@settings(max_examples=1500, deadline=None)
@given(tail=st.text(max_size=40))
def test_arbitrary_text_after_a_scheme_matches_the_package(tail: str) -> None:
    for url in ("http://" + tail, "https://example.com/" + tail):
        assert surt_key(url) == reference(url)


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://www.Example.com:80/A//b/?z=1&a", "com,example)/a/b?a&z=1"),
        ("https://127.0.0.1:8443/x/?b&a=2", "1,0,0,127:8443)/x?a=2&b"),
    ],
)
def test_literal_keys(url: str, key: str) -> None:
    assert surt_key(url) == key


def test_crawler_start_does_not_load_surt_and_surt_keys_still_work() -> None:
    """SURT keys of normalised URLs are built by archiver.index.surtkey: a crawl never imports
    the surt package (nor tldextract and requests, which it pulls in) unless an odd URL needs
    it, and then the package answers."""
    code = (
        "import sys, archiver.commands.cli\n"
        "from archiver.index.surtkey import surt_key\n"
        "print(surt_key('http://www.example.org/B?b=2&a=1'))\n"
        "assert 'surt' not in sys.modules and 'requests' not in sys.modules, 'loaded early'\n"
        "print(surt_key('HTTP://www.Example.org/%42?b=2&a=1'))\n"
        "assert 'surt' in sys.modules, 'the package did not answer'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["org,example)/b?a=1&b=2", "org,example)/b?a=1&b=2"]
