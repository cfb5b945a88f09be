"""Keepalive: an idle analyzing or executing task is resumed, only for real when the config
says so, and a resume counts only when the channel confirmed it (§7.9, D-B8, D-B9, D-B10,
D-B13, D-B20).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from longrun import selectors, services
from longrun.models import LongTask, TaskEvent
from longrun.policies.answers import LongrunError
from longrun.policies.messages import KEEPALIVE_INSTRUCTION
from tests.conftest import configure
from tests.longrun.conftest import K2, T0, T0_TEXT, K, answer, at, push_channels, task_set
from xworkmate.config import ConfigError
from xworkmate.delivery.models import Message
from xworkmate.wiring import parse_config_text

pytestmark = pytest.mark.django_db


def _idle_task(**fields):
    """A task whose only activity is its creation at T0 (last_progress_at = updated_at = T0)."""
    return task_set(**fields)


def test_case_49_a_task_idle_for_61_seconds_is_resumed():
    _idle_task()
    answer_ = selectors.keepalive_tick(name="A", now=at(seconds=61))
    assert answer_.exit_code == 1
    body = answer_.body
    assert body == {
        "task": "A",
        "state": "executing",
        "origin_session_key": K,
        "session_label": "迁移会话",
        "active_states": ["analyzing", "executing"],
        "idle_seconds_threshold": 60,
        "last_activity_source": "last_progress_at",
        "last_activity_at": T0_TEXT,
        "idle_for_seconds": 61,
        "should_resume": True,
        "reason": "idle_timeout",
        "resume_message": body["resume_message"],
        "instruction": KEEPALIVE_INSTRUCTION,
    }
    lines = body["resume_message"].split("\n")
    assert lines[0] == "保活续跑：A"
    assert lines[2] == "静默时长：约 61 秒（最近活动源：last_progress_at）"
    assert lines[-1] == "要求：不要停在说明，直接继续当前任务，并尽快给出新的可见进展。"


def test_case_49_at_exactly_the_threshold_it_is_not():
    _idle_task()
    answer_ = selectors.keepalive_tick(name="A", now=at(seconds=60))
    assert answer_.exit_code == 0
    assert (answer_.body["should_resume"], answer_.body["reason"]) == (False, "still_active")
    assert answer_.body["resume_message"] is None


def test_case_50_a_recent_tool_result_keeps_the_task_active():
    _idle_task()
    services.task_activity_record(
        name="A", signal="tool_result", by="agent", now=at(hours=1, seconds=-10)
    )
    body = selectors.keepalive_tick(name="A", now=at(hours=1)).body
    assert (body["should_resume"], body["last_activity_source"], body["reason"]) == (
        False,
        "last_tool_result_at",
        "still_active",
    )


def test_the_idle_threshold_is_a_parameter_or_the_configs(settings):
    from datetime import timedelta

    _idle_task()
    assert (
        selectors.keepalive_tick(name="A", now=at(seconds=31), idle=timedelta(seconds=30)).exit_code
        == 1
    )
    configure(settings, "longrun", idle=timedelta(minutes=5))
    assert selectors.keepalive_tick(name="A", now=at(minutes=2)).exit_code == 0


def test_case_52_the_resume_event():
    _idle_task()
    answer_ = selectors.keepalive_resume_event(name="A", now=at(seconds=61))
    assert answer_.exit_code == 1 and answer_.body["event_count"] == 1
    event = answer_.body["events"][0]
    assert (event["kind"], event["delivery"], event["sessionKey"]) == (
        "keepalive-resume",
        "session",
        K,
    )
    assert event["onSuccess"] == {
        "script": "task_state.py mark-resume",
        "task": "A",
        "reason": "idle_timeout",
        "note": "保活续跑已触发，继续沿上次锚点推进",
    }
    quiet = selectors.keepalive_resume_event(name="A", now=at(seconds=30))
    assert (quiet.exit_code, quiet.body) == (
        0,
        {"event_count": 0, "events": [], "reason": "still_active"},
    )


def test_an_idle_task_without_key_has_no_portable_event():
    _idle_task()
    LongTask.objects.update(origin_session_key="")
    with pytest.raises(LongrunError) as caught:
        selectors.keepalive_resume_event(name="A", now=at(seconds=61))
    assert caught.value.exit_code == 4
    assert caught.value.body == "missing origin_session_key; cannot emit portable keepalive event"


def test_case_53_auto_resume_off_only_plans():
    _idle_task()
    task_set("W", state="waiting", key=K2)  # waiting tasks are not kept alive
    answer_ = services.keepalive_run_once(now=at(seconds=61))
    assert answer_.exit_code == 0
    body = answer_.body
    assert (
        body["scanned_active_tasks"],
        body["dispatch_count"],
        body["resumed_count"],
        body["failed_count"],
    ) == (1, 1, 0, 0)
    dispatch = body["dispatches"][0]
    assert dispatch["tool"] == "openclaw_agent_resume"
    assert (dispatch["status"], dispatch["resolveMode"], dispatch["sessionId"]) == (
        "planned",
        "not-resolved",
        None,
    )
    assert (
        dispatch["note"]
        == "auto resume disabled; set longrun.auto_resume = true to execute openclaw agent"
    )
    assert not Message.objects.exists()  # nothing is sent, nothing spawned
    task = LongTask.objects.get(name="A")
    assert task.last_progress_attempt_at == at(seconds=61)
    assert (
        task.last_progress_message_hash == hashlib.sha256(dispatch["message"].encode()).hexdigest()
    )
    # The original also rewrote note and updated_at here (D-B8, D-B9).
    assert task.note == "读取迁移日志" and task.updated_at == T0
    assert task.last_progress_at == T0
    event = TaskEvent.objects.get()
    assert (event.kind, event.purpose, event.note) == (
        "attempt",
        "longrun.resume",
        "保活续跑准备执行 openclaw agent",
    )


def test_the_keepalive_selects_idle_tasks_through_the_index_boundary():
    _idle_task()
    task_set("B", key=K2, now=at(seconds=1))
    body = services.keepalive_run_once(now=at(seconds=61)).body
    assert [d["task"] for d in body["dispatches"]] == ["A"]  # B is idle for exactly 60 s


def test_auto_resume_queues_one_resume_per_idle_spell(settings):
    configure(settings, "longrun", auto_resume=True)
    _idle_task()
    body = services.keepalive_run_once(now=at(seconds=61)).body
    dispatch = body["dispatches"][0]
    assert (dispatch["status"], body["resumed_count"]) == ("queued", 1)
    message = Message.objects.get()
    assert (message.purpose, message.target, message.id) == (
        "longrun.resume",
        K,
        dispatch["message_id"],
    )
    assert message.body == dispatch["message"]
    again = services.keepalive_run_once(now=at(seconds=121)).body["dispatches"][0]
    assert (again["status"], again["message_id"]) == ("already_queued", message.pk)
    assert Message.objects.count() == 1
    # The task answers; a later idle spell gets its own resume.
    services.task_activity_record(name="A", signal="visible_reply", by="agent", now=at(minutes=5))
    assert (
        services.keepalive_run_once(now=at(minutes=6, seconds=1)).body["dispatches"][0]["status"]
        == "queued"
    )
    assert Message.objects.count() == 2


def test_d_b10_a_resume_counts_only_once_the_channel_confirmed_it(settings):
    configure(settings, "longrun", auto_resume=True)
    push_channels(settings)
    _idle_task()
    services.keepalive_run_once(now=at(seconds=61))
    task = LongTask.objects.get()
    assert (task.last_resume_count, task.last_resume_at) == (0, None)
    answer("sent", '{"status": "ok"}', now=at(seconds=70))
    task = LongTask.objects.get()
    assert (task.last_resume_count, task.last_resume_reason, task.last_resume_at) == (
        1,
        "idle_timeout",
        at(seconds=70),
    )
    # D-B19: the service's own resume is not the agent's activity.
    assert task.updated_at == T0 and task.last_progress_sent_at is None
    assert TaskEvent.objects.filter(kind="resume", by="delivery").count() == 1


def test_case_55_d_b13_a_resume_the_channel_cannot_resolve_fails_visibly(settings):
    configure(settings, "longrun", auto_resume=True)
    push_channels(settings)
    _idle_task()
    services.keepalive_run_once(now=at(seconds=61))
    answer(
        "failed",
        "no session id for agent:main:telegram:dm:1001 in the sessions index",
        now=at(seconds=62),
    )
    task = LongTask.objects.get()
    assert task.last_progress_delivery_status == "failed"
    assert task.last_progress_send_error.startswith("no session id for")
    assert task.last_progress_attempt_at == at(seconds=62)
    assert (task.last_resume_count, task.state, task.undelivered_heartbeats) == (0, "executing", 0)
    event = TaskEvent.objects.get(kind="failed")
    assert (event.purpose, event.note) == ("longrun.resume", "保活续跑执行失败")


@pytest.mark.parametrize("value", ['"TRUE"', '" yes "', '"on"', "1", '"2"', '""'])
def test_case_56_auto_resume_is_one_boolean_key(value, tmp_path: Path):
    # The original read LONG_RUN_MODE_AUTO_RESUME loosely; one key, true or false, here.
    with pytest.raises(ConfigError) as caught:
        parse_config_text(f"[longrun]\nauto_resume = {value}\n", home=tmp_path)
    assert "longrun.auto_resume: must be true or false" in str(caught.value)
    assert (
        parse_config_text("[longrun]\nauto_resume = true\n", home=tmp_path).value(
            "longrun", "auto_resume"
        )
        is True
    )


def test_d_b5_a_task_without_key_fails_alone():
    _idle_task()
    task_set("B", key=K2)
    LongTask.objects.filter(name="A").update(origin_session_key="")
    answer_ = services.keepalive_run_once(now=at(seconds=61))
    assert answer_.exit_code == 1
    assert answer_.body["failed_count"] == 1
    assert answer_.body["errors"] == [
        {"task": "A", "error": "missing origin_session_key; cannot emit portable keepalive event"}
    ]
    assert [d["task"] for d in answer_.body["dispatches"]] == ["B"]


def test_d_b5_a_resume_the_outbox_refuses_is_an_error_item_not_a_dispatch(settings):
    configure(settings, "longrun", auto_resume=True)
    configure(settings, "delivery", max_body_bytes=1000)
    _idle_task()
    task_set("B", key=K2, note="长" * 1000)
    body = services.keepalive_run_once(now=at(seconds=61)).body
    assert [d["task"] for d in body["dispatches"]] == ["A"]
    assert body["errors"][0]["task"] == "B"
    assert body["errors"][0]["error"].startswith("DeliveryError: body: must be at most 1000 bytes")
    assert LongTask.objects.get(name="B").last_progress_attempt_at is None  # rolled back
    assert Message.objects.get().target == K


def test_d_b29_past_its_resume_budget_an_idle_task_is_blocked_for_a_person(settings):
    # Issue 23 C7: at most longrun.max_resumes_per_day automatic resumes in 24 h.
    configure(settings, "longrun", auto_resume=True, max_resumes_per_day=2)
    _idle_task()
    for minute in (5, 10):  # two idle spells, each resumed once
        services.task_activity_record(name="A", signal="visible_reply", by="agent",
                                      now=at(minutes=minute - 4))
        dispatch = services.keepalive_run_once(now=at(minutes=minute)).body["dispatches"][0]
        assert dispatch["status"] == "queued"
    services.task_activity_record(name="A", signal="visible_reply", by="agent", now=at(minutes=11))
    third = services.keepalive_run_once(now=at(minutes=15)).body["dispatches"][0]
    assert third["status"] == "blocked"
    assert third["note"].startswith("resume budget spent: 2 automatic resumes in the last 24 h")
    assert Message.objects.filter(purpose="longrun.resume").count() == 2
    task = LongTask.objects.get()
    assert task.state == "blocked"
    transition = task.transitions.latest("at")
    assert (transition.from_state, transition.to_state) == ("executing", "blocked")
    assert "longrun.max_resumes_per_day = 2" in transition.note
    # Blocked, it is no longer a keepalive candidate: nothing more is spent on it.
    assert services.keepalive_run_once(now=at(minutes=30)).body["dispatches"] == []


def test_d_b29_the_budget_counts_the_last_24_hours_only(settings):
    configure(settings, "longrun", auto_resume=True, max_resumes_per_day=1)
    _idle_task()
    assert services.keepalive_run_once(now=at(seconds=61)).body["dispatches"][0]["status"] == "queued"
    services.task_activity_record(name="A", signal="visible_reply", by="agent", now=at(hours=24))
    later = services.keepalive_run_once(now=at(hours=24, seconds=61)).body["dispatches"][0]
    assert later["status"] == "queued"


def test_d_b29_without_auto_resume_nothing_is_spent_and_nothing_blocks(settings):
    configure(settings, "longrun", max_resumes_per_day=1)
    _idle_task()
    for minute in (2, 4, 6):
        services.task_activity_record(name="A", signal="visible_reply", by="agent",
                                      now=at(minutes=minute - 1))
        dispatches = services.keepalive_run_once(now=at(minutes=minute, seconds=1)).body[
            "dispatches"]
        assert [d["status"] for d in dispatches] == ["planned"]
    assert LongTask.objects.get().state == "executing"
