"""The pure rules of the run policies (D-C23, D-C24): which fire times run, which get rows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plans.runpolicy import (
    MAX_CATCH_UP_RUNS,
    MISSED_DOWN,
    MISSED_LATE,
    MISSED_NOT_ON_TIME,
    MISSED_OVER_BOUND,
    ON_TIME_MS,
    SKIPPED_AT_CAPACITY,
    SKIPPED_BUFFER_FULL,
    SKIPPED_RUNNING,
    catch_up,
    next_waiting,
    overlap_decision,
    run_policy_problems,
)

MINUTE = 60_000
T = 1_773_104_400_000  # 2026-03-10T01:00:00Z
EVERY_MINUTE = {"kind": "every", "everyMs": MINUTE, "anchorMs": T}


def _catch_up(now_ms: int, policy: str, lateness: int | None = None, schedule=EVERY_MINUTE):
    return catch_up(schedule, due_ms=T, now_ms=now_ms, host_tz="UTC", job_id="j",
                    policy=policy, max_lateness_seconds=lateness)


def test_run_latest_runs_the_newest_however_late():
    plan = _catch_up(T + 10 * MINUTE + 5000, "run-latest")
    assert plan.run_ms == T + 10 * MINUTE
    assert plan.missed_ms == tuple(T + k * MINUTE for k in range(10))
    assert (plan.missed_note, plan.waiting_ms, plan.next_ms) == (MISSED_DOWN, (), T + 11 * MINUTE)


def test_skip_runs_the_newest_only_when_a_tick_reached_it_on_time():
    ten_minutes = {"kind": "every", "everyMs": 10 * MINUTE, "anchorMs": T}
    # The older ones are missed; the newest, reached 30 s late, runs.
    on_time = _catch_up(T + 3 * MINUTE + 30_000, "skip")
    assert on_time.run_ms == T + 3 * MINUTE
    assert on_time.missed_ms == (T, T + MINUTE, T + 2 * MINUTE) and on_time.late_ms == ()
    # Reached exactly ON_TIME_MS late it still runs; a millisecond later it is missed.
    assert _catch_up(T + ON_TIME_MS, "skip", schedule=ten_minutes).run_ms == T
    just_late = _catch_up(T + ON_TIME_MS + 1, "skip", schedule=ten_minutes)
    assert (just_late.run_ms, just_late.late_ms) == (None, (T,))
    late = _catch_up(T + 3 * MINUTE + 30_000, "skip", schedule=ten_minutes)
    assert late.run_ms is None
    assert late.missed_ms == () and late.late_ms == (T,)
    assert late.late_note == MISSED_NOT_ON_TIME
    # On time (a tick 5 s late): the due fire time runs and nothing is recorded.
    assert _catch_up(T + 5000, "skip").run_ms == T


def test_run_all_runs_those_within_the_lateness_oldest_first():
    plan = _catch_up(T + 5 * MINUTE + 30_000, "run-all", lateness=180)
    # Lateness 330, 270, 210 s: missed; 150, 90, 30 s: run, oldest first.
    assert plan.missed_ms == (T, T + MINUTE, T + 2 * MINUTE)
    assert plan.missed_note == MISSED_LATE.format(seconds=180)
    assert plan.run_ms == T + 3 * MINUTE
    assert plan.waiting_ms == (T + 4 * MINUTE, T + 5 * MINUTE)
    assert plan.next_ms == T + 6 * MINUTE


def test_run_all_catches_up_at_most_a_bounded_number_and_records_the_rest():
    plan = _catch_up(T + 60 * MINUTE, "run-all", lateness=86_400)
    ran = (plan.run_ms, *plan.waiting_ms)
    assert len(ran) == MAX_CATCH_UP_RUNS
    assert ran[-1] == T + 60 * MINUTE  # the newest ones run
    assert plan.late_ms == tuple(T + k * MINUTE for k in range(61 - MAX_CATCH_UP_RUNS))
    assert plan.late_note == MISSED_OVER_BOUND and plan.missed_ms == ()


def test_a_one_shot_runs_once_however_late_under_every_policy():
    at = {"kind": "at", "at": "2026-03-10T01:00:00Z"}
    for policy, lateness in (("run-latest", None), ("skip", None), ("run-all", 60)):
        assert _catch_up(T + 86_400_000, policy, lateness, schedule=at).run_ms == T


@given(
    steps=st.integers(min_value=0, max_value=300),
    late_s=st.integers(min_value=0, max_value=59),
    lateness=st.integers(min_value=60, max_value=20_000),
    policy=st.sampled_from(["run-latest", "skip", "run-all"]),
)
def test_every_passed_fire_time_either_runs_waits_or_gets_a_row(steps, late_s, lateness, policy):
    now = T + steps * MINUTE + late_s * 1000
    plan = _catch_up(now, policy, lateness if policy == "run-all" else None)
    handled = [*plan.missed_ms, *plan.late_ms, *plan.waiting_ms]
    if plan.run_ms is not None:
        handled.append(plan.run_ms)
    # None twice; the bounded record drops only the oldest, and counts them.
    assert len(handled) == len(set(handled))
    assert len(handled) + plan.missed_more == steps + 1
    assert all(ms <= now for ms in handled) and plan.next_ms == T + (steps + 1) * MINUTE
    assert list(plan.waiting_ms) == sorted(plan.waiting_ms)
    if plan.waiting_ms:
        assert plan.run_ms is not None and plan.run_ms < plan.waiting_ms[0]


def test_a_waiting_fire_time_too_late_when_it_could_start_is_missed():
    pick = next_waiting((T, T + MINUTE, T + 2 * MINUTE), now_ms=T + 150_000,
                        max_lateness_seconds=120)
    assert (pick.run_ms, pick.late_ms, pick.waiting_ms) == (T + MINUTE, (T,), (T + 2 * MINUTE,))
    none = next_waiting((T,), now_ms=T + 200_000, max_lateness_seconds=120)
    assert (none.run_ms, none.late_ms, none.waiting_ms) == (None, (T,), ())


def test_the_overlap_decisions():
    arriving = (T, T + MINUTE, T + 2 * MINUTE)
    skip = overlap_decision("skip", arriving_ms=arriving, buffered_ms=None, at_capacity=False)
    assert (skip.buffer_ms, skip.skipped_ms, skip.note) == (None, arriving, SKIPPED_RUNNING)
    buffer = overlap_decision("buffer", arriving_ms=arriving, buffered_ms=None, at_capacity=False)
    assert (buffer.buffer_ms, buffer.skipped_ms) == (T, arriving[1:])
    assert buffer.note == SKIPPED_BUFFER_FULL
    full = overlap_decision("buffer", arriving_ms=arriving, buffered_ms=T - MINUTE,
                            at_capacity=False)
    assert (full.buffer_ms, full.skipped_ms) == (None, arriving)
    capacity = overlap_decision("allow", arriving_ms=arriving, buffered_ms=None, at_capacity=True)
    assert (capacity.skipped_ms, capacity.note) == (arriving, SKIPPED_AT_CAPACITY)


@pytest.mark.parametrize(
    ("missed", "lateness", "overlap", "problems"),
    [
        ("run-latest", None, "skip", []),
        ("run-all", 60, "allow", []),
        ("run-all", 604_800, "buffer", []),
        ("run-all", True, "skip", ["maxLatenessSeconds: must be a whole number of seconds from "
                                   "60 to 604800 (7 days)"]),
        ("run-all", 90.5, "skip", ["maxLatenessSeconds: must be a whole number of seconds from "
                                   "60 to 604800 (7 days)"]),
        ("later", None, "never", ['missed: must be one of "run-latest", "skip", "run-all" '
                                  "(got 'later')",
                                  'overlap: must be one of "skip", "buffer", "allow" '
                                  "(got 'never')"]),
        ("skip", 60, "skip", ['maxLatenessSeconds: only with missed "run-all"']),
    ],
)
def test_run_policy_problems_name_the_field_and_the_rule(missed, lateness, overlap, problems):
    assert run_policy_problems(
        missed=missed, max_lateness_seconds=lateness, overlap=overlap
    ) == problems
