"""import-state: the original's `.task-state.json` into the store (§4.2–§4.4)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from longrun._rows import _derive, _transition
from longrun.models import (
    DURATION_MAX_LENGTH,
    LABEL_MAX_LENGTH,
    LIVE,
    SHA256_LENGTH,
    LongTask,
    SessionLock,
)
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer, LongrunError
from longrun.policies.statefile import TaskRecord, plan_locks, read_state
from longrun.policies.timing import whole_second
from longrun.selectors import live_tasks, lock_table, longrun_rules
from longrun.services._common import _invalid, _key, _name, _text, logger


def tasks_import(
    *, document: object, replace: bool = False, source: str = "", by: str, now: datetime
) -> Answer:
    """import-state: bring an original `.task-state.json` document into the store.

    Each record is checked as `set` checks its input (longrun.policies.statefile);
    one that could not have been stored is skipped with its reason, the others
    come in with their locks, all in one transaction. `replace` forgets the
    live tasks first (as `clear`); without it a task whose name the store
    already has is skipped. Exit 1 when a record was skipped, else 0.
    """
    now = whole_second(now)
    rules = longrun_rules()
    read = read_state(document, zone=rules.zone, now=now)
    skipped = list(read.skipped)
    records: list[TaskRecord] = []
    for record in read.tasks:
        try:
            _check_imported(record.values)
        except LongrunError as exc:
            skipped.append({"task": record.name, "reason": exc.text})
        else:
            records.append(record)
    with transaction.atomic():
        tasks_before = live_tasks().count()
        locks_before = SessionLock.objects.count()
        if replace:
            LongTask.objects.filter(LIVE).delete()
        present = set(
            live_tasks()
            .filter(name__in=[record.name for record in records])
            .values_list("name", flat=True)
        )
        created: dict[str, LongTask] = {}
        for record in records:
            if record.name in present:
                skipped.append({"task": record.name, "reason": "already_in_store"})
                continue
            task = LongTask(**record.values, created_at=record.created_at)
            _derive(task, rules)
            task.save(force_insert=True)
            _transition(task, "", at=now, by=by, note=f"imported from {source or 'a state file'}")
            created[task.name] = task
        plan = plan_locks(
            {name: (task.state, task.origin_session_key) for name, task in created.items()},
            read.locks,
            held=lock_table(),
            skipped={item["task"] for item in skipped},
        )
        SessionLock.objects.bulk_create(
            SessionLock(origin_session_key=key, task=created[name], acquired_at=now)
            for key, name in plan.locks.items()
        )
        tasks_after = live_tasks().count()
        locks_after = SessionLock.objects.count()
    logger.info(
        "long-run state imported from %s: %d tasks, %d skipped", source, len(created), len(skipped)
    )
    body = {
        "source": source,
        "replace": replace,
        "imported": list(created),
        "skipped": skipped,
        "repairs": [repair for repair in read.repairs if repair["task"] in created],
        "lock_repairs": plan.repairs,
        "task_count_before": tasks_before,
        "task_count_after": tasks_after,
        "lock_count_before": locks_before,
        "lock_count_after": locks_after,
    }
    return Answer(EXIT_ACTION if skipped else EXIT_OK, body)


def _check_imported(values: dict[str, Any]) -> None:
    """The limits `set` and the bookkeeping commands hold their input to."""
    if _name(values["name"]) != values["name"]:
        raise _invalid("task", "must not start or end with white space")
    for field in ("origin_session_key", "last_progress_delivery_id"):
        if _key(field, values[field], required=False) != values[field]:
            raise _invalid(field, "must not start or end with white space")
    _text("session", values["session_label"], LABEL_MAX_LENGTH)
    for field in ("goal", "done_when", "blocked_when", "boundary", "next_check", "note"):
        _text(field, values[field])
    _text("last_progress_send_error", values["last_progress_send_error"])
    _text("progress_every", values["progress_every"], DURATION_MAX_LENGTH)
    _text("last_progress_message_hash", values["last_progress_message_hash"], SHA256_LENGTH)
    _text("last_resume_reason", values["last_resume_reason"], 64)
    if values["last_resume_count"] > 2**31 - 1:
        raise _invalid("last_resume_count", "must be at most 2147483647")
