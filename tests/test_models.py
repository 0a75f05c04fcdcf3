"""The lineage a crawl item carries: which page a requisite serves, however deep it is."""

from __future__ import annotations

from archiver.models import CrawlItem, Hop

PAGE = "http://a.example/watch"


def test_a_requisite_of_a_requisite_names_the_page_it_serves() -> None:
    page = CrawlItem(PAGE, hops="L", via="http://a.example/")
    master = page.child("http://cdn.example/master.m3u8", Hop.EMBED, "html")
    variant = master.child("http://cdn.example/v0.m3u8", Hop.EMBED, "hls")
    segment = variant.child("http://cdn.example/s0.ts", Hop.EMBED, "hls")
    moved = segment.child("http://cdn2.example/s0.ts", Hop.REDIRECT)
    assert page.page_url == PAGE
    # the page is stored only where via does not say it
    assert (master.page, master.via, master.page_url) == ("", PAGE, PAGE)
    assert (variant.page, variant.page_url) == (PAGE, PAGE)
    assert (segment.page, segment.page_url) == (PAGE, PAGE)
    assert (moved.page, moved.via, moved.page_url) == (PAGE, segment.url, PAGE)
    assert moved.retry().page_url == PAGE


def test_a_page_is_its_own_page_whatever_led_to_it() -> None:
    page = CrawlItem(PAGE, hops="L", via="http://a.example/")
    redirected = page.child("http://a.example/watch/", Hop.REDIRECT)
    script = CrawlItem("http://a.example/app.js", hops="LE", via=PAGE)
    linked = script.child("http://a.example/other", Hop.LINK, "js-string")
    assert (redirected.page, redirected.page_url) == ("", redirected.url)
    assert (linked.page, linked.page_url) == ("", linked.url)
    assert CrawlItem(PAGE).page_url == PAGE
