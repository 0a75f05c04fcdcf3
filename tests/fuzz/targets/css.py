"""CSS references (:func:`~archiver.extract.links.css_refs`, ``extract_css``): ``url()``,
``@import`` strings, the strings of ``image-set()``.

Oracles, on every input:

* tinycss2, an independent implementation of CSS Syntax Level 3 tokenization, finds the same
  references in the same order: url tokens, ``url("...")`` functions, the string after
  ``@import``, the strings of ``image-set()`` outside ``type()``; escapes decoded, empty ones
  skipped. What remains is listed in :data:`DIFFERENCES`, each with why;
* ``extract_css`` on the bytes keeps each reference once, resolved and normalised (a fixed
  point of normalisation), in order, within ``max_links``.
"""

from __future__ import annotations

import re

import tinycss2

from archiver import urls
from archiver.extract.links import _css_unescape, css_refs, extract_css
from tests.fuzz.harness import Target, agree

#: Where we differ from the CSS Syntax tokenizer on purpose; key: the difference, value: why.
DIFFERENCES = {
    "broken-css": "CSS with a parse error (a bad string or url, an unmatched ')' or ']', a "
    "string or url cut by the end of the file): a scanner and a tokenizer recover from "
    "errors differently, and browsers then drop declarations by rules a link extractor does "
    "not follow. Checked: every reference of ours is a url or string token for tinycss2, or a "
    "text of the input as it is written (escapes decoded or not: never text we made); equality "
    "is required on CSS "
    "without parse errors.",
    "image-set-garbage": "image-set() is read with a pattern, not a tokenizer: where its "
    "parentheses and strings do not balance (a string cut by a newline, a function left open "
    "inside it), we may find fewer of its strings, never another text. Checked: inside an "
    "image-set() every reference of ours must be a url or string token for tinycss2, or a "
    "text of the input as it is written (never text we made).",
    "escaped-names": "a name written with escapes ('u\\rl(', '\\75rl(', '@impo\\rt') is url( "
    "for CSS; we match names as written: no stylesheet spells url( so, and unescaping every "
    "name would cost a tokenizer pass per file (what an escaped url( swallows, we may read as "
    "references). Checked as above, where an escape stands in a name before '(' or after '@'.",
    "type-skipped": "the contents of every type() are skipped, not only in image-set() (where "
    "it holds a MIME type): no CSS property takes a URL inside type(); but only one level of "
    "functions inside it is skipped with it, deeper ones are read on. Checked as broken-css.",
    "url-function-left-open": 'a url("...") whose string a newline cuts, or that holds more '
    "than its string: CSS Syntax reads it as a function and on to its closing parenthesis, "
    "across rules (often to the end of the file), so a browser drops the rules after it; we "
    "read on and find their references (one fetch too many is harmless; losing the rest of a "
    "sheet to one typo would not be). Checked as above.",
    "url-backslash-newline": "a backslash before a newline in an unquoted url(): CSS Syntax "
    "4.3.6 (consume a url token) makes it a bad-url token, so no reference (what we do); "
    "tinycss2 1.5 keeps the backslash as a character of the URL. Checked as broken-css.",
}
#: An unquoted url( whose backslash is followed by a newline: no valid escape (CSS Syntax 4.3.8)
_URL_BACKSLASH_NEWLINE = re.compile(r"url\([^)\"']*\\[\n\r\f]", re.I)
_URL_FUNCTION = re.compile(r"url\([ \t\n\r\f]*[\"']", re.I)
_URL_FUNCTION_CLOSED = re.compile(
    r"""url\([ \t\n\r\f]*(?:"(?:[^"\\\n\r\f]|\\.)*"|'(?:[^'\\\n\r\f]|\\.)*')[ \t\n\r\f]*\)""",
    re.I | re.S,
)
_ESCAPED_NAME = re.compile(
    r"[\w\\-]*\\[\w\\-]*\(|\\[0-9A-Fa-f]{1,6}[ \t\n\r\f][\w-]*\(|@[\w\\-]*\\"
)


def _has_parse_error(tokens: list[tinycss2.ast.Node]) -> bool:
    for token in tokens:
        if token.type == "error":
            return True
        if token.type == "function" and _has_parse_error(token.arguments):
            return True
        if token.type.endswith(" block") and _has_parse_error(token.content):
            return True
    return False


def _url_and_string_tokens(tokens: list[tinycss2.ast.Node]) -> set[str]:
    found: set[str] = set()
    for token in tokens:
        if token.type in ("url", "string"):
            found.add(token.value)
        elif token.type == "function":
            found |= _url_and_string_tokens(token.arguments)
        elif token.type in ("() block", "[] block", "{} block"):
            found |= _url_and_string_tokens(token.content)
    return found


def _skipped(token: tinycss2.ast.Node) -> bool:
    return token.type in ("whitespace", "comment") or (
        token.type == "error" and token.kind == "eof-in-string"
    )


def tokenizer_refs(text: str) -> list[str]:
    found: list[str] = []

    def walk(tokens: list[tinycss2.ast.Node], image_set: bool) -> None:
        after_import = False
        for token in tokens:
            kind = token.type
            if kind in ("whitespace", "comment"):
                continue
            if after_import and kind == "string":
                found.append(token.value)
            after_import = kind == "at-keyword" and token.lower_value == "import"
            if kind == "url":
                found.append(token.value)
            elif kind == "function":
                name = token.lower_name
                if name == "url":  # url("..."): one string, whitespace around it
                    # eof-in-string is a parse error that still returns the string
                    args = [t for t in token.arguments if not _skipped(t)]
                    if len(args) == 1 and args[0].type == "string":
                        found.append(args[0].value)
                elif name in ("image-set", "-webkit-image-set"):
                    walk(token.arguments, True)
                elif name != "type":  # type() is skipped whole (see DIFFERENCES)
                    walk(token.arguments, image_set)
            elif kind == "string" and image_set:
                found.append(token.value)
            elif kind in ("() block", "[] block", "{} block"):
                walk(token.content, image_set)

    walk(tinycss2.parse_component_value_list(text), False)
    return [ref for ref in found if ref]


def check(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    ours = list(css_refs(text))
    theirs = tokenizer_refs(text)
    tokens_read = tinycss2.parse_component_value_list(text)
    garbage = (
        _has_parse_error(tokens_read)
        or "image-set(" in text.lower()
        or "type(" in text.lower()
        or _ESCAPED_NAME.search(text)
        or _URL_BACKSLASH_NEWLINE.search(text)
        or len(_URL_FUNCTION.findall(text)) > len(_URL_FUNCTION_CLOSED.findall(text))
        or text.count("(") > text.count(")")
    )
    if garbage:  # a stated difference: every reference of ours is a url or string token
        tokens = _url_and_string_tokens(tokens_read)
        written = text.replace("\x00", "\ufffd")  # CSS Syntax 3.3 preprocessing
        unescaped = _css_unescape(written)
        outside = [r for r in ours if r not in tokens and r not in written and r not in unescaped]
        agree(not outside, "a reference that is no url or string token", ours, theirs)
    else:
        agree(ours == theirs, "CSS references differ from tinycss2's", ours, theirs)
    links = extract_css(data, "http://example.com/css/site.css", max_links=8)
    agree(not links.pages and len(links.requisites) <= 8, "lists", links)
    agree(len(set(links.requisites)) == len(links.requisites), "duplicates", links)
    for url in links.requisites:
        agree(urls.normalize_url(url) == url, "not normal", url)


TARGET = Target(
    name="css",
    check=check,
    max_len=4096,
    summary="css_refs/extract_css; oracle: tinycss2 (CSS Syntax 3 tokenizer), differences listed",
    dictionary=(
        b"url(",
        b")",
        b"@import ",
        b'"',
        b"'",
        b"/*",
        b"*/",
        b"\\",
        b"image-set(",
        b"-webkit-image-set(",
        b"type(",
        b" 1x",
        b'@charset "',
        b"{",
        b"}",
    ),
)
