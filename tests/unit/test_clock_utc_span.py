"""`clock.utc_span`: where the HTML export may word a stored time as its own
characters (issue 40), because the local zone is UTC there; anywhere else
SQLite's strftime() (or render) words it."""

from __future__ import annotations

import time

import pytest

from kaja_cli.core import clock


@pytest.fixture
def zone(monkeypatch):
    """Set the process's zone (TZ, as the C library reads it) for one test."""

    def set_zone(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_utc_is_a_span_a_day_wider_each_side(zone):
    zone("UTC0")
    got = clock.utc_span("2026-05-08T00:40:43.000Z", "2026-08-24T04:55:39.956Z")
    assert got == ("2026-05-07T00:40:43.000Z", "2026-08-25T04:55:39.956Z")


def test_a_zone_that_is_utc_only_in_winter(zone):
    zone("GMT0BST,M3.5.0/1,M10.5.0")  # London: UTC in winter, an hour ahead in summer
    assert clock.utc_span("2026-01-05T10:00:00.000Z", "2026-01-20T10:00:00.000Z") is not None
    # Summer time begins on the last Sunday of March: a span across it is not UTC
    assert clock.utc_span("2026-03-20T10:00:00.000Z", "2026-04-02T10:00:00.000Z") is None
    # Nor is a span that only reaches it through its day of margin
    assert clock.utc_span("2026-03-27T10:00:00.000Z", "2026-03-28T10:00:00.000Z") is None


def test_another_offset_and_what_is_not_a_time(zone):
    zone("IST-5:30")
    assert clock.utc_span("2026-01-05T10:00:00.000Z", "2026-01-06T10:00:00.000Z") is None
    zone("UTC0")
    assert clock.utc_span(None, "2026-01-06T10:00:00.000Z") is None
    assert clock.utc_span("soon", "2026-01-06T10:00:00.000Z") is None
    assert clock.utc_span("2026-01-06T10:00:00.000Z", "2026-01-05T10:00:00.000Z") is None
    # longer than it looks at: each time worded by strftime()
    assert clock.utc_span("2020-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z") is None


def test_the_bounds_sqlite_words_local_times_within(zone):
    zone("UTC0")
    lo, hi = clock.utc_span("1970-01-01T00:00:00.000Z", "1970-01-03T00:00:00.000Z")
    assert lo == "1970-01-02T00:00:00.000Z"
    lo, hi = clock.utc_span("2037-12-30T00:00:00.000Z", "2037-12-30T12:00:00.000Z")
    assert hi == "2037-12-31"  # as text: a time of that day sorts after it


def test_a_change_of_zone_in_the_process_is_seen(zone):
    zone("UTC0")
    span = ("2026-06-05T10:00:00.000Z", "2026-06-06T10:00:00.000Z")
    assert clock.utc_span(*span) is not None
    zone("GMT0BST,M3.5.0/1,M10.5.0")  # the same days, now an hour ahead
    assert clock.utc_span(*span) is None
