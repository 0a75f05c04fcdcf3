"""The paused request and the fulfilment built from a response: pure functions, exact values."""

from __future__ import annotations

import base64
import gzip
import zlib
from typing import Any

import pytest

from archiver.browser.exchange import (
    BrowserResponse,
    UndeliverableError,
    browser_request,
    content_codings,
    fulfill_params,
)


def paused(**request: Any) -> dict[str, Any]:
    base = {"url": "https://example.org/a?b=1", "method": "GET", "headers": {"Accept": "*/*"}}
    base.update(request)
    return {
        "requestId": "interception-job-1.0",
        "request": base,
        "frameId": "MAIN",
        "resourceType": "XHR",
    }


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def headers_of(params: dict[str, Any]) -> list[bytes]:
    return base64.b64decode(params["binaryResponseHeaders"]).split(b"\0")


def test_a_get_request() -> None:
    request = browser_request(paused(), "MAIN")
    assert request.method == "GET"
    assert request.url == "https://example.org/a?b=1"
    assert request.headers == (("Accept", "*/*"),)
    assert (request.body, request.body_complete) == (None, True)
    assert (request.is_navigation, request.is_main_frame, request.redirected) == (
        False,
        False,
        False,
    )


def test_a_binary_post_body_comes_from_the_entries_byte_for_byte() -> None:
    data = bytes(range(256))
    event = paused(
        method="POST",
        hasPostData=True,
        postData=data.decode("latin-1"),  # what the deprecated field would have said
        postDataEntries=[{"bytes": b64(data[:100])}, {"bytes": b64(data[100:])}],
    )
    request = browser_request(event, "MAIN")
    assert request.body == data
    assert request.body_complete


def test_a_body_the_browser_did_not_report_whole_is_marked_incomplete() -> None:
    entries = [{"bytes": b64(b"field=1&")}, {}]  # the second entry is a file
    request = browser_request(paused(method="POST", hasPostData=True, postDataEntries=entries), "M")
    assert (request.body, request.body_complete) == (b"field=1&", False)
    request = browser_request(paused(method="POST", hasPostData=True), "M")
    assert (request.body, request.body_complete) == (None, False)


def test_navigation_flags() -> None:
    event = paused()
    event["resourceType"] = "Document"
    assert browser_request(event, "MAIN").is_main_frame
    event["frameId"] = "IFRAME"
    request = browser_request(event, "MAIN")
    assert (request.is_navigation, request.is_main_frame) == (True, False)
    event["redirectedRequestId"] = "interception-job-0.0"
    assert browser_request(event, "MAIN").redirected


def test_the_browser_gets_the_decoded_body_without_the_wire_framing() -> None:
    response = BrowserResponse(
        200,
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("Content-Length", "31"),
            ("Transfer-Encoding", "chunked"),
            ("Connection", "keep-alive"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
        ],
        gzip.compress(b"<p>hello</p>"),
        "OK",
    )
    params = fulfill_params("id-1", response)
    assert params["requestId"] == "id-1"
    assert params["responseCode"] == 200
    assert params["responsePhrase"] == "OK"
    assert base64.b64decode(params["body"]) == b"<p>hello</p>"
    assert headers_of(params) == [
        b"Content-Type: text/html; charset=utf-8",
        b"Set-Cookie: a=1",
        b"Set-Cookie: b=2",
    ]


def test_codings_are_undone_last_first() -> None:
    body = zlib.compress(gzip.compress(b"twice"))
    response = BrowserResponse(200, [("Content-Encoding", "gzip, deflate")], body)
    assert content_codings(response.headers) == ["gzip", "deflate"]
    assert base64.b64decode(fulfill_params("r", response)["body"]) == b"twice"


def test_identity_coding_keeps_its_header_and_body() -> None:
    response = BrowserResponse(200, [("Content-Encoding", "identity")], b"plain")
    params = fulfill_params("r", response)
    assert base64.b64decode(params["body"]) == b"plain"
    assert headers_of(params) == [b"Content-Encoding: identity"]


def test_header_bytes_that_are_not_utf8_are_kept() -> None:
    response = BrowserResponse(200, [("X-Name", "caf\xe9"), ("Content-Disposition", "a\xff")], b"")
    assert headers_of(fulfill_params("r", response)) == [
        b"X-Name: caf\xe9",
        b"Content-Disposition: a\xff",
    ]


def test_fields_that_would_break_the_header_list_are_dropped() -> None:
    response = BrowserResponse(
        302,
        [("Location", "/next"), ("X-Bad", "a\0b"), ("X-Split", "a\r\nInjected: 1"), ("", "x")],
        b"",
        "Found \x01",
    )
    params = fulfill_params("r", response)
    assert headers_of(params) == [b"Location: /next"]
    assert "responsePhrase" not in params  # not printable: Chromium's own phrase is used


def test_undeliverable_answers() -> None:
    big = BrowserResponse(200, [], b"x" * 101)
    with pytest.raises(UndeliverableError, match="a body over 100 bytes"):
        fulfill_params("r", big, max_body=100)
    bomb = BrowserResponse(200, [("Content-Encoding", "gzip")], gzip.compress(b"\0" * 10_000))
    with pytest.raises(UndeliverableError, match="a body over 1000 bytes"):
        fulfill_params("r", bomb, max_body=1000)
    brotli = BrowserResponse(200, [("Content-Encoding", "br")], b"\x0b\x02\x80hi\x03")
    with pytest.raises(UndeliverableError, match="unsupported content-coding 'br'"):
        fulfill_params("r", brotli)
    corrupt = BrowserResponse(200, [("Content-Encoding", "gzip")], b"\x1f\x8bnot gzip")
    with pytest.raises(UndeliverableError, match="corrupt gzip"):
        fulfill_params("r", corrupt)
