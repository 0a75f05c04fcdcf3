"""The ``ignores`` file an operator edits while a crawl runs (:mod:`archiver.policy.ignores`):
grab-site's format, one Python regular expression per line, compiled into as few regexes as
the lines combine into.

The input is the file, then (after a NUL) URLs to ask about. Oracles, on every input:

* reading the file raises nothing: a line that is no regular expression is reported with its
  number and left out, the others are the patterns, in order;
* the combined regexes ignore exactly the URLs that one of the lines, compiled alone, searches
  (the definition in the module's docstring), for fixed URLs and the input's own;
* so do the lines filed under their literal text, as a file of more than ``SMALL`` lines is
  searched: the input's lines after enough filler lines, read from scratch and as an append to
  the filler alone (the incremental reload).
"""

from __future__ import annotations

import re

from archiver.policy.ignores import SMALL, Exclusions, parse_ignores
from tests.fuzz.harness import Target, agree

URLS = (
    "http://example.com/",
    "https://example.com/a/b?c=d&e=f",
    "http://EXAMPLE.com/Calendar/2024/01/01",
    "http://example.com/search?q=%20x",
    "http://example.com/\u00e9t\u00e9",
)

#: lines that put a file past SMALL: the input's own lines are then filed among them
FILLER = [f"/filler-{i:03d}/" for i in range(SMALL + 1)]
FILLER_REGEXES = [re.compile(line) for line in FILLER]
FILLER_ONLY = parse_ignores("\n".join(FILLER))


def check(data: bytes) -> None:
    text, _, urls = data.decode("utf-8", "replace").partition("\x00")
    ignores = parse_ignores(text)
    valid = []
    for line in text.splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        try:
            valid.append(re.compile(pattern))
        except re.error:
            continue
    agree(list(ignores.patterns) == [p.pattern for p in valid], "patterns", ignores.patterns)
    exclusions = Exclusions(ignores=ignores)
    for url in (*URLS, *urls.split("\x00")):
        expected = any(p.search(url) for p in valid)
        agree(ignores.search(url) == expected, "combined regexes differ from the lines", url)
        agree(exclusions.ignored(url) == expected, "Exclusions.ignored differs", url)
    filed_text = "\n".join(FILLER) + "\n" + text
    filed = parse_ignores(filed_text)
    appended = parse_ignores(filed_text, previous=FILLER_ONLY)
    for url in (*URLS, *urls.split("\x00")):
        expected = any(p.search(url) for p in valid) or any(p.search(url) for p in FILLER_REGEXES)
        agree(filed.search(url) == expected, "filed lines differ from the lines", url)
        agree(appended.search(url) == expected, "appended lines differ from the lines", url)


TARGET = Target(
    name="ignores",
    check=check,
    max_len=512,
    summary="parse_ignores and the combined regexes; oracle: each line compiled and searched "
    "on its own",
    dictionary=(
        b"(?i)",
        b"(?x)",
        b"(?s)",
        b"(a)",
        b"\\1",
        b"(?P<n>",
        b"(?P=n)",
        b"|",
        b"#",
        b"\n",
        b"\x00",
        b"^",
        b"$",
        b"example",
        b"{2,3}",
        b"{",
        b"[^/]",
        b"\\",
        b"?",
        b"*",
        b"+",
        b"\\x41",
        b"session",
        "\u017f".encode(),  # long s: (?i)s matches it
        "\u212a".encode(),  # Kelvin sign: (?i)k matches it
    ),
)
