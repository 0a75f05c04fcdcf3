"""The index key of POST and PUT captures, held to cdxj-indexer's ``postquery`` (what
``--post-append`` and pywb compute) on hand-made and generated bodies."""

from __future__ import annotations

import base64
import io
import json
from urllib.parse import quote

from cdxj_indexer.postquery import append_method_query
from hypothesis import given, settings
from hypothesis import strategies as st
from multipart import MultipartError

from archiver.index.postquery import MAX_QUERY_LENGTH, method_query, post_key

URL = "http://example.test/api/search"


def reference(
    method: str, content_type: str | None, length: str | None, body: bytes, url: str = URL
) -> tuple[str | None, str]:
    """cdxj-indexer's parameters; where it fails (a multipart body its parser rejects), what
    archiver documents instead: the body as binary."""
    try:
        query, appended = append_method_query(method, content_type, length, io.BytesIO(body), url)
    except MultipartError:
        assert content_type is not None and content_type.startswith("multipart/")
        size = 8192 if length is None else max(int(length), 0)
        query = "__wb_post_data=" + base64.b64encode(body[:size]).decode()
        query = query[:MAX_QUERY_LENGTH]
        appended = ("&" if "?" in url else "?") + f"__wb_method={method}&{query}"
    return query, appended


def ours(
    method: str, content_type: str | None, length: str | None, body: bytes, url: str = URL
) -> tuple[str | None, str]:
    return method_query(method, content_type, length, body, url)


MULTIPART = (
    b"--XyZ\r\n"
    b'Content-Disposition: form-data; name="title"\r\n\r\n'
    b"Caf\xc3\xa9 & more\r\n"
    b"--XyZ\r\n"
    b'Content-Disposition: form-data; name="file"; filename="a.bin"\r\n'
    b"Content-Type: application/octet-stream\r\n\r\n"
    b"\x00\x01\xff\xfe binary\r\n"
    b"--XyZ--\r\n"
)

CASES: list[tuple[str, str | None, bytes]] = [
    ("POST", "application/x-www-form-urlencoded", b"q=caf%C3%A9+au+lait&page=2"),
    ("POST", "application/x-www-form-urlencoded; charset=UTF-8", b"a=1&a=2&b="),
    ("POST", "application/x-www-form-urlencoded", b"q=\xff\xfe"),  # not UTF-8: binary
    ("POST", "multipart/form-data; boundary=XyZ", MULTIPART),
    ("POST", "multipart/form-data", MULTIPART),  # no boundary
    ("POST", "application/json", b'{"query": "brass", "page": 2, "flags": [true, null]}'),
    ("POST", "application/json", b'{"a": {"b": 1, "a": 2}, "c": [{"a": 3}, {"a": 4}]}'),
    ("POST", "application/json", b'{"a": 1}\n{"a": 2}'),  # one value per line
    ("POST", "application/json", b"{not json"),
    ("POST", "application/json", b"[1, 2, 3]"),  # scalars without a key
    ("POST", "application/json; charset=utf-8", '{"q": "ünïcödé"}'.encode()),
    ("POST", "text/plain;charset=UTF-8", b'{"q": "json in text"}'),
    ("POST", "text/plain", b"just words"),
    ("POST", "application/octet-stream", bytes(range(256))),
    ("POST", None, b"no type at all"),
    ("POST", "application/x-www-form-urlencoded", b""),
    ("PUT", "application/json", b'{"name": "put"}'),
    ("GET", "application/json", b'{"ignored": true}'),
    ("DELETE", None, b""),
    ("post", "application/json", b'{"lower": "case"}'),  # the method as the request line has it
    ("POST", "application/x-www-form-urlencoded", b"x=" + b"y" * (MAX_QUERY_LENGTH + 100)),
]


def test_hand_made_bodies_give_cdxj_indexers_parameters() -> None:
    for method, content_type, body in CASES:
        for length in (str(len(body)), None, "7", "-1", "junk"):
            for url in (URL, URL + "?page=1"):
                got = ours(method, content_type, length, body, url)
                want = reference(method, content_type, length, body, url)
                assert got == want, (method, content_type, length, body[:60], url)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_generated_json_bodies(value: object) -> None:
    body = json.dumps(value).encode()
    for content_type in ("application/json", "text/plain"):
        assert ours("POST", content_type, str(len(body)), body) == reference(
            "POST", content_type, str(len(body)), body
        )


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(st.text(max_size=6), st.text(max_size=10)), max_size=6))
def test_generated_form_bodies(pairs: list[tuple[str, str]]) -> None:
    body = "&".join(f"{quote(k)}={quote(v)}" for k, v in pairs).encode()
    content_type = "application/x-www-form-urlencoded"
    assert ours("POST", content_type, str(len(body)), body) == reference(
        "POST", content_type, str(len(body)), body
    )


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=300),
    content_type=st.sampled_from(
        [
            None,
            "application/json",
            "text/plain",
            "application/x-www-form-urlencoded",
            "image/png",
            "multipart/form-data; boundary=XyZ",
        ]
    ),
)
def test_generated_arbitrary_bodies(body: bytes, content_type: str | None) -> None:
    assert ours("POST", content_type, str(len(body)), body) == reference(
        "POST", content_type, str(len(body)), body
    )


def test_the_key_of_a_request_as_sent() -> None:
    request = (
        b"POST /api/search HTTP/1.1\r\nHost: example.test\r\n"
        b"content-type: application/json\r\nContent-Length: 17\r\n\r\n"
        b'{"query":"brass"}'
    )
    key = post_key(URL, request)
    assert key is not None
    assert key.url == URL + "?__wb_method=POST&query=brass"
    assert (key.method, key.request_body) == ("POST", "query=brass")
    assert post_key(URL, b"GET /api/search HTTP/1.1\r\nHost: example.test\r\n\r\n") is None
    assert post_key(URL, b"POST /cut-before-the-end-of-the-head") is None
