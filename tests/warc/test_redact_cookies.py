"""--redact-cookies: request records without cookie values, and a warcinfo that says so."""

from __future__ import annotations

from datetime import UTC, datetime

from archiver import digest
from archiver.config.assemble import REQUEST_RECORDS_REDACTED, warcinfo_fields
from archiver.config.settings import Settings
from archiver.models import Exchange
from archiver.spool import Spool
from archiver.warc.records import RecordFactory, redact_cookies

REQUEST = (
    b"POST /members/save HTTP/1.1\r\nHost: members.example.org\r\n"
    b"cookie: sid=Zm9vYmFy==; auth=tok-1\r\nAccept: */*\r\nContent-Length: 14\r\n\r\n"
    b"cookie: sid=xx"
)


def test_values_are_replaced_names_and_everything_else_kept() -> None:
    assert redact_cookies(REQUEST) == (
        b"POST /members/save HTTP/1.1\r\nHost: members.example.org\r\n"
        b"cookie: sid=redacted; auth=redacted\r\nAccept: */*\r\nContent-Length: 14\r\n\r\n"
        b"cookie: sid=xx"  # the body is the body, whatever it holds
    )
    without = b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"
    assert redact_cookies(without) is without


def exchange(request: bytes) -> Exchange:
    response = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
    return Exchange(
        target_uri="http://members.example.org/members/save",
        date=datetime(2026, 1, 1, tzinfo=UTC),
        request=request,
        response=Spool.from_bytes(response),
        response_length=len(response),
        status=200,
        headers=[("Content-Length", "0")],
        block_digest=digest.digest_bytes("sha1", response),
        payload_digest=digest.digest_bytes("sha1", b""),
        payload_length=0,
        request_block_digest=digest.digest_bytes("sha1", request),
        request_payload_digest=digest.digest_bytes("sha1", b"cookie: sid=xx"),
    )


def test_the_request_record_holds_the_redacted_block_and_its_digest() -> None:
    plain = RecordFactory().capture(exchange(REQUEST)).records[1]
    assert plain.block == REQUEST
    redacted = RecordFactory(redact_cookies=True).capture(exchange(REQUEST)).records[1]
    assert redacted.block == redact_cookies(REQUEST)
    assert redacted.length == len(redact_cookies(REQUEST))
    fields = dict(redacted.headers)
    assert fields["WARC-Block-Digest"] == digest.digest_bytes("sha1", redact_cookies(REQUEST))
    # the payload (the body) is unchanged, so is its digest
    assert fields["WARC-Payload-Digest"] == dict(plain.headers)["WARC-Payload-Digest"]


def test_warcinfo_says_the_request_records_are_redacted() -> None:
    plain = dict(warcinfo_fields(Settings(seeds=("http://a.example/",)), "crawl"))
    assert plain["request-records"].startswith("as sent, not redacted")
    redacted = dict(
        warcinfo_fields(Settings(seeds=("http://a.example/",), redact_cookies=True), "crawl")
    )
    assert redacted["request-records"] == REQUEST_RECORDS_REDACTED
    assert "not byte-exact" in redacted["request-records"]
