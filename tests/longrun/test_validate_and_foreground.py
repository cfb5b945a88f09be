"""validate_task_start and the foreground heartbeat's reads (§7.2–§7.8)."""

from __future__ import annotations

import pytest

from longrun import selectors, services
from longrun.models import LongTask
from longrun.policies.answers import LongrunError
from longrun.policies.messages import DISPATCH_NOTE, WORK_CYCLE_DUE, WORK_CYCLE_NOT_DUE
from tests.longrun.conftest import K2, T0_TEXT, K, at, task_set

pytestmark = pytest.mark.django_db

START_OK = "启动校验通过：任务已绑定到真实目标会话。"
START_FAILED = "启动校验失败：不能宣称长任务已在目标会话启动成功。"


def _validate(name="A", **kwargs):
    return selectors.task_start_validation(name=name, **kwargs)


def _without_key(name: str = "A") -> None:
    """A task edited by hand (the admin, a database console) that lost its key."""
    LongTask.objects.filter(name=name).update(origin_session_key="")


# --- validate_task_start (§7.2) -------------------------------------------------------------------


def test_case_31_a_bound_task_passes():
    task_set()
    answer = _validate(expect_session_key=K)
    assert answer.exit_code == 0
    assert answer.body == {
        "ok": True,
        "task": "A",
        "state": "executing",
        "session": "迁移会话",
        "session_label": "迁移会话",
        "origin_session_key": K,
        "lock_owner": "A",
        "expected_states": ["analyzing", "executing", "waiting"],
        "errors": [],
        "message": START_OK,
    }


def test_case_32_another_key_fails_exit_2():
    task_set()
    answer = _validate(expect_session_key="agent:main:telegram:dm:9")
    assert answer.exit_code == 2
    assert answer.body["errors"] == ["origin_session_key_mismatch"]
    assert answer.body["message"] == START_FAILED and answer.body["ok"] is False


def test_case_34_a_done_task_is_not_started_unless_done_is_expected():
    task_set(state="done")
    assert _validate().body["errors"] == ["state_mismatch:done"]
    answer = _validate(expect_states=["done"])
    assert answer.exit_code == 0 and answer.body["expected_states"] == ["done"]


def test_case_35_a_task_whose_lock_was_taken_over_fails():
    task_set()
    task_set("B", force_lock=True)
    answer = _validate()
    assert answer.body["errors"] == ["session_lock_mismatch"]
    assert answer.body["lock_owner"] == "B"


def test_an_active_task_without_key_fails_validation():
    task_set()
    _without_key()
    assert _validate().body["errors"] == ["missing_origin_session_key"]


def test_an_unknown_task_is_not_started_exit_1():
    answer = _validate("Z")
    assert (answer.exit_code, answer.body) == (
        1,
        {
            "ok": False,
            "error": "task_not_found",
            "task": "Z",
            "message": "任务不存在，不能视为已启动。",
        },
    )


def test_an_expected_state_must_be_a_state():
    task_set()
    with pytest.raises(LongrunError) as caught:
        _validate(expect_states=["running"])
    assert (caught.value.exit_code, caught.value.body) == (2, "invalid state: running")


# --- check_foreground_progress, build_progress_update, foreground_tick -------------------------------


def test_case_37_a_waiting_task_owes_no_progress():
    task_set(state="waiting")
    answer = selectors.foreground_check(name="A", now=at(hours=1))
    assert (answer.exit_code, answer.body) == (
        0,
        {"task": "A", "due": False, "reason": "state=waiting"},
    )


def test_progress_is_due_at_progress_every_exit_1():
    task_set()
    answer = selectors.foreground_check(name="A", now=at(minutes=2, seconds=59))
    assert (answer.exit_code, answer.body["due"], answer.body["reason"]) == (
        0,
        False,
        "within_window",
    )
    answer = selectors.foreground_check(name="A", now=at(minutes=3))
    assert answer.exit_code == 1
    assert answer.body == {
        "task": "A",
        "session": "迁移会话",
        "session_label": "迁移会话",
        "origin_session_key": K,
        "state": "executing",
        "progress_every": "3m",
        "last_progress_sent_at": None,
        "last_progress_at": T0_TEXT,
        "updated_at": T0_TEXT,
        "due": True,
        "reason": "progress_due (3m)",
    }


def test_an_active_task_without_key_cannot_be_checked_exit_4():
    task_set()
    _without_key()
    with pytest.raises(LongrunError) as caught:
        selectors.foreground_check(name="A", now=at(minutes=3))
    assert (caught.value.exit_code, caught.value.body) == (
        4,
        "missing origin_session_key for task: A",
    )


def test_case_40_the_progress_update_and_where_it_goes():
    task_set(next_check="10m")
    answer = selectors.progress_update(name="A")
    assert answer.body == {
        "task": "A",
        "session_label": "迁移会话",
        "origin_session_key": K,
        "state": "executing",
        "message": "长任务进度提醒：A\n当前状态：executing\n正在看：读取迁移日志\n刚确认：确认表结构\n"
        "下一步：继续沿当前链路推进，并在 10m 前给出新的阶段结论。",
    }


def test_foreground_tick_builds_the_message_only_when_due():
    task_set()
    quiet = selectors.foreground_tick(name="A", now=at(minutes=1))
    assert (quiet.exit_code, quiet.body["due"], quiet.body["message"]) == (0, False, None)
    due = selectors.foreground_tick(name="A", now=at(minutes=3))
    assert due.exit_code == 1
    assert due.body["message"].startswith("长任务进度提醒：A\n")
    assert (due.body["delivery"], due.body["sessionKey"], due.body["state"]) == (
        "session",
        K,
        "executing",
    )
    assert due.body["check"]["reason"] == "progress_due (3m)"


# --- work_cycle_tick (§7.6) ----------------------------------------------------------------------


PROTOCOL = {
    "on_success": "必须立即执行 task_state.py touch-progress，然后才能继续下一轮。",
    "on_error": "必须立即执行 task_state.py mark-progress-attempt --error <失败原因>；若连续触发仍未送达，应转 blocked。",
}


def test_case_41_nothing_to_report_yet():
    task_set()
    answer = selectors.work_cycle_tick(name="A", step="读完日志", now=at(minutes=1))
    assert answer.exit_code == 0
    assert answer.body == {
        "task": "A",
        "step": "读完日志",
        "continue": True,
        "report_now": False,
        "must_send_now": False,
        "delivery": "session",
        "sessionKey": K,
        "session_label": "迁移会话",
        "message": None,
        "reason": "within_window",
        "instruction": WORK_CYCLE_NOT_DUE,
        "protocol": PROTOCOL,
    }
    assert (
        WORK_CYCLE_NOT_DUE
        == "本轮无需汇报，直接继续下一轮；下一轮结束后再次运行 work_cycle_tick.py。"
    )


def test_case_4_must_send_now_gates_the_next_step():
    task_set()
    answer = selectors.work_cycle_tick(name="A", now=at(minutes=3))
    assert answer.exit_code == 1
    assert answer.body["must_send_now"] is True and answer.body["report_now"] is True
    assert answer.body["reason"] == "progress_due (3m)"
    assert answer.body["message"].startswith("长任务进度提醒：A")
    assert answer.body["instruction"] == WORK_CYCLE_DUE
    assert WORK_CYCLE_DUE == (
        "这是前台心跳，必须立即发往该任务绑定的 sessionKey；发送成功后必须 touch-progress；"
        "发送失败后必须 mark-progress-attempt，再决定是否继续。"
    )


@pytest.mark.parametrize("state", ["waiting", "blocked", "handoff", "done"])
def test_case_43_d_b6_an_inactive_task_answers_nothing_to_send(state):
    # The original failed with "missing origin_session_key; work-cycle delivery requires …".
    task_set(state=state)
    answer = selectors.work_cycle_tick(name="A", now=at(hours=2))
    assert answer.exit_code == 0
    assert answer.body["must_send_now"] is False
    assert answer.body["reason"] == f"state={state}"
    assert answer.body["sessionKey"] == K


# --- foreground events, read only (§7.7, §7.8) ------------------------------------------------------


def test_case_45_events_of_the_due_tasks_with_the_three_callbacks():
    task_set()
    task_set("B", key=K2, now=at(minutes=2))
    answer = selectors.foreground_due_events(now=at(minutes=3))
    assert answer.exit_code == 1
    assert answer.body["event_count"] == 1 and answer.body["skipped_unknown_count"] == 0
    event = answer.body["events"][0]
    assert event["kind"] == "foreground-progress" and event["sessionKey"] == K
    assert event["delivery_id"] == "fg-" + event["message_hash"][:16]
    callback = {
        "task": "A",
        "note": "读取迁移日志",
        "delivery_id": event["delivery_id"],
        "message_hash": event["message_hash"],
    }
    assert event["onSuccess"] == {"script": "task_state.py mark-progress-sent", **callback}
    assert event["onUnknown"] == {"script": "task_state.py mark-progress-unknown", **callback}
    assert event["onError"] == {"script": "task_state.py mark-progress-failed", **callback}
    # Generated, not sent: nothing was written.
    assert LongTask.objects.get(name="A").last_progress_attempt_at is None
    assert selectors.foreground_due_events(now=at(minutes=1)).exit_code == 0


def test_case_46_a_recent_unknown_of_the_same_heartbeat_is_skipped():
    task_set()
    now = at(minutes=3)
    event = selectors.foreground_due_events(now=now).body["events"][0]
    services.task_progress_record(
        name="A",
        outcome="unknown",
        delivery_id=event["delivery_id"],
        message_hash=event["message_hash"],
        by="agent",
        now=at(minutes=3),
    )
    answer = selectors.foreground_due_events(now=at(minutes=4))
    assert answer.exit_code == 0
    assert answer.body["skipped_unknown"] == [
        {
            "task": "A",
            "delivery_id": event["delivery_id"],
            "message_hash": event["message_hash"],
            "reason": "recent_unknown_delivery",
        }
    ]
    # Two minutes after the unknown outcome, or in the next slot, it is emitted again.
    assert selectors.foreground_due_events(now=at(minutes=5)).body["event_count"] == 1


def test_case_47_a_stale_task_gets_recovery_not_a_heartbeat():
    task_set(next_check="等CI")
    assert selectors.foreground_due_events(now=at(minutes=11)).body["event_count"] == 0
    assert selectors.watchdog_check(now=at(minutes=11)).body["due"][0]["task"] == "A"


def test_the_dispatch_plan():
    task_set()
    answer = selectors.foreground_dispatch_plan(now=at(minutes=3))
    assert answer.exit_code == 1
    dispatch = answer.body["dispatches"][0]
    assert list(dispatch) == [
        "tool",
        "sessionKey",
        "message",
        "task",
        "delivery",
        "delivery_id",
        "message_hash",
        "session_label",
        "origin_session_key",
        "onSuccess",
        "onUnknown",
        "onError",
    ]
    assert (dispatch["tool"], dispatch["origin_session_key"]) == ("sessions_send", K)
    assert answer.body["note"] == DISPATCH_NOTE
    assert answer.body["dispatch_count"] == 1


def test_d_b5_a_task_without_key_is_an_error_item_and_the_others_go_on():
    task_set()
    task_set("B", key=K2)
    _without_key("A")
    answer = selectors.foreground_due_events(now=at(minutes=3))
    assert answer.exit_code == 1
    assert [event["task"] for event in answer.body["events"]] == ["B"]
    assert answer.body["errors"] == [
        {"task": "A", "error": "missing origin_session_key for task: A"}
    ]
