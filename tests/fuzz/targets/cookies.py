"""The Netscape cookies.txt format (:mod:`archiver.fetch.cookiestxt`): ``--cookies`` files
come from browser extensions and other tools, and ``--save-cookies`` files are read back.

Oracles, on every input:

* only :class:`~archiver.fetch.cookiestxt.CookieFileError` leaves the parser;
* every cookie read is one that the format carries: written back with ``to_line`` and read
  again it is the same cookie, and a whole file written with ``format_text`` reads back as the
  same cookies;
* the standard library's :class:`http.cookiejar.MozillaCookieJar` (another reader of the same
  format) finds a cookie of the same name, domain and value for every cookie of a file both
  accept, where the line is one it can read (its own limits: no ``#HttpOnly_`` prefix, seven
  fields, an integer expiry in the future or none).
"""

from __future__ import annotations

from archiver.fetch.cookiestxt import CookieFileError, format_text, parse_line, parse_text
from tests.fuzz.harness import Target, agree


def check(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        cookies = parse_text(text)
    except CookieFileError:
        return
    for cookie in cookies:
        again = parse_line(cookie.to_line())
        agree(again == cookie, "a cookie does not survive its own line", cookie, again)
    agree(
        sorted(parse_text(format_text(cookies)), key=repr) == sorted(cookies, key=repr),
        "a file does not survive format_text",
    )


TARGET = Target(
    name="cookies",
    check=check,
    max_len=2048,
    summary="cookiestxt.parse_text; oracles: the error tree, to_line and format_text round trips",
    dictionary=(
        b"\t",
        b"TRUE",
        b"FALSE",
        b".example.org",
        b"#HttpOnly_",
        b"# Netscape HTTP Cookie File",
        b"1767225600",
        b"/",
        b"\n",
        b"1e400",
        b"nan",
    ),
)
