"""Links in JavaScript: the module graph a static crawl can follow without running anything, and
URL strings. (pure)

The module graph of a modern site is what a browser fetches after the entry script, and what a
static crawl misses without it (on a VitePress or Docusaurus site, most of the URLs a browser
loads are such chunks; without them every client-side navigation fails in replay). It is read
from the source text, never run:

* static ``import … from "…"``, ``import "…"`` and ``export … from "…"`` (ECMAScript 2024
  section 16.2.2, ImportDeclaration; 16.2.3, ExportDeclaration), and dynamic ``import("…")``
  with a string literal (13.3.10, ImportCall): a module specifier that is a URL, or starts with
  ``/``, ``./`` or ``../`` (HTML Standard, "resolve a module specifier",
  https://html.spec.whatwg.org/multipage/webappapis.html#resolve-a-module-specifier), resolved
  against the script's URL; bare specifiers (``"vue"``) need an import map and are skipped;
* ``new URL("…", import.meta.url)``: an asset next to the module (the form Vite and webpack 5
  both recognise and rewrite);
* Vite's dependency map (``__vite__mapDeps``: the chunks and stylesheets a dynamic import
  preloads, relative to the app's base) and webpack's chunk-id → file function
  (``__webpack_require__.u`` / ``.miniCssF``), where its tables are plain object literals:
  every chunk file it can name, under the public path (``__webpack_require__.p``).

Module-graph links are requisites (the page cannot run without them). Other strings are read the
way Heritrix's ExtractorJS reads them, by one regular expression over the text, without a
parser: a quoted string that is an absolute ``http(s)`` URL, a scheme-relative one with a dotted
host, or a root-relative path (``"/api/items.json"``) is a page link, and scope decides whether it
is crawled. Relative strings (``"img/a.png"``) are guesses: a script builds URLs from them in
ways a scan cannot know, and following them is what made Heritrix users switch speculative
extraction off for its 404s (heritrix3 issues 155 and 232); they are only read when asked
(``relative=True``), and only when they end in a file extension.

Everything is bounded: the expressions are linear (no nested unbounded repetition), the
specifiers and tables have length caps, and the caller's ``max_links`` caps the output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from archiver.extract.found import MAX_LINKS, Collector, Extractor, Links

#: a string longer than this is no URL worth fetching (see found.MAX_REF_LENGTH)
MAX_STRING = 4096
#: the longest chunk table read (a site with thousands of chunks has a table of ~100 KB)
MAX_TABLE = 2 * 1024 * 1024

JS_TYPES = frozenset(
    {
        "application/javascript",
        "text/javascript",
        "application/x-javascript",
        "text/ecmascript",
        "application/ecmascript",
        "module",  # <script type=module>'s own type keyword
    }
)


def _quoted_spec(n: int) -> str:
    """A quoted module specifier, its quote and value in groups named ``qN`` and ``sN``."""
    return rf"""(?P<q{n}>["'`])(?P<s{n}>[^"'`\s\\]{{1,2048}})(?P=q{n})"""


_MODULE_FORMS = re.compile(
    # import defaults, namespaces and named bindings, then "from"; or a bare import "x"
    rf"(?<![\w$.])import\s*(?:(?:[\w$]+\s*,?\s*)?"
    rf"(?:\*\s*as\s+[\w$]+\s*|\{{[^{{}}]{{0,4096}}\}}\s*)?from\s*)?{_quoted_spec(1)}"
    # export * from, export * as ns from, export {…} from
    rf"|(?<![\w$.])export\s*(?:\*\s*(?:as\s+[\w$]+\s*)?|\{{[^{{}}]{{0,4096}}\}}\s*)from\s*"
    rf"{_quoted_spec(2)}"
    # import("…") with a string literal, options after a comma allowed
    rf"|(?<![\w$.])import\s*\(\s*{_quoted_spec(3)}\s*[,)]"
    # new URL("…", import.meta.url)
    rf"|(?<![\w$.])new\s+URL\s*\(\s*{_quoted_spec(4)}\s*,\s*import\.meta\.url\s*\)"
)
# The characters a URL string may hold (RFC 3986's, and the percent sign; no whitespace, quote,
# backslash, brace, angle bracket, caret, pipe, backtick or asterisk: strings holding those are
# templates, globs or markup, not URLs).
_URL_CHARS = r"[A-Za-z0-9\-._~:/?#\[\]@!&()+,;=%$]"
_ABSOLUTE = (
    rf"(?:https?:)?//[A-Za-z0-9][A-Za-z0-9\-]*(?:\.[A-Za-z0-9\-]+)+(?::\d+)?(?:/{_URL_CHARS}*)?"
)
_ROOTED = rf"/[A-Za-z0-9\-._~%@!$&+,;=]{_URL_CHARS}*"
_URL_STRING = re.compile(rf"""(["'`])({_ABSOLUTE}|{_ROOTED})\1""")
_RELATIVE_STRING = re.compile(
    r"""(["'`])((?:\.{1,2}/)*[A-Za-z0-9_][A-Za-z0-9\-._~/]*"""
    r"""\.(?:m?js|css|png|jpe?g|gif|svg|webp|avif|ico|woff2?|ttf|otf|json|html?|mp4|webm|"""
    r"""m3u8|mpd|mp3|ogg|wasm)(?:\?[A-Za-z0-9\-._~=&%]*)?)\1"""
)
_VITE_DEPS = re.compile(r"__vite__mapDeps\b[^\[]{0,200}\[((?:\s*(?:\"[^\"]*\"|'[^']*')\s*,?)*)\]")
_STRING_ITEM = re.compile(r"""\"([^\"\\]*)\"|'([^'\\]*)'""")
# webpack: __webpack_require__.u = (chunkId) => …  /  .u=function(e){return …}  (and .miniCssF)
_WEBPACK_FILE_FUNCTION = re.compile(
    r"\.(?:u|miniCssF)\s*=\s*(?:function\s*\(\s*(?P<f>[\w$]+)\s*\)\s*\{\s*return\b|"
    r"\(?\s*(?P<a>[\w$]+)\s*\)?\s*=>)\s*"
)
_WEBPACK_JSONP_SRC = re.compile(
    r"function\s+jsonpScriptSrc\s*\(\s*(?P<f>[\w$]+)\s*\)\s*\{\s*return\b\s*"
)
_WEBPACK_PUBLIC_PATH = re.compile(r"""\.p\s*=\s*(["'])([^"'\s\\]{0,2048})\1""")


def is_url_string(text: str) -> bool:
    """Whether a string's value is read as a URL link: an absolute http(s) URL, a
    scheme-relative one with a dotted host, or a root-relative path, made of URL characters
    only. The predicate :func:`string_urls` and the JSON extractor apply."""
    return len(text) <= MAX_STRING and _URL_VALUE.fullmatch(text) is not None


_URL_VALUE = re.compile(rf"{_ABSOLUTE}|{_ROOTED}")


def string_urls(text: str) -> Iterator[str]:
    """The quoted strings of a script that are URLs by :func:`is_url_string`, in order; not
    one that a ``+`` joins to something else (``"/api/item/" + id``: a piece of a URL the
    script builds, which fetched alone is a 404 or the wrong page)."""
    for match in _URL_STRING.finditer(text):
        value = match.group(2)
        if len(value) <= MAX_STRING and not _concatenated(text, match.start(), match.end()):
            yield value


def relative_strings(text: str) -> Iterator[str]:
    """Quoted relative paths that end in a file extension (the speculative reading), not
    pieces of a concatenation."""
    for match in _RELATIVE_STRING.finditer(text):
        if not _concatenated(text, match.start(), match.end()):
            yield match.group(2)


def _concatenated(text: str, start: int, end: int) -> bool:
    """Whether a ``+`` stands right before or after the string at ``text[start:end]``."""
    after = text[end : end + 8].lstrip(" \t\r\n")
    before = text[max(start - 8, 0) : start].rstrip(" \t\r\n")
    return after.startswith("+") or before.endswith("+")


def module_specifiers(text: str) -> Iterator[str]:
    """The module specifiers and ``import.meta.url`` assets of a script that are URLs or
    relative references, in order (bare specifiers skipped)."""
    for match in _MODULE_FORMS.finditer(text):
        spec = next(s for s in match.group("s1", "s2", "s3", "s4") if s is not None)
        if "${" in spec:
            continue  # a template literal with a substitution is no string literal
        if spec.startswith(("./", "../", "/", "http://", "https://")):
            yield spec


def vite_dependencies(text: str) -> Iterator[str]:
    """The files of Vite's ``__vite__mapDeps`` list (relative to the app's base)."""
    for match in _VITE_DEPS.finditer(text[:MAX_TABLE] if len(text) > MAX_TABLE else text):
        for item in _STRING_ITEM.finditer(match.group(1)):
            value = item.group(1) if item.group(1) is not None else item.group(2)
            if value:
                yield value


def webpack_chunks(text: str) -> tuple[str | None, list[str]]:
    """webpack's public path (``None`` if not a plain string) and every chunk file its
    chunk-file functions name, when their tables are plain object literals."""
    public = _WEBPACK_PUBLIC_PATH.search(text)
    public_path = public.group(2) if public else None
    files: dict[str, None] = {}
    for pattern in (_WEBPACK_FILE_FUNCTION, _WEBPACK_JSONP_SRC):
        for match in pattern.finditer(text):
            param = match.group("f") or (match.groupdict().get("a") or "")
            parsed = _ChunkExpression(text, match.end(), param).parse()
            if parsed is not None:
                files.update(dict.fromkeys(parsed))
    return public_path, list(files)


class _ChunkExpression:
    """A webpack chunk-file expression: ``"js/" + ({1:"a"}[id] || id) + "." + {1:"h"}[id] +
    ".js"``, evaluated for every chunk id its tables name. Anything else (a call, a variable
    other than the chunk id, a conditional) makes it unreadable: None."""

    __slots__ = ("end", "param", "pos", "tables", "text")

    def __init__(self, text: str, start: int, param: str) -> None:
        self.text = text
        self.pos = start
        self.end = min(len(text), start + MAX_TABLE)
        self.param = param
        self.tables: list[dict[str, str]] = []

    def parse(self) -> list[str] | None:
        terms = self._sum()
        if terms is None:
            return None
        if not self.tables:  # one file whatever the chunk ("assets/js/common.abcd.js")
            constant = all(isinstance(t, str) or t is _PUBLIC for t in terms)
            return [self._value(terms, "") or ""] if constant else None
        ids: dict[str, None] = {}
        for table in self.tables:
            ids.update(dict.fromkeys(table))
        out = []
        for chunk_id in ids:
            value = self._value(terms, chunk_id)
            if value:
                out.append(value)
        return out

    def _value(self, terms: list[object], chunk_id: str) -> str | None:
        parts = []
        for term in terms:
            if isinstance(term, str):
                parts.append(term)
            elif term is _PARAM:
                parts.append(chunk_id)
            elif term is _PUBLIC:
                continue  # the public path is prefixed by the caller
            elif isinstance(term, tuple):  # (table, fallback to the id)
                table, fallback = term
                found = table.get(chunk_id)
                if found is None and not fallback:
                    return None
                parts.append(found if found is not None else chunk_id)
            elif isinstance(term, list):
                value = self._value(term, chunk_id)
                if value is None:
                    return None
                parts.append(value)
        return "".join(parts)

    def _skip(self) -> None:
        text, pos, end = self.text, self.pos, self.end
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        self.pos = pos

    def _peek(self) -> str:
        self._skip()
        return self.text[self.pos] if self.pos < self.end else ""

    def _sum(self) -> list[object] | None:
        terms: list[object] = []
        while True:
            term = self._term()
            if term is None:
                return None
            terms.append(term)
            if self._peek() != "+":
                return terms
            self.pos += 1

    def _term(self) -> object | None:
        char = self._peek()
        if char in "\"'":
            return self._string()
        if char == "{":
            table = self._table()
            if table is None or not self._lookup():
                return None
            return (table, False)
        if char == "(":
            return self._group()
        name = self._identifier()
        if name == self.param:
            return _PARAM
        if name and self.text.startswith(".p", self.pos) and not _ident_char(self.pos + 2, self):
            self.pos += 2
            return _PUBLIC
        return None

    def _group(self) -> object | None:
        """``( … )``: a sum, ``({…})[id]``, or ``(… [id] || id)`` (the id when the table has
        no entry for it)."""
        self.pos += 1
        if self._peek() == "{":
            start = self.pos
            table = self._table()
            if table is not None and self._peek() == ")":  # ({…})[id]
                self.pos += 1
                return (table, False) if self._lookup() else None
            self.pos = start
        inner = self._sum()
        if inner is not None and self.text.startswith("||", self.pos):
            self.pos += 2
            lookup = inner[0] if len(inner) == 1 else None
            if not isinstance(lookup, tuple) or self._identifier() != self.param:
                return None
            inner = [(lookup[0], True)]
        if inner is None or self._peek() != ")":
            return None
        self.pos += 1
        return inner

    def _identifier(self) -> str:
        self._skip()
        start = self.pos
        while self.pos < self.end and (
            self.text[self.pos].isalnum() or self.text[self.pos] in "_$"
        ):
            self.pos += 1
        return self.text[start : self.pos]

    def _string(self) -> str | None:
        quote = self.text[self.pos]
        close = self.text.find(quote, self.pos + 1, self.end)
        if close < 0:
            return None
        value = self.text[self.pos + 1 : close]
        if "\\" in value or "\n" in value:
            return None
        self.pos = close + 1
        return value

    def _table(self) -> dict[str, str] | None:
        self.pos += 1  # "{"
        table: dict[str, str] = {}
        while True:
            char = self._peek()
            if char == "}":
                self.pos += 1
                self.tables.append(table)
                return table
            key = self._string() if char in "\"'" else _number_key(self._identifier())
            if key is None or self._peek() != ":":
                return None
            self.pos += 1
            if self._peek() not in "\"'":
                return None
            value = self._string()
            if value is None:
                return None
            table[key] = value
            if self._peek() == ",":
                self.pos += 1

    def _lookup(self) -> bool:
        """``[param]`` after a table."""
        if self._peek() != "[":
            return False
        self.pos += 1
        if self._identifier() != self.param or self._peek() != "]":
            return False
        self.pos += 1
        return True


_PARAM = object()
_PUBLIC = object()
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE]\d+)?")


def _number_key(name: str) -> str | None:
    """An object literal's unquoted key as JavaScript turns it into a property name: a number
    literal becomes the number's string (``88e3`` is ``"88000"``, the id webpack's minified
    runtimes write that way), an identifier stays as it is."""
    if not name:
        return None
    if _NUMBER.fullmatch(name) and len(name) < 24:
        value = float(name)
        return str(int(value)) if value.is_integer() and value < 2**53 else repr(value)
    return name


def _ident_char(pos: int, expr: _ChunkExpression) -> bool:
    return pos < expr.end and (expr.text[pos].isalnum() or expr.text[pos] in "_$")


def base_for(dependency: str, script_url: str) -> str:
    """The base a bundler's output-relative path (``assets/chunks/a.js``) resolves against:
    the script's URL up to where the path's first segment appears in it (a script at
    ``/docs/assets/index.js`` and ``assets/x.js`` give ``/docs/``), else the origin's root. A
    path written ``./x.js`` or ``../x.js`` (Vite with a relative ``base``, which resolves its
    dependencies with ``new URL(dep, import.meta.url)``) is relative to the script itself."""
    if dependency.startswith(("./", "../")):
        return script_url
    first = dependency.split("/", 1)[0]
    scheme_end = script_url.find("://")
    path_start = script_url.find("/", scheme_end + 3) if scheme_end >= 0 else -1
    if path_start < 0:
        return script_url
    path = script_url[path_start:].split("?", 1)[0]
    index = path.find("/" + first + "/") if first and "/" in dependency else -1
    if index < 0:
        return script_url[:path_start] + "/"
    return script_url[:path_start] + path[: index + 1]


def collect_script(
    text: str, url: str, collect: Collector, *, relative: bool = False, module: bool = True
) -> None:
    """Add a script's links to ``collect``: its module graph (requisites, tagged
    ``js-module``), its URL strings (pages, ``js-string``) and, with ``relative``, its relative
    path strings (pages, ``js-relative``). ``url`` is what relative specifiers resolve
    against: the script's own URL, or the page's base for an inline script."""
    if module:
        _collect_module_graph(text, url, collect)
    for value in string_urls(text):
        collect.page(value, Extractor.JS_STRING)
        if collect.truncated:
            return
    if relative:
        for value in relative_strings(text):
            collect.page(value, Extractor.JS_RELATIVE)
            if collect.truncated:
                return


def import_map(text: str, collect: Collector) -> None:
    """An import map's addresses (HTML Standard, "import maps": ``imports`` and ``scopes``
    map specifiers to URLs, relative to the document's base): requisites, since the modules
    that import those specifiers need them."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return
    if not isinstance(parsed, dict):
        return
    tables = [parsed.get("imports")]
    scopes = parsed.get("scopes")
    if isinstance(scopes, dict):
        tables += list(scopes.values())
    for table in tables:
        if isinstance(table, dict):
            for address in table.values():
                if isinstance(address, str) and not address.endswith("/"):
                    collect.requisite(address, Extractor.JS_MODULE)


def _collect_module_graph(text: str, url: str, collect: Collector) -> None:
    for spec in module_specifiers(text):
        collect.requisite(spec, Extractor.JS_MODULE)
    if "__vite__mapDeps" in text:
        for dependency in vite_dependencies(text):
            collect.add_requisite_ref(base_for(dependency, url), dependency, Extractor.JS_MODULE)
    if ".u=" in text or ".u =" in text or "jsonpScriptSrc" in text or "miniCssF" in text:
        public_path, files = webpack_chunks(text)
        for file in files:
            if public_path is not None and public_path != "auto":
                collect.add_requisite_ref(url, public_path + file, Extractor.JS_MODULE)
            else:
                collect.add_requisite_ref(base_for(file, url), file, Extractor.JS_MODULE)


def extract_script(
    body: bytes, url: str, *, max_links: int = MAX_LINKS, relative: bool = False
) -> Links:
    """The links of a script fetched from ``url`` (already content-decoded)."""
    collect = Collector(url, url, max_links, Extractor.JS_MODULE)
    collect_script(body.decode("utf-8", "replace"), url, collect, relative=relative)
    return collect.links()


__all__ = [
    "JS_TYPES",
    "base_for",
    "collect_script",
    "extract_script",
    "import_map",
    "is_url_string",
    "module_specifiers",
    "relative_strings",
    "string_urls",
    "vite_dependencies",
    "webpack_chunks",
]
