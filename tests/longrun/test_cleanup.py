"""cleanup_state (§7.11) with D-B16's age rule: a dry run by default, the same report applied."""

from __future__ import annotations

import pytest

from longrun import selectors, services
from longrun.models import LongTask, SessionLock
from tests.longrun.conftest import K2, T0, K, at, task_set

pytestmark = pytest.mark.django_db

K_OLD = "agent:main:telegram:dm:1000"


def _cleanup(**kwargs):
    return services.tasks_cleanup(now=at(minutes=1), **kwargs).body


def _store() -> tuple[list[str], dict[str, str]]:
    return [t.name for t in selectors.live_tasks()], selectors.locks_show().body


def test_case_70_test_tasks_and_active_tasks_without_key_are_dropped():
    task_set("回归-1", key=K2)  # holds K2: its lock goes with it
    task_set("A")
    task_set("X", key="agent:main:x")
    LongTask.objects.filter(name="X").update(origin_session_key="")
    before = _store()
    report = _cleanup()
    assert report == {
        "normalized": [],
        "dropped": [
            {"task": "回归-1", "reason": "matched_drop_rule"},
            {"task": "X", "reason": "active_state_missing_origin_session_key"},
        ],
        "archived": [],
        "lock_repairs": [
            {"session_key": K2, "old_task": "回归-1", "action": "drop_orphan_lock"},
            {"session_key": "agent:main:x", "old_task": "X", "action": "drop_orphan_lock"},
        ],
        "task_count_before": 3,
        "task_count_after": 1,
        "lock_count_before": 3,
        "lock_count_after": 1,
        "apply": False,
    }
    assert _store() == before  # a dry run changes nothing
    applied = _cleanup(apply=True)
    assert applied | {"apply": False} == report
    assert _store() == (["A"], {K: "A"})


def test_case_71_a_lock_on_an_old_key_follows_the_tasks_key():
    task_set()
    services.lock_release(session_key=K)
    services.lock_acquire(session_key=K_OLD, name="A", now=T0)
    report = _cleanup(apply=True)
    assert report["lock_repairs"] == [
        {
            "session_key": K_OLD,
            "task": "A",
            "action": "replace_with_task_origin_session_key",
            "new_session_key": K,
        }
    ]
    assert _store()[1] == {K: "A"}


def test_case_71_an_active_task_without_its_lock_gets_it_back():
    task_set()
    services.lock_release(session_key=K)
    report = _cleanup(apply=True)
    assert report["lock_repairs"] == [
        {"session_key": K, "task": "A", "action": "restore_missing_lock"}
    ]
    assert _store()[1] == {K: "A"}


def test_a_lock_held_by_a_done_task_on_its_own_key_is_kept():
    task_set(state="done")
    services.lock_acquire(session_key=K, name="A", now=T0)
    report = _cleanup(apply=True)
    assert report["lock_repairs"] == [] and _store()[1] == {K: "A"}


def test_case_73_given_prefixes_add_to_the_default():
    for name, key in (("tmp-1", "agent:main:t"), ("回归-2", "agent:main:r"), ("A", K)):
        task_set(name, key=key)
    task_set("B", key=K2)
    report = _cleanup(drop_test_prefixes=["tmp-"], drop_tasks=["B"], apply=True)
    assert [d["task"] for d in report["dropped"]] == ["tmp-1", "回归-2", "B"]
    assert _store() == (["A"], {K: "A"})


def test_d_b16_old_finished_tasks_are_archived_and_leave_the_store():
    task_set("old-done", state="done", key="agent:main:1", now=at(days=-8))
    task_set("old-handoff", state="handoff", key="agent:main:2", now=at(days=-8))
    task_set("recent-done", state="done", key="agent:main:3", now=at(days=-6))
    task_set("old-executing", key=K, next_check="等CI", now=at(days=-8))
    report = _cleanup()
    assert report["archived"] == [
        {"task": "old-done", "state": "done", "reason": "finished_older_than (168h)"},
        {"task": "old-handoff", "state": "handoff", "reason": "finished_older_than (168h)"},
    ]
    assert LongTask.objects.filter(archived_at__isnull=False).count() == 0  # dry run
    _cleanup(apply=True)
    assert [t.name for t in selectors.live_tasks()] == ["recent-done", "old-executing"]
    archived = LongTask.objects.get(name="old-done")
    assert archived.archived_at == at(minutes=1)  # kept, with its log, out of the store
    # The name is free again.
    assert task_set("old-done", key=K2, now=at(minutes=2)).exit_code == 0
    assert LongTask.objects.filter(name="old-done").count() == 2


def test_cleanup_input_is_checked_before_anything_is_read():
    from longrun.policies.answers import LongrunError

    task_set()
    with pytest.raises(LongrunError) as caught:
        _cleanup(drop_test_prefixes=["  "], apply=True)
    assert caught.value.field == "drop_test_prefix"
    assert SessionLock.objects.count() == 1
