"""The long-run tables hold their rules even against a write that bypasses the services."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from tests.longrun.conftest import T0, K, at, task_set

pytestmark = pytest.mark.django_db


def _refused(write) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        write()


def _task(**fields) -> LongTask:
    task_set(**fields)
    return LongTask.objects.get(name=fields.get("name", "A"))


def test_one_live_task_per_name_archived_ones_aside():
    task = _task()
    _refused(
        lambda: LongTask.objects.create(
            name="A",
            state="done",
            progress_every="3m",
            progress_every_seconds=180,
            last_activity_at=T0,
            created_at=T0,
            updated_at=T0,
        )
    )
    LongTask.objects.filter(pk=task.pk).update(state="done", progress_due_at=None, archived_at=T0)
    LongTask.objects.create(
        name="A",
        state="done",
        progress_every="3m",
        progress_every_seconds=180,
        last_activity_at=T0,
        created_at=T0,
        updated_at=T0,
    )


def test_one_lock_per_session_key():
    task = _task()
    _refused(lambda: SessionLock.objects.create(origin_session_key=K, task=task, acquired_at=T0))


@pytest.mark.parametrize(
    "change",
    [
        {"state": "running"},
        {"last_progress_delivery_status": "delivered"},
        {"progress_every_seconds": 0},
        {"state": "waiting"},  # still has a progress deadline: only analyzing/executing owe one
        {"updated_at": at(seconds=-1)},
        {"archived_at": T0},  # an executing task cannot leave the store
    ],
)
def test_a_task_row_refuses_what_the_rules_forbid(change):
    task = _task()
    _refused(lambda: LongTask.objects.filter(pk=task.pk).update(**change))


def test_a_transition_changes_the_state_and_a_queued_event_names_its_message():
    task = _task()
    _refused(
        lambda: Transition.objects.create(
            task=task, at=T0, by="x", from_state="done", to_state="done"
        )
    )
    _refused(lambda: TaskEvent.objects.create(task=task, at=T0, by="x", kind="queued"))
    TaskEvent.objects.create(task=task, at=T0, by="x", kind="queued", message_id=7)
    _refused(
        lambda: TaskEvent.objects.create(task=task, at=T0, by="x", kind="queued", message_id=7)
    )


@pytest.mark.parametrize("model", [LongTask, SessionLock, Transition, TaskEvent])
def test_no_two_fields_of_a_model_share_a_label(model):
    labels = [
        str(field.verbose_name)
        for field in model._meta.get_fields()
        if hasattr(field, "verbose_name")
    ]
    assert len(labels) == len(set(labels)), labels


def test_the_migrations_match_the_models():
    out = StringIO()
    call_command("makemigrations", "longrun", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
