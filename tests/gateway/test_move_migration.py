"""D-K4: moving the gateway models to their own app keeps every row of an existing database.

The database is taken back to the last migration of the code before the move
(xworkmate 0002: the gateway tables belonged to the kernel app), filled
through the models as they were then, and migrated forward again.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun

BEFORE_THE_MOVE = [("xworkmate", "0002_gateway_sessions_runs"), ("gateway", None)]
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_rows_written_before_the_move():
    executor = _migrate(BEFORE_THE_MOVE)
    try:
        _fill_and_move(executor)
    finally:
        _migrate(_latest())


def _fill_and_move(executor):
    old = executor.loader.project_state(BEFORE_THE_MOVE[0]).apps
    entry = old.get_model("xworkmate", "SessionEntry").objects.create(
        session_key="agent:main:thread-42", session_id="agent:main:thread-42", created_at=T0
    )
    old.get_model("xworkmate", "SessionMapping").objects.create(
        session=entry, app_thread_key="thread-42", expected_artifact_dirs=["out"],
        source="bridge_prepare", created_at_text="2026-11-29T12:00:00.000Z",
        created_at=T0, updated_at=T0,
    )
    old.get_model("xworkmate", "TaskRun").objects.create(
        session=entry, run_id="turn-1", status="completed", success=True,
        started_at=T0, updated_at=T0, completed_at=T0, output="done",
    )
    old.get_model("xworkmate", "NativeTask").objects.create(
        session_key="agent:main:thread-42", task_id="task-1", run_id="turn-1",
        status="succeeded", record={"taskId": "task-1", "status": "succeeded"},
        created_at=T0, updated_at=T0, terminal_at=T0,
    )
    old_types = ContentType.objects.filter(app_label="xworkmate", model="taskrun").count()

    _migrate(_latest())

    mapping = SessionMapping.objects.select_related("session").get()
    assert (mapping.app_thread_key, mapping.session.session_key, mapping.expected_artifact_dirs) == (
        "thread-42", "agent:main:thread-42", ["out"],
    )
    run = TaskRun.objects.get()
    assert (run.run_id, run.status, run.output, run.session_id) == ("turn-1", "completed", "done", entry.pk)
    assert NativeTask.objects.get().record == {"taskId": "task-1", "status": "succeeded"}
    assert SessionEntry.objects.get().created_at == T0
    # The tables never moved; only the app that owns them did.
    assert TaskRun._meta.db_table == "xworkmate_taskrun"
    assert TaskRun._meta.app_label == "gateway"
    # The admin's content types (and so its permissions) moved with the models.
    assert not ContentType.objects.filter(app_label="xworkmate", model="taskrun").exists()
    assert ContentType.objects.filter(app_label="gateway", model="taskrun").count() == max(old_types, 1)


@pytest.mark.django_db(transaction=True)
def test_the_move_changes_no_table():
    """The two migrations of the move emit no SQL: the move is state only."""
    _migrate(BEFORE_THE_MOVE)
    try:
        executor = MigrationExecutor(connection)
        moved = [
            migration
            for migration, _ in executor.migration_plan(_latest())
            if (migration.app_label, migration.name)
            in {("gateway", "0001_initial"), ("xworkmate", "0003_move_gateway_models")}
        ]
        assert len(moved) == 2
        for migration in moved:
            state = executor.loader.project_state(
                (migration.app_label, migration.name), at_end=False
            )
            with connection.schema_editor(collect_sql=True, atomic=False) as editor:
                migration.apply(state, editor, collect_sql=True)
            # RunPython (the content types) shows up as a comment, not as SQL.
            assert [s for s in editor.collected_sql if not s.startswith("--")] == []
    finally:
        _migrate(_latest())
