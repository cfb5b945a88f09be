"""Bad input: a clear ScheduleError naming what is wrong, never another exception.

The cron messages are croner 10.0.1's, checked against croner itself under Node 20.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plans.schedule import (
    ScheduleError,
    compute_next_run_ms,
    describe_schedule,
    next_runs,
    parse_at_ms,
    parse_cron,
    validate_schedule,
)

NOW = 1_773_100_800_000  # 2026-03-10T00:00:00Z


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("61 * * * *", "CronPattern: Invalid value for minute: 61"),
        ("* 24 * * *", "CronPattern: Invalid value for hour: 24"),
        # croner reports day and month 0-based, as its arrays are.
        ("0 0 32 * *", "CronPattern: Invalid value for day: 31"),
        ("0 0 0 * *", "CronPattern: Invalid value for day: -1"),
        ("0 0 * 13 *", "CronPattern: Invalid value for month: 12"),
        ("0 0 * * 8", "CronPattern: Invalid value for dayOfWeek: 8"),
        ("0 0 * * 5-2", "CronPattern: From value is larger than to value: '5-2'"),
        (
            "* * * *",
            "CronPattern: invalid configuration format ('* * * *'), exactly five, six, or "
            "seven space separated parts are required.",
        ),
        (
            "0 0 0 0 0 0 0 0",
            "CronPattern: invalid configuration format ('0 0 0 0 0 0 0 0'), exactly five, "
            "six, or seven space separated parts are required.",
        ),
        ("0 9 * * MON-", "CronPattern: Syntax error, illegal upper range (NaN)"),
        ("0 9 * * FOO", "CronPattern: configuration entry 5 (FOO) contains illegal characters."),
        (
            "0 9 * JANUARY *",
            "CronPattern: configuration entry 4 (1UARY) contains illegal characters.",
        ),
        (
            "5/10 * * * *",
            "CronPattern: Syntax error, stepping with numeric prefix ('5/10') is not allowed. "
            "Use wildcard (*/step) or range (min-max/step) instead.",
        ),
        ("*/0 * * * *", "CronPattern: Syntax error, illegal stepping: 0"),
        (
            "*/61 * * * *",
            "CronPattern: Syntax error, steps cannot be greater than maximum value of part (60)",
        ),
        ("0 0 1#2 * *", "CronPattern: configuration entry 3 (1#2) contains illegal characters."),
        (
            "0 0 * * 1#6",
            "CronPattern: nth weekday out of range, should be 1-5 or L. Value: 6, Type: string",
        ),
        ("0 0 1-15W * *", "CronPattern: Syntax error, W is not allowed in a range."),
        ("0 0 * * +", "CronPattern: Day-of-week field cannot be empty after '+' modifier."),
        (
            "1,,2 * * * *",
            "CronPattern: configuration entry minute () is empty, check for trailing spaces.",
        ),
        (
            "0 0 0 * * * */2",
            "CronPattern: Invalid value for year: 0 (supported range: 1-9999)",
        ),
        ("0 0 * * L", "CronPattern: dayOfWeek is not a number: 'L'"),
        (
            "@reboot",
            "CronPattern: @reboot is not supported in this environment. This is an "
            "event-based trigger that requires system startup detection.",
        ),
    ],
)
def test_bad_cron_expressions_give_croners_message(expr: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_cron(expr)
    assert str(caught.value) == message
    schedule = {"kind": "cron", "expr": expr, "tz": "UTC"}
    for call in (
        lambda: validate_schedule(schedule, now_ms=NOW, host_tz="UTC"),
        lambda: compute_next_run_ms(schedule, now_ms=NOW, host_tz="UTC"),
        lambda: next_runs(schedule, after_ms=NOW, count=3, host_tz="UTC"),
    ):
        with pytest.raises(ScheduleError) as caught:
            call()
        assert str(caught.value) == message


def test_schedule_error_is_a_value_error() -> None:
    assert issubclass(ScheduleError, ValueError)


@pytest.mark.parametrize("tz", ["Planet/Nowhere", "+08:00", "EST+5", "Asia/Shang hai"])
def test_unknown_zone_is_named(tz: str) -> None:
    schedule = {"kind": "cron", "expr": "0 9 * * *", "tz": tz}
    for call in (
        lambda: validate_schedule(schedule, now_ms=NOW, host_tz="UTC"),
        lambda: compute_next_run_ms(schedule, now_ms=NOW, host_tz="UTC"),
    ):
        with pytest.raises(ScheduleError) as caught:
            call()
        assert f"Failed to convert date to timezone '{tz}'" in str(caught.value)
        assert str(caught.value).endswith(f"Invalid time zone specified: {tz}")


def test_unknown_host_zone_is_named() -> None:
    with pytest.raises(ScheduleError, match="Invalid time zone specified: Mars/Base"):
        compute_next_run_ms({"kind": "cron", "expr": "0 9 * * *"}, now_ms=NOW, host_tz="Mars/Base")


@pytest.mark.parametrize("tz", ["utc", "GMT", "asia/shanghai", " Europe/London "])
def test_zone_names_match_case_insensitively_like_intl(tz: str) -> None:
    schedule = {"kind": "cron", "expr": "0 9 * * *", "tz": tz}
    validate_schedule(schedule, now_ms=NOW, host_tz="UTC")
    assert compute_next_run_ms(schedule, now_ms=NOW, host_tz="UTC") is not None


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ({"kind": "every", "everyMs": 30_000}, "expected an integer >= 60000 (got 30000)"),
        ({"kind": "every", "everyMs": 0}, "expected an integer >= 60000 (got 0)"),
        ({"kind": "every", "everyMs": 90_000.5}, "expected an integer >= 60000"),
        ({"kind": "every", "everyMs": "3600000"}, "expected an integer >= 60000"),
        ({"kind": "every", "everyMs": True}, "expected an integer >= 60000"),
        ({"kind": "every"}, "invalid schedule.everyMs"),
        ({"kind": "every", "everyMs": 60_000, "anchorMs": -1}, "invalid schedule.anchorMs"),
    ],
)
def test_every_below_minimum_or_not_an_integer(schedule: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(schedule, now_ms=NOW, min_every_ms=60_000, host_tz="UTC")
    assert fragment in str(caught.value)


def test_every_at_minimum_is_accepted() -> None:
    validate_schedule(
        {"kind": "every", "everyMs": 60_000}, now_ms=NOW, min_every_ms=60_000, host_tz="UTC"
    )


@pytest.mark.parametrize(
    ("schedule", "fragment"),
    [
        ({"kind": "hourly"}, "invalid schedule.kind"),
        ({}, "invalid schedule.kind"),
        ({"kind": "cron"}, "invalid cron schedule: expr is required"),
        ({"kind": "cron", "expr": "   "}, "invalid cron schedule: expr is required"),
        ({"kind": "cron", "expr": 5}, "invalid cron schedule: expr is required"),
        ({"kind": "cron", "expr": "0 9 * * *", "tz": 8}, "invalid schedule.tz"),
        ({"kind": "cron", "expr": "0 9 * * *", "staggerMs": -1}, "invalid schedule.staggerMs"),
        ({"kind": "cron", "expr": "0 9 * * *", "timezone": "UTC"}, "'timezone'"),
        ({"kind": "at", "at": 1773104400000}, "Invalid schedule.at"),
    ],
)
def test_malformed_schedules_are_named(schedule: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(schedule, now_ms=NOW, host_tz="UTC")
    assert fragment in str(caught.value)


def test_at_creation_window_messages_are_openclaws() -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(
            {"kind": "at", "at": "2026-03-10T09:00:00Z"}, now_ms=NOW + 36_000_000, host_tz="UTC"
        )
    assert str(caught.value) == (
        "schedule.at is in the past: 2026-03-10T09:00:00.000Z (60 minutes ago). "
        "Current time: 2026-03-10T10:00:00.000Z"
    )
    with pytest.raises(ScheduleError) as caught:
        validate_schedule({"kind": "at", "at": "2040-01-01"}, now_ms=NOW, host_tz="UTC")
    assert str(caught.value).startswith("schedule.at is too far in the future: 2040-01-01")
    assert str(caught.value).endswith("Maximum allowed: 10 years")
    # Up to one minute in the past is still accepted (creation races).
    validate_schedule({"kind": "at", "at": "2026-03-09T23:59:01Z"}, now_ms=NOW, host_tz="UTC")


_JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_random_strings_parse_or_raise_schedule_error(text: str) -> None:
    try:
        parse_cron(text)
    except ScheduleError as error:
        assert str(error)


_CRON_ALPHABET = "0123456789*/-,#LW?+ @lwMONSUNjanDEC"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=_CRON_ALPHABET, max_size=30),
    st.sampled_from(["UTC", "America/New_York", "Australia/Lord_Howe", "Nowhere/Else", ""]),
    st.integers(min_value=0, max_value=4_102_444_800_000),
)
def test_cron_like_strings_compute_or_raise_schedule_error(expr: str, tz: str, now: int) -> None:
    schedule = {"kind": "cron", "expr": expr, "tz": tz}
    try:
        runs = next_runs(schedule, after_ms=now, count=3, host_tz="Europe/Berlin")
    except ScheduleError:
        return
    assert runs == sorted(set(runs))
    assert all(run > now for run in runs)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["kind", "expr", "tz", "at", "everyMs", "anchorMs", "staggerMs", "x"]),
        _JSON_LEAVES | st.sampled_from(["cron", "every", "at", "0 9 * * *", "2026-03-10"]),
        max_size=5,
    ),
    st.integers(min_value=0, max_value=4_102_444_800_000),
)
def test_arbitrary_schedules_never_crash(schedule: dict[str, Any], now: int) -> None:
    for call in (
        lambda: validate_schedule(schedule, now_ms=now, min_every_ms=1000, host_tz="UTC"),
        lambda: compute_next_run_ms(schedule, now_ms=now, host_tz="UTC", job_id="job"),
        lambda: next_runs(schedule, after_ms=now, count=2, host_tz="UTC", job_id="job"),
        lambda: describe_schedule(schedule, lang="en"),
    ):
        try:
            call()
        except ScheduleError as error:
            assert str(error)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30) | st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:.]{2,12}Z?)?\Z"))
def test_random_at_strings_parse_or_raise_schedule_error(text: str) -> None:
    try:
        ms = parse_at_ms(text)
    except ScheduleError as error:
        assert str(error) == f"Invalid schedule.at: expected ISO-8601 timestamp (got {text})"
    else:
        assert ms > 0
