"""Counting a schedule's fire times without walking them (D-C26), checked against the walk.

The count a pause's rows rely on must be exactly what walking the schedule from one
fire time to the next gives, DST changes, staggers and croner's day rules included;
the newest fire times it picks must be the walk's newest.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plans.firetimes import MAX_MISSED_RECORDED, fire_times_between, newest_fire_times
from plans.schedule import ScheduleError, compute_next_run_ms, parse_cron
from plans.schedule.counting import count_fire_times
from tests.plans.test_schedule_properties import DST_MOMENTS, ZONES

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

# Each expression with the longest span its walk covers quickly (a few thousand steps).
SPANS = {
    "* * * * * *": 90 * 60_000,
    "*/7 * * * * *": 6 * HOUR_MS,
    "*/13 * 2 * * *": 3 * DAY_MS,
    "* 30-31 1,2,3 * * *": 4 * DAY_MS,
    "* * * * *": 2 * DAY_MS,
    "0,30 1,2,3 * * *": 40 * DAY_MS,
    "30 2 * * *": 40 * DAY_MS,
    "45 2 * * *": 40 * DAY_MS,
    "0 * * * *": 40 * DAY_MS,
    "0 9 * * 1-5": 40 * DAY_MS,
    "0 0 L * *": 90 * DAY_MS,
    "15 1 * * 0#2": 90 * DAY_MS,
    "0 0 12 29 2 *": 800 * DAY_MS,
    "0 30 1 * * 5L": 90 * DAY_MS,
    "0 0 0 15W * *": 90 * DAY_MS,
    "5 4 * * SUN": 40 * DAY_MS,
    "0 12 ? * MON": 40 * DAY_MS,
}
STAGGERS = st.sampled_from([None, 0, 7_777, 300_000, HOUR_MS])


def _walk(schedule: dict[str, object], start_ms: int, end_ms: int, job_id: str) -> list[int]:
    found: list[int] = []
    cursor = start_ms - 1
    while True:
        following = compute_next_run_ms(schedule, now_ms=cursor, host_tz="UTC", job_id=job_id)
        if following is None or following >= end_ms:
            return found
        found.append(following)
        cursor = following


def _schedule(expr: str, zone: str, stagger: int | None) -> dict[str, object]:
    schedule: dict[str, object] = {"kind": "cron", "expr": expr, "tz": zone}
    if stagger is not None:
        schedule["staggerMs"] = stagger
    return schedule


@st.composite
def _spans(draw: st.DrawFn) -> tuple[dict[str, object], int, int, str]:
    expr = draw(st.sampled_from(sorted(SPANS)))
    schedule = _schedule(expr, draw(st.sampled_from(ZONES)), draw(STAGGERS))
    # Near a DST change of one of the zones, often across it.
    # (Drawn as parts of the longest span: hypothesis favours small integers, and long
    # spans are the point.)
    start = draw(st.sampled_from(DST_MOMENTS)) - SPANS[expr] * draw(st.integers(0, 99)) // 100
    length = SPANS[expr] * draw(st.integers(0, 100)) // 100 + draw(st.integers(0, 999))
    return schedule, start, start + length, draw(st.sampled_from(["job-a", "job-b", ""]))


@settings(max_examples=200, deadline=None)
@given(_spans())
def test_the_count_is_the_walks_length(span: tuple[dict[str, object], int, int, str]) -> None:
    schedule, start, end, job_id = span
    walked = _walk(schedule, start, end, job_id)
    assert count_fire_times(schedule, start_ms=start, end_ms=end, host_tz="UTC",
                            job_id=job_id) == len(walked)


@settings(max_examples=50, deadline=None)
@given(_spans())
def test_the_newest_are_the_walks_newest_and_the_rest_are_counted(
    span: tuple[dict[str, object], int, int, str],
) -> None:
    schedule, start, end, job_id = span
    walked = _walk(schedule, start + 1, end, job_id)
    newest = newest_fire_times(schedule, after_ms=start, before_ms=end, host_tz="UTC",
                               job_id=job_id)
    assert list(newest.times) == walked[-MAX_MISSED_RECORDED:]
    assert newest.more == max(0, len(walked) - MAX_MISSED_RECORDED)


@settings(max_examples=100, deadline=None)
@given(
    every=st.integers(1, 3 * DAY_MS), anchor=st.integers(0, 2_000_000_000_000),
    start=st.integers(1_700_000_000_000, 1_800_000_000_000), steps=st.integers(0, 3_000),
    rest=st.integers(0, 3 * DAY_MS),
)
def test_an_every_is_counted_on_its_anchors_grid(
    every: int, anchor: int, start: int, steps: int, rest: int
) -> None:
    schedule = {"kind": "every", "everyMs": every, "anchorMs": anchor}
    end = start + steps * every + rest % every
    walk = fire_times_between(schedule, after_ms=start - 1, before_ms=end, host_tz="UTC",
                              job_id="job")
    counted = count_fire_times(schedule, start_ms=start, end_ms=end, host_tz="UTC", job_id="job")
    assert counted == len(walk.times) + walk.more
    # Independently: the grid points anchor + k * every (k >= 0) in [start, end).
    first = max(0, -((anchor - start) // every))
    assert counted == sum(1 for k in range(first, first + steps + 2)
                          if start <= anchor + k * every < end)


def test_a_year_of_an_every_second_cron_counts_in_a_moment_across_both_dst_changes() -> None:
    schedule = _schedule("* * * * * *", "America/New_York", None)
    start = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    counted = count_fire_times(schedule, start_ms=start, end_ms=start + 365 * DAY_MS,
                               host_tz="UTC", job_id="job")
    # Every second of the year but the repeated hour of November, fired once (D-C2).
    assert counted == 365 * 86_400 - 3_600


def test_the_cron_patterns_count_of_wall_seconds_matches_a_brute_force_count() -> None:
    pattern = parse_cron("*/20 5-6 2,3 L * *")  # the last day of each month
    start = 20_000 * 86_400  # 2024-10-04, wall seconds
    end = start + 120 * 86_400
    brute = sum(
        1 for wall in range(start, end, 20) if pattern.next_wall(wall) == wall
    )
    # Four month ends in the span, each with 2 hours x 2 minutes x 3 seconds.
    assert pattern.count_walls(start, end) == brute == 4 * 12


def test_a_schedule_that_cannot_be_computed_is_an_error_and_an_empty_span_counts_none() -> None:
    bad = {"kind": "cron", "expr": "* * * * *", "tz": "Mars/Olympus"}
    with pytest.raises(ScheduleError, match="Mars/Olympus"):
        count_fire_times(bad, start_ms=0, end_ms=DAY_MS, host_tz="UTC", job_id="job")
    unanchored = {"kind": "every", "everyMs": 60_000}
    with pytest.raises(ScheduleError, match="anchorMs"):
        count_fire_times(unanchored, start_ms=0, end_ms=DAY_MS, host_tz="UTC", job_id="job")
    assert count_fire_times(_schedule("* * * * *", "UTC", None), start_ms=DAY_MS, end_ms=0,
                            host_tz="UTC", job_id="job") == 0
