"""The watchdog and its recovery chain (§7.10): reports, and the monitor that sends through
the outbox (D-B5, D-B7, D-B14, D-B20).
"""

from __future__ import annotations

import pytest

from longrun import selectors, services
from longrun.models import LongTask, TaskEvent
from tests.longrun.conftest import K2, T0_TEXT, K, acknowledge_all, at, task_set
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

K3 = "agent:main:telegram:dm:1003"
FORCE_DECISION = (
    "长任务回收：你之前处于 analyzing，但已超出检查窗口（stale_update (10m)）。"
    "请在本轮给出阶段结论，并明确进入 executing、blocked 或 handoff，不能继续停留在纯分析。"
)


def _stale_analyzing():
    task_set(state="analyzing", next_check="等CI")


def test_case_61_all_within_the_window():
    task_set(next_check="等CI")
    for name, state in (("B", "blocked"), ("H", "handoff"), ("D", "done")):
        task_set(name, state=state, key=f"agent:main:{name}", now=at(days=-30))
    answer = selectors.watchdog_check(now=at(minutes=1))
    assert (answer.exit_code, answer.body) == (
        0,
        {"due": [], "progress": [], "ok": ["A", "B", "H", "D"]},
    )


def test_case_58_a_checkpoint_is_due_and_summarised():
    task_set(state="waiting", next_check="5m")
    answer = selectors.watchdog_check(now=at(minutes=6))
    assert answer.exit_code == 1
    assert answer.body["due"] == [
        {
            "task": "A",
            "session": "迁移会话",
            "session_label": "迁移会话",
            "origin_session_key": K,
            "state": "waiting",
            "reason": "next_check_due (5m)",
            "kind": "recovery",
            "goal": "确认表结构",
            "boundary": "数据库",
            "next_check": "5m",
            "progress_every": "3m",
            "last_progress_at": T0_TEXT,
            "updated_at": T0_TEXT,
            "note": "读取迁移日志",
        }
    ]


def test_case_59_d_b7_waiting_with_a_later_checkpoint_is_not_stale():
    task_set(state="waiting", next_check="30m")
    assert selectors.watchdog_check(now=at(minutes=12)).body["ok"] == ["A"]


def test_a_stale_task_and_one_owing_progress():
    _stale_analyzing()
    task_set("B", key=K2, next_check="等CI", now=at(minutes=6))
    body = selectors.watchdog_check(now=at(minutes=10)).body
    assert [(d["task"], d["reason"]) for d in body["due"]] == [("A", "stale_update (10m)")]
    assert [(d["task"], d["reason"]) for d in body["progress"]] == [("B", "progress_due (3m)")]


def test_case_64_recovery_items():
    _stale_analyzing()
    task_set("E", key=K2, next_check="等CI")
    task_set("W", state="waiting", key=K3, next_check="5m")
    task_set("P", key="agent:main:p", next_check="等CI", now=at(minutes=6))
    answer = selectors.recovery_report(now=at(minutes=10))
    assert answer.exit_code == 1
    assert (answer.body["due_count"], answer.body["progress_count"]) == (3, 1)
    items = {item["task"]: item for item in answer.body["items"]}
    assert items["A"]["recovery"] == {
        "kind": "force-decision",
        "summary": "分析态停留过久，要求给结论或切执行：读取迁移日志",
        "suggested_message": FORCE_DECISION,
        "suggested_session": "迁移会话",
        "suggested_session_key": K,
    }
    assert items["E"]["recovery"]["kind"] == "check-progress"
    assert items["W"]["recovery"]["kind"] == "check-waiting"
    assert items["P"]["recovery"]["kind"] == "progress-ping"
    assert [item["task"] for item in answer.body["items"]] == ["A", "E", "W", "P"]  # due first


def test_case_65_recovery_messages():
    _stale_analyzing()
    body = selectors.recovery_messages(now=at(minutes=10)).body
    message = body["messages"][0]
    assert (message["task"], message["kind"], message["origin_session_key"]) == ("A", "recovery", K)
    assert message["message"].startswith(
        "长任务回收提醒：A\n当前状态：analyzing\n所属边界：数据库\n"
    )
    assert message["message"].endswith("建议消息：\n" + FORCE_DECISION)


def test_sessions_send_payloads_carry_the_whole_text():
    _stale_analyzing()
    answer = selectors.sessions_send_payloads(now=at(minutes=10))
    assert answer.exit_code == 1
    payload = answer.body["payloads"][0]
    assert answer.body["tool"] == "sessions_send"
    assert (
        payload["sessionKey"],
        payload["label"],
        payload["kind"],
        payload["timeoutSeconds"],
    ) == (
        K,
        "迁移会话",
        "recovery",
        30,
    )
    assert payload["message"].startswith("长任务回收提醒：A")
    assert selectors.sessions_send_payloads(now=at(minutes=1)).exit_code == 0


def test_case_67_the_monitor_sends_recovery_and_heartbeat_through_the_outbox():
    _stale_analyzing()
    task_set("B", key=K2, next_check="等CI", now=at(minutes=6))
    answer = services.watchdog_run_once(now=at(minutes=10))
    assert answer.exit_code == 1
    assert (answer.body["due_count"], answer.body["progress_count"]) == (1, 1)
    recovery, progress = answer.body["payloads"]
    assert recovery["onSuccess"] == {"script": None, "task": "A", "note": "读取迁移日志"}
    assert recovery["onError"] == {"script": None, "task": "A", "note": "读取迁移日志"}
    assert recovery["message"] == FORCE_DECISION and recovery["status"] == "queued"
    assert progress["onSuccess"]["script"] == "task_state.py touch-progress"
    assert progress["onError"]["script"] == "task_state.py mark-progress-attempt"
    assert progress["status"] == "queued"
    messages = {m.purpose: m for m in Message.objects.all()}
    assert messages["longrun.recovery"].target == K
    assert messages["longrun.recovery"].body == FORCE_DECISION
    # The heartbeat is the one the heartbeat monitor would queue: one per slot.
    assert messages["longrun.progress"].target == K2
    assert progress["message"] == messages["longrun.progress"].body
    assert services.heartbeat_run_once(now=at(minutes=10)).body["event_count"] == 0
    # D-B10: queued, not sent; nothing counts as delivered yet.
    assert LongTask.objects.get(name="B").last_progress_attempt_at is None


def test_d_b20_one_recovery_message_per_stale_window():
    _stale_analyzing()
    first = services.watchdog_run_once(now=at(minutes=10)).body["payloads"][0]
    again = services.watchdog_run_once(now=at(minutes=15)).body["payloads"][0]
    assert again["status"] == "already_queued" and again["message_id"] == first["message_id"]
    assert Message.objects.count() == 1
    later = services.watchdog_run_once(now=at(minutes=20)).body["payloads"][0]
    assert later["status"] == "queued"
    assert Message.objects.count() == 2


def test_case_68_recovery_really_reaches_the_target_session():
    """[ORIG-ACCEPT] a task lost for more than 10 minutes: the message arrives in K."""
    _stale_analyzing()
    services.watchdog_run_once(now=at(minutes=11))
    delivered = acknowledge_all(K, now=at(minutes=11, seconds=5))
    assert [m.body for m in delivered] == [FORCE_DECISION]
    assert Message.objects.get().status == "sent"
    logged = TaskEvent.objects.filter(purpose="longrun.recovery").values_list("kind", "by")
    assert list(logged) == [("queued", "watchdog"), ("sent", "delivery")]


def test_a_quiet_run_sends_nothing():
    task_set()
    answer = services.watchdog_run_once(now=at(minutes=1))
    assert (answer.exit_code, answer.body["payloads"]) == (0, [])


def test_d_b5_a_task_without_key_is_an_error_item_in_every_report():
    _stale_analyzing()
    task_set("B", key=K2, next_check="等CI")
    LongTask.objects.filter(name="A").update(origin_session_key="")
    error = [{"task": "A", "error": "missing origin_session_key for task: A"}]
    check = selectors.watchdog_check(now=at(minutes=10))
    assert check.body["errors"] == error and [d["task"] for d in check.body["due"]] == ["B"]
    assert selectors.recovery_report(now=at(minutes=10)).body["errors"] == error
    assert selectors.recovery_messages(now=at(minutes=10)).body["errors"] == error
    run = services.watchdog_run_once(now=at(minutes=10))
    assert run.body["errors"] == error
    assert [p["task"] for p in run.body["payloads"]] == ["B"]
    assert Message.objects.get().target == K2


def test_d_b5_a_recovery_the_outbox_refuses_is_an_error_item_not_a_payload(settings):
    from tests.conftest import configure

    configure(settings, "delivery", max_body_bytes=1000)
    _stale_analyzing()
    task_set("B", state="waiting", key=K2, next_check="5m", note="长" * 1000)
    run = services.watchdog_run_once(now=at(minutes=10))
    assert [p["task"] for p in run.body["payloads"]] == ["A"]
    assert (run.body["due_count"], run.body["errors"][0]["task"]) == (1, "B")
    assert Message.objects.get().target == K
