"""D-C2: where this engine deliberately differs from OpenClaw + croner 10.

Each "croner says" value below was produced by croner 10.0.1 under Node 20 through
OpenClaw 2026.2.27's ``computeNextRunAtMs`` (next run, retry one second later when the
answer is not in the future, otherwise no run), the same setup as the reference corpus.
Also pinned: the behaviours D-C2 keeps from croner (its DST rules).
"""

from __future__ import annotations

import time

import pytest

from plans.schedule import (
    DEFAULT_TOP_OF_HOUR_STAGGER_MS,
    ScheduleError,
    compute_next_run_ms,
    next_runs,
    parse_at_ms,
    resolve_stagger_ms,
    validate_schedule,
)
from xworkmate.lib.jstime import ms_to_iso


def _ms(iso: str) -> int:
    return parse_at_ms(iso)


def _runs(expr: str, tz: str, after: str, count: int = 3) -> list[str]:
    schedule = {"kind": "cron", "expr": expr, "tz": tz}
    return [
        ms_to_iso(ms) for ms in next_runs(schedule, after_ms=_ms(after), count=count, host_tz="UTC")
    ]


# --------------------------------------------------------------------------------------
# D-C2 exception 1: a matching day skipped by croner at a month rollover is fired.
# croner also tries Feb 29-31 as candidates; "Feb 30" rolls into "Mar 2" and croner
# resumes from there, silently skipping a matching Mar 1.
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "tz", "after", "expected", "croner_says"),
    [
        (
            "0 0 1,30 * *",
            "UTC",
            "2026-02-15T00:00:00Z",
            ["2026-03-01T00:00:00.000Z", "2026-03-30T00:00:00.000Z", "2026-04-01T00:00:00.000Z"],
            ["2026-03-30T00:00:00.000Z", "2026-04-01T00:00:00.000Z", "2026-04-30T00:00:00.000Z"],
        ),
        (
            "44 8 1,31 * *",
            "UTC",
            "2026-02-21T17:53:00Z",
            ["2026-03-01T08:44:00.000Z", "2026-03-31T08:44:00.000Z", "2026-04-01T08:44:00.000Z"],
            ["2026-03-31T08:44:00.000Z", "2026-04-01T08:44:00.000Z", "2026-05-01T08:44:00.000Z"],
        ),
        (
            # Leap year, DST zone: "Feb 31" -> Mar 2 skips Mar 1 (local) = Feb 29 20:09Z.
            "9 7 1,31 * *",
            "Australia/Lord_Howe",
            "2028-01-31T00:00:00Z",
            ["2028-01-31T20:09:00.000Z", "2028-02-29T20:09:00.000Z", "2028-03-30T20:09:00.000Z"],
            ["2028-01-31T20:09:00.000Z", "2028-03-30T20:09:00.000Z", "2028-03-31T20:09:00.000Z"],
        ),
        (
            # Day-of-month OR day-of-week: Mar 1 2026 matches "1" although it is a Sunday.
            "39 21 1,30 * MON",
            "UTC",
            "2026-02-24T00:00:00Z",
            ["2026-03-01T21:39:00.000Z", "2026-03-02T21:39:00.000Z", "2026-03-09T21:39:00.000Z"],
            ["2026-03-02T21:39:00.000Z", "2026-03-09T21:39:00.000Z", "2026-03-16T21:39:00.000Z"],
        ),
    ],
    ids=["dom-1-30", "dom-1-31", "lord-howe-leap-year", "dom-or-dow"],
)
def test_d_c2_month_rollover_fires(
    expr: str, tz: str, after: str, expected: list[str], croner_says: list[str]
) -> None:
    assert _runs(expr, tz, after) == expected
    assert expected != croner_says


# --------------------------------------------------------------------------------------
# D-C2 exception 2: an expression that can never fire, or that makes croner overflow,
# answers "no next run" cleanly (None / []), quickly and without an exception.
# croner answers null after searching to the year 3000 for most of them, and throws
# "RangeError: Maximum call stack size exceeded" for "0 0 31 4,6,9,11 *".
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "expr",
    [
        "0 0 30 2 *",  # Feb 30
        "0 0 31 2 *",
        "0 0 31 4,6,9,11 *",  # croner overflows its call stack on this one
        "0 0 12 * * * 2020",  # a year in the past
        "0 0 0 29 2 * 2027",  # seven fields: 2027 is not a leap year
    ],
)
def test_d_c2_never_fires_answers_no_next_run(expr: str) -> None:
    schedule = {"kind": "cron", "expr": expr, "tz": "Europe/Berlin"}
    started = time.perf_counter()
    assert compute_next_run_ms(schedule, now_ms=_ms("2026-03-10T00:00:00Z"), host_tz="UTC") is None
    assert next_runs(schedule, after_ms=_ms("2026-03-10T00:00:00Z"), count=5, host_tz="UTC") == []
    assert time.perf_counter() - started < 1.0
    # Such a schedule is valid to create (it stays enabled and never becomes due, 8.4).
    validate_schedule(schedule, now_ms=_ms("2026-03-10T00:00:00Z"), host_tz="UTC")


def test_d_c2_never_fires_with_stagger_and_job_id() -> None:
    schedule = {"kind": "cron", "expr": "0 0 30 2 *", "tz": "UTC", "staggerMs": 60000}
    now = _ms("2026-03-10T00:00:00Z")
    assert compute_next_run_ms(schedule, now_ms=now, host_tz="UTC", job_id="job-123") is None


def test_d_c2_rare_but_possible_expressions_still_fire() -> None:
    # Feb 29 that is also the fifth Monday of February (croner's "+" = AND): 2044, 2072.
    assert _runs("0 0 L 2 +1#5", "UTC", "2026-03-10T00:00:00Z", 2) == [
        "2044-02-29T00:00:00.000Z",
        "2072-02-29T00:00:00.000Z",
    ]


# --------------------------------------------------------------------------------------
# D-C2 exception 3: "now" in the second pass of a repeated (fall-back) hour. croner maps
# the next matching wall time to its first occurrence, which has already passed, the
# retry one second later does the same, and OpenClaw reports no next run at all (the job
# would never run again). Decided: the next wall time whose instant is in the future,
# i.e. what a job that was already running would run next.
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "tz", "now", "expected"),
    [
        # NY falls back at 06:00Z on 2026-11-01: 01:00-02:00 local happens twice.
        # 06:10Z is 01:10 EST (second pass). The 01:30 match maps to 05:30Z (past).
        (
            "*/30 * * * *",
            "America/New_York",
            "2026-11-01T06:10:00Z",
            ["2026-11-01T07:00:00.000Z", "2026-11-01T07:30:00.000Z", "2026-11-01T08:00:00.000Z"],
        ),
        # A fixed time in the repeated hour ran once (at 05:30Z, 01:30 EDT): next is tomorrow.
        (
            "30 1 * * *",
            "America/New_York",
            "2026-11-01T06:10:00Z",
            ["2026-11-02T06:30:00.000Z", "2026-11-03T06:30:00.000Z", "2026-11-04T06:30:00.000Z"],
        ),
        # Berlin falls back at 01:00Z on 2027-10-31; 01:31:32Z is 02:31:32 CET.
        (
            "10,40 * * * *",
            "Europe/Berlin",
            "2027-10-31T01:31:32Z",
            ["2027-10-31T02:10:00.000Z", "2027-10-31T02:40:00.000Z", "2027-10-31T03:10:00.000Z"],
        ),
        # Chatham falls back 45 minutes past the hour; a per-second pattern.
        (
            "* * * * *",
            "Pacific/Chatham",
            "2027-04-03T14:12:13.500Z",
            ["2027-04-03T15:00:00.000Z", "2027-04-03T15:01:00.000Z", "2027-04-03T15:02:00.000Z"],
        ),
    ],
    ids=["ny-every-30-min", "ny-fixed-time", "berlin", "chatham"],
)
def test_d_c2_second_pass_of_repeated_hour_runs_next_future_match(
    expr: str, tz: str, now: str, expected: list[str]
) -> None:
    # OpenClaw + croner 10.0.1 answer no next run (undefined) for every one of these.
    runs = _runs(expr, tz, now)
    assert runs == expected
    assert all(_ms(run) > _ms(now) for run in runs)


def test_d_c2_second_pass_matches_the_sequence_of_a_running_job() -> None:
    # Runs chained from before the fall-back pass straight over the second pass ...
    chained = _runs("*/30 * * * *", "America/New_York", "2026-11-01T05:10:00Z", 4)
    assert chained == [
        "2026-11-01T05:30:00.000Z",  # 01:30 EDT
        "2026-11-01T07:00:00.000Z",  # 02:00 EST: the repeated hour is skipped (croner)
        "2026-11-01T07:30:00.000Z",
        "2026-11-01T08:00:00.000Z",
    ]
    # ... and asking from inside the second pass continues that same sequence.
    assert _runs("*/30 * * * *", "America/New_York", "2026-11-01T06:45:59.999Z", 3) == chained[1:]


# --------------------------------------------------------------------------------------
# D-C2 exception 4: an ``at`` that is not a valid ISO-8601 date-time is rejected.
# JavaScript's Date.parse would roll 2026-02-30 into March 2, read T24:00 as the next
# midnight and read a bare "0" as the year 2000.
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value",
    [
        "2026-02-30",
        "2026-02-29T09:00:00Z",  # 2026 is not a leap year
        "2026-03-10T24:00",
        "2026-03-10T24:00:00Z",
        "0",
        " 0 ",
        "2026-13-01",
        "2026-03-10T09:60:00Z",
        "2026-03-10T09:00:00+24:00",
        "tomorrow 9am",
        "2026-03-10 09:00:00",  # no "T": JavaScript would use the host's zone
        "",
    ],
)
def test_d_c2_invalid_at_rejected(value: str) -> None:
    message = f"Invalid schedule.at: expected ISO-8601 timestamp (got {value})"
    schedule = {"kind": "at", "at": value}
    now = _ms("2026-03-01T00:00:00Z")
    with pytest.raises(ScheduleError) as caught:
        validate_schedule(schedule, now_ms=now, host_tz="UTC")
    assert str(caught.value) == message
    with pytest.raises(ScheduleError, match=r"^Invalid schedule\.at: expected ISO-8601"):
        compute_next_run_ms(schedule, now_ms=now, host_tz="UTC")
    with pytest.raises(ScheduleError, match=r"^Invalid schedule\.at: expected ISO-8601"):
        next_runs(schedule, after_ms=now, count=1, host_tz="UTC")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-10T09:00:00", "2026-03-10T09:00:00.000Z"),  # no zone = UTC (8.4 pitfall)
        ("2026-03-10T09:00:00+08:00", "2026-03-10T01:00:00.000Z"),
        ("2026-03-10T09:00:00+0800", "2026-03-10T01:00:00.000Z"),
        ("2026-03-10T09:00:00-05:30", "2026-03-10T14:30:00.000Z"),
        ("2026-03-10", "2026-03-10T00:00:00.000Z"),
        ("2026-03-10T09:00", "2026-03-10T09:00:00.000Z"),
        ("2026-03-10T09:00:00.1234Z", "2026-03-10T09:00:00.123Z"),
        ("2026-03-10T09:00:00z", "2026-03-10T09:00:00.000Z"),
        (" 2026-03-10T01:00:00Z ", "2026-03-10T01:00:00.000Z"),
        ("2028-02-29T00:00:00Z", "2028-02-29T00:00:00.000Z"),
        ("1773104400000", "2026-03-10T01:00:00.000Z"),  # all digits = epoch ms
    ],
)
def test_valid_at_forms_parse_as_openclaw(value: str, expected: str) -> None:
    assert ms_to_iso(parse_at_ms(value)) == expected


# --------------------------------------------------------------------------------------
# Kept from croner: its DST rules.
# --------------------------------------------------------------------------------------
def test_spring_forward_gap_time_runs_shifted_by_the_gap() -> None:
    assert _runs("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2) == [
        "2026-03-08T07:30:00.000Z",  # 03:30 EDT, not skipped and not clamped to 03:00
        "2026-03-09T06:30:00.000Z",
    ]
    # Lord Howe springs forward by 30 minutes: 02:15 runs at 02:45.
    assert _runs("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 1) == [
        "2026-10-03T15:45:00.000Z"
    ]


def test_fixed_time_in_repeated_hour_fires_once() -> None:
    assert _runs("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2) == [
        "2026-11-01T05:30:00.000Z",
        "2026-11-02T06:30:00.000Z",
    ]
    assert _runs("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2) == [
        "2026-10-25T00:30:00.000Z",  # 02:30 CEST, the first pass
        "2026-10-26T01:30:00.000Z",
    ]


def test_hourly_pattern_skips_the_repeated_hour() -> None:
    schedule = {"kind": "cron", "expr": "0 * * * *", "tz": "America/New_York", "staggerMs": 0}
    runs = next_runs(schedule, after_ms=_ms("2026-11-01T04:30:00Z"), count=4, host_tz="UTC")
    assert [ms_to_iso(ms) for ms in runs] == [
        "2026-11-01T05:00:00.000Z",
        "2026-11-01T07:00:00.000Z",
        "2026-11-01T08:00:00.000Z",
        "2026-11-01T09:00:00.000Z",
    ]


def test_host_zone_is_used_when_tz_is_missing_or_blank() -> None:
    for schedule in (
        {"kind": "cron", "expr": "0 9 * * *"},
        {"kind": "cron", "expr": "0 9 * * *", "tz": "  "},
    ):
        assert compute_next_run_ms(
            schedule, now_ms=_ms("2026-03-10T00:00:00Z"), host_tz="Asia/Shanghai"
        ) == _ms("2026-03-10T01:00:00Z")


def test_every_is_anchored_and_returns_now_on_a_boundary() -> None:
    schedule = {"kind": "every", "everyMs": 3_600_000, "anchorMs": _ms("2026-03-10T00:00:00Z")}
    assert compute_next_run_ms(schedule, now_ms=_ms("2026-03-10T02:15:00Z"), host_tz="UTC") == _ms(
        "2026-03-10T03:00:00Z"
    )
    assert compute_next_run_ms(schedule, now_ms=_ms("2026-03-10T00:00:00Z"), host_tz="UTC") == _ms(
        "2026-03-10T01:00:00Z"
    )
    # OpenClaw's edge: exactly on a later boundary, "now" itself is the next run.
    assert compute_next_run_ms(schedule, now_ms=_ms("2026-03-10T02:00:00Z"), host_tz="UTC") == _ms(
        "2026-03-10T02:00:00Z"
    )


def test_default_stagger_for_top_of_hour_and_explicit_values() -> None:
    schedule = {"kind": "cron", "expr": "0 * * * *", "tz": "Asia/Shanghai"}
    now = _ms("2026-03-10T00:10:00Z")
    assert resolve_stagger_ms(schedule) == DEFAULT_TOP_OF_HOUR_STAGGER_MS == 300_000
    assert resolve_stagger_ms({"kind": "cron", "expr": "0 0 * * * *"}) == 300_000  # 6 fields
    assert resolve_stagger_ms({"kind": "cron", "expr": "0 9-17 * * *"}) == 0  # no "*" in hour
    assert resolve_stagger_ms({**schedule, "staggerMs": "60000"}) == 60_000
    assert (
        ms_to_iso(compute_next_run_ms(schedule, now_ms=now, host_tz="UTC", job_id="job-123") or 0)
        == "2026-03-10T01:00:28.592Z"
    )
    exact = {**schedule, "staggerMs": 0}  # 0 means exact
    assert compute_next_run_ms(exact, now_ms=now, host_tz="UTC", job_id="job-123") == _ms(
        "2026-03-10T01:00:00Z"
    )
    # Without a job id there is nothing to derive an offset from: exact times.
    assert compute_next_run_ms(schedule, now_ms=now, host_tz="UTC") == _ms("2026-03-10T01:00:00Z")
