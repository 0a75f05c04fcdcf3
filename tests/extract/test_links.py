"""Link extraction from HTML and CSS, and Content-Encoding decoding for it (archiver.extract.links).

Every test compares exact lists: the crawler queues exactly what comes out, so an extra, a
missing or a differently spelled URL is a different crawl.
"""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import pytest

from archiver import urls
from archiver.extract.decoding import ContentDecodingError, decode_content
from archiver.extract.found import link_limit
from archiver.extract.links import (
    Links,
    css_refs,
    extract,
    extract_css,
    extract_html,
    refresh_url,
    srcset_urls,
)

PAGE = "https://example.com/dir/page.html"
E = "https://example.com"


def html(markup: str, url: str = PAGE) -> Links:
    return extract_html(markup.encode("utf-8"), url)


def found(markup: str, url: str = PAGE) -> tuple[list[str], list[str]]:
    links = html(markup, url)
    return list(links.pages), list(links.requisites)


# ---------------------------------------------------------------------------------------------
# Element and attribute kinds


@pytest.mark.parametrize(
    ("markup", "pages", "requisites"),
    [
        ('<a href="a.html">x</a>', [f"{E}/dir/a.html"], []),
        ('<map><area href="/area" shape=rect></map>', [f"{E}/area"], []),
        ('<a name="top">no href</a><a href>empty</a>', [], []),
        ('<link rel="canonical" href="/canon">', [f"{E}/canon"], []),
        ('<link rel="alternate" type="application/rss+xml" href="/feed">', [f"{E}/feed"], []),
        (
            '<link rel="next" href="p2"><link rel="prev" href="p0">',
            [f"{E}/dir/p2", f"{E}/dir/p0"],
            [],
        ),
        ("<link href=/norel>", [f"{E}/norel"], []),
        ('<link rel="stylesheet" href="s.css">', [], [f"{E}/dir/s.css"]),
        ('<link rel="Alternate StyleSheet" href="alt.css">', [], [f"{E}/dir/alt.css"]),
        ('<link rel="shortcut icon" href="/favicon.ico">', [], [f"{E}/favicon.ico"]),
        ('<link rel="apple-touch-icon" href="/t.png">', [], [f"{E}/t.png"]),
        ('<link rel="apple-touch-icon-precomposed" href="/tp.png">', [], [f"{E}/tp.png"]),
        ('<link rel="mask-icon" href="/m.svg" color="#000">', [], [f"{E}/m.svg"]),
        ('<link rel="preload" as="font" href="/f.woff2">', [], [f"{E}/f.woff2"]),
        ('<link rel="modulepreload" href="/m.js">', [], [f"{E}/m.js"]),
        ('<link rel="prefetch" href="/next.js">', [], [f"{E}/next.js"]),
        ('<link rel="manifest" href="/app.webmanifest">', [], [f"{E}/app.webmanifest"]),
        ('<link rel="image_src" href="/thumb.jpg">', [], [f"{E}/thumb.jpg"]),
        (
            '<link rel="preload" as="image" imagesrcset="/w1.jpg 1x, /w2.jpg 2x">',
            [],
            [f"{E}/w1.jpg", f"{E}/w2.jpg"],
        ),
        ('<link rel="preconnect" href="https://cdn.example.net">', [], []),
        ('<link rel="dns-prefetch" href="//cdn.example.net">', [], []),
        ('<meta http-equiv="refresh" content="5; url=/moved">', [f"{E}/moved"], []),
        ('<meta http-equiv="Refresh" content="0;URL=\'/q\'">', [f"{E}/q"], []),
        ('<meta http-equiv="refresh" content="30">', [], []),
        ('<meta name="refresh" content="0; url=/no">', [], []),
        ('<img src="i.png" alt="">', [], [f"{E}/dir/i.png"]),
        (
            '<img src="a.png" srcset="b.png 2x, c.png 3x">',
            [],
            [f"{E}/dir/a.png", f"{E}/dir/b.png", f"{E}/dir/c.png"],
        ),
        (
            '<img src="placeholder.gif" data-src="/lazy.jpg" data-srcset="/l1.jpg 1x, /l2.jpg 2x">',
            [],
            [f"{E}/dir/placeholder.gif", f"{E}/lazy.jpg", f"{E}/l1.jpg", f"{E}/l2.jpg"],
        ),
        (
            '<picture><source srcset="/p.webp" type="image/webp"><img src="/p.jpg"></picture>',
            [],
            [f"{E}/p.webp", f"{E}/p.jpg"],
        ),
        ('<video><source src="/v.mp4" type="video/mp4"></video>', [], [f"{E}/v.mp4"]),
        # an inline script's root-relative string is a page (js-string); a src script's text
        # is ignored, as browsers ignore it
        (
            '<script src="/app.js">var y = "/ignored";</script><script>var x = "/s.js";</script>',
            [f"{E}/s.js"],
            [f"{E}/app.js"],
        ),
        ('<script type="module" src="/mod.js"></script>', [], [f"{E}/mod.js"]),
        ('<iframe src="/frame.html"></iframe>', [], [f"{E}/frame.html"]),
        (
            '<frameset><frame src="/left.html"><frame src="/right.html"></frameset>',
            [],
            [f"{E}/left.html", f"{E}/right.html"],
        ),
        (
            '<video src="/movie.mp4" poster="/poster.jpg"><track src="/subs.vtt"></video>',
            [],
            [f"{E}/movie.mp4", f"{E}/poster.jpg", f"{E}/subs.vtt"],
        ),
        ('<audio src="/sound.mp3"></audio>', [], [f"{E}/sound.mp3"]),
        ('<embed src="/anim.swf">', [], [f"{E}/anim.swf"]),
        ('<object data="/doc.pdf" type="application/pdf"></object>', [], [f"{E}/doc.pdf"]),
        (
            '<input type="image" src="/go.png"><input type="text" src="/no.png">',
            [],
            [f"{E}/go.png"],
        ),
        ('<input TYPE="IMAGE" src="/go2.png">', [], [f"{E}/go2.png"]),
        ('<body background="/bg.gif"><p>x</p></body>', [], [f"{E}/bg.gif"]),
        (
            '<table background="/t.gif"><tr><th background="/th.gif">h</th>'
            '<td background="/td.gif">d</td></tr></table>',
            [],
            [f"{E}/t.gif", f"{E}/th.gif", f"{E}/td.gif"],
        ),
        ('<p background="/no.gif">not a background element</p>', [], []),
        ('<svg><image href="/svg2.png"/></svg>', [], [f"{E}/svg2.png"]),
        ('<svg><image xlink:href="/svg11.png"/></svg>', [], [f"{E}/svg11.png"]),
        ('<svg><use href="/sprite.svg#icon"/></svg>', [], [f"{E}/sprite.svg"]),
        ('<svg><use xlink:href="/old-sprite.svg#i"/></svg>', [], [f"{E}/old-sprite.svg"]),
        ('<svg><use href="#local"/></svg>', [], []),
        ('<svg><a xlink:href="/svg-link">x</a></svg>', [f"{E}/svg-link"], []),
        ('<div style="background: url(/bg.png) no-repeat">x</div>', [], [f"{E}/bg.png"]),
        (
            "<span style=\"background-image:url('a.png'), url( &quot;b.png&quot; )\">x</span>",
            [],
            [f"{E}/dir/a.png", f"{E}/dir/b.png"],
        ),
        (
            '<a href="/styled" style="background:url(/a-bg.png)">x</a>',
            [f"{E}/styled"],
            [f"{E}/a-bg.png"],
        ),
        (
            '<style>@import "/imp.css"; @import url(/imp2.css) screen;'
            ".a{background:url(/s.png)}</style>",
            [],
            [f"{E}/imp.css", f"{E}/imp2.css", f"{E}/s.png"],
        ),
        ("<noscript><img src=/ns.gif></noscript>", [], [f"{E}/ns.gif"]),
    ],
)
def test_element_kinds(markup: str, pages: list[str], requisites: list[str]) -> None:
    assert found(markup) == (pages, requisites)


def test_document_order_and_kinds_together() -> None:
    markup = """<!DOCTYPE html>
    <html><head><title>T</title>
    <link rel=stylesheet href=/main.css>
    <script src=/app.js></script>
    <link rel=canonical href=/canonical>
    </head><body>
    <a href=/one>1</a>
    <img src=/one.png>
    <a href=/two>2</a>
    <a href=/one>again</a>
    <img src=/one.png>
    </body></html>"""
    assert found(markup) == (
        [f"{E}/canonical", f"{E}/one", f"{E}/two"],
        [f"{E}/main.css", f"{E}/app.js", f"{E}/one.png"],
    )


def test_url_both_page_and_requisite_is_only_a_requisite() -> None:
    markup = '<a href="/img.png">view</a><a href="/x">x</a><img src="/img.png">'
    assert found(markup) == ([f"{E}/x"], [f"{E}/img.png"])
    markup = '<img src="/img.png"><a href="/img.png">view</a>'
    assert found(markup) == ([], [f"{E}/img.png"])


def test_own_url_is_skipped() -> None:
    markup = (
        '<a href="">self</a><a href="page.html">self</a><a href="#top">self</a>'
        '<a href="https://EXAMPLE.com:443/dir/page.html#x">self</a><img src="page.html">'
    )
    assert found(markup) == ([], [])


def test_fragments_are_dropped() -> None:
    markup = '<a href="/a#one">1</a><a href="/a#two">2</a><img src="/i.png#frag">'
    assert found(markup) == ([f"{E}/a"], [f"{E}/i.png"])


def test_a_space_before_the_fragment_is_kept_as_urls_resolve_keeps_it() -> None:
    """Found by fuzzing (every link attribute the walk reads, resolved by urls.resolve, must
    be in the lists): cutting the fragment before resolving made "/b #x" a reference ending
    in a space, which resolving strips; the URL Standard (and urls.resolve) keeps it."""
    markup = '<a href="/b #x">1</a><a href="/c\x0b#y">2</a>'
    assert found(markup) == ([f"{E}/b%20", f"{E}/c%0B"], [])


@pytest.mark.parametrize(
    "ref",
    [
        "javascript:void(0)",
        " JavaScript:alert(1)",
        "mailto:someone@example.com",
        "data:image/png;base64,iVBORw0KGgo=",
        "tel:+15551234567",
        "ftp://example.com/file",
        "about:blank",
        "http://[::1",
    ],
)
def test_unfetchable_references_are_ignored(ref: str) -> None:
    assert found(f'<a href="{ref}">x</a><img src="{ref}">') == ([], [])


def test_spaces_and_non_ascii_are_percent_encoded() -> None:
    markup = (
        '<a href=" /with space/file name.html ">x</a>'
        '<a href="/café/naïve?q=ü">y</a>'
        '<a href="https://faß.de/straße">z</a>'
        '<img src="/日本語.png">'
    )
    assert found(markup) == (
        [
            f"{E}/with%20space/file%20name.html",
            f"{E}/caf%C3%A9/na%C3%AFve?q=%C3%BC",
            "https://xn--fa-hia.de/stra%C3%9Fe",
        ],
        [f"{E}/%E6%97%A5%E6%9C%AC%E8%AA%9E.png"],
    )


def test_cr_lf_never_reach_the_output() -> None:
    markup = (
        '<a href="/a%0D%0AWARC-Type:%20x">encoded</a>'
        '<a href="/b\r\nWARC-Type: y">raw</a>'
        '<img src="/c\n.png">'
        '<a href="/d&#13;&#10;X-Injected: 1">entities</a>'
    )
    links = html(markup)
    assert list(links.pages) == [
        f"{E}/a%0D%0AWARC-Type:%20x",
        f"{E}/bWARC-Type:%20y",
        f"{E}/dX-Injected:%201",
    ]
    assert list(links.requisites) == [f"{E}/c.png"]
    for url in (*links.pages, *links.requisites):
        assert "\r" not in url and "\n" not in url and " " not in url


def test_relative_references_resolve_the_whatwg_way() -> None:
    markup = (
        '<a href="../up">1</a><a href="./same">2</a><a href="//other.example/x">3</a>'
        '<a href="?q=1">4</a><a href="/a/./b/../c">5</a><a href="\\back\\slash">6</a>'
        '<a href="HTTPS://EXAMPLE.COM:443/Case">7</a>'
    )
    assert found(markup) == (
        [
            f"{E}/up",
            f"{E}/dir/same",
            "https://other.example/x",
            f"{E}/dir/page.html?q=1",
            f"{E}/a/c",
            f"{E}/back/slash",
            f"{E}/Case",
        ],
        [],
    )


# ---------------------------------------------------------------------------------------------
# <base href>


def test_base_href_absolute() -> None:
    links = html('<head><base href="https://cdn.example.org/root/"></head><a href="x">x</a>')
    assert links.base == "https://cdn.example.org/root/"
    assert list(links.pages) == ["https://cdn.example.org/root/x"]


def test_base_href_relative_resolves_against_document() -> None:
    links = html('<base href="/other/"><a href="x">x</a><img src="../i.png">')
    assert links.base == f"{E}/other/"
    assert (list(links.pages), list(links.requisites)) == ([f"{E}/other/x"], [f"{E}/i.png"])


def test_first_base_with_href_wins_even_after_links() -> None:
    markup = (
        '<a href="early">e</a><base target="_blank"><base href="/first/">'
        '<base href="/second/"><a href="late">l</a>'
    )
    links = html(markup)
    assert links.base == f"{E}/first/"
    assert list(links.pages) == [f"{E}/first/early", f"{E}/first/late"]


@pytest.mark.parametrize("href", ["javascript:alert(1)", "data:text/html,x", "http://[bad"])
def test_unusable_base_href_falls_back_to_document_url(href: str) -> None:
    links = html(f'<base href="{href}"><a href="x">x</a>')
    assert links.base == PAGE
    assert list(links.pages) == [f"{E}/dir/x"]


def test_no_base_means_document_url() -> None:
    assert html('<a href="x">x</a>').base == PAGE


# ---------------------------------------------------------------------------------------------
# srcset


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a.jpg", ["a.jpg"]),
        ("a.jpg 1x, b.jpg 2x", ["a.jpg", "b.jpg"]),
        ("a.jpg 480w,b.jpg 800w", ["a.jpg", "b.jpg"]),
        ("img.php?a=1,2 1x, img.php?a=3,4 2x", ["img.php?a=1,2", "img.php?a=3,4"]),
        ("a.jpg,b.jpg", ["a.jpg,b.jpg"]),  # no whitespace: one URL, as the standard says
        ("a.jpg, b.jpg", ["a.jpg", "b.jpg"]),
        ("a.jpg,, ,b.jpg 2x,", ["a.jpg", "b.jpg"]),
        ("  \n a.jpg   1.5x  ,\t b.jpg  ", ["a.jpg", "b.jpg"]),
        ("a.jpg 100w 50h (x, y), b.jpg", ["a.jpg", "b.jpg"]),
        ("a.jpg (unclosed, b.jpg", ["a.jpg"]),
        ("", []),
        (" , ,", []),
    ],
)
def test_srcset_urls(value: str, expected: list[str]) -> None:
    assert list(srcset_urls(value)) == expected


def test_srcset_in_html_with_commas_and_descriptors() -> None:
    markup = '<img srcset="/img.php?a=1,2 1x, /img.php?a=3,4 480w,/plain.jpg">'
    assert found(markup) == (
        [],
        [f"{E}/img.php?a=1,2", f"{E}/img.php?a=3,4", f"{E}/plain.jpg"],
    )


# ---------------------------------------------------------------------------------------------
# meta refresh


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5; url=/moved", "/moved"),
        ("0;URL=/x", "/x"),
        ("0 ; Url = 'quoted.html' trailing", "quoted.html"),
        ('0; url="dq.html', "dq.html"),
        ("0, url=comma", "comma"),
        ("0; /bare", "/bare"),
        ("0 bare", "bare"),
        (".5; url=/dot", "/dot"),
        ("1.5; url=/frac", "/frac"),
        ("0; url.html", "url.html"),
        ("0; up.html", "up.html"),
        ("0; urlx=/y", "urlx=/y"),
        ("5", None),
        ("5; ", None),
        ("", None),
        ("soon; url=/x", None),
        ("5x; url=/x", None),
    ],
)
def test_refresh_url(content: str, expected: str | None) -> None:
    assert refresh_url(content) == expected


# ---------------------------------------------------------------------------------------------
# CSS


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ("a{background:url(x.png)}", ["x.png"]),
        ("a{background:url('x.png')}", ["x.png"]),
        ('a{background:url("x.png")}', ["x.png"]),
        ("a{background:URL(  x.png  )}", ["x.png"]),
        ("a{background:url(\n 'x.png'\t)}", ["x.png"]),
        ("a{background:url()}", []),
        ("a{background:url('')}", []),
        ("@import 'a.css';", ["a.css"]),
        ('@import "b.css" screen;', ["b.css"]),
        ("@import url(c.css) print;", ["c.css"]),
        ('@IMPORT url("d.css");', ["d.css"]),
        ("/* url(no.png) */ a{b:url(yes.png)} /* @import 'no.css'; */", ["yes.png"]),
        ("a{b:url(yes.png)} /* unterminated url(no.png)", ["yes.png"]),
        ('a{content:"url(no.png)"} b{c:url(yes.png)}', ["yes.png"]),
        ("a{b:url(sp\\ ace.png)}", ["sp ace.png"]),
        ("a{b:url('q\\'uote.png')}", ["q'uote.png"]),
        ("a{b:url(\\66 ont.woff)}", ["font.woff"]),
        ("a{b:url('\\000066 ont.woff')}", ["font.woff"]),
        ("a{b:url('line\\\ncontinued.png')}", ["linecontinued.png"]),
        ("a{b:url(bad url.png)}", []),
        ("a{b:myurl(no.png)}", []),
        (
            '@font-face{src:url(f.woff2) format("woff2"), url(f.woff) format("woff")}',
            ["f.woff2", "f.woff"],
        ),
        (
            'a{b:image-set("a.png" 1x, url(b.png) 2x, "c.avif" type("image/avif"))}',
            ["a.png", "b.png", "c.avif"],
        ),
        ("a{b:-webkit-image-set('w.png' 1x)}", ["w.png"]),
        # found by fuzzing against tinycss2: at the end of the file (a stylesheet cut short)
        # a url() or string is still a token (CSS Syntax, consume a url token / a string token)
        ("a{b:url(cut.png", ["cut.png"]),
        ("a{b:url('cut.png", ["cut.png"]),
        ('@import "cut.css', ["cut.css"]),
        # found by fuzzing: CSS whitespace and newlines are not Python's \s
        ("a{b:url(nb\xa0sp.png)}", ["nb\xa0sp.png"]),
        ("a{b:url(ctl\x01.png)}", []),  # a non-printable code point makes a bad url
        ("a{b:url('cr\rno.png')}\nc{d:url(yes.png)}", ["yes.png"]),
        # an unclosed string runs to the end of its line, or of the file (CSS Syntax)
        ("a{content:'open\nb{c:url(yes.png)}", ["yes.png"]),
        ("a{content:'open b{c:url(no.png)}", []),
        ("a{b:url(bad(url(no.png)} c{d:url(yes.png)}", ["yes.png"]),
        ("a{b:\ufffdurl(no.png)} c{\\:url(no.png)}", []),  # the functions "\ufffdurl(", ":url("
        ('a{content:\\"} b{c:url(yes.png)}', ["yes.png"]),  # an escaped quote is no string
        ("a{content:\\'} b{c:url(yes.png)}", ["yes.png"]),
        # found by fuzzing: an escaped backslash before a quote leaves the quote a quote
        ('a{content:\\\\"no url(no.png)"} b{c:url(yes.png)}', ["yes.png"]),
        ("a{b:@url(no.png) #url(no.png)}", []),  # an at-keyword, a hash
        ("a{b:d\\url(no.png)}", []),  # the function "durl("
        ('a\\@import "no.css";', []),  # an escaped "@" starts no at-keyword
        ("a{b:url(bad(url(no.png\\", []),  # a bad url to the end, a backslash last
        ("@import 'cut.css\\", ["cut.css"]),  # a string to the end, a backslash last
        ("a{b:c\\/* url(yes.png) */}", ["yes.png"]),  # an escaped "/" starts no comment
        ("a{b:url('hex\\41\nA.png')}", ["hexAA.png"]),  # a hex escape takes the newline
        ('a{b:image-set("cut.png" 1x', ["cut.png"]),  # the end of the input closes a function
        ("a{b:type(x url(no.png))}", []),
        ("a{b:url(cut.png\\", ["cut.png\ufffd"]),  # a backslash at the end escapes EOF
        ('a{b:image-set("a.png" type("image/x)y"), "b.png" 2x)}', ["a.png", "b.png"]),
        ("a{b:url('crlf\\\r\ncontinued.png')}", ["crlfcontinued.png"]),
        ("a{b:url(\x00)}", ["\ufffd"]),
        # found by fuzzing: an escaped backslash ends the name before a space, so the url()
        # after it is one; an escaped space, or a hex escape and its space, joins it to a name
        ("\\\\ url(yes.png)", ["yes.png"]),
        ("a\\ url(no.png) b\\75 url(no.png)", []),
        ("a\\\nurl(yes.png)", ["yes.png"]),  # a backslash before a newline escapes nothing
    ],
)
def test_css_refs(css: str, expected: list[str]) -> None:
    assert list(css_refs(css)) == expected


def test_extract_css_resolves_against_the_stylesheet_url() -> None:
    css = b"""@charset "utf-8";
    @import "reset.css";
    @import url('../fonts/fonts.css') screen;
    /* background: url(commented.png) */
    .logo { background: url(../img/logo.png) no-repeat; }
    .x { background: url("data:image/png;base64,AAAA"); }
    .y { background: url(/abs.png#frag); }
    .z { background: url(../img/logo.png); }
    """
    links = extract_css(css, "https://example.com/static/css/site.css")
    assert links == Links(
        pages=(),
        requisites=(
            "https://example.com/static/css/reset.css",
            "https://example.com/static/fonts/fonts.css",
            "https://example.com/static/img/logo.png",
            "https://example.com/abs.png",
        ),
        base="https://example.com/static/css/site.css",
        extractor="css",
    )


def test_extract_css_encodings() -> None:
    css = '@charset "iso-8859-1"; a{b:url(/café.png)}'.encode("latin-1")
    assert extract_css(css, PAGE).requisites == (f"{E}/caf%C3%A9.png",)
    bom = b"\xef\xbb\xbfa{b:url(/bom.png)}"
    assert extract_css(bom, PAGE).requisites == (f"{E}/bom.png",)
    broken = b"a{b:url(/ok.png)} \xff\xfe\x00 c{d:url(/ok2.png)}"
    assert extract_css(broken, PAGE).requisites == (f"{E}/ok.png", f"{E}/ok2.png")
    unknown = b'@charset "no-such-codec"; a{b:url(/u.png)}'
    assert extract_css(unknown, PAGE).requisites == (f"{E}/u.png",)


def test_extract_css_truncates() -> None:
    css = "".join(f".c{i}{{background:url(/i{i}.png)}}" for i in range(100)).encode()
    links = extract_css(css, PAGE, max_links=10)
    assert links.truncated
    assert links.requisites == tuple(f"{E}/i{i}.png" for i in range(10))


# ---------------------------------------------------------------------------------------------
# Encodings and bad input


def test_latin1_page_with_meta_charset() -> None:
    body = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">'
        '</head><body><a href="/café">café</a><a href="/plain">p</a></body></html>'
    ).encode("latin-1")
    assert list(extract_html(body, PAGE).pages) == [f"{E}/caf%C3%A9", f"{E}/plain"]


def test_latin1_page_without_declaration_is_read_as_windows_1252() -> None:
    body = '<title>Déjà vu</title><a href="/résumé.html">r</a><a href="/ok">ok</a>'.encode(
        "latin-1"
    )
    links = extract_html(body, PAGE)
    assert list(links.pages) == [f"{E}/r%C3%A9sum%C3%A9.html", f"{E}/ok"]
    assert links.title == "Déjà vu"


def test_utf8_page_with_a_stray_byte_stays_utf8() -> None:
    body = '<a href="/café">x</a>'.encode() + b"<p>\xff</p>" + b'<a href="/ok">ok</a>'
    assert list(extract_html(body, PAGE).pages) == [f"{E}/caf%C3%A9", f"{E}/ok"]


def test_shift_jis_page() -> None:
    body = '<meta charset="shift_jis"><a href="/日本">x</a><a href="/ascii">y</a>'.encode(
        "shift_jis"
    )
    assert list(extract_html(body, PAGE).pages) == [f"{E}/%E6%97%A5%E6%9C%AC", f"{E}/ascii"]


def test_utf8_bom() -> None:
    body = b"\xef\xbb\xbf" + '<a href="/ü">x</a>'.encode()
    assert list(extract_html(body, PAGE).pages) == [f"{E}/%C3%BC"]


def test_utf16_bom() -> None:
    body = '\ufeff<a href="/ü16">x</a>'.encode("utf-16-le")
    assert list(extract_html(body, PAGE).pages) == [f"{E}/%C3%BC16"]


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00\x00\x00",
        b"<<<>>>",
        b"<a href",
        b'<a href="/unclosed',
        b"<html><body><a href=/x><div></p></span></table><a href=/y>",
        b"\xff\xfe\xfd garbage \x80\x81",
        b"<svg><foreignObject><a href=/in-svg>",
        b'<img src="/' + b"a" * 2_000_000 + b'">',
        b'<a href="' + "é".encode() * 100_000 + b'">',
        b"<style>" + b"url(" * 100_000 + b"</style>",
        b'<div style="' + b"url(" * 100_000 + b'">',
        b'<img srcset="' + b"," * 100_000 + b'">',
        b'<meta http-equiv=refresh content="' + b"0" * 100_000 + b'">',
        b"<style>url(" + b"\\66" * 50_000 + b"</style>",
        b"<style>image-set(" + b"(" * 50_000 + b"</style>",
        b"<style>" + b"/*" * 50_000 + b"</style>",
    ],
)
def test_bad_input_never_raises(body: bytes) -> None:
    links = extract_html(body, PAGE)
    for url in (*links.pages, *links.requisites):
        assert url.startswith("https://") and url.isascii()


def test_malformed_html_still_yields_links() -> None:
    body = (
        b"<html><body><a href=/one>1<div><a href='/two'>2</p></span><img src=/i.png <a href=/three>"
    )
    links = extract_html(body, PAGE)
    assert list(links.pages) == [f"{E}/one", f"{E}/two"]
    assert list(links.requisites) == [f"{E}/i.png"]


def test_nul_bytes() -> None:
    body = b'<a href="/a\x00b">x</a>\x00<img src="/i.png">'
    links = extract_html(body, PAGE)
    assert list(links.pages) == [f"{E}/a%EF%BF%BDb"]
    assert list(links.requisites) == [f"{E}/i.png"]


def test_absurdly_long_reference_is_skipped() -> None:
    long_ref = "/" + "a" * 100_000
    links = html(f'<a href="{long_ref}">x</a><a href="/short">y</a>')
    assert list(links.pages) == [f"{E}/short"]


def test_huge_page_stops_at_max_links() -> None:
    body = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(100_000)).encode()
    links = extract_html(body, PAGE)
    assert links.truncated
    assert len(links.pages) + len(links.requisites) == 10_000
    assert links.pages == tuple(f"{E}/p/{i}" for i in range(10_000))


def test_no_limit_keeps_every_link() -> None:
    """``--max-links-per-page 0`` (``link_limit(None)``): no cut, in HTML and CSS alike."""
    body = "".join(f'<a href="/p/{i}">{i}</a>' for i in range(20_000)).encode()
    links = extract_html(body, PAGE, max_links=link_limit(None))
    assert not links.truncated and len(links.pages) == 20_000
    css = "".join(f"a{i}{{background:url(/i/{i}.png)}}" for i in range(20_000)).encode()
    assert len(extract_css(css, PAGE, max_links=link_limit(None)).requisites) == 20_000


def test_exactly_max_links_is_not_truncated() -> None:
    body = "".join(f'<a href="/p/{i}">{i}</a><a href="/p/{i}">dup</a>' for i in range(5)).encode()
    links = extract_html(body, PAGE, max_links=5)
    assert not links.truncated
    assert len(links.pages) == 5


def test_truncation_counts_pages_and_requisites() -> None:
    body = b'<a href="/a">a</a><img src="/b.png"><a href="/c">c</a><img src="/d.png">'
    links = extract_html(body, PAGE, max_links=3)
    assert (links.pages, links.requisites, links.truncated) == (
        (f"{E}/a", f"{E}/c"),
        (f"{E}/b.png",),
        True,
    )


# ---------------------------------------------------------------------------------------------
# Title


@pytest.mark.parametrize(
    ("markup", "title"),
    [
        ("<title>  Hello \n\t  world  </title>", "Hello world"),
        ("<title>A &amp; B</title>", "A & B"),
        ("<title>\xa0keeps\xa0nbsp</title>", "\xa0keeps\xa0nbsp"),
        ("<title>first</title><title>second</title>", "first"),
        ("<body><svg><title>tooltip</title></svg><title>late</title>", "late"),
        ("<title>   </title>", None),
        ("<p>no title</p>", None),
    ],
)
def test_title(markup: str, title: str | None) -> None:
    assert html(markup).title == title


# ---------------------------------------------------------------------------------------------
# Resolution shortcuts must agree with urls.resolve


@pytest.mark.parametrize(
    "base",
    [
        "https://example.com/dir/page.html",
        "http://example.com:8080/a/b?q#f",
        "https://user:pw@Example.COM/x/",
        "https://example.com",
    ],
)
@pytest.mark.parametrize(
    "ref",
    [
        "/abs",
        "//other.example/x",
        "/\\evil.example/x",
        "/\t/tabbed.example/x",
        "/a/../b/./c",
        "/?q=1",
        "http:///nohost",
        "http://",
        "https://",
        "https://Host.Example:443/p",
        "http://h/x y",
        "https://[::1]/v6",
        "rel/path",
    ],
)
def test_extraction_matches_urls_resolve(base: str, ref: str) -> None:
    expected = urls.resolve(base, ref)
    for _ in range(2):  # the second time from the memo
        links = extract_html(f'<a href="{ref}">x</a>'.encode(), base)
        own = urls.resolve(base, "")
        assert list(links.pages) == ([expected] if expected and expected != own else [])


# ---------------------------------------------------------------------------------------------
# Content-Encoding

DATA = b"<html><body>" + b"<a href='/x'>hello</a>" * 200 + b"</body></html>"


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize("coding", [None, "", "identity", "none", " Identity "])
def test_decode_identity(coding: str | None) -> None:
    assert decode_content(DATA, coding, limit=10**6) == DATA
    assert decode_content(DATA, coding, limit=10) == DATA[:10]


@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "GZIP", " gzip "])
def test_decode_gzip(coding: str) -> None:
    assert decode_content(gzip.compress(DATA), coding, limit=10**6) == DATA


def test_decode_deflate_zlib_and_raw() -> None:
    assert decode_content(zlib.compress(DATA), "deflate", limit=10**6) == DATA
    assert decode_content(raw_deflate(DATA), "deflate", limit=10**6) == DATA


def test_decode_stacked_codings_in_reverse_order() -> None:
    twice = gzip.compress(gzip.compress(DATA))
    assert decode_content(twice, "gzip, gzip", limit=10**6) == DATA
    # "deflate, gzip": deflate was applied first, so gzip is undone first.
    mixed = gzip.compress(zlib.compress(DATA))
    assert decode_content(mixed, "deflate, gzip", limit=10**6) == DATA
    assert decode_content(mixed, "identity, deflate,gzip", limit=10**6) == DATA


def test_decode_multi_member_gzip() -> None:
    body = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decode_content(body, "gzip", limit=100) == b"first second"
    assert decode_content(body + b"trailing junk", "gzip", limit=100) == b"first second"


def test_decode_limit() -> None:
    assert decode_content(gzip.compress(DATA), "gzip", limit=100) == DATA[:100]
    assert decode_content(zlib.compress(DATA), "deflate", limit=7) == DATA[:7]
    assert decode_content(gzip.compress(DATA), "gzip", limit=0) == b""


def test_decode_truncated_stream_gives_what_was_decoded() -> None:
    data = bytes(range(256)) * 400
    compressed = gzip.compress(data)
    partial = decode_content(compressed[: len(compressed) // 2], "gzip", limit=10**6)
    assert 0 < len(partial) < len(data)
    assert data.startswith(partial)
    assert decode_content(compressed[:5], "gzip", limit=10**6) == b""


@pytest.mark.parametrize(
    ("body", "coding"),
    [
        (b"this is not gzip data at all", "gzip"),
        (gzip.compress(DATA, mtime=0)[:10] + b"\xff" * 50, "gzip"),
        (b"\x00\x01\x02 not deflate \xff\xff\xff\xff", "deflate"),
    ],
    ids=["not-gzip", "gzip-then-junk", "not-deflate"],
)
def test_decode_corrupt_data(body: bytes, coding: str) -> None:
    with pytest.raises(ContentDecodingError, match=f"corrupt {coding} data"):
        decode_content(body, coding, limit=10**6)


@pytest.mark.parametrize("coding", ["br", "zstd", "compress", "x-compress", "gzip, br", "bogus"])
def test_decode_unknown_coding(coding: str) -> None:
    with pytest.raises(ContentDecodingError, match="unsupported content-coding"):
        decode_content(b"whatever", coding, limit=100)


def gzip_bomb(blocks: int) -> bytes:
    """A gzip stream of ``blocks`` MiB of zeros, built cheaply: after a full flush deflate
    starts afresh, so every further MiB of zeros compresses to the same ~1 KB block."""
    mib = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    head = compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert block == compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + block * (blocks - 1)


def test_decode_gzip_bomb_is_bounded() -> None:
    bomb = gzip_bomb(10_000)  # ~10 MB standing for ~10 GiB of zeros
    assert len(bomb) > 10_000_000
    limit = 1 << 20
    tracemalloc.start()
    try:
        out = decode_content(bomb, "gzip", limit=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == bytes(limit)
    assert peak < 3 * limit  # the output (and its copy), not the input again, not gigabytes


def test_decode_stacked_bomb_is_bounded() -> None:
    bomb = gzip.compress(gzip_bomb(200))
    assert decode_content(bomb, "gzip, gzip", limit=5000) == bytes(5000)


# ---------------------------------------------------------------------------------------------
# The dispatcher


def test_extract_html_gzip() -> None:
    body = gzip.compress(b"<title>t</title><a href=/a>a</a><img src=/i.png>")
    links = extract(body, PAGE, "text/html", "gzip")
    assert links == Links((f"{E}/a",), (f"{E}/i.png",), PAGE, "t")


def test_extract_xhtml_and_parameters_tolerated() -> None:
    body = b'<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="/x">x</a></body></html>'
    assert extract(body, PAGE, "application/xhtml+xml", None).pages == (f"{E}/x",)
    assert extract(body, PAGE, "Text/HTML; charset=utf-8", None).pages == (f"{E}/x",)


def test_extract_css() -> None:
    body = zlib.compress(b"a{b:url(i.png)}")
    assert extract(body, PAGE, "text/css", "deflate").requisites == (f"{E}/dir/i.png",)


@pytest.mark.parametrize(
    "content_type", ["image/png", "application/javascript", "application/json", ""]
)
def test_extract_other_types_have_no_links(content_type: str) -> None:
    body = b'<a href="/x">looks like html</a>'
    assert extract(body, PAGE, content_type, "br") == Links((), (), PAGE)


def test_extract_passes_limits_on() -> None:
    body = gzip.compress(b"<a href=/a>a</a><a href=/b>b</a>" + b" " * 1000 + b"<a href=/c>c</a>")
    assert extract(body, PAGE, "text/html", "gzip", max_links=1).pages == (f"{E}/a",)
    assert extract(body, PAGE, "text/html", "gzip", max_decoded=40).pages == (f"{E}/a", f"{E}/b")


def test_extract_raises_for_undecodable_html() -> None:
    with pytest.raises(ContentDecodingError):
        extract(b"brotli bytes", PAGE, "text/html", "br")
