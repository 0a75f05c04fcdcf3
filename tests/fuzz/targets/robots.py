"""robots.txt decisions (:func:`~archiver.policy.robots.parse_robots`, group selection and
protego's matching) for RFC 9309.

Two kinds of input, chosen by the first byte:

* any bytes as a robots.txt: nothing but the documented result comes out (no exception), and
  ``/robots.txt`` is always allowed (section 2.2.2), whatever the file says;
* a file built from the input by a small grammar (``User-agent`` lines naming us, another
  crawler or ``*``; ``Allow``/``Disallow`` with paths over ``/ab*$``; comments, blank lines):
  every decision for every path over ``/ab`` up to four characters equals :func:`reference`'s,
  a transcription of RFC 9309 sections 2.1 and 2.2 (groups, merged groups for the same agent,
  the ``*`` group as a fallback, longest match, Allow wins a tie, ``*`` and ``$``); other
  records (``Crawl-delay``, ``Sitemap``, ``Host``, unknown keys) anywhere, which section 2.2.4
  says must not interfere with the groups.
"""

from __future__ import annotations

import itertools
import re

from archiver.policy.robots import parse_robots
from tests.fuzz.harness import Bytes, Target, agree

AGENT = "archiver/1.0 (+https://example.org/bot)"
ORIGIN = "http://example.com"
PROBES = ["/"] + ["/" + "".join(p) for n in range(1, 4) for p in itertools.product("ab/", repeat=n)]


def _lines(source: Bytes) -> list[str]:
    lines: list[str] = []
    while source.pos < len(source.data):
        kind, arg = source.byte(), source.byte()
        path = "".join("/ab*$"[b % 5] for b in source.take(arg % 5))
        lines.append(
            [
                "User-agent: archiver",
                "User-agent: otherbot",
                "User-agent: *",
                f"Allow: /{path}",
                f"Disallow: /{path}",
                f"Disallow: {path}",
                "# a comment",
                "",
                f"user-AGENT: ArchIver/2 {path}",
                # other records (section 2.2.4): never part of a group, never splitting one
                "Crawl-delay: 3",
                f"Sitemap: /{path}.xml",
                "Host: example.com",
                f"X-Unknown: {path}",
            ][kind % 13]
        )
    return lines


def reference(lines: list[str], token: str, path: str) -> bool:
    """RFC 9309: is ``path`` allowed for the product token ``token``?"""
    groups: list[tuple[list[str], list[tuple[bool, str]]]] = []
    in_agents = False
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "user-agent":
            if not in_agents:
                groups.append(([], []))
            in_agents = True
            product = re.match(r"[A-Za-z_-]*", value)
            groups[-1][0].append(
                "*" if value.startswith("*") else ((product and product.group()) or "").lower()
            )
        elif key in ("allow", "disallow") and groups:
            in_agents = False
            if value:
                groups[-1][1].append((key == "allow", value))
    ours = [rules for agents, rules in groups if token in agents]
    if not ours:
        ours = [rules for agents, rules in groups if "*" in agents]
    best: tuple[int, bool] | None = None
    for allow, pattern in (rule for rules in ours for rule in rules):
        if _matches(pattern, path):
            candidate = (len(pattern), allow)
            if best is None or candidate > best:
                best = candidate
    return best is None or best[1]


def _matches(pattern: str, path: str) -> bool:
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(part) for part in body.split("*"))
    return re.match(regex + ("\\Z" if anchored else ""), path) is not None


def check(data: bytes) -> None:
    source = Bytes(data)
    if source.byte() % 2:
        rules = parse_robots(source.rest(), AGENT, url=ORIGIN + "/robots.txt")
        agree(rules.allowed(ORIGIN + "/robots.txt"), "robots.txt itself refused")
        for path in ("/", "/a", "/%61", "/a?b", "/%"):
            rules.allowed(ORIGIN + path)
        agree(rules.crawl_delay is None or rules.crawl_delay >= 0, "crawl delay", rules)
        return
    lines = _lines(source)
    rules = parse_robots("\n".join(lines).encode(), AGENT, url=ORIGIN + "/robots.txt")
    for path in PROBES:
        ours = rules.allowed(ORIGIN + path)
        expected = reference(lines, "archiver", path)
        agree(ours == expected, "decision differs from RFC 9309", path, ours, lines)


TARGET = Target(
    name="robots",
    check=check,
    max_len=1024,
    summary="parse_robots + allowed (group selection, protego); oracle: an RFC 9309 "
    "transcription on grammar-built files; the error tree on any bytes",
    dictionary=(
        b"User-agent: ",
        b"Disallow: ",
        b"Allow: ",
        b"Crawl-delay: ",
        b"Sitemap: ",
        b"*",
        b"$",
        b"\n",
        b"#",
    ),
)
