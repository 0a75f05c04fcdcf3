"""archiver.timefmt: every timestamp format, written once (fixed moments, like warcio's
``test_timeutils``)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from archiver.timefmt import (
    parse_w3c_datetime,
    readable_utc_at,
    rfc3339,
    rfc3339_at,
    rfc3339_millis,
    rfc3339_millis_at,
    timestamp14,
    timestamp17,
    warc_date,
)

MOMENT = datetime(2024, 1, 2, 3, 4, 5, 678999, tzinfo=UTC)
EPOCH = MOMENT.timestamp()
PARIS = timezone(timedelta(hours=1))


def test_warc_date_and_the_index_timestamps() -> None:
    assert warc_date(MOMENT) == "2024-01-02T03:04:05.678999Z"
    assert warc_date(MOMENT.astimezone(PARIS)) == "2024-01-02T03:04:05.678999Z"
    assert timestamp14(warc_date(MOMENT)) == "20240102030405"
    assert timestamp17(MOMENT) == "20240102030405678"


def test_rfc3339_whole_seconds_from_a_datetime_or_the_epoch() -> None:
    assert rfc3339(MOMENT) == "2024-01-02T03:04:05Z"
    assert rfc3339(MOMENT.astimezone(PARIS)) == "2024-01-02T03:04:05Z"
    assert rfc3339_at(EPOCH) == "2024-01-02T03:04:05Z"
    assert rfc3339_at(0) == "1970-01-01T00:00:00Z"


def test_rfc3339_with_milliseconds_truncates() -> None:
    assert rfc3339_millis(MOMENT) == "2024-01-02T03:04:05.678Z"  # .678999 is not rounded up
    assert rfc3339_millis(MOMENT.replace(microsecond=0)) == "2024-01-02T03:04:05.000Z"
    assert rfc3339_millis_at(1704164645.25) == "2024-01-02T03:04:05.250Z"
    assert rfc3339_millis_at(1704164645.75) == "2024-01-02T03:04:05.750Z"
    assert rfc3339_millis_at(1704164646.125) == "2024-01-02T03:04:06.125Z"  # the next second
    assert rfc3339_millis_at(1704164645.5) == "2024-01-02T03:04:05.500Z"  # and back


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_rfc3339_millis_at_is_what_the_log_and_the_progress_lines_wrote(seconds: float) -> None:
    """The formula the crawl log and the progress display used before they called timefmt."""
    by_hand = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    assert rfc3339_millis_at(seconds) == by_hand + f".{int(seconds % 1 * 1000):03d}Z"


def test_readable_utc() -> None:
    assert readable_utc_at(EPOCH) == "2024-01-02 03:04:05 UTC"


def test_w3c_datetimes_read_warc_dates_and_log_timestamps() -> None:
    assert parse_w3c_datetime("2024-01-02T03:04:05.678999Z") == MOMENT
    assert parse_w3c_datetime(rfc3339_millis(MOMENT)) == MOMENT.replace(microsecond=678000)
    assert parse_w3c_datetime("2024-01-02T04:04:05+01:00") == MOMENT.replace(microsecond=0)
    assert parse_w3c_datetime("2024-01-02T03:04:05") == MOMENT.replace(microsecond=0)  # UTC
    assert parse_w3c_datetime("2024") == datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_w3c_datetime("2024-02-30") is None
    assert parse_w3c_datetime("yesterday") is None
