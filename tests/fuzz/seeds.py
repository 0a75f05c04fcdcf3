"""Writes the seed corpora ``tests/fuzz/corpus/TARGET``: ``python -m tests.fuzz.seeds [TARGET...]``.

Seeds come from the suite itself: the hostile and ordinary cases its tests spell out as string
and bytes literals (read with :mod:`ast`, so a new hostile case in a test becomes a seed the next
time this runs), the sample site's pages, and WARC files written the way the suite writes them.
Each target keeps the literals that look like its format; sizes are capped so the corpora stay a
few hundred KB in all.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from archiver.commands.sample import SITE_CSS, THEME_CSS, site_resources
from archiver.index.cdxj import scan_warc
from tests.fuzz.harness import NAMES, load
from tests.fuzz.targets.warc import seed_files
from tests.fuzz.targets.warcwalk import seed_files as warcwalk_seed_files
from tests.warc.test_reader import standard

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
MAX_SEEDS = 80
MAX_SEED_BYTES = 4096


def literals(*paths: str) -> Iterator[bytes]:
    """Every str and bytes literal of the given test files (globs under tests/), as bytes."""
    for pattern in paths:
        for path in sorted((ROOT / "tests").glob(pattern)):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
                    value = node.value
                    yield (
                        value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
                    )


def _has(*needles: bytes) -> Callable[[bytes], bool]:
    return lambda value: any(n in value.lower() for n in needles)


def _sample_site() -> Iterator[tuple[str, bytes]]:
    for path, resource in site_resources().items():
        yield path, resource.body
    yield "/site.css", SITE_CSS
    yield "/theme.css", THEME_CSS


def _documents(name: str) -> Iterator[bytes]:
    if name == "response":
        yield from (v for v in literals("**/*.py") if v.startswith(b"HTTP/1."))
    elif name == "chunked":
        yield from literals("fetch/test_chunked.py", "commands/test_verify_chunked.py")
        for value in literals("**/*.py"):
            if value.startswith(b"HTTP/1.") and b"chunked" in value.lower():
                yield value.split(b"\r\n\r\n", 1)[-1]
    elif name == "request":
        yield from (v for v in literals("**/*.py") if v.startswith((b"GET ", b"POST ", b"PUT ")))
        yield (
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n0\r\n\r\n"
        )
    elif name in ("html", "css", "srcset"):
        needle = {"html": (b"<",), "css": (b"url(", b"@import"), "srcset": (b" 1x", b"w,")}
        yield from filter(_has(*needle[name]), literals("extract/test_links.py", "**/site.py"))
        for path, body in _sample_site():
            if (name == "html" and path.endswith(("/", ".html"))) or (
                name == "css" and path.endswith(".css")
            ):
                yield body
    elif name == "urls":
        for value in literals("test_urls.py", "extract/test_links.py", "policy/test_scope.py"):
            if len(value) < 200 and (b"://" in value or value[:1] in (b"/", b"?", b"#", b".")):
                yield b"\x00" + value  # the first base, then the reference
    elif name == "robots":
        yield from filter(_has(b"user-agent", b"disallow"), literals("policy/test_robots.py"))
    elif name == "sitemap":
        for value in filter(_has(b"<urlset", b"<sitemapindex", b"http"), literals("policy/*.py")):
            yield value
            yield gzip.compress(value, mtime=0)
    elif name == "cdxj":
        yield from filter(_has(b'{"url"', b"!meta"), literals("**/*.py"))
        yield _index_of_seed_warc()
    elif name == "cookies":
        yield from filter(_has(b"\ttrue\t", b"\tfalse\t"), literals("fetch/test_cookies.py"))
    elif name == "ignores":
        for value in literals("policy/test_ignores.py", "run/*.py"):
            if b"\n" in value and (b"(" in value or b"\\" in value or b"^" in value):
                yield value
        yield b"(?i)/calendar/\n^https?://[^/]+/search\n# a comment\n(unclosed\n"
    elif name == "warc":
        yield from seed_files()
    elif name == "feed":
        feeds = (b"<rss", b"<feed", b"<rdf:rdf", b"<opml")
        yield from filter(_has(*feeds), literals("extract/test_extractors.py", "run/*.py"))
    elif name == "json":
        for value in literals("extract/test_extractors.py", "run/test_extractors_crawl.py"):
            if value[:1] in (b"{", b"["):
                yield value
        yield b'{"items": [{"url": "/a.html"}, "https:\\/\\/example.com\\/b", "\\u002Fc"]}'
    elif name == "dash":
        yield from filter(_has(b"<mpd"), literals("extract/test_extractors.py", "run/*.py"))
        yield (  # one the oracle reads: segment lists, BaseURL at each level, no template
            b'<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><BaseURL>media/</BaseURL>'
            b'<Period><AdaptationSet><BaseURL>v/</BaseURL><Representation id="a" bandwidth="900">'
            b'<SegmentList duration="2"><Initialization sourceURL="i.mp4"/>'
            b'<SegmentURL media="1.m4s"/><SegmentURL media="2.m4s"/></SegmentList>'
            b'</Representation><Representation id="b" '
            b'bandwidth="90000000"><BaseURL>hi.mp4</BaseURL><SegmentBase/></Representation>'
            b"</AdaptationSet></Period></MPD>"
        )
    elif name == "hls":
        yield from filter(_has(b"#extm3u"), literals("extract/test_extractors.py", "run/*.py"))
    elif name == "pdf":
        from tests.extract.test_extractors import annotated_pdf, text_pdf  # noqa: PLC0415

        yield b"http://example.com/a.html\n/relative\nhttps://example.com/b?c=d"
        yield annotated_pdf("http://example.com/a.html", "/b", pages=2)
        yield text_pdf("see http://example.com/t.html")
    elif name == "warcwalk":
        yield from warcwalk_seed_files()


def _index_of_seed_warc() -> bytes:
    """The CDXJ archiver writes for a small WARC of the suite's (tests/warc/test_reader.py)."""
    with tempfile.TemporaryDirectory() as scratch:
        path = standard().write(Path(scratch))
        return "".join(line + "\n" for line in scan_warc(path)).encode()


def write(name: str) -> int:
    target = load(name)
    out = CORPUS / name
    out.mkdir(parents=True, exist_ok=True)
    seen: set[bytes] = set()
    for document in _documents(name):
        data = target.seed(document)[:MAX_SEED_BYTES]
        if data in seen or not document:
            continue
        seen.add(data)
        (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
        if len(seen) >= MAX_SEEDS:
            break
    return len(seen)


def main(argv: list[str]) -> None:
    for name in argv or NAMES:
        print(f"{name}: {write(name)} seeds")


if __name__ == "__main__":
    main(sys.argv[1:])
