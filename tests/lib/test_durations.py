from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xworkmate.lib.durations import DurationError, format_duration, parse_duration
from xworkmate.lib.timezones import TimeZoneError, get_zone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("3m", timedelta(minutes=3)),
        ("2h", timedelta(hours=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
        (" 5m ", timedelta(minutes=5)),
    ],
)
def test_it_parses_the_accepted_forms_d_b3(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "5", "5 min", "5M", "1.5h", "-3m", "0s", "0h0m", "30m1h", "3d"]
)
def test_it_rejects_anything_else_with_the_rule(text):
    with pytest.raises(DurationError, match="is not a duration like 90s|must be longer than zero"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["99999999999h", "9" * 5000 + "s"])
def test_it_rejects_a_duration_no_timedelta_holds(text):
    # 5000 digits are more than int() reads (a ValueError that was not a DurationError).
    with pytest.raises(DurationError, match="is longer than any duration can be"):
        parse_duration(text)


@given(st.integers(min_value=1, max_value=10**7))
def test_format_and_parse_round_trip(seconds):
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value


def test_zones_are_checked_against_the_database():
    assert str(get_zone("America/New_York")) == "America/New_York"
    # Matched case-insensitively, as JavaScript's Intl does (D-K7); the canonical name comes back.
    assert get_zone("asia/shanghai").key == "Asia/Shanghai"
    for bad in ("", "Mars/Base", "../etc/passwd", "Asia/Shanghai/x", "UTC+8"):
        with pytest.raises(TimeZoneError, match="is not an IANA time zone"):
            get_zone(bad)
