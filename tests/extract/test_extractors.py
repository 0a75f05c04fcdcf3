"""The extractors beyond HTML and CSS (archiver.extract: linkheader, feeds, jsondoc, scripts,
meta, hls, dash, pdf, isolated, dispatch). Every test compares exact lists, with the extractor
each link is tagged with: the crawl queues exactly what comes out, and the log names it.
"""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter
from pypdf.annotations import Link

from archiver.extract.dash import extract_dash, parse_duration
from archiver.extract.dispatch import ExtractOptions, document_kind, extract_document
from archiver.extract.feeds import extract_feed
from archiver.extract.found import Extractor, Links, merge
from archiver.extract.hls import attributes, extract_hls
from archiver.extract.isolated import read_pdf
from archiver.extract.jsondoc import extract_json, is_json_type
from archiver.extract.linkheader import link_header_links, parse_link_header
from archiver.extract.links import extract_html
from archiver.extract.media import MediaLimits, choose
from archiver.extract.pdf import PdfLimits, extract_pdf, text_urls
from archiver.extract.scripts import (
    base_for,
    extract_script,
    module_specifiers,
    string_urls,
    webpack_chunks,
)

E = "https://example.com"


def tagged(links: Links) -> dict[str, str]:
    """Every link with its extractor, pages and requisites marked P/R."""
    out = {f"P {url}": links.extractor_of(url) for url in links.pages}
    out.update({f"R {url}": links.extractor_of(url) for url in links.requisites})
    return out


# ---------------------------------------------------------------------------------------------
# Link header (RFC 8288)


def test_link_header_values_params_and_quoted_commas() -> None:
    value = (
        '</s.css>; rel=preload; as=style, <https://x.example/a,b>; rel="next prev"; '
        'title="a;b,c", </m.js>;rel=modulepreload, <//cdn.example/>; rel=preconnect'
    )
    assert list(parse_link_header(value)) == [
        ("/s.css", {"rel": "preload", "as": "style"}),
        ("https://x.example/a,b", {"rel": "next prev", "title": "a;b,c"}),
        ("/m.js", {"rel": "modulepreload"}),
        ("//cdn.example/", {"rel": "preconnect"}),
    ]


def test_link_header_requisites_pages_and_origins() -> None:
    links = link_header_links(
        ["</s.css>; rel=preload; as=style, </p2>; rel=next", "<//cdn.example/>; rel=preconnect"],
        f"{E}/dir/page",
    )
    assert tagged(links) == {f"R {E}/s.css": "link-header", f"P {E}/p2": "link-header"}


def test_link_header_garbage_reads_what_it_can() -> None:
    assert list(parse_link_header('<a>; rel="unclosed, <b>; rel=x')) == [
        ("a", {"rel": "unclosed, <b>; rel=x"})
    ]
    assert list(parse_link_header("no brackets at all; rel=x")) == []
    assert list(parse_link_header("<open")) == []


# ---------------------------------------------------------------------------------------------
# Feeds


RSS = b"""<?xml version="1.0"?><rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"
xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><link>https://example.com/</link>
<image><url>/logo.png</url></image><itunes:image href="/cover.jpg"/>
<item><link>/a.html</link><guid>/a.html</guid><comments>/a.html#c</comments>
<enclosure url="/a.mp3" length="1" type="audio/mpeg"/></item>
<item><link>/b.html</link><guid isPermaLink="false">tag:1</guid><media:thumbnail url="/b.jpg"/>
<media:player url="/player/b"/></item>
<item><guid>/c.html</guid></item></channel></rss>"""


def test_rss_items_pages_enclosures_and_images_requisites() -> None:
    feed = extract_feed(RSS, f"{E}/feed.xml")
    assert (feed.kind, feed.error) == ("rss", None)
    assert list(feed.links.pages) == [
        f"{E}/",
        f"{E}/a.html",
        f"{E}/b.html",
        f"{E}/player/b",
        f"{E}/c.html",
    ]
    assert list(feed.links.requisites) == [
        f"{E}/logo.png",
        f"{E}/cover.jpg",
        f"{E}/a.mp3",
        f"{E}/b.jpg",
    ]
    assert feed.links.extractor == "feed" and not feed.links.found_by


def test_atom_relations_and_xml_base() -> None:
    atom = b"""<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://example.com/blog/">
    <link rel="self" href="feed.atom"/><link rel="hub" href="https://hub.example/"/>
    <icon>icon.png</icon><logo>/logo.svg</logo><link rel="next" href="?page=2"/>
    <entry><link href="e1.html"/><link rel="enclosure" href="e1.mp4"/>
    <link rel="edit" href="e1/edit"/></entry>
    <entry xml:base="/x/"><link rel="alternate" href="e2"/><content src="e2.txt"/></entry></feed>"""
    feed = extract_feed(atom, f"{E}/feed.atom")
    assert list(feed.links.pages) == [
        f"{E}/blog/?page=2",
        f"{E}/blog/e1.html",
        f"{E}/x/e2",
        f"{E}/x/e2.txt",
    ]
    assert list(feed.links.requisites) == [
        f"{E}/blog/icon.png",
        f"{E}/logo.svg",
        f"{E}/blog/e1.mp4",
    ]


def test_rdf_and_opml() -> None:
    rdf = b"""<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    xmlns="http://purl.org/rss/1.0/"><channel><link>/</link></channel>
    <image><url>/i.gif</url></image><item><link>/one</link></item></rdf:RDF>"""
    feed = extract_feed(rdf, f"{E}/index.rdf")
    assert feed.kind == "RDF"
    assert (list(feed.links.pages), list(feed.links.requisites)) == (
        [f"{E}/", f"{E}/one"],
        [f"{E}/i.gif"],
    )
    opml = (
        b'<opml version="2.0"><body><outline text="x" xmlUrl="/f.xml" htmlUrl="/">'
        b'<outline url="/l"/></outline></body></opml>'
    )
    assert list(extract_feed(opml, f"{E}/list.opml").links.pages) == [
        f"{E}/f.xml",
        f"{E}/",
        f"{E}/l",
    ]


def test_feeds_refuse_dtds_and_non_feeds_and_keep_what_came_before_an_error() -> None:
    bomb = b'<!DOCTYPE rss [<!ENTITY a "aaaa">]><rss><channel><link>&a;</link></channel></rss>'
    refused = extract_feed(bomb, f"{E}/f")
    assert refused.error is not None and "document type" in refused.error
    assert not refused.links.pages
    html = extract_feed(b"<html><a href='/x'>x</a></html>", f"{E}/f")
    assert html.error == "not a feed: the root element is <html>"
    cut = extract_feed(b"<rss><channel><item><link>/a</link></item><item><link>/b", f"{E}/f")
    assert list(cut.links.pages) == [f"{E}/a"] and cut.error is not None


def test_a_feed_stops_at_max_links() -> None:
    items = b"".join(b"<item><link>/%d</link></item>" % n for n in range(100))
    feed = extract_feed(b"<rss><channel>" + items + b"</channel></rss>", f"{E}/f", max_links=5)
    assert len(feed.links.pages) == 5 and feed.links.truncated


# ---------------------------------------------------------------------------------------------
# JSON


def test_json_absolute_and_root_relative_strings_keys_too_escapes_decoded() -> None:
    body = (
        b'{"a": "/x.html", "/key": 1, "b": "https:\\/\\/example.com\\/y", "c": "rel.html",'
        b' "d": ["\\u002Fz", "say \\"/no\\"", "/with space", "//cdn.example.com/c.js", "/"],'
        b' "e": "mailto:a@b", "f": "http://h"}'
    )
    links = extract_json(body, f"{E}/api/v1")
    assert list(links.pages) == [
        f"{E}/x.html",
        f"{E}/key",
        f"{E}/y",
        f"{E}/z",
        "https://cdn.example.com/c.js",
    ]
    assert not links.requisites and links.extractor == "json"


def test_json_cut_short_and_invalid_give_what_their_strings_hold() -> None:
    assert list(extract_json(b'["/a", "/b", "/c', f"{E}/j").pages) == [f"{E}/a", f"{E}/b"]
    assert list(extract_json(b"\xef\xbb\xbf{'/a': \"/b\"}", f"{E}/j").pages) == [f"{E}/b"]
    assert is_json_type("application/ld+json") and not is_json_type("text/plain")


# ---------------------------------------------------------------------------------------------
# Scripts


def test_module_specifiers_in_every_form_bare_ones_skipped() -> None:
    js = """import a from "./a.js"; import {x as y, z} from '../b.js'; import * as ns from "/c.js";
    import "./side.js"; import vue from "vue"; export * from "./d.js"; export {q} from "./e.js";
    import def, {n} from "./f.js"; export * as all from "https://cdn.example.com/g.js";
    const m = import("./lazy.js"); const n2 = import("./opts.js", { with: {} });
    const p = () => import(`./Page.js`); const q = () => import(`./${name}.js`);
    const u = new URL("./img.png", import.meta.url); obj.import("./no.js"); importx("./no2.js");
    """
    assert list(module_specifiers(js)) == [
        "./a.js", "../b.js", "/c.js", "./side.js", "./d.js", "./e.js", "./f.js",
        "https://cdn.example.com/g.js", "./lazy.js", "./opts.js", "./Page.js", "./img.png",
    ]  # fmt: skip


def test_url_strings_are_absolute_scheme_relative_or_root_relative() -> None:
    js = """a("/api/items.json"); b('https://cdn.example.com/x.png'); c(`/tpl`); d("not a url");
    e("/with space"); f("//cdn.example.com/lib.js"); g("//nodot/x"); h("/"); i("/*glob");
    j("relative/path.png"); k("https://example.com/a?b=c&d=e#f");
    l("/api/item/" + id + ".json"); m(base + "/suffix"); n("/cache?_=" +
    Date.now());"""
    assert list(string_urls(js)) == [
        "/api/items.json",
        "https://cdn.example.com/x.png",
        "/tpl",
        "//cdn.example.com/lib.js",
        "https://example.com/a?b=c&d=e#f",
    ]


def test_vite_dependency_map_and_webpack_chunk_table() -> None:
    js = (
        'const __vite__mapDeps=(i,m=__vite__mapDeps,d=(m.f||(m.f=["assets/chunks/theme.js",'
        '"assets/style.css"])))=>i.map(i=>d[i]);\n'
        'r.p="/";r.u=e=>"assets/js/"+({48:"main",12:"about"}[e]||e)+"."+'
        '{48:"3fe7",12:"aa11",99:"bb"}[e]+".js";\n'
        'r.miniCssF=e=>"assets/css/styles.c0ffee.css";\n'
    )
    assert webpack_chunks(js) == (
        "/",
        [
            "assets/js/main.3fe7.js",
            "assets/js/about.aa11.js",
            "assets/js/99.bb.js",
            "assets/css/styles.c0ffee.css",
        ],
    )
    links = extract_script(js.encode(), f"{E}/docs/assets/index.js")
    assert list(links.requisites) == [
        f"{E}/docs/assets/chunks/theme.js",
        f"{E}/docs/assets/style.css",
        f"{E}/assets/js/main.3fe7.js",
        f"{E}/assets/js/about.aa11.js",
        f"{E}/assets/js/99.bb.js",
        f"{E}/assets/css/styles.c0ffee.css",
    ]
    assert {links.extractor_of(url) for url in links.requisites} == {"js-module"}


def test_webpack4_jsonp_script_src_and_unreadable_tables() -> None:
    js = (
        'function jsonpScriptSrc(chunkId) { return __webpack_require__.p + "static/js/" + '
        '({"1":"vendors"}[chunkId]||chunkId) + "." + {"1":"ab12","2":"cd34"}[chunkId] + '
        '".chunk.js" }\n__webpack_require__.p = "/app/";'
    )
    assert webpack_chunks(js) == (
        "/app/",
        ["static/js/vendors.ab12.chunk.js", "static/js/2.cd34.chunk.js"],
    )
    assert webpack_chunks('r.u=e=>"js/"+f(e)+".js"')[1] == []  # a call: not a plain table


def test_webpack_minified_runtime_shapes() -> None:
    """Docusaurus's runtime as it is written in the wild: exponent chunk ids, a table in
    parentheses, a fallback on both parts, and a constant file."""
    exponent = (
        'r.u=e=>"assets/js/"+({88e3:"6e4ad5f2",123:"plain"}[e]||e)+"."'
        '+{88e3:"b9",123:"ab"}[e]+".js"'
    )
    assert webpack_chunks(exponent)[1] == ["assets/js/6e4ad5f2.b9.js", "assets/js/plain.ab.js"]
    wrapped = 'r.u=e=>"assets/js/"+(({12:"abcd"})[e]||e)+"."+({12:"ffff"})[e]+".js"'
    assert webpack_chunks(wrapped)[1] == ["assets/js/abcd.ffff.js"]
    both = (
        't.u=e=>"assets/js/"+({10:"page",20:"shared"}[e]||e)+"."'
        '+({10:"abc",30:"def"}[e]||e)+".js",t.x=1'
    )
    assert webpack_chunks(both)[1] == [
        "assets/js/page.abc.js",
        "assets/js/shared.20.js",
        "assets/js/30.def.js",
    ]
    assert webpack_chunks('r.u=e=>"assets/js/common.abcd.js"')[1] == ["assets/js/common.abcd.js"]


def test_base_for_bundler_paths() -> None:
    assert base_for("assets/x.js", f"{E}/docs/assets/index.js") == f"{E}/docs/"
    assert base_for("assets/x.js", f"{E}/index.js") == f"{E}/"
    assert base_for("x.js", f"{E}/a/b.js") == f"{E}/"
    # Vite with a relative base writes its map relative to the importing module
    assert base_for("./main-tOCAKvOg.js", f"{E}/app/assets/index.js") == f"{E}/app/assets/index.js"
    js = b'const __vite__mapDeps=(i,m=__vite__mapDeps,d=(m.f||(m.f=["./a-1.js","../b.css"])))=>1;'
    assert list(extract_script(js, f"{E}/app/assets/index.js").requisites) == [
        f"{E}/app/assets/a-1.js",
        f"{E}/app/b.css",
    ]


def test_relative_strings_only_when_asked() -> None:
    js = b'load("img/a.png"); load("../up/b.js"); load("word"); go("/root.html")'
    plain = extract_script(js, f"{E}/js/app.js")
    assert tagged(plain) == {f"P {E}/root.html": "js-string"}
    speculative = extract_script(js, f"{E}/js/app.js", relative=True)
    assert tagged(speculative) == {
        f"P {E}/root.html": "js-string",
        f"P {E}/js/img/a.png": "js-relative",
        f"P {E}/up/b.js": "js-relative",
    }


# ---------------------------------------------------------------------------------------------
# What HTML states as data: meta, ld+json, javascript: hrefs, inline scripts, import maps


def test_html_meta_ld_json_javascript_hrefs_and_inline_scripts_are_tagged() -> None:
    page = b"""<html><head><meta property="og:image" content="/og.jpg">
    <meta name="twitter:player:stream" content="https://example.com/v.mp4">
    <meta name="x" content="/no">
    <script type="application/ld+json">{"@type":"VideoObject","url":"/watch/1",
    "thumbnailUrl":["/t1.jpg"],
    "image":{"@type":"ImageObject","url":"/img.jpg"},"author":{"url":"/people/a"}}</script>
    <script type="importmap">{"imports":{"vue":"/vendor/vue.js","lib/":"/lib/"}}</script>
    <script type="module">import {a} from "./main.js";</script>
    <script type="text/template">"/not-read"</script>
    </head><body><a href="javascript:openFacsimile('https://example.com/f1.jpg')">f</a>
    <a href=" JavaScript:go(%22/page2.html%22)">p</a><a href="/normal">n</a></body></html>"""
    assert tagged(extract_html(page, f"{E}/dir/page.html")) == {
        f"P {E}/watch/1": "meta",
        f"P {E}/people/a": "meta",
        f"P {E}/f1.jpg": "javascript-url",
        f"P {E}/page2.html": "javascript-url",
        f"P {E}/normal": "html",
        f"R {E}/og.jpg": "meta",
        f"R {E}/v.mp4": "meta",
        f"R {E}/t1.jpg": "meta",
        f"R {E}/img.jpg": "meta",
        f"R {E}/vendor/vue.js": "js-module",
        f"R {E}/dir/main.js": "js-module",
    }


def test_merge_keeps_the_first_extractor_and_promotes_requisites() -> None:
    body = extract_html(b'<a href="/a">a</a><a href="/s.css">s</a>', f"{E}/")
    header = link_header_links(
        ["</s.css>; rel=stylesheet, </a>; rel=next, </n>; rel=next"], f"{E}/"
    )
    merged = merge(body, header)
    assert tagged(merged) == {
        f"P {E}/a": "html",
        f"P {E}/n": "link-header",
        f"R {E}/s.css": "link-header",
    }


# ---------------------------------------------------------------------------------------------
# Playlists: HLS and DASH, the rendition rule, the budget


def test_the_rendition_rule() -> None:
    assert choose("abc", [1_000, 5_000, 9_000], 6_000) == "b"
    assert choose("abc", [7_000, 9_000, 8_000], 6_000) == "a"  # none fits: the lowest
    assert choose("ab", [None, 2], 6_000) == "b"
    assert choose("", [], 1) is None


MASTER = b"""#EXTM3U
#EXT-X-SESSION-KEY:METHOD=AES-128,URI="keys/session.key"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="fr",URI="audio/fr.m3u8"
#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="en",DEFAULT=YES,URI="audio/en.m3u8"
#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="en",URI="subs/en.m3u8"
#EXT-X-STREAM-INF:BANDWIDTH=1280000,AUDIO="aud",SUBTITLES="subs",CODECS="avc1.4d401f,mp4a.40.2"
low/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=2560000,AUDIO="aud",SUBTITLES="subs"
mid/index.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=20000000
hi/index.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=86000,URI="low/iframe.m3u8"
"""


def test_hls_master_one_variant_its_groups_and_session_key() -> None:
    found = extract_hls(MASTER, f"{E}/v/master.m3u8")
    assert found.kind == "master"
    assert list(found.links.requisites) == [
        f"{E}/v/keys/session.key",
        f"{E}/v/mid/index.m3u8",
        f"{E}/v/audio/en.m3u8",
        f"{E}/v/subs/en.m3u8",
    ]
    low = extract_hls(MASTER, f"{E}/v/m.m3u8", limits=MediaLimits(max_bitrate=100))
    assert f"{E}/v/low/index.m3u8" in low.links.requisites
    # a bandwidth written with a fraction is read as players read it
    fraction = MASTER.replace(b"BANDWIDTH=20000000", b"BANDWIDTH=3000000.0")
    assert f"{E}/v/hi/index.m3u8" in extract_hls(fraction, f"{E}/v/m.m3u8").links.requisites


MEDIA = b"""#EXTM3U
#EXT-X-TARGETDURATION:10
#EXT-X-KEY:METHOD=AES-128,URI="k1.key"
#EXT-X-MAP:URI="init.mp4"
#EXTINF:9.009,
seg1.ts
#EXT-X-BYTERANGE:1000@0
#EXTINF:9.009,
seg2.ts
#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://fairplay"
#EXTINF:3.003,
seg3.ts
#EXT-X-ENDLIST
"""


def test_hls_media_segments_maps_keys_and_the_byte_budget() -> None:
    found = extract_hls(MEDIA, f"{E}/v/mid/index.m3u8")
    assert (found.kind, round(found.seconds, 3), found.over_budget) == ("media", 21.021, False)
    assert [u.rsplit("/", 1)[1] for u in found.links.requisites] == [
        "k1.key", "init.mp4", "seg1.ts", "seg2.ts", "seg3.ts",
    ]  # fmt: skip
    # 15 MB at 8 Mbit/s is 15 s of media: the first segment (9 s) fits, the second does not
    cut = extract_hls(MEDIA, f"{E}/v/i.m3u8", limits=MediaLimits(8_000_000, 15_000_000))
    assert (cut.over_budget, round(cut.seconds, 3)) == (True, 9.009)
    assert [u.rsplit("/", 1)[1] for u in cut.links.requisites] == ["k1.key", "init.mp4", "seg1.ts"]


def test_hls_not_a_playlist_and_attribute_lists() -> None:
    assert extract_hls(b"<html>", f"{E}/x.m3u8").kind is None
    stray = extract_hls(b"#EXTM3U\nstray.ts\n#EXTINF:1,\na.ts\n", f"{E}/x.m3u8")
    assert list(stray.links.requisites) == [f"{E}/a.ts"]  # a segment needs its EXTINF
    # a key of no segment (after the last one), and METHOD=NONE, name nothing to fetch
    keys = b'#EXTM3U\n#EXT-X-KEY:METHOD=NONE,URI="n.key"\n#EXTINF:1,\na.ts\n#EXT-X-KEY:URI="z"\n'
    assert list(extract_hls(keys, f"{E}/x.m3u8").links.requisites) == [f"{E}/a.ts"]
    # a key replaced before any segment used it is no requisite; keys of other KEYFORMATs are
    replaced = (
        b'#EXTM3U\n#EXT-X-KEY:METHOD=AES-128,URI="k1.key"\n'
        b'#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://fairplay"\n#EXTINF:3,\na.ts\n'
        b'#EXT-X-KEY:METHOD=AES-128,URI="k2.key"\n'
        b'#EXT-X-KEY:METHOD=SAMPLE-AES,KEYFORMAT="com.example",URI="w.key"\n#EXTINF:3,\nb.ts\n'
    )
    assert [u.rsplit("/", 1)[1] for u in extract_hls(replaced, f"{E}/x.m3u8").links.requisites] == [
        "a.ts", "k2.key", "w.key", "b.ts",
    ]  # fmt: skip
    assert attributes('A=1,B="x,y",C=0x1F,D=') == {"A": "1", "B": "x,y", "C": "0x1F", "D": ""}


MPD = b"""<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT8S">
 <BaseURL>https://media.example.com/show/</BaseURL>
 <Period>
  <AdaptationSet mimeType="video/mp4">
   <SegmentTemplate timescale="1000" duration="2000" initialization="$RepresentationID$/init.mp4"
     media="$RepresentationID$/seg-$Number%05d$.m4s" startNumber="1"/>
   <Representation id="v1" bandwidth="500000"/>
   <Representation id="v2" bandwidth="3000000"/>
   <Representation id="v3" bandwidth="12000000"/>
  </AdaptationSet>
  <AdaptationSet mimeType="audio/mp4"><BaseURL>audio/</BaseURL>
   <Representation id="a1" bandwidth="128000">
    <SegmentTemplate timescale="48000" initialization="init.mp4" media="t$Time$.m4s">
     <SegmentTimeline><S t="0" d="96000" r="3"/></SegmentTimeline></SegmentTemplate>
   </Representation>
  </AdaptationSet>
  <AdaptationSet mimeType="text/vtt"><Representation id="s" bandwidth="100">
   <BaseURL>subs/en.vtt</BaseURL></Representation></AdaptationSet>
  <AdaptationSet mimeType="video/mp4"><Representation id="l" bandwidth="1000">
   <SegmentList duration="4"><Initialization sourceURL="list/init.mp4"/>
   <SegmentURL media="list/1.m4s"/><SegmentURL media="list/2.m4s"/>
  </SegmentList></Representation></AdaptationSet>
 </Period>
</MPD>"""


def test_dash_templates_timelines_lists_and_base_urls() -> None:
    found = extract_dash(MPD, f"{E}/v/manifest.mpd")
    base = "https://media.example.com/show"
    assert (found.kind, found.over_budget) == ("mpd", False)
    assert list(found.links.requisites) == [
        f"{base}/v2/init.mp4", f"{base}/audio/init.mp4", f"{base}/subs/en.vtt",
        f"{base}/list/init.mp4",
        f"{base}/v2/seg-00001.m4s", f"{base}/audio/t0.m4s", f"{base}/list/1.m4s",
        f"{base}/v2/seg-00002.m4s", f"{base}/audio/t96000.m4s",
        f"{base}/v2/seg-00003.m4s", f"{base}/audio/t192000.m4s", f"{base}/list/2.m4s",
        f"{base}/v2/seg-00004.m4s", f"{base}/audio/t288000.m4s",
    ]  # fmt: skip


def test_dash_budget_live_manifests_and_durations() -> None:
    cut = extract_dash(MPD, f"{E}/m.mpd", limits=MediaLimits(max_bytes=1_000_000))
    assert cut.over_budget and cut.seconds == 2.0
    live = MPD.replace(b'type="static"', b'type="dynamic"')
    requisites = extract_dash(live, f"{E}/m.mpd").links.requisites
    assert not any("seg-" in url or "/t" in url.rsplit("/", 1)[1] for url in requisites)
    assert parse_duration("PT1H2M3.5S") == 3723.5 and parse_duration("P1D") == 86400
    assert parse_duration("bogus") is None
    assert extract_dash(b"<html/>", f"{E}/m.mpd").kind is None
    # segment information and BaseURLs count only where the schema puts them
    stray = (
        b'<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet>'
        b'<Representation id="a" bandwidth="9"><SegmentList><Initialization sourceURL="i.mp4"/>'
        b'<SegmentURL media="1.m4s"/></SegmentList><X><SegmentBase/><BaseURL>no/</BaseURL></X>'
        b"</Representation></AdaptationSet></Period></MPD>"
    )
    assert list(extract_dash(stray, f"{E}/v/m.mpd").links.requisites) == [
        f"{E}/v/i.mp4",
        f"{E}/v/1.m4s",
    ]
    # so do levels: an adaptation set inside an adaptation set is no adaptation set
    nested = (
        b'<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet>'
        b'<AdaptationSet><Representation id="n" bandwidth="9"><BaseURL>no.mp4</BaseURL>'
        b'</Representation></AdaptationSet><Representation id="y" bandwidth="9">'
        b"<BaseURL>yes.mp4</BaseURL></Representation></AdaptationSet></Period></MPD>"
    )
    assert list(extract_dash(nested, f"{E}/v/m.mpd").links.requisites) == [f"{E}/v/yes.mp4"]


# ---------------------------------------------------------------------------------------------
# PDF


def annotated_pdf(*targets: str, pages: int = 1) -> bytes:
    writer = PdfWriter()
    for number in range(pages):
        writer.add_blank_page(width=200, height=200)
        for target in targets:
            link = Link(rect=(10, 10, 150, 40), url=target)
            writer.add_annotation(page_number=number, annotation=link)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_pdf(text: str) -> bytes:
    """A hand-made one-page PDF showing ``text`` in Helvetica (ISO 32000-1 section 7.5)."""
    stream = f"BT /F1 10 Tf 10 100 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_pdf_link_annotations_and_text_urls() -> None:
    found = extract_pdf(annotated_pdf(f"{E}/a.html", "/rel"), f"{E}/doc.pdf")
    assert (list(found.links.pages), found.pages, found.error) == (
        [f"{E}/a.html", f"{E}/rel"],
        1,
        None,
    )
    texts = extract_pdf(text_pdf("see https://example.com/t.html, and more"), f"{E}/d.pdf")
    assert list(texts.links.pages) == [f"{E}/t.html"] and texts.error is None
    assert text_urls("(http://a.example/x). http://b.example/y;") == [
        "http://a.example/x",
        "http://b.example/y",
    ]


def test_pdf_page_limit_and_broken_files() -> None:
    many = annotated_pdf(f"{E}/p.html", pages=5)
    found = extract_pdf(many, f"{E}/d.pdf", max_pages=2)
    assert (found.pages, found.page_count) == (2, 5)
    assert found.error == "read the first 2 of 5 pages (--pdf-max-pages)"
    hurried = extract_pdf(many, f"{E}/d.pdf", seconds=0.0)
    assert (hurried.pages, hurried.error) == (0, "read the first 0 of 5 pages in time")
    broken = extract_pdf(b"%PDF-1.4 garbage", f"{E}/d.pdf")
    assert broken.error is not None and not broken.links.pages


async def test_pdf_in_a_child_process_with_its_cpu_budget_guard_and_memory_cap() -> None:
    body = annotated_pdf(f"{E}/a.html", pages=3)
    found = await read_pdf(body, f"{E}/doc.pdf")
    assert (list(found.links.pages), found.error) == ([f"{E}/a.html"], None)
    # a budget spent before the first page: the reader answers with what it read (nothing)
    hurried = await read_pdf(body, f"{E}/doc.pdf", limits=PdfLimits(seconds=0.0001))
    assert (hurried.pages, hurried.error) == (0, "read the first 0 of 3 pages in time")
    # the wall-clock guard kills a reader still busy
    late = await read_pdf(body, f"{E}/doc.pdf", limits=PdfLimits(guard=0.001))
    assert late.error == "the PDF reader was still busy after 0.001 s" and not late.links.pages
    # 8 MB of padding after the file: reading it needs more than the 1 MiB cap allows
    padded = body + b"%" + b"x" * 8_000_000
    starved = await read_pdf(padded, f"{E}/doc.pdf", limits=PdfLimits(memory=1024 * 1024))
    assert starved.error is not None and "exited with code" in starved.error


# ---------------------------------------------------------------------------------------------
# Dispatch


@pytest.mark.parametrize(
    ("media_type", "head", "kind"),
    [
        ("text/html", b"", Extractor.HTML),
        ("application/rss+xml", b"", Extractor.FEED),
        ("text/xml", b'<?xml version="1.0"?><rss version="2.0">', Extractor.FEED),
        ("application/xml", b"<MPD xmlns='urn:mpeg:dash:schema:mpd:2011'>", Extractor.DASH),
        ("text/xml", b"<urlset>", None),
        ("text/plain", b"#EXTM3U\n", Extractor.HLS),
        ("application/octet-stream", b"%PDF-1.7", Extractor.PDF),
        ("application/activity+json", b"{}", Extractor.JSON),
        ("text/javascript", b"", Extractor.JS_MODULE),
        ("image/png", b"#EXTM3U", None),
    ],
)
def test_document_kind_by_type_and_sniffing(
    media_type: str, head: bytes, kind: Extractor | None
) -> None:
    assert document_kind(media_type, head, None) is kind


def test_playlists_are_not_read_with_media_off() -> None:
    on = extract_document(Extractor.HLS, MEDIA, f"{E}/i.m3u8", None, ExtractOptions())
    assert on.links.requisites
    off = extract_document(Extractor.HLS, MEDIA, f"{E}/i.m3u8", None, ExtractOptions(media=None))
    assert not off.links.requisites
    cut = extract_document(
        Extractor.HLS, MEDIA, f"{E}/i.m3u8", None, ExtractOptions(media=MediaLimits(8_000_000, 1))
    )
    assert cut.note == ("media-budget", {"kind": "media", "seconds": 9.009, "max_bytes": 1})
