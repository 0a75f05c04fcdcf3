"""URL resolution and normalisation (:mod:`archiver.urls`) and SURT keys
(:func:`archiver.index.surtkey.surt_key`): every Location value and link goes through them.

Oracles, on every input (a base URL chosen by the first byte, then a reference as a page or a
``Location`` header could hold it):

* ada-url, the WHATWG URL Standard's reference-grade parser (what Node.js uses), resolves the
  reference against the base; our URL equals ada's with the differences our normalisation makes
  on purpose (userinfo and fragment dropped, every byte outside RFC 3986's sets
  percent-encoded: both re-encoded here with :func:`urllib.parse.quote`), and we refuse what it
  refuses; what remains is listed in :data:`DIFFERENCES`, each with why;
* the result is a fixed point: normalising it again changes nothing; the fast path for plain
  references gives what the general one gives;
* the SURT key of every URL we resolve (:func:`~archiver.index.surtkey.surt_key`, with its
  fast path) is the ``surt`` package's: pywb looks keys up by exactly that.
"""

from __future__ import annotations

import re
from urllib.parse import quote

import ada_url
import surt

from archiver import urls
from archiver.index.surtkey import surt_key
from tests.fuzz.harness import Bytes, Target, agree

BASES = (
    "http://example.com/",
    "https://example.com/a/b/c.html?q=1",
    "http://127.0.0.1:8080/dir/",
    "http://xn--fa-hia.de/%7Efoo/bar",
    "https://[::1]/x",
)
#: Where we differ from the URL Standard on purpose; each key names the difference, each value
#: says why.
DIFFERENCES = {
    "apostrophe-in-query": "the URL Standard percent-encodes ' in the query of an http(s) URL "
    "(the special-query percent-encode set); we keep it as RFC 3986 allows (a sub-delim), as "
    "we keep every character of RFC 3986's sets. Compared with %27 read as ' on both sides.",
    "unresolvable-host": "the URL Standard allows a domain to hold characters outside RFC "
    "3986's reg-name (` { } \" and others) and empty labels ('a..b'); no DNS name has them "
    "(and the characters cannot go into a Host header as they are), so we refuse such hosts.",
    "ada-a-labels": "ada-url 4.0.0 keeps an ASCII label that starts with xn-- as it is, where "
    "UTS #46 (section 4, processing step 4) decodes it and checks the label it stands for; "
    "WPT's toascii.json has six such hosts ada accepts and the URL Standard refuses (the "
    "suite's WPT test shows we refuse them). Tolerated only when the label is no valid "
    "A-label by an independent check: Python's punycode codec cannot decode it, or ada, "
    "given the decoded Unicode label, refuses it or encodes it to another A-label.",
}
_REG_NAME = re.compile(r"[a-z0-9\-._~!$&'()*+,;=]*\Z")
# RFC 3986 unreserved, sub-delims, ':', '@', '/', '?' stay; so do valid escapes
_SAFE = "-._~!$&'()*+,;=:@/?"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _wire(text: str) -> str:
    """``text`` as we send it: UTF-8, everything outside the safe set percent-encoded."""
    return _BAD_ESCAPE.sub("%25", quote(text, safe=_SAFE + "%", encoding="utf-8"))


def _expected(href: ada_url.URL) -> str:
    """ada's URL less what we drop on purpose, encoded as we encode."""
    port = f":{href.port}" if href.port else ""
    query = "?" + _wire(href.search[1:]) if href.search else ""
    if not href.search and href.href.split("#", 1)[0].endswith("?"):
        query = "?"
    return f"{href.protocol}//{href.hostname}{port}{_wire(href.pathname) or '/'}{query}"


def _unresolvable(host: str) -> bool:
    return not _REG_NAME.match(host) or ".." in host.strip(".")


def _invalid_a_label(host: str) -> bool:
    """A label of ``host`` that starts with xn-- but stands for no valid label (see
    DIFFERENCES["ada-a-labels"])."""
    for label in host.split("."):
        if label[:4].lower() != "xn--":
            continue
        try:
            decoded = label[4:].encode("ascii").decode("punycode")
            again = ada_url.URL(f"http://{decoded}/").hostname
        except (UnicodeError, ValueError):
            return True
        if not decoded or again != label.lower():
            return True
    return False


def check(data: bytes) -> None:
    source = Bytes(data)
    base = BASES[source.byte() % len(BASES)]
    ref = source.rest().decode("utf-8", "replace")
    ours = urls.resolve(base, ref)
    agree(urls._resolve_general(base, ref) == ours, "fast path differs", ours)
    try:
        theirs: ada_url.URL | None = ada_url.URL(ref, base=base)
    except ValueError:
        theirs = None
    if ours is None:
        fetchable = theirs is not None and theirs.protocol in ("http:", "https:")
        if fetchable and theirs is not None and _unresolvable(theirs.hostname):
            return  # unresolvable-host
        if fetchable and theirs is not None and _invalid_a_label(theirs.hostname):
            return  # ada-a-labels
        agree(not fetchable, "the URL Standard resolves what we refuse", theirs and theirs.href)
        return
    agree(ours.isascii() and urls.normalize_url(ours) == ours, "not a fixed point", ours)
    # the package's key (only for normalised URLs: their numeric hosts are dotted quads, which
    # the package's gethostbyname_ex reads without asking a DNS server; a raw string such as
    # "999.1.1.1" would send a query)
    agree(surt_key(ours) == surt.surt(ours), "surt key differs from the surt package's", ours)
    agree(theirs is not None, "we resolve what the URL Standard refuses", ours)
    assert theirs is not None
    expected = _expected(theirs)
    if "?" in ours:  # apostrophe-in-query
        ours, expected = (
            u.split("?", 1)[0] + "?" + u.split("?", 1)[1].replace("%27", "'")
            for u in (ours, expected)
        )
    agree(expected == ours, "differs from the URL Standard", ours, theirs.href)


TARGET = Target(
    name="urls",
    check=check,
    max_len=512,
    summary="urls.resolve/normalize_url and surt_key; oracles: ada-url (WHATWG URL), surt, "
    "the fixed point, fast path = general path",
    dictionary=(
        b"http://",
        b"https://",
        b"//",
        b"../",
        b"./",
        b"%2e",
        b"%2E%2e",
        b"?",
        b"#",
        b"@",
        b":80",
        b":443",
        b"[::1]",
        b"0x7f.1",
        b"\\",
        b"xn--",
        b"\xc3\x9f",
        b"javascript:",
        b"mailto:",
    ),
)
