"""--logged-out rules: each kind of sign, and what a sign says (never what the page said)."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime

import pytest

from archiver import digest
from archiver.models import Exchange
from archiver.policy.loggedout import logged_out, parse_rule, parse_rules
from archiver.spool import Spool

LOGIN_FORM = b"""<!DOCTYPE html><html><head><title>Sign in</title></head><body>
<form id="login-form" action="/login" method="post"><input name="user">
<p>Your session has expired. Please sign in again, secret-user-42.</p></form></body></html>"""
MEMBER_PAGE = b"<!DOCTYPE html><html><body><h1>Minutes</h1><a href='/login'>x</a></body></html>"


def exchange(
    status: int,
    headers: list[tuple[str, str]],
    body: bytes = b"",
    url: str = "https://members.example.org/members/page/3",
) -> Exchange:
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    raw = head.encode() + body
    request = b"GET / HTTP/1.1\r\n\r\n"
    return Exchange(
        target_uri=url,
        date=datetime(2026, 1, 1, tzinfo=UTC),
        request=request,
        response=Spool.from_bytes(raw),
        response_length=len(raw),
        status=status,
        headers=headers,
        block_digest=digest.digest_bytes("sha1", raw),
        payload_digest=digest.digest_bytes("sha1", body),
        payload_length=len(body),
        request_block_digest=digest.digest_bytes("sha1", request),
        request_payload_digest=digest.digest_bytes("sha1", b""),
        body=body,
    )


HTML = [("Content-Type", "text/html; charset=utf-8")]


def test_a_login_form_where_a_members_page_should_be() -> None:
    rules = parse_rules(["css:form#login-form"])
    assert logged_out(exchange(200, HTML, LOGIN_FORM), rules) == (
        "answered 200, matching --logged-out css:form#login-form"
    )
    assert logged_out(exchange(200, HTML, MEMBER_PAGE), rules) is None
    # only an HTML page is looked at with a selector
    assert logged_out(exchange(200, [("Content-Type", "text/plain")], LOGIN_FORM), rules) is None


def test_a_content_coded_page_is_read_decoded() -> None:
    coded = [*HTML, ("Content-Encoding", "gzip")]
    rules = parse_rules(["css:form#login-form", "text:session has expired"])
    assert logged_out(exchange(200, coded, gzip.compress(LOGIN_FORM)), rules[:1]) is not None
    assert logged_out(exchange(200, coded, gzip.compress(LOGIN_FORM)), rules[1:]) is not None


def test_a_redirect_to_the_login_page_resolved_against_the_url() -> None:
    rules = parse_rules([r"location:^https://members\.example\.org/login\b"])
    wall = exchange(302, [("Location", "/login?next=/members/page/3")])
    assert logged_out(wall, rules) == (
        r"answered 302, matching --logged-out location:^https://members\.example\.org/login\b"
    )
    elsewhere = exchange(302, [("Location", "/members/page/4")])
    assert logged_out(elsewhere, rules) is None
    # a Location on a 200 is no redirect
    assert logged_out(exchange(200, [("Location", "/login")]), rules) is None


def test_a_status_and_a_text_in_json() -> None:
    assert logged_out(exchange(401, []), parse_rules(["status:401,403"])) is not None
    assert logged_out(exchange(404, []), parse_rules(["status:401,403"])) is None
    api = [("Content-Type", "application/json")]
    expired = exchange(200, api, b'{"error": "session_expired"}')
    assert logged_out(expired, parse_rules(["session_expired"])) is not None  # a bare regex
    assert (
        logged_out(exchange(200, api, b'{"items": []}'), parse_rules(["session_expired"])) is None
    )
    # an image is not text
    image = exchange(200, [("Content-Type", "image/png")], b"session_expired")
    assert logged_out(image, parse_rules(["session_expired"])) is None


def test_the_sign_never_holds_what_the_page_said() -> None:
    sign = logged_out(exchange(200, HTML, LOGIN_FORM), parse_rules([r"text:secret-user-\d+"]))
    assert sign is not None and "secret-user-42" not in sign


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("css:form[", "is not a CSS selector"),
        ("css:", "nothing after 'css:'"),
        ("status:40x", "expected status codes"),
        ("status:99", "status codes are 100 to 599"),
        ("location:(", "is not a regular expression"),
        ("(unclosed", "is not a regular expression"),
    ],
)
def test_a_wrong_rule_says_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rule(text)


def test_an_unknown_prefix_is_part_of_a_regex() -> None:
    rule = parse_rule("https://members.example.org/login")
    assert rule.kind == "text" and rule.pattern == "https://members.example.org/login"
