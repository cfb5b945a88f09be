"""task_state.py's subcommands as services: set, locks, bookkeeping, list, show, clear (§7.1).

Each refusal carries the original's exit code and output, and writes nothing.
"""

from __future__ import annotations

import pytest

from longrun import selectors, services
from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from longrun.policies.answers import LongrunError
from tests.longrun.conftest import K2, T0, T0_TEXT, K, at, task_set

pytestmark = pytest.mark.django_db

K3 = "agent:main:telegram:dm:1003"


def _refused(call, *args, **kwargs) -> LongrunError:
    with pytest.raises(LongrunError) as caught:
        call(*args, **kwargs)
    return caught.value


def _record(name: str = "A"):
    return selectors.task_show(name=name).body


def _progress(outcome, *, now=T0, name: str = "A", **fields):
    return services.task_progress_record(name=name, outcome=outcome, by="agent", now=now, **fields)


# --- set ---------------------------------------------------------------------------------------


def test_case_7_an_active_state_without_a_session_key_is_refused_exit_4():
    error = _refused(task_set, key=None)
    assert error.exit_code == 4
    assert error.body == {
        "error": "missing origin_session_key",
        "task": "A",
        "state": "executing",
        "message": "long-run start/update requires a real origin_session_key; state registration "
        "alone does not mean the task started in the target session",
    }
    assert error.field == "origin_session_key"
    assert not LongTask.objects.exists() and not SessionLock.objects.exists()


def test_case_8_an_invalid_state_is_refused_exit_2():
    error = _refused(task_set, state="running")
    assert (error.exit_code, error.body, error.field) == (2, "invalid state: running", "state")
    assert not LongTask.objects.exists()


def test_case_9_set_stores_the_record_takes_the_lock_and_logs_the_start():
    answer = task_set()
    assert answer.exit_code == 0
    assert answer.body == {
        "task": "A",
        "session": "迁移会话",
        "origin_session_key": K,
        "state": "executing",
        "goal": "确认表结构",
        "done_when": "迁移完成",
        "blocked_when": "缺权限",
        "boundary": "数据库",
        "next_check": "30m",
        "note": "读取迁移日志",
        "progress_every": "3m",
        "last_progress_at": T0_TEXT,
        "last_progress_attempt_at": None,
        "last_progress_sent_at": None,
        "last_progress_unknown_at": None,
        "last_progress_delivery_status": None,
        "last_progress_delivery_id": None,
        "last_progress_message_hash": None,
        "last_progress_send_error": None,
        "last_visible_reply_at": None,
        "last_tool_result_at": None,
        "last_resume_at": None,
        "last_resume_reason": None,
        "last_resume_count": 0,
        "updated_at": T0_TEXT,
        "session_label": "迁移会话",
    }
    assert selectors.locks_show().body == {K: "A"}
    task = LongTask.objects.get()
    # The deadlines the monitors query.
    assert task.progress_due_at == at(minutes=3)
    assert task.next_check_at == at(minutes=30)
    assert task.last_activity_at == T0
    assert list(Transition.objects.values_list("by", "from_state", "to_state", "note")) == [
        ("test", "", "executing", "读取迁移日志")
    ]


def test_case_10_another_task_cannot_take_a_held_session_exit_3():
    task_set()
    error = _refused(task_set, "B", state="analyzing")
    assert error.exit_code == 3
    assert error.body == {
        "error": "session lock exists",
        "origin_session_key": K,
        "current_task": "A",
        "requested_task": "B",
    }
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]


def test_case_11_force_lock_takes_the_session_over():
    task_set()
    assert task_set("B", state="analyzing", force_lock=True).exit_code == 0
    assert selectors.locks_show().body == {K: "B"}
    assert _record("A")["state"] == "executing"


def test_case_13_a_finished_state_keeps_the_key_and_releases_the_lock():
    task_set()
    answer = task_set(state="done", key=None)
    assert answer.body["origin_session_key"] == K
    assert selectors.locks_show().body == {}
    assert LongTask.objects.get().progress_due_at is None


def test_case_14_a_re_set_keeps_key_interval_and_last_progress():
    task_set()
    answer = task_set(key=None, now=at(minutes=5))
    assert answer.body["origin_session_key"] == K
    assert answer.body["progress_every"] == "3m"
    assert answer.body["last_progress_at"] == T0_TEXT
    assert answer.body["updated_at"] == "2026-04-02T12:05:00+08:00"
    assert Transition.objects.count() == 1  # the state did not change


def test_case_16_d_b11_a_key_change_moves_the_lock():
    task_set()
    task_set(key=K3)
    # The original left {K: A, K3: A}; the stale lock on K is gone.
    assert selectors.locks_show().body == {K3: "A"}
    assert task_set("B", key=K).exit_code == 0


def test_d_b2_the_default_interval_is_the_configs(settings):
    from datetime import timedelta

    from tests.conftest import configure

    configure(settings, "longrun", progress_every=timedelta(minutes=5))
    assert task_set().body["progress_every"] == "5m"


def test_d_b3_any_duration_is_accepted_and_anything_else_refused_before_writing():
    assert task_set(progress_every="90s").body["progress_every"] == "90s"
    assert LongTask.objects.get().progress_due_at == at(seconds=90)
    error = _refused(task_set, progress_every="5 min", now=at(minutes=1), goal="changed")
    assert error.exit_code == 2 and error.field == "progress_every"
    assert _record()["goal"] == "确认表结构"  # nothing was written


def test_d_b3_free_text_next_check_and_empty_text_fields():
    answer = task_set(next_check="等CI", goal="", note="", boundary="")
    assert answer.body["next_check"] == "等CI" and answer.body["goal"] == ""
    assert LongTask.objects.get().next_check_at is None


def test_d_b4_an_iso_next_check_without_offset_is_in_the_configured_zone():
    task_set(next_check="2026-04-02T13:00:00")
    assert LongTask.objects.get().next_check_at == at(hours=1)


def test_d_b17_leaving_done_needs_reopen_and_every_change_is_logged():
    task_set()
    task_set(state="done", now=at(minutes=1), note="完成")
    error = _refused(task_set, state="executing", now=at(minutes=2))
    assert error.exit_code == 2
    assert error.body["error"] == "reopen required"
    assert error.body["requested_state"] == "executing"
    assert _record()["state"] == "done" and selectors.locks_show().body == {}
    task_set(state="executing", reopen=True, now=at(minutes=3), by="agent")
    assert list(Transition.objects.values_list("from_state", "to_state", "by")) == [
        ("", "executing", "test"),
        ("executing", "done", "test"),
        ("done", "executing", "agent"),
    ]
    assert selectors.locks_show().body == {K: "A"}


@pytest.mark.parametrize(
    ("fields", "field", "body"),
    [
        ({"name": ""}, "task", "invalid task: required, must not be blank"),
        ({"name": "x" * 201}, "task", "invalid task: must be at most 200 characters"),
        ({"goal": "x" * 2001}, "goal", "invalid goal: must be at most 2000 characters"),
        (
            {"note": "a\0b"},
            "note",
            "invalid note: must not contain a NUL character or a lone surrogate",
        ),
        (
            {"session": "\ud800"},
            "session",
            "invalid session: must not contain a NUL character or a lone surrogate",
        ),
        (
            {"key": "k" * 513},
            "origin_session_key",
            "invalid origin_session_key: must be at most 512 characters",
        ),
    ],
)
def test_bad_input_names_the_field_and_the_rule_and_writes_nothing(fields, field, body):
    name = fields.pop("name", "A")
    error = _refused(task_set, name, **fields)
    assert (error.exit_code, error.field, error.body) == (2, field, body)
    assert not LongTask.objects.exists()


def test_names_and_keys_are_trimmed_as_the_bridge_trims():
    task_set(" A\ufeff", key=f"  {K} ")
    assert _record("A")["origin_session_key"] == K


# --- locks ------------------------------------------------------------------------------------


def test_case_17_acquire_and_release_lock():
    task_set()
    task_set("C", state="done", key=K2)
    error = _refused(services.lock_acquire, session_key=K, name="C", now=T0)
    assert error.exit_code == 3
    assert error.body == {
        "ok": False,
        "error": "session lock exists",
        "origin_session_key": K,
        "current_task": "A",
        "requested_task": "C",
    }
    released = services.lock_release(session_key=K, name="C")
    assert (released.exit_code, released.body) == (
        1,
        {"ok": False, "origin_session_key": K, "task": "C"},
    )
    released = services.lock_release(session_key=K)
    assert (released.exit_code, released.body) == (
        0,
        {"ok": True, "origin_session_key": K, "task": None},
    )
    assert services.lock_release(session_key=K).exit_code == 1  # nothing to release
    acquired = services.lock_acquire(session_key=K, name="C", now=T0)
    assert acquired.body == {"ok": True, "origin_session_key": K, "task": "C"}
    assert selectors.locks_show().body == {K: "C"}
    services.lock_acquire(session_key=K, name="A", force=True, now=T0)
    assert selectors.locks_show().body == {K: "A"}


def test_a_lock_names_a_task_of_the_store():
    error = _refused(services.lock_acquire, session_key=K, name="nobody", now=T0)
    assert (error.exit_code, error.body) == (1, "task not found: nobody")
    assert not SessionLock.objects.exists()


# --- list, show, clear -----------------------------------------------------------------------


def test_case_19_list():
    assert selectors.tasks_list().body == "no tasks"
    task_set()
    assert (
        selectors.tasks_list().body == f"- A | executing | 迁移会话 | next=30m | updated={T0_TEXT}"
    )


def test_clear_one_task_or_all():
    task_set()
    task_set("B", key=K2)
    assert services.task_clear(name="A").body == "cleared: A"
    assert selectors.locks_show().body == {K2: "B"}
    assert _refused(services.task_clear, name="A").body == "task not found: A"
    assert services.tasks_clear_all().body == "cleared all tasks"
    assert selectors.tasks_list().body == "no tasks" and selectors.locks_show().body == {}


# --- delivery bookkeeping -----------------------------------------------------------------------


def test_case_22_touch_progress():
    task_set()
    body = _progress("touch", now=at(minutes=1)).body
    t1 = "2026-04-02T12:01:00+08:00"
    assert body["last_progress_at"] == body["last_progress_sent_at"] == t1
    assert body["last_progress_delivery_status"] == "sent"
    assert body["last_progress_send_error"] is None and body["last_progress_unknown_at"] is None
    assert body["updated_at"] == t1
    assert body["last_progress_attempt_at"] is None


def test_case_23_d_b9_an_attempt_records_the_error_but_is_no_activity():
    task_set()
    body = _progress("attempt", now=at(minutes=1), error="gateway 502").body
    assert body["last_progress_attempt_at"] == "2026-04-02T12:01:00+08:00"
    assert body["last_progress_send_error"] == "gateway 502"
    assert body["last_progress_delivery_status"] is None
    assert body["last_progress_at"] == T0_TEXT
    # The original moved updated_at here, which kept a task from ever going stale.
    assert body["updated_at"] == T0_TEXT
    assert LongTask.objects.get().last_activity_at == T0


def test_case_24_unknown_keeps_last_progress():
    task_set()
    body = _progress("unknown", now=at(minutes=1)).body
    t1 = "2026-04-02T12:01:00+08:00"
    assert body["last_progress_attempt_at"] == body["last_progress_unknown_at"] == t1
    assert body["last_progress_delivery_status"] == "unknown"
    assert body["last_progress_send_error"] == "delivery result unknown"
    assert body["last_progress_at"] == T0_TEXT and body["updated_at"] == T0_TEXT


def test_case_25_failed_with_the_default_or_the_given_error():
    task_set()
    body = _progress("failed").body
    assert (body["last_progress_delivery_status"], body["last_progress_send_error"]) == (
        "failed",
        "delivery failed",
    )
    assert _progress("failed", error="X").body["last_progress_send_error"] == "X"


def test_case_26_mark_progress_sent_with_its_ids():
    task_set()
    body = _progress(
        "sent", now=at(minutes=1), delivery_id="fg-0123456789abcdef", message_hash="H" * 64
    ).body
    t1 = "2026-04-02T12:01:00+08:00"
    assert body["last_progress_attempt_at"] == body["last_progress_at"] == t1
    assert body["last_progress_sent_at"] == body["updated_at"] == t1
    assert body["last_progress_delivery_status"] == "sent"
    assert body["last_progress_send_error"] is None and body["last_progress_unknown_at"] is None
    assert body["last_progress_delivery_id"] == "fg-0123456789abcdef"
    assert body["last_progress_message_hash"] == "H" * 64
    assert LongTask.objects.get().progress_due_at == at(minutes=4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: _progress("touch", name="Z"),
        lambda: _progress("failed", name="Z"),
        lambda: services.task_activity_record(name="Z", signal="tool_result", by="a", now=T0),
        lambda: services.task_resume_record(name="Z", by="a", now=T0),
        lambda: selectors.task_show(name="Z"),
    ],
)
def test_case_28_an_unknown_task_is_not_found_exit_1(call):
    error = _refused(call)
    assert (error.exit_code, error.body, error.field) == (1, "task not found: Z", "task")


def test_case_29_d_b8_a_bookkeeping_note_goes_to_the_log_not_the_next_step():
    task_set()
    _progress("touch", note="看日志")
    assert _record()["note"] == "读取迁移日志"
    event = TaskEvent.objects.get()
    assert (event.kind, event.note, event.by, event.purpose) == (
        "sent",
        "看日志",
        "agent",
        "longrun.progress",
    )


def test_activity_signals_and_resume_move_the_clocks():
    task_set()
    body = services.task_activity_record(
        name="A", signal="visible_reply", note="回复了", by="agent", now=at(minutes=1)
    ).body
    assert body["last_visible_reply_at"] == body["updated_at"] == "2026-04-02T12:01:00+08:00"
    body = services.task_activity_record(
        name="A", signal="tool_result", by="agent", now=at(minutes=2)
    ).body
    assert body["last_tool_result_at"] == "2026-04-02T12:02:00+08:00"
    assert LongTask.objects.get().last_activity_at == at(minutes=2)
    body = services.task_resume_record(name="A", by="agent", now=at(minutes=3)).body
    assert (body["last_resume_reason"], body["last_resume_count"]) == ("manual", 1)
    body = services.task_resume_record(
        name="A", reason="idle_timeout", by="agent", now=at(minutes=4)
    ).body
    assert (body["last_resume_reason"], body["last_resume_count"]) == ("idle_timeout", 2)
    assert body["note"] == "读取迁移日志"
    assert list(TaskEvent.objects.values_list("kind", flat=True)) == [
        "visible_reply",
        "tool_result",
        "resume",
        "resume",
    ]


def test_d_b12_three_undelivered_heartbeats_in_a_row_block_the_task():
    task_set()
    _progress("failed", error="gateway 502", now=at(minutes=1))
    _progress("sent", now=at(minutes=2))  # a delivery in between resets the count
    _progress("failed", error="gateway 502", now=at(minutes=3))
    _progress("unknown", now=at(minutes=4))
    assert _record()["state"] == "executing"
    body = _progress("attempt", error="timeout", now=at(minutes=5)).body
    assert body["state"] == "blocked"
    assert selectors.locks_show().body == {}
    transition = Transition.objects.last()
    assert (transition.from_state, transition.to_state, transition.by) == (
        "executing",
        "blocked",
        "agent",
    )
    assert transition.note == (
        "连续 3 次进度未送达：2026-04-02T12:03:00+08:00 gateway 502；"
        "2026-04-02T12:04:00+08:00 delivery result unknown；2026-04-02T12:05:00+08:00 timeout"
    )


def test_d_b12_the_count_starts_again_with_a_new_state(settings):
    task_set()
    _progress("failed", now=at(minutes=1))
    _progress("failed", now=at(minutes=2))
    task_set(state="waiting", now=at(minutes=3))
    _progress("failed", now=at(minutes=4))
    assert _record()["state"] == "waiting"


def test_d_b12_the_number_is_the_configs(settings):
    from tests.conftest import configure

    configure(settings, "longrun", blocked_after_failures=1)
    task_set()
    assert _progress("failed").body["state"] == "blocked"


def test_bookkeeping_input_is_checked():
    task_set()
    error = _refused(_progress, "sent", message_hash="x" * 65)
    assert (error.field, error.body) == (
        "message_hash",
        "invalid message_hash: must be at most 64 characters",
    )
    error = _refused(_progress, "delivered")
    assert error.field == "outcome"
    assert not TaskEvent.objects.exists()
