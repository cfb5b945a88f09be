"""The agent's reports on PostgreSQL: read without a lock, written only over the version read.

On PostgreSQL a report (touch-progress, mark-progress-*, mark-visible-reply,
mark-tool-result, mark-resume) reads its task without a row lock and writes
the task and its task-log event in one statement that holds only while the
row is still the version it read (D-B25). These tests attack that: reports
racing each other on one task, a write slipped in between a report's read
and its write, and a report that must block the task (more than one row).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from longrun import services
from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from longrun.policies.answers import LongrunError
from longrun.policies.timing import whole_second
from tests.longrun.conftest import K, task_set
from tests.support.threads import in_threads
from xworkmate import sql

pytestmark = pytest.mark.usefixtures("real_services")

THREADS = 6
EACH = 15


def test_a_heartbeat_report_is_two_statements_and_no_transaction() -> None:
    task_set("A")
    with CaptureQueriesContext(connection) as queries:
        answer = services.task_progress_record(
            name="A", outcome="touch", by="test", now=whole_second(timezone.now())
        )
    assert answer.exit_code == 0
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    assert statements == ["SELECT", "WITH"], statements
    assert TaskEvent.objects.filter(task__name="A", kind="sent").count() == 1


def test_racing_reports_on_one_task_lose_no_update() -> None:
    """Every resume counts and every report is logged, however the reports interleave."""
    task_set("A")
    start = timezone.now()

    def report(index: int) -> None:
        for n in range(EACH):
            at = start + timedelta(seconds=n)
            if n % 3 == 0:
                services.task_progress_record(name="A", outcome="touch", by=f"t{index}", now=at)
            services.task_resume_record(name="A", reason="manual", by=f"t{index}", now=at)
            services.task_activity_record(name="A", signal="tool_result", by=f"t{index}", now=at)

    in_threads(report, THREADS)
    task = LongTask.objects.get(name="A")
    assert task.last_resume_count == THREADS * EACH
    events = TaskEvent.objects.filter(task=task)
    assert events.filter(kind="resume").count() == THREADS * EACH
    assert events.filter(kind="tool_result").count() == THREADS * EACH
    assert events.filter(kind="sent").count() == THREADS * len(range(0, EACH, 3))
    # The activity clock only moves forward: the newest report's time stands.
    assert task.updated_at == whole_second(start + timedelta(seconds=EACH - 1))


def test_a_write_between_the_read_and_the_write_makes_the_report_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A person marks the task blocked while a heartbeat is in flight: both changes stay."""
    task_set("A")
    real_read = sql.select_versioned
    reads: list[str] = []

    def read_then_someone_writes(model: Any, where: str, params: Any) -> Any:
        found = real_read(model, where, params)
        reads.append(found[1] if found else "")
        if len(reads) == 1:
            # Another connection commits a change to the row this report just read.
            in_threads(lambda _: _mark_blocked("A"), 1)
        return found

    monkeypatch.setattr(sql, "select_versioned", read_then_someone_writes)
    services.task_progress_record(name="A", outcome="touch", by="agent", now=timezone.now())
    assert len(reads) == 2 and reads[0] != reads[1]
    task = LongTask.objects.get(name="A")
    assert task.state == "blocked"  # the other write was not overwritten
    assert task.last_progress_delivery_status == "sent"  # and the report landed
    assert TaskEvent.objects.filter(task=task, kind="sent").count() == 1  # once


def test_the_report_that_blocks_the_task_takes_the_row_lock() -> None:
    """The third undelivered heartbeat blocks the task: task, lock and transition together."""
    task_set("A")
    start = timezone.now()
    for n in range(3):
        services.task_progress_record(
            name="A", outcome="failed", error=f"timeout {n}", by="agent",
            now=start + timedelta(seconds=n),
        )  # fmt: skip
    task = LongTask.objects.get(name="A")
    assert task.state == "blocked" and task.undelivered_heartbeats == 3
    assert not SessionLock.objects.filter(origin_session_key=K).exists()
    note = Transition.objects.get(task=task, to_state="blocked").note
    assert note.startswith("连续 3 次进度未送达：")
    assert [part.split(" ", 1)[1] for part in note.split("：", 1)[1].split("；")] == [
        "timeout 0",
        "timeout 1",
        "timeout 2",
    ]
    assert TaskEvent.objects.filter(task=task, kind="failed").count() == 3


def test_an_agent_reports_only_on_its_own_sessions_task() -> None:
    task_set("A")
    with pytest.raises(LongrunError) as refused:
        services.task_progress_record(
            name="A", outcome="touch", by="agent", now=timezone.now(), confined_to="agent:main:other"
        )
    assert refused.value.body == "task not found: A"
    assert not TaskEvent.objects.filter(kind="sent").exists()


def _mark_blocked(name: str) -> None:
    services.task_state_mark(
        name=name, state="blocked", note="缺少权限", by="admin:reviewer", now=timezone.now()
    )

