"""A page's visible text from its HTML (``--text`` for static pages)."""

from __future__ import annotations

import gzip

from archiver.extract.text import html_text, page_text


def test_only_what_a_reader_sees_with_blocks_on_their_own_lines() -> None:
    html = (
        b"<html><head><title>Not body</title><style>p{color:red}</style></head><body>"
        b"<p>Hello <b>brave</b> world</p><script>var hidden = 'scriptword';</script>"
        b"<div>second&nbsp;line</div><noscript>noscriptword</noscript>"
        b"<template>templateword</template><ul><li>one<li>two</ul></body></html>"
    )
    assert html_text(html, limit=1000) == "Hello brave world\nsecond line\none\ntwo"


def test_the_cap_and_the_documents_encoding() -> None:
    assert html_text(b"<p>" + b"word " * 1000 + b"</p>", limit=12) == "word word wo"
    latin1 = "<p>caf\u00e9 cr\u00e8me</p>".encode("cp1252")
    assert html_text(latin1, limit=100) == "caf\u00e9 cr\u00e8me"
    declared = '<meta charset="utf-8"><p>\u00fcber</p>'.encode()
    assert html_text(declared, limit=100) == "\u00fcber"


def test_a_body_as_received_is_decoded_first() -> None:
    body = gzip.compress(b"<p>zipped words</p>")
    assert page_text(body, "gzip", limit=100) == "zipped words"


def test_no_body_no_text() -> None:
    assert html_text(b"", limit=100) == ""
