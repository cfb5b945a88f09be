"""import-state and export-state: the original's `.task-state.json` in and out (§4.2–§4.4).

The fixture file under data/ holds the original's quirks: naive timestamps,
a hand-written record with missing fields, a lock still held by a done task,
a lock left on an old key, a lock pointing to a missing task, the legacy
`active_long_run`, and records `set` could never have stored.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from longrun import selectors, services
from longrun.models import LongTask, SessionLock, Transition
from longrun.policies.answers import LongrunError
from longrun.policies.statefile import plan_locks, read_state
from longrun.policies.timing import parse_next_check
from tests.longrun.conftest import FIXTURE, K2, T0, K, at, task_set
from xworkmate.lib.timezones import get_zone

pytestmark = pytest.mark.django_db

SHANGHAI = get_zone("Asia/Shanghai")
K3, K4, K6 = (f"agent:main:telegram:dm:100{n}" for n in (3, 4, 6))


def _import(document, *, replace: bool = False, now: datetime = T0):
    return services.tasks_import(
        document=document, replace=replace, source="fixture", by="test", now=now
    )


def _fixture() -> Any:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _rows() -> dict[str, dict[str, Any]]:
    """Every stored field of every live task, by name (ids and log rows aside)."""
    skip = {"id", "archived_at"}
    return {
        task["name"]: {k: v for k, v in task.items() if k not in skip}
        for task in LongTask.objects.filter(archived_at__isnull=True).values()
    }


def test_it_imports_the_original_file_with_its_quirks_and_reports_what_it_skipped():
    answer = _import(_fixture())
    assert answer.exit_code == 1  # records were skipped: look at them
    body = answer.body
    assert body["imported"] == ["迁移数据库", "等CI", "手写任务", "旧任务", "换了会话", "回归-1"]
    assert body["skipped"] == [
        {"task": "缺会话", "reason": "active_state_missing_origin_session_key"},
        {"task": "坏状态", "reason": "invalid state: running"},
        {
            "task": "坏间隔",
            "reason": "invalid progress_every: '5 min' is not a duration like 90s, 3m, 2h or "
            "1h30m (hours, minutes, seconds)",
        },
        {"task": "坏时间", "reason": "invalid updated_at: 'yesterday' is not an ISO 8601 time"},
        {"task": "不是对象", "reason": "the record is not an object"},
    ]
    assert body["repairs"] == [
        {"task": "手写任务", "field": "progress_every", "action": "set_to_5m"},
        {"task": "手写任务", "field": "updated_at", "action": "set_from_latest_time"},
        {"task": "手写任务", "field": "owner", "action": "ignored_unknown_field"},
        {"task": "等CI", "field": "active_long_run", "action": "migrated_to_lock"},
    ]
    assert body["lock_repairs"] == [
        {"session_key": K4, "task": "旧任务", "action": "release_lock_of_finished_task"},
        {"session_key": "agent:main:telegram:dm:1007", "task": "坏间隔", "action": "skipped_with_task"},
        {"session_key": "agent:main:telegram:dm:1009", "old_task": "gone", "action": "drop_orphan_lock"},
        {
            "session_key": "agent:main:telegram:dm:1005",
            "task": "换了会话",
            "action": "replace_with_task_origin_session_key",
            "new_session_key": K6,
        },
        {"session_key": K3, "task": "手写任务", "action": "restore_missing_lock"},
    ]
    assert (body["task_count_before"], body["task_count_after"]) == (0, 6)
    assert (body["lock_count_before"], body["lock_count_after"]) == (0, 4)
    assert selectors.lock_table() == {K: "迁移数据库", K2: "等CI", K3: "手写任务", K6: "换了会话"}
    # Each imported task's creation is in its transition log (D-B17).
    assert set(Transition.objects.values_list("task__name", "from_state", "to_state", "by")) == {
        (name, "", state, "test")
        for name, state in (
            ("迁移数据库", "executing"), ("等CI", "waiting"), ("手写任务", "executing"),
            ("旧任务", "done"), ("换了会话", "executing"), ("回归-1", "blocked"),
        )
    }


def test_the_imported_records_keep_the_originals_fields_and_times():
    _import(_fixture())
    record = selectors.task_show(name="迁移数据库").body
    original = _fixture()["tasks"]["迁移数据库"]
    assert record == original  # every field, in the original's format
    assert list(record) == list(original)  # and order
    # Naive times are read in longrun.time_zone (Asia/Shanghai), to the second.
    waiting = LongTask.objects.get(name="等CI")
    assert waiting.updated_at == datetime(2026, 4, 2, 11, 30, tzinfo=SHANGHAI)
    assert waiting.next_check_at == datetime(2026, 4, 2, 5, 0, tzinfo=UTC)
    assert waiting.session_label == "构建会话"  # from `session`: it had no session_label
    # The hand-written record: what was missing is filled as reported.
    hand = LongTask.objects.get(name="手写任务")
    assert (hand.progress_every, hand.progress_every_seconds) == ("5m", 300)
    assert hand.updated_at == hand.last_progress_at == datetime(2026, 4, 2, 3, 0, tzinfo=UTC)
    assert (hand.note, hand.next_check, hand.next_check_at, hand.last_resume_count) == (
        "", "等CI", None, 0,
    )
    # The deadlines the monitors query are derived as `set` derives them.
    assert hand.progress_due_at == hand.last_progress_at + timedelta(minutes=5)
    moved = LongTask.objects.get(name="换了会话")
    assert moved.next_check_at == parse_next_check("1h", anchor=moved.updated_at, zone=SHANGHAI)
    assert moved.created_at == moved.updated_at
    done = LongTask.objects.get(name="旧任务")
    assert (done.progress_due_at, done.locks.count()) == (None, 0)


def test_a_round_trip_through_export_changes_nothing():
    _import(_fixture())
    first = selectors.state_export()
    rows = _rows()
    again = _import(json.loads(json.dumps(first.body)), replace=True, now=at(hours=1))
    assert again.exit_code == 0
    assert again.body["skipped"] == [] and again.body["repairs"] == []
    assert again.body["lock_repairs"] == []
    second = selectors.state_export()
    assert second == first
    assert json.dumps(second.body, ensure_ascii=False, indent=2) == json.dumps(
        first.body, ensure_ascii=False, indent=2
    )
    assert _rows() == rows  # every stored field, the derived deadlines included


def test_export_prints_the_original_document():
    task_set()
    task_set("B", state="done", key=K2)
    body = selectors.state_export().body
    assert list(body) == ["tasks", "active_long_runs_by_session"]
    assert list(body["tasks"]) == ["A", "B"]
    assert body["tasks"]["A"] == selectors.task_show(name="A").body
    assert body["active_long_runs_by_session"] == {K: "A"}


def test_without_replace_it_adds_to_the_store_and_skips_names_it_has():
    task_set("迁移数据库", key=K2)  # the store's own task holds K2
    answer = _import(_fixture())
    assert {"task": "迁移数据库", "reason": "already_in_store"} in answer.body["skipped"]
    assert "迁移数据库" not in answer.body["imported"]
    # The store's task is untouched; the file's 等CI wanted K2 too and goes without.
    assert LongTask.objects.get(name="迁移数据库").origin_session_key == K2
    assert {
        "session_key": K2, "task": "等CI", "action": "lock_held_by_other_task",
        "holder": "迁移数据库",
    } in answer.body["lock_repairs"]
    assert {"session_key": K, "task": "迁移数据库", "action": "skipped_with_task"} in answer.body[
        "lock_repairs"
    ]
    assert selectors.lock_table() == {K2: "迁移数据库", K3: "手写任务", K6: "换了会话"}


def test_replace_forgets_the_store_first():
    task_set("本地任务", key=K2)
    answer = _import(_fixture(), replace=True)
    assert answer.body["task_count_before"] == 1
    assert not LongTask.objects.filter(name="本地任务").exists()
    assert selectors.lock_table()[K2] == "等CI"


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], "the document is not a JSON object"),
        ({}, "'tasks' must be an object of task records keyed by name"),
        ({"tasks": []}, "'tasks' must be an object of task records keyed by name"),
        ({"tasks": {}, "active_long_runs_by_session": []}, "'active_long_runs_by_session' must be an object"),
        ({"tasks": {}, "plans": {}}, "unknown top-level keys: plans"),
    ],
)
def test_a_document_that_is_not_a_state_file_is_refused_and_nothing_changes(document, reason):
    task_set()
    with pytest.raises(LongrunError) as refused:
        _import(document, replace=True)
    assert (refused.value.exit_code, refused.value.body) == (
        1,
        f"failed to read state file: {reason}",
    )
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]
    assert SessionLock.objects.count() == 1


def test_nothing_is_half_imported_when_a_write_fails(monkeypatch):
    task_set()
    calls = []

    def failing_transition(task, old, **kwargs):
        calls.append(task.name)
        if len(calls) == 3:
            raise RuntimeError("the database went away")

    monkeypatch.setattr("longrun.services.statefile._transition", failing_transition)
    with pytest.raises(RuntimeError):
        _import(_fixture(), replace=True)
    assert list(LongTask.objects.values_list("name", flat=True)) == ["A"]
    assert selectors.lock_table() == {K: "A"}


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        ({"task": "B", "state": "done"}, "its task field 'B' differs from its key"),
        ({"state": "done", "goal": 3}, "invalid goal: 3 (a string or null)"),
        ({"state": "done", "last_resume_count": -1}, "invalid last_resume_count: -1 (a whole number, 0 or more)"),
        ({"state": "done", "last_resume_count": True}, "invalid last_resume_count: True (a whole number, 0 or more)"),
        ({"state": "done", "last_progress_delivery_status": "maybe"}, "invalid last_progress_delivery_status: maybe"),
        ({"state": "done", "updated_at": 1712030400}, "invalid updated_at: 1712030400 (an ISO 8601 time or null)"),
        ({"state": "done", "progress_every": 3}, "invalid progress_every: 3"),
        ({"state": "done", "progress_every": "9999999h"}, "invalid progress_every: must be at most 9999h"),
        ({"state": "done", "goal": "长" * 2001}, "invalid goal: must be at most 2000 characters"),
        ({"state": "done", "session": "会" * 201}, "invalid session: must be at most 200 characters"),
        ({"state": "executing", "origin_session_key": " agent:main:main"}, "invalid origin_session_key: must not start or end with white space"),
        ({"state": "done", "last_progress_message_hash": "f" * 65}, "invalid last_progress_message_hash: must be at most 64 characters"),
    ],
)
def test_each_record_is_checked_as_set_checks_its_input(record, reason):
    answer = _import({"tasks": {"A": record}})
    assert answer.body["skipped"] == [{"task": "A", "reason": reason}]
    assert answer.exit_code == 1
    assert not LongTask.objects.exists()


def test_a_name_set_could_not_store_is_skipped():
    answer = _import({"tasks": {" A": {"state": "done"}, "": {"state": "done"}}})
    assert [item["task"] for item in answer.body["skipped"]] == [" A", ""]
    assert not LongTask.objects.exists()


def test_a_record_without_any_time_is_stamped_with_the_import_time():
    answer = _import({"tasks": {"A": {"state": "blocked"}}})
    assert answer.body["repairs"] == [
        {"task": "A", "field": "progress_every", "action": "set_to_5m"},
        {"task": "A", "field": "updated_at", "action": "set_to_import_time"},
    ]
    task = LongTask.objects.get()
    assert task.updated_at == task.created_at == T0


def test_the_lock_plan_keeps_the_first_claim_and_moves_stale_locks():
    tasks = {"A": ("executing", K), "B": ("executing", K)}
    # A holds K and an old key; B shares K and gets no lock of its own.
    plan = plan_locks(tasks, {K: "A", "old": "A"}, held={}, skipped=())
    assert plan.locks == {K: "A"}
    assert plan.repairs == [
        {"session_key": "old", "task": "A", "action": "drop_stale_lock", "new_session_key": K},
        {"session_key": K, "task": "B", "action": "lock_held_by_other_task", "holder": "A"},
    ]
    # A lock whose holder is not a string is an orphan, reported as the file had it.
    assert plan_locks({}, {K: 3}, held={}, skipped=()).repairs == [
        {"session_key": K, "old_task": "3", "action": "drop_orphan_lock"}
    ]


def test_the_legacy_lock_does_not_take_a_key_the_table_has():
    document = {
        "tasks": {"A": {"state": "executing", "origin_session_key": K}},
        "active_long_runs_by_session": {K: "B"},
        "active_long_run_task": "A",
    }
    read = read_state(document, zone=SHANGHAI, now=T0)
    assert read.locks == {K: "B"}
    assert all(repair["action"] != "migrated_to_lock" for repair in read.repairs)
