"""Link extraction: which URLs a fetched HTML page or stylesheet leads to, and which it needs.

A page's links split in two, as Heritrix's hop types do: *pages* (hop ``L``) are navigation a
reader may follow (``<a href>``, ``<area>``, ``<link rel=canonical>``, a meta refresh); they go
through scope like any other page. *Requisites* (hop ``E``) are what a browser fetches to render
the page (images, stylesheets, scripts, fonts, media, frames); an archive without them replays
as a broken page, so the crawler may fetch them even one hop outside the page scope.

Everything here is pure: bytes and a URL in, a frozen :class:`Links` out. The crawler calls it in
its event loop for every HTML page, so the work per page is kept small: one parse by Lexbor (via
selectolax, imported by no other module), one walk over the elements that only reads the
attributes of those that can carry a link, and one ``urls.resolve`` per distinct reference
(cached for the page, and across pages for origin-relative and absolute references, because
navigation repeats the same links on every page). Regular expressions only ever run over CSS
(``<style>`` elements, ``style`` attributes, stylesheets) and attribute values, never over the
whole document.

Resolution and normalisation are not done here: every reference goes through
:func:`archiver.urls.resolve`, which drops the fragment, refuses ``javascript:``, ``mailto:``,
``data:``… and percent-encodes what needs it, so a link can never put a raw CR/LF into a header.

Bad input never raises out of :func:`extract_html` or :func:`extract_css`: Lexbor recovers from
any markup the way browsers do, bytes are decoded with replacement, and the number of links is
capped (``truncated`` says so). Only :func:`extract` raises, for a content coding that
:func:`archiver.extract.decoding.decode_content` cannot undo.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver import urls
from archiver.extract.decoding import decode_content
from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links
from archiver.extract.meta import javascript_url_refs, ld_json, meta_property
from archiver.extract.scripts import JS_TYPES, collect_script, import_map

MAX_DECODED = 8 * 1024 * 1024

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPES = frozenset({"text/css"})


# --------------------------------------------------------------------------------------------
# Dispatch


def extract(
    body: bytes,
    url: str,
    content_type: str,
    content_encoding: str | None,
    *,
    max_decoded: int = MAX_DECODED,
    max_links: int = MAX_LINKS,
) -> Links:
    """The links of a response body, by media type; other types have none.

    ``content_type`` is the media type without parameters. The type is checked before the body is
    decoded, so an image sent with ``br`` costs nothing and raises nothing. Raises
    :class:`~archiver.extract.decoding.ContentDecodingError` when an HTML or CSS body cannot be
    decoded.
    """
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type in HTML_TYPES:
        return extract_html(
            decode_content(body, content_encoding, limit=max_decoded), url, max_links=max_links
        )
    if media_type in CSS_TYPES:
        return extract_css(
            decode_content(body, content_encoding, limit=max_decoded), url, max_links=max_links
        )
    return Links((), (), url, extractor=Extractor.HTML)


# --------------------------------------------------------------------------------------------
# HTML

_PAGE, _REQUISITE, _SRCSET = 0, 1, 2
_IMG = (
    ("src", _REQUISITE),
    ("srcset", _SRCSET),
    ("data-src", _REQUISITE),
    ("data-srcset", _SRCSET),
)
_BACKGROUND = (("background", _REQUISITE),)
_SVG_HREF = (("href", _REQUISITE), ("xlink:href", _REQUISITE))
# Which attribute of which element holds which kind of reference: the HTML Standard's index of
# attributes (https://html.spec.whatwg.org/multipage/indices.html#attributes-3); ``background``
# from HTML 4, still honoured by browsers; SVG 2 ``href`` and its SVG 1.1 ``xlink:href``.
# ``data-src``/``data-srcset`` are the lazy-loading convention that scripts copy into
# ``src``/``srcset``; without them many archived images would be missing.
_ATTRIBUTES: dict[str, tuple[tuple[str, int], ...]] = {
    "a": (("href", _PAGE), ("xlink:href", _PAGE)),
    "area": (("href", _PAGE),),
    "img": _IMG,
    "source": _IMG,
    "script": (("src", _REQUISITE), *_SVG_HREF),
    "iframe": (("src", _REQUISITE),),
    "frame": (("src", _REQUISITE),),
    "video": (("src", _REQUISITE), ("poster", _REQUISITE)),
    "audio": (("src", _REQUISITE),),
    "track": (("src", _REQUISITE),),
    "embed": (("src", _REQUISITE),),
    "object": (("data", _REQUISITE),),
    "body": _BACKGROUND,
    "table": _BACKGROUND,
    "td": _BACKGROUND,
    "th": _BACKGROUND,
    "image": _SVG_HREF,
    "use": _SVG_HREF,
}

_LINK_TAGS = frozenset(_ATTRIBUTES) | {"link", "meta", "input", "style", "title"}

# <link rel> keywords whose target a browser fetches for this page (HTML Standard, "link types",
# https://html.spec.whatwg.org/multipage/links.html#linkTypes), plus the de-facto
# apple-touch-icon*, mask-icon and image_src.
REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "preload",
        "modulepreload",
        "prefetch",
        "manifest",
        "image_src",
    }
)
# Hints that name an origin to connect to, not a resource (links.html#link-type-dns-prefetch and
# #link-type-preconnect): following them as pages would only crawl CDNs' home pages.
_ORIGIN_RELS = frozenset({"dns-prefetch", "preconnect"})

_ASCII_WHITESPACE = " \t\n\r\f"
_WHITESPACE_RUN = re.compile(r"[ \t\n\r\f]+")
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def extract_html(
    body: bytes, url: str, *, max_links: int = MAX_LINKS, js_relative: bool = False
) -> Links:
    """The links of an HTML document fetched from ``url`` (already content-decoded).

    Besides elements and attributes, an HTML page holds links other extractors read, tagged
    with their names: inline scripts (their module graph and URL strings, and with
    ``js_relative`` their relative path strings: :mod:`archiver.extract.scripts`), import maps,
    ``javascript:`` hrefs with a URL string inside, ``og:``/``twitter:`` image, video and audio
    meta properties and ``application/ld+json`` data (:mod:`archiver.extract.meta`)."""
    tree = LexborHTMLParser(_html_input(body), encoding=True)
    base = _document_base(tree, url)
    collect = Collector(base, url, max_links)
    title: str | None = None
    seen_title = False
    root = tree.root
    if root is None:
        return collect.links()
    # One walk in document order, looking only at elements that can carry a link. Any element
    # can have a style attribute; one C-side query finds those instead of reading every
    # element's attributes in Python. (Measured: cheaper than one selector list of all kinds,
    # whose cost grows with the number of selectors.)
    styled = {node.mem_id for node in tree.css("[style]")}
    for node in root.traverse():
        tag = node.tag or ""
        if tag not in _LINK_TAGS and not (styled and node.mem_id in styled):
            continue
        attrs = node.attributes
        for attribute, kind in _ATTRIBUTES.get(tag, ()):
            value = attrs.get(attribute)
            if not value:
                continue
            if kind == _REQUISITE:
                collect.requisite(value)
            elif kind == _PAGE:
                if value[0] in _MAYBE_JAVASCRIPT and javascript_url_refs(value, collect):
                    continue
                collect.page(value)
            else:
                for ref in srcset_urls(value):
                    collect.requisite(ref)
        if tag == "link":
            _link(attrs, collect)
        elif tag == "style":
            text = node.text()
            if "(" in text or "@" in text:
                for ref in css_refs(text):
                    collect.requisite(ref)
        elif tag == "meta":
            if (attrs.get("http-equiv") or "").strip().lower() == "refresh":
                target = refresh_url(attrs.get("content") or "")
                if target:
                    collect.page(target)
            else:
                meta_property(attrs, collect)
        elif tag == "script":
            _script(node, attrs, collect, js_relative)
        elif tag == "input":
            value = attrs.get("src")
            if value and (attrs.get("type") or "").strip().lower() == "image":
                collect.requisite(value)
        elif tag == "title" and not seen_title and not _in_svg(node):
            seen_title = True
            title = _WHITESPACE_RUN.sub(" ", node.text()).strip(_ASCII_WHITESPACE) or None
        style = attrs.get("style")
        if style and "(" in style:
            for ref in css_refs(style):
                collect.requisite(ref)
        if collect.truncated:
            break
    return collect.links(title)


_MAYBE_JAVASCRIPT = frozenset("jJ \t\n\r\f")
#: the longest inline script read for links (a page's JSON state can be megabytes)
MAX_INLINE_SCRIPT = 1024 * 1024


def _script(
    node: LexborNode, attrs: dict[str, str | None], collect: Collector, relative: bool
) -> None:
    """An inline ``<script>``: JavaScript (classic or module: HTML Standard "the script
    element", its type attribute), an import map, or ld+json data; other data blocks are not
    read. A script with ``src`` has its text ignored by browsers, and so here."""
    if attrs.get("src"):
        return
    kind = (attrs.get("type") or "").strip().lower()
    text = node.text()
    if not text:
        return
    if len(text) > MAX_INLINE_SCRIPT:
        text = text[:MAX_INLINE_SCRIPT]
    if not kind or kind in JS_TYPES:
        collect_script(text, collect.base, collect, relative=relative)
    elif kind == "importmap":
        import_map(text, collect)
    elif kind == "application/ld+json":
        ld_json(text, collect)


def _html_input(body: bytes) -> bytes | str:
    """The document as Lexbor should read it.

    With ``encoding=True`` Lexbor honours a byte-order mark and a ``<meta charset>`` in the first
    1024 bytes, and otherwise reads UTF-8 (HTML Standard, "prescan a byte stream to determine its
    encoding", https://html.spec.whatwg.org/multipage/parsing.html#prescan-a-byte-stream-to-
    determine-its-encoding). A page that declares nothing and is not UTF-8 is, on the old sites
    archives care about, nearly always Latin-1; browsers guess windows-1252 for it (the encoding
    sniffing algorithm leaves that fallback to the user agent), so we do too rather than turn
    every accented link into U+FFFD. A page with genuine UTF-8 sequences and a few stray bytes
    stays UTF-8, as a browser's detector would keep it.
    """
    if body.isascii() or body.startswith(_BOMS) or b"charset" in body[:1024].lower():
        return body
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        if not _UTF8_SEQUENCE.search(body):
            return body.decode("cp1252", "replace")
    return body


def _document_base(tree: LexborHTMLParser, url: str) -> str:
    """The URL relative references resolve against: HTML Standard "document base URL"
    (https://html.spec.whatwg.org/multipage/urls-and-fetching.html#document-base-url), the
    frozen base URL of the first ``<base>`` element with an ``href`` in tree order, wherever it
    is, resolved against the document's URL ("set the frozen base URL", semantics.html#set-the-
    frozen-base-url); if that fails, or gives a ``data:``/``javascript:`` URL, the document's
    own URL is the base."""
    for element in tree.tags("base"):
        href = element.attributes.get("href")
        if href is not None:
            return urls.resolve(url, href) or url
    return url


def _link(attrs: dict[str, str | None], collect: Collector) -> None:
    """``<link href>``: a requisite when its ``rel`` makes the browser fetch it, a page else."""
    rels = frozenset((attrs.get("rel") or "").lower().split())
    href = attrs.get("href")
    if href:
        if rels & REQUISITE_RELS:
            collect.requisite(href)
        elif not rels & _ORIGIN_RELS:
            collect.page(href)
    srcset = attrs.get("imagesrcset")  # <link rel=preload as=image imagesrcset>
    if srcset and rels & REQUISITE_RELS:
        for ref in srcset_urls(srcset):
            collect.requisite(ref)


def _in_svg(node: LexborNode) -> bool:
    """An SVG ``<title>`` is a tooltip, not the document's title, which is the first ``title``
    in the HTML namespace (https://html.spec.whatwg.org/multipage/dom.html#the-title-element-2).
    """
    parent = node.parent
    while parent is not None:
        if parent.tag == "svg":
            return True
        parent = parent.parent
    return False


# --------------------------------------------------------------------------------------------
# HTML microsyntaxes

# A candidate: a URL (which starts after the whitespace and commas that separate candidates and
# runs to the next whitespace), then, unless the URL ended with a comma, descriptors up to the
# next comma outside parentheses. Possessive loops keep hostile input linear.
_SRCSET_CANDIDATE = re.compile(
    r"([^ \t\n\r\f,][^ \t\n\r\f]*+)(?:(?<=,)|(?:[^,(]++|\([^)]*+\)?+)*+,?)"
)


def srcset_urls(value: str) -> Iterator[str]:
    """The URLs of a ``srcset`` (HTML Standard "parse a srcset attribute",
    https://html.spec.whatwg.org/multipage/images.html#parse-a-srcset-attribute).

    A candidate's URL runs to the next whitespace, so ``a.php?x=1,2 1x`` is one URL; trailing
    commas end a candidate that has no descriptors; descriptors run to the next comma outside
    parentheses. Invalid descriptors do not matter here: a browser drops such a candidate, but
    fetching one image too many is harmless and the image is needed if another browser takes it.
    """
    for match in _SRCSET_CANDIDATE.finditer(value):
        url = match.group(1).rstrip(",")
        if url:
            yield url


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content>``, or None if it only reloads the page
    or is invalid: HTML Standard "shared declarative refresh steps",
    https://html.spec.whatwg.org/multipage/semantics.html#shared-declarative-refresh-steps."""
    end = len(content)
    position = _skip_whitespace(content, 0)
    start = position
    while position < end and content[position].isascii() and content[position].isdigit():
        position += 1
    if position == start and not content.startswith(".", position):
        return None
    while position < end and (content[position] in ".0123456789"):
        position += 1
    if position < end:
        if content[position] not in ";," + _ASCII_WHITESPACE:
            return None
        position = _skip_whitespace(content, position)
        if content.startswith((";", ","), position):
            position += 1
        position = _skip_whitespace(content, position)
    if position >= end:
        return None
    url_string = content[position:]
    if content[position] in "uU":
        after = _skip_whitespace(content, position + 3)
        if content[position : position + 3].lower() != "url" or not content.startswith("=", after):
            return url_string  # "u..." that is not "url=" starts the URL itself: "0; up.html"
        position = _skip_whitespace(content, after + 1)
    # "Skip quotes": a quoted URL ends at its closing quote.
    quote = content[position] if content.startswith(("'", '"'), position) else ""
    url_string = content[position + len(quote) :]
    if quote and quote in url_string:
        url_string = url_string[: url_string.index(quote)]
    return url_string


def _skip_whitespace(text: str, position: int) -> int:
    end = len(text)
    while position < end and text[position] in _ASCII_WHITESPACE:
        position += 1
    return position


# --------------------------------------------------------------------------------------------
# CSS

# Possessive loops (``*+``) over disjoint alternatives: a scan never backtracks into a string or a
# url(), so hostile CSS costs linear time.
# a string ends at a newline (LF, CR or FF) unless it is escaped (CRLF is one newline)
# (a hex escape takes one whitespace after it, a newline too; a backslash at the end of the
# input is nothing)
_ESCAPE = r"\\[0-9A-Fa-f]{1,6}+(?:\r\n|[ \t\n\r\f])?|\\\r\n|\\.|\\\Z"
_STRING_BODY_DQ = rf'(?:[^"\\\n\r\f]|{_ESCAPE})*+'
_STRING_BODY_SQ = rf"(?:[^'\\\n\r\f]|{_ESCAPE})*+"
# CSS whitespace is space, tab and the newlines (not Python's \s, which has U+00A0 and more);
# an unquoted url() holds no non-printable code point and no escaped newline (#consume-url-token)
_URL_BODY = (
    r"(?:[^\"'()\\ \t\n\r\f\x01-\x08\x0b\x0e-\x1f\x7f]"
    r"|\\[0-9A-Fa-f]{1,6}+[ \t\n\r\f]?|\\[^0-9A-Fa-f\n\r\f]|\\\Z)*+"
)
# a name is not preceded by an ident code point (ASCII letters, digits, "_", "-", and every
# non-ASCII code point: CSS Syntax #ident-code-point), "@" or "#" ("@url(" is an at-keyword):
# "myurl(" is no "url("; an escaped code point ("\:url(" is the function ":url(", "d\url(" is
# "durl(") is a token of the scan below, which takes the name characters after it
_NO_IDENT_BEFORE = r"(?<![0-9A-Za-z_\-\x80-\U0010ffff@#\\])"
# a string token in a function: to its quote, the end of the input or, a bad string, to a
# newline
_STRINGS = rf""""{_STRING_BODY_DQ}(?:"|\Z|(?=[\n\r\f]))|'{_STRING_BODY_SQ}(?:'|\Z|(?=[\n\r\f]))"""
# inside type( ) and other parentheses of image-set(): strings may hold ")", and a function
# may be inside (one level)
_PAREN_BODY = rf"""(?:[^()"']|{_STRINGS}|\([^()]*+\))*+"""
# One left-to-right scan over the CSS Syntax tokens that matter (https://www.w3.org/TR/css-syntax-3/
# #tokenization): comments and strings are matched so that a "url(" inside them is not taken for
# one; url() quoted or not (#consume-url-token), @import with a string, and image-set() or
# -webkit-image-set(), whose plain strings are URLs too (https://www.w3.org/TR/css-images-4/
# #image-set-notation), but not those in its type().
_CSS_TOKENS = re.compile(
    # an escaped code point outside a string (#consume-escaped-code-point: up to six hex
    # digits and one whitespace after them), with the name characters that follow it: a
    # token of its own, so a quote, "/" or "@" it escapes starts nothing, a "url(" written
    # right after it is the end of a name (an escaped space: "a\ url("), and an escaped
    # backslash leaves the next character as it is ("\\ url(" is a name, a space and a url)
    r"\\(?:(?:[0-9A-Fa-f]{1,6}(?:\r\n|[ \t\n\r\f])?|[^\n\r\f])[0-9A-Za-z_\-\x80-\U0010ffff]*+"
    r"|(?=[\n\r\f])|\Z)"  # before a newline, no escape (#starts-with-a-valid-escape)
    r"|/\*.*?(?:\*/|\Z)"
    rf"|{_NO_IDENT_BEFORE}url\([ \t\n\r\f]*+(?:"
    rf'"(?P<url_dq>{_STRING_BODY_DQ})(?:"|\Z)'
    rf"|'(?P<url_sq>{_STRING_BODY_SQ})(?:'|\Z)"
    rf"|(?P<url_raw>{_URL_BODY})"
    r")[ \t\n\r\f]*+(?:\)|\Z)"
    # a bad url (#consume-remnants-of-a-bad-url): up to its ")", no reference in it
    rf"|{_NO_IDENT_BEFORE}url\([ \t\n\r\f]*+(?![\"'])(?:[^)\\]|\\.|\\\Z)*+(?:\)|\Z)"
    rf'|@import[ \t\n\r\f]*+(?:"(?P<import_dq>{_STRING_BODY_DQ})(?:"|\Z)'
    rf"|'(?P<import_sq>{_STRING_BODY_SQ})(?:'|\Z))"
    rf"|{_NO_IDENT_BEFORE}(?:-webkit-)?image-set\((?P<image_set>(?:"
    rf"""[^()"']|{_STRINGS}|\({_PAREN_BODY}(?:\)|\Z)"""
    r")*+)(?:\)|\Z)"  # the end of the input closes a function too
    rf"|{_NO_IDENT_BEFORE}type\({_PAREN_BODY}(?:\)|\Z)"
    # any other string, to its quote or the end of the input; a bad string (cut by a
    # newline) is skipped as one token and is no reference
    rf'|"(?P<string_dq>{_STRING_BODY_DQ})(?:"|\Z)'
    rf"|'(?P<string_sq>{_STRING_BODY_SQ})(?:'|\Z)"
    rf"|{_STRINGS}",
    re.IGNORECASE | re.DOTALL,
)
_CSS_ESCAPE = re.compile(
    r"\\(?:([0-9A-Fa-f]{1,6})(?:\r\n|[ \t\n\r\f])?|(\r\n|[\n\r\f])|(.)|\Z)", re.S
)


def css_refs(text: str, *, strings_are_urls: bool = False) -> Iterator[str]:
    """The URL references of CSS text, escapes decoded, in order; empty ``url()`` skipped."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")  # CSS Syntax 3.3, preprocessing the input stream
    for match in _CSS_TOKENS.finditer(text):
        name = match.lastgroup
        if name is None or (name.startswith("string") and not strings_are_urls):
            continue
        value = match.group(name)
        if name == "image_set":
            yield from css_refs(value, strings_are_urls=True)
            continue
        if name != "url_raw" and (len(value) - len(value.rstrip("\\"))) % 2:
            value = value[:-1]  # a string's backslash before the end of the input is nothing
        if value:
            yield _css_unescape(value) if "\\" in value else value


def _css_unescape(text: str) -> str:
    """CSS Syntax "consume an escaped code point" (#consume-escaped-code-point), and the escaped
    newline of "consume a string token", which continues the string and is dropped."""
    return _CSS_ESCAPE.sub(_unescape_one, text)


def _unescape_one(match: re.Match[str]) -> str:
    hex_digits, newline, char = match.groups()
    if hex_digits is not None:
        code = int(hex_digits, 16)
        if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            return "\ufffd"
        return chr(code)
    if newline is not None:
        return ""
    if char is not None:
        return str(char)
    return "\ufffd"  # a backslash at the very end


def extract_css(body: bytes, url: str, *, max_links: int = MAX_LINKS) -> Links:
    """The references of a stylesheet fetched from ``url``: all requisites, relative to it."""
    collect = Collector(url, url, max_links, Extractor.CSS)
    for ref in css_refs(_css_text(body)):
        collect.requisite(ref)
        if collect.truncated:
            break
    return collect.links()


# Encoding Standard labels CSS files use that Python spells differently or reads more strictly.
_CSS_CHARSETS = {
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "windows-1252": "cp1252",
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}
_CHARSET_RULE = re.compile(rb'@charset "([A-Za-z0-9_.:-]{1,40})";')


def _css_text(body: bytes) -> str:
    """CSS Syntax "determine the fallback encoding" (#determine-the-fallback-encoding): a BOM,
    else an ``@charset`` rule at the very start, else UTF-8. (The HTTP charset and the referring
    document's encoding are not known here; UTF-8 is what nearly every stylesheet uses.)"""
    if body.startswith(b"\xef\xbb\xbf"):
        return body[3:].decode("utf-8", "replace")
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        return body.decode("utf-16", "replace")
    match = _CHARSET_RULE.match(body)
    if match:
        label = match.group(1).decode("ascii").lower()
        codec = _CSS_CHARSETS.get(label, label)
        try:
            return body.decode(codec, "replace")
        except LookupError:
            pass
    return body.decode("utf-8", "replace")


__all__ = [
    "CSS_TYPES",
    "HTML_TYPES",
    "MAX_DECODED",
    "MAX_LINKS",
    "REQUISITE_RELS",
    "Links",
    "css_refs",
    "extract",
    "extract_css",
    "extract_html",
    "refresh_url",
    "srcset_urls",
]
