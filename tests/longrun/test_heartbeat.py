"""The heartbeat monitor: due tasks get their progress message through the outbox, and
the task's bookkeeping follows what the channel really answered (§7.7, §8, D-B10,
D-B12, D-B19, D-B20).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from longrun import selectors, services
from longrun.models import LongTask, TaskEvent, Transition
from longrun.policies.timing import progress_slot
from tests.conftest import configure
from tests.delivery.conftest import use_channels
from tests.longrun.conftest import K2, T0, K, acknowledge_all, answer, at, push_channels, task_set
from xworkmate.config import DeliveryChannel
from xworkmate.delivery.models import Message
from xworkmate.delivery.services import outbox_enqueue

pytestmark = pytest.mark.django_db


def _run(now):
    return services.heartbeat_run_once(now=now)


def _task(name: str = "A") -> LongTask:
    return LongTask.objects.get(name=name)


def test_a_due_task_gets_its_heartbeat_queued_for_its_session():
    task_set()
    assert _run(at(minutes=2)).exit_code == 0  # not due yet: nothing
    assert not Message.objects.exists()
    answer_ = _run(at(minutes=3))
    assert answer_.exit_code == 1 and answer_.body["event_count"] == 1
    event = answer_.body["events"][0]
    message = Message.objects.get()
    assert (message.purpose, message.target, message.status) == ("longrun.progress", K, "pending")
    assert message.body == event["message"] and message.body.startswith("长任务进度提醒：A\n")
    assert event["message_id"] == message.pk
    assert message.idempotency_key == f"longrun:{_task().pk}:fg:{event['message_hash']}"
    # Queued is not sent (D-B10): no progress, no attempt, no activity.
    task = _task()
    assert task.last_progress_attempt_at is None and task.last_progress_sent_at is None
    assert task.updated_at == T0 and task.heartbeat_message_id == message.pk
    queued = TaskEvent.objects.get()
    assert (queued.kind, queued.message_id, queued.by) == ("queued", message.pk, "heartbeat")


def test_d_b20_one_heartbeat_in_flight_and_a_duplicate_tick_sends_nothing():
    task_set()
    _run(at(minutes=3))
    assert _run(at(minutes=3)).body["event_count"] == 0
    assert _run(at(minutes=9)).body["event_count"] == 0  # still waiting for the bridge
    assert Message.objects.count() == 1


def test_a_confirmed_heartbeat_is_progress_sent_but_not_agent_activity():
    task_set()
    _run(at(minutes=3))
    acknowledge_all(K, now=at(minutes=3, seconds=20))
    task = _task()
    t1 = at(minutes=3, seconds=20)
    assert (
        task.last_progress_sent_at == task.last_progress_at == task.last_progress_attempt_at == t1
    )
    assert task.last_progress_delivery_status == "sent"
    event = selectors.foreground_due_events(now=at(minutes=3)).body  # nothing due any more
    assert event["event_count"] == 0
    queued = TaskEvent.objects.get(kind="queued")
    assert task.last_progress_message_hash == queued.message_hash
    assert task.last_progress_delivery_id == queued.delivery_id
    # D-B19: the service's own send does not make the agent look active.
    assert task.updated_at == T0
    assert task.heartbeat_message_id is None
    assert task.progress_due_at == at(minutes=6, seconds=20)
    assert list(TaskEvent.objects.values_list("kind", "by")) == [
        ("queued", "heartbeat"),
        ("sent", "delivery"),
    ]


def test_case_44_visibility_five_heartbeats_in_fifteen_minutes():
    """[ORIG-ACCEPT] an executing task with the default 3m, the monitor every minute,
    the bridge delivering every message, the agent working: at least 2 (about 5) arrive."""
    task_set()
    delivered = []
    for minute in range(1, 16):
        now = at(minutes=minute)
        services.task_activity_record(name="A", signal="tool_result", by="agent", now=now)
        _run(now)
        delivered += acknowledge_all(K, now=at(minutes=minute, seconds=10))
    assert len(delivered) >= 2
    # Each heartbeat is due 3 minutes after the last one arrived (10 s after its
    # tick), so the next tick to find it due is a minute later: 3, 7, 11, 15.
    assert len(delivered) == 4
    assert all(m.body.startswith("长任务进度提醒：A") for m in delivered)
    sent = list(TaskEvent.objects.filter(kind="sent").values_list("at", flat=True))
    assert sent == [at(minutes=m, seconds=10) for m in (3, 7, 11, 15)]


def test_the_monitor_finds_work_through_the_deadline_index_only():
    for index in range(5):
        task_set(f"T{index}", key=f"agent:main:{index}", now=at(minutes=index))
    with CaptureQueriesContext(connection) as queries:
        _run(at(minutes=3))
    selects = [
        q["sql"]
        for q in queries
        if q["sql"].startswith("SELECT") and "longrun_longtask" in q["sql"]
    ]
    assert "progress_due_at" in selects[0]
    assert Message.objects.count() == 1  # only T0 was due


def test_d_b12_undelivered_heartbeats_turn_the_task_blocked(settings):
    push_channels(settings)
    task_set()
    _run(at(minutes=3))
    answer("failed", "HTTP 502", now=at(minutes=3, seconds=5))
    task = _task()
    assert (task.last_progress_delivery_status, task.last_progress_send_error) == (
        "failed",
        "HTTP 502",
    )
    assert (
        task.last_progress_attempt_at == at(minutes=3, seconds=5)
        and task.last_progress_sent_at is None
    )
    assert (
        task.undelivered_heartbeats == 1 and task.heartbeat_message_id is not None
    )  # a retry is due
    # The outbox retries (30 s, then 60 s later); each undelivered answer counts.
    answer("failed", "HTTP 502", now=at(minutes=3, seconds=40), retry=True)
    assert _task().state == "executing"
    answer("unknown", "read timeout", now=at(minutes=4, seconds=45), retry=True)
    task = _task()
    assert task.state == "blocked"
    assert selectors.locks_show().body == {}
    transition = Transition.objects.filter(to_state="blocked").get()
    assert transition.by == "delivery"
    assert transition.note == (
        "连续 3 次进度未送达：2026-04-02T12:03:05+08:00 HTTP 502；"
        "2026-04-02T12:03:40+08:00 HTTP 502；2026-04-02T12:04:45+08:00 read timeout"
    )
    # A blocked task owes no heartbeat.
    assert _run(at(minutes=30)).body["event_count"] == 0


def test_a_sent_answer_resets_the_count(settings):
    push_channels(settings)
    task_set()
    _run(at(minutes=3))
    answer("failed", "HTTP 502", now=at(minutes=3, seconds=5))
    answer("sent", "HTTP 200", now=at(minutes=3, seconds=40), retry=True)
    task = _task()
    assert (task.undelivered_heartbeats, task.last_progress_send_error) == (0, "")
    assert task.heartbeat_message_id is None and task.last_progress_delivery_status == "sent"


def test_case_46_a_final_unknown_frees_the_slot_but_is_not_resent_within_the_cooldown(settings):
    # A channel that does not de-duplicate: unknown is its final answer.
    use_channels(
        settings, DeliveryChannel(name="cli", kind="openclaw"), routes={"longrun.progress": "cli"}
    )
    task_set()
    # T0 starts a 3-minute slot: minutes 3, 4 and 5 are one slot, 6 the next.
    assert progress_slot(at(minutes=3), 180) == progress_slot(at(minutes=5, seconds=59), 180)
    _run(at(minutes=3))
    answer("unknown", "status timeout", now=at(minutes=3, seconds=30))
    task = _task()
    assert task.heartbeat_message_id is None
    assert (task.last_progress_delivery_status, task.last_progress_at) == ("unknown", T0)
    assert task.last_progress_unknown_at == at(minutes=3, seconds=30)
    assert task.last_progress_send_error == "status timeout"
    skipped = _run(at(minutes=4)).body
    assert skipped["event_count"] == 0
    assert skipped["skipped_unknown"][0]["reason"] == "recent_unknown_delivery"
    # After the cooldown, within the same slot: the slot's message is not sent twice.
    after_cooldown = _run(at(minutes=5, seconds=40)).body
    assert after_cooldown["event_count"] == 0 and after_cooldown["skipped_unknown_count"] == 0
    assert Message.objects.count() == 1
    # The next slot has a new heartbeat.
    assert _run(at(minutes=6)).body["event_count"] == 1
    assert Message.objects.count() == 2


def test_d_b5_one_task_that_fails_is_an_error_item_and_the_run_goes_on(settings):
    configure(settings, "delivery", max_body_bytes=1000)
    task_set("A")
    task_set("B", key=K2, note="长" * 1000)
    task_set("C", key="agent:main:c")
    LongTask.objects.filter(name="C").update(origin_session_key="")
    result = _run(at(minutes=3))
    assert result.exit_code == 1
    assert [event["task"] for event in result.body["events"]] == ["A"]
    errors = {item["task"]: item["error"] for item in result.body["errors"]}
    assert errors["B"].startswith("DeliveryError: body: must be at most 1000 bytes")
    assert errors["C"] == "missing origin_session_key for task: C"
    assert not TaskEvent.objects.filter(task__name="B").exists()  # its transaction rolled back


def test_the_handlers_pass_over_messages_that_are_not_a_tasks():
    message = outbox_enqueue(
        purpose="longrun.progress", target=K, body="hello", idempotency_key="k1", now=T0
    )
    with CaptureQueriesContext(connection) as queries:
        acknowledge_all(K, now=at(seconds=1))
    assert not any("longrun_" in q["sql"] for q in queries)
    message.refresh_from_db()
    assert message.status == "sent"


def test_an_answer_after_the_task_was_cleared_is_only_recorded_by_the_outbox():
    task_set()
    _run(at(minutes=3))
    services.task_clear(name="A")
    acknowledge_all(K, now=at(minutes=4))
    assert Message.objects.get().status == "sent"
    assert not TaskEvent.objects.exists()
