"""The thresholds of §5–§7 with frozen clocks, at each boundary, and their properties.

Pure: no database. `now` is given; T0 is 2026-04-02 12:00:00 +08:00.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longrun.policies.answers import EXIT_INVALID, LongrunError
from longrun.policies.timing import (
    OK,
    PROGRESS,
    RECOVERY,
    delivery_id,
    foreground_hash,
    idle_for_seconds,
    idle_limit,
    idle_timed_out,
    is_old_enough_to_archive,
    is_progress_due,
    latest_activity,
    parse_next_check,
    parse_progress_every,
    progress_deadline,
    progress_slot,
    recently_unknown,
    watchdog_verdict,
    whole_second,
    window_text,
)
from tests.longrun.conftest import T0, Facts, K, at

SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")
STALE = timedelta(minutes=10)
IDLE = timedelta(seconds=60)


# --- durations and checkpoints (D-B3, D-B4) -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("3m", 180), ("2h", 7200), ("1h30m", 5400), (" 5m ", 300)]
)
def test_d_b3_progress_every_accepts_durations(text, seconds):
    assert parse_progress_every(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["5 min", "5M", "1.5h", "-3m", "", "3m2h", "forever", "0s"])
def test_d_b3_progress_every_refuses_anything_else_naming_the_field(text):
    with pytest.raises(LongrunError) as caught:
        parse_progress_every(text)
    assert caught.value.exit_code == EXIT_INVALID
    assert caught.value.field == "progress_every"
    rule = (
        "must be longer than zero"
        if text == "0s"
        else "is not a duration like 90s, 3m, 2h or 1h30m"
    )
    assert caught.value.body == f"invalid progress_every: {text!r} {rule}" + (
        "" if text == "0s" else " (hours, minutes, seconds)"
    )


def test_d_b3_next_check_as_a_duration_counts_from_the_anchor():
    assert parse_next_check("5m", anchor=T0, zone=SHANGHAI) == at(minutes=5)
    assert parse_next_check("1h30m", anchor=T0, zone=SHANGHAI) == at(minutes=90)


def test_d_b3_free_text_next_check_sets_no_checkpoint():
    for text in ("等CI", "", "  ", "明天再看", "0m"):
        assert parse_next_check(text, anchor=T0, zone=SHANGHAI) is None


def test_an_aware_iso_next_check_is_taken_as_it_is():
    moment = parse_next_check("2026-04-02T13:00:00+08:00", anchor=T0, zone=NEW_YORK)
    assert moment == datetime(2026, 4, 2, 5, 0, tzinfo=UTC)
    assert parse_next_check("2026-04-02T05:00:00Z", anchor=T0, zone=NEW_YORK) == moment


def test_d_b4_a_naive_iso_next_check_is_read_in_the_configured_zone():
    moment = parse_next_check("2026-04-02T12:05:00", anchor=T0, zone=SHANGHAI)
    assert moment == at(minutes=5)
    # The original crashed comparing it with aware times; here it compares.
    assert moment > T0


def test_d_b4_naive_times_on_both_dst_changes_take_the_earlier_offset():
    # Spring forward: 02:30 does not exist in New York on 2026-03-08; read with
    # the offset before the gap (EST), it is 07:30 UTC.
    gap = parse_next_check("2026-03-08T02:30:00", anchor=T0, zone=NEW_YORK)
    assert gap == datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
    # Fall back: 01:30 happens twice on 2026-11-01; the first one (EDT) is meant.
    twice = parse_next_check("2026-11-01T01:30:00", anchor=T0, zone=NEW_YORK)
    assert twice == datetime(2026, 11, 1, 5, 30, tzinfo=UTC)


def test_times_are_whole_seconds_and_aware():
    assert whole_second(T0 + timedelta(microseconds=999_999)) == T0
    with pytest.raises(ValueError, match="timezone-aware"):
        whole_second(datetime(2026, 4, 2, 12, 0))


def test_reasons_name_the_window_in_minutes_as_the_original():
    assert window_text(timedelta(minutes=10)) == "10m"
    assert window_text(timedelta(minutes=90)) == "90m"
    assert window_text(timedelta(seconds=90)) == "1m30s"


# --- the foreground heartbeat (§7.3) ----------------------------------------------------------


def test_progress_is_due_at_exactly_progress_every(facts: Facts):
    assert progress_deadline(facts) == at(minutes=3)
    assert not is_progress_due(facts, at(minutes=3, seconds=-1))
    assert is_progress_due(facts, at(minutes=3))


def test_progress_counts_from_the_last_sent_then_the_last_progress_then_the_update(facts: Facts):
    sent = facts.but(last_progress_sent_at=at(minutes=1), last_progress_at=at(minutes=2))
    assert progress_deadline(sent) == at(minutes=4)
    assert progress_deadline(facts.but(last_progress_at=None, updated_at=at(minutes=1))) == at(
        minutes=4
    )


@pytest.mark.parametrize("state", ["waiting", "blocked", "handoff", "done"])
def test_no_progress_is_owed_outside_analyzing_and_executing(facts: Facts, state):
    task = facts.but(state=state)
    assert progress_deadline(task) is None
    assert not is_progress_due(task, at(hours=5))


@given(st.integers(min_value=0, max_value=100_000), st.integers(min_value=0, max_value=100_000))
def test_once_due_progress_stays_due(first, later):
    task = Facts()
    if is_progress_due(task, at(seconds=first)):
        assert is_progress_due(task, at(seconds=first + later))


def test_the_slot_is_wall_clock_periods_of_progress_every():
    minute = int(T0.timestamp()) // 60
    assert progress_slot(T0, 180) == minute // 3
    assert progress_slot(at(minutes=2), 180) == progress_slot(T0, 180)
    assert progress_slot(at(minutes=3), 180) == progress_slot(T0, 180) + 1
    # D-B3: any duration is a slot length (the original fell back to 3 minutes for `2h`).
    assert progress_slot(T0, 7200) == minute // 120
    assert progress_slot(T0, 90) == minute  # at least one minute


def test_case_46_the_hash_is_the_originals_recipe(facts: Facts):
    raw = json.dumps(
        {
            "task": "A",
            "state": "executing",
            "sessionKey": K,
            "progressEvery": "3m",
            "progressSlot": 7,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    expected = hashlib.sha256(raw.encode("utf-8")).hexdigest()
    assert foreground_hash(facts, 7) == expected
    assert delivery_id(expected) == "fg-" + expected[:16]
    assert foreground_hash(facts, 8) != expected


def test_case_46_an_unknown_heartbeat_is_not_resent_within_the_cooldown(facts: Facts):
    cooldown = timedelta(minutes=2)
    unknown = facts.but(
        last_progress_delivery_status="unknown",
        last_progress_message_hash="h1",
        last_progress_unknown_at=at(minutes=-1),
    )
    assert recently_unknown(unknown, "h1", T0, cooldown)
    assert not recently_unknown(unknown, "h2", T0, cooldown)  # the next slot
    assert not recently_unknown(
        unknown.but(last_progress_unknown_at=at(minutes=-2)), "h1", T0, cooldown
    )
    assert not recently_unknown(
        unknown.but(last_progress_delivery_status="failed"), "h1", T0, cooldown
    )


# --- keepalive (§7.9) ----------------------------------------------------------------------


def test_case_49_idle_strictly_longer_than_the_threshold(facts: Facts):
    task = facts.but(last_progress_at=None, updated_at=at(seconds=-61))
    assert idle_for_seconds(task, T0) == 61
    assert idle_timed_out(task, T0, IDLE)
    assert not idle_timed_out(task.but(updated_at=at(seconds=-60)), T0, IDLE)


def test_case_50_the_newest_signal_counts_and_names_its_source(facts: Facts):
    old = at(hours=-2)
    task = facts.but(
        last_visible_reply_at=old,
        last_tool_result_at=at(seconds=-10),
        last_progress_at=old,
        updated_at=old,
    )
    assert latest_activity(task) == ("last_tool_result_at", at(seconds=-10))
    assert not idle_timed_out(task, T0, IDLE)


def test_a_tie_goes_to_the_first_source_in_the_originals_order(facts: Facts):
    task = facts.but(last_visible_reply_at=T0, last_progress_at=T0, updated_at=T0)
    assert latest_activity(task)[0] == "last_visible_reply_at"


@pytest.mark.parametrize("state", ["waiting", "blocked", "handoff", "done"])
def test_only_analyzing_and_executing_tasks_are_resumed(facts: Facts, state):
    assert not idle_timed_out(facts.but(state=state, updated_at=at(hours=-3)), T0, IDLE)


@given(st.integers(min_value=0, max_value=10_000), st.integers(min_value=1, max_value=3_600))
def test_the_idle_index_query_selects_exactly_the_idle_tasks(ago, idle_seconds):
    """`last_activity_at <= idle_limit(now, idle)` (the keepalive's query) ⇔ the idle rule."""
    idle = timedelta(seconds=idle_seconds)
    task = Facts(last_progress_at=None, updated_at=at(seconds=-ago))
    assert (task.updated_at <= idle_limit(T0, idle)) == idle_timed_out(task, T0, idle)


# --- watchdog (§7.10) ------------------------------------------------------------------------


def test_case_58_a_relative_checkpoint_is_due_from_updated_at(facts: Facts):
    task = facts.but(
        state="waiting", next_check="5m", next_check_at=at(minutes=-1), updated_at=at(minutes=-6)
    )
    verdict = watchdog_verdict(task, T0, STALE)
    assert (verdict.kind, verdict.reason) == (RECOVERY, "next_check_due (5m)")


def test_case_58_an_iso_checkpoint_is_due_at_exactly_its_time(facts: Facts):
    iso = "2026-04-02T12:00:00+08:00"
    task = facts.but(state="waiting", next_check=iso, next_check_at=T0, updated_at=at(minutes=-1))
    assert watchdog_verdict(task, T0, STALE).reason == f"next_check_due ({iso})"
    assert watchdog_verdict(task, at(seconds=-1), STALE).kind == OK


def test_a_task_is_stale_at_exactly_the_stale_window(facts: Facts):
    task = facts.but(updated_at=at(minutes=-10), last_progress_at=T0)
    verdict = watchdog_verdict(task, T0, STALE)
    assert (verdict.kind, verdict.reason) == (RECOVERY, "stale_update (10m)")
    assert watchdog_verdict(task, at(seconds=-1), STALE).kind == OK


def test_case_59_d_b7_a_waiting_task_is_not_stale_before_its_checkpoint(facts: Facts):
    # The original said stale_update (10m) here although the agent said "30m".
    task = facts.but(
        state="waiting", next_check="30m", next_check_at=at(minutes=18), updated_at=at(minutes=-12)
    )
    assert watchdog_verdict(task, T0, STALE).kind == OK
    assert watchdog_verdict(task, at(minutes=18), STALE).reason == "next_check_due (30m)"


def test_d_b7_a_waiting_task_without_a_checkpoint_still_goes_stale(facts: Facts):
    task = facts.but(state="waiting", next_check="等CI", updated_at=at(minutes=-10))
    assert watchdog_verdict(task, T0, STALE).reason == "stale_update (10m)"


def test_the_checkpoint_comes_before_staleness_and_staleness_before_progress(facts: Facts):
    both = facts.but(next_check="5m", next_check_at=at(minutes=-5), updated_at=at(minutes=-10))
    assert watchdog_verdict(both, T0, STALE).reason == "next_check_due (5m)"
    stale_and_owing = facts.but(updated_at=at(minutes=-10), last_progress_at=at(minutes=-10))
    assert watchdog_verdict(stale_and_owing, T0, STALE).kind == RECOVERY


def test_progress_due_is_reported_with_its_interval(facts: Facts):
    verdict = watchdog_verdict(
        facts.but(updated_at=at(minutes=-4), last_progress_at=at(minutes=-4)), T0, STALE
    )
    assert (verdict.kind, verdict.reason) == (PROGRESS, "progress_due (3m)")


@pytest.mark.parametrize("state", ["blocked", "handoff", "done"])
def test_case_61_finished_tasks_are_ok_however_old(facts: Facts, state):
    task = facts.but(state=state, updated_at=at(days=-30), next_check_at=at(days=-29))
    assert watchdog_verdict(task, T0, STALE).kind == OK


# --- cleanup (D-B16) -------------------------------------------------------------------------------


def test_d_b16_finished_tasks_are_archived_only_when_older_than_the_age():
    week = timedelta(days=7)
    assert is_old_enough_to_archive("done", at(days=-7, seconds=-1), T0, week)
    assert not is_old_enough_to_archive("done", at(days=-7), T0, week)
    assert is_old_enough_to_archive("handoff", at(days=-8), T0, week)
    assert is_old_enough_to_archive("blocked", at(days=-8), T0, week)
    assert not is_old_enough_to_archive("executing", at(days=-80), T0, week)
