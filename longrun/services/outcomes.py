"""The outcome handlers of long-run mode: what each send's outcome does to its task (D-B10).

Registered in LongrunConfig.ready(); each runs in the transaction in which
the outbox records a message's outcome, and writes the task's bookkeeping
from it.
"""

from __future__ import annotations

from longrun._rows import (
    PROGRESS_PURPOSE,
    RECOVERY_PURPOSE,
    RESUME_PURPOSE,
    _apply_progress,
    _block_if_too_many_misses,
    _count_heartbeat,
    _log,
    _save,
    _task_id_of,
)
from longrun.ladder import ladder_after_misses
from longrun.models import LongTask, TaskEvent
from longrun.policies.messages import KEEPALIVE_RESUMED_NOTE
from longrun.policies.timing import whole_second
from longrun.selectors import longrun_rules
from longrun.services._common import _resumed, logger
from xworkmate.delivery.outcomes import Outcome, RecordedMessage

# Who the log names when the service itself acted.
_BY_DELIVERY = "delivery"


def _task_of_message(message: RecordedMessage) -> LongTask | None:
    task_id = _task_id_of(message.idempotency_key)
    if task_id is None:
        return None
    task = LongTask.objects.select_for_update().filter(pk=task_id).first()
    if task is None:
        logger.info("message %s answered after its long task %s was cleared", message.pk, task_id)
    return task


def progress_outcome_record(message: RecordedMessage, outcome: Outcome, final: bool) -> None:
    """A heartbeat's outcome: the task's progress is sent, unknown or failed (D-B10, D-B12).

    The service's own send is not the agent's activity: `updated_at` stays
    (D-B19). The heartbeat stops being in flight once sent or its outcome is final.
    """
    task = _task_of_message(message)
    if task is None:
        return
    rules = longrun_rules()
    at = whole_second(message.updated_at)
    queued = TaskEvent.objects.filter(
        task=task, kind=TaskEvent.QUEUED, message_id=message.pk
    ).first()
    delivery_id = queued.delivery_id if queued is not None else ""
    message_hash = queued.message_hash if queued is not None else ""
    error = "" if outcome is Outcome.SENT else message.last_error
    fields = _apply_progress(
        task, outcome.value, error=error, delivery_id=delivery_id, message_hash=message_hash, at=at
    )
    logged_error = task.last_progress_send_error if outcome is not Outcome.SENT else ""
    if task.heartbeat_message_id == message.pk and (outcome is Outcome.SENT or final):
        task.heartbeat_message_id = None
        fields.append("heartbeat_message_id")
    _count_heartbeat(task, outcome.value, error)
    fields += _block_if_too_many_misses(
        task, outcome.value, logged_error, at=at, by=_BY_DELIVERY, rules=rules
    )
    ladder_after_misses(task, fields, at=at, by=_BY_DELIVERY)  # D-B30: a person may be told
    _log(
        task,
        outcome.value,
        at=at,
        by=_BY_DELIVERY,
        purpose=PROGRESS_PURPOSE,
        message_id=message.pk,
        delivery_id=delivery_id,
        message_hash=message_hash,
        error=logged_error,
    )
    _save(task, rules, fields)


def resume_outcome_record(message: RecordedMessage, outcome: Outcome, final: bool) -> None:
    """A resume's outcome: only a confirmed one counts as a resume (D-B10)."""
    task = _task_of_message(message)
    if task is None:
        return
    rules = longrun_rules()
    at = whole_second(message.updated_at)
    if outcome is Outcome.SENT:
        _resumed(task, "idle_timeout", at=at)
        _log(
            task,
            TaskEvent.RESUME,
            at=at,
            by=_BY_DELIVERY,
            purpose=RESUME_PURPOSE,
            message_id=message.pk,
            message_hash=message.body_hash,
            note=KEEPALIVE_RESUMED_NOTE,
        )
        _save(task, rules, ["last_resume_at", "last_resume_reason", "last_resume_count"])
        return
    fields = _apply_progress(
        task,
        outcome.value,
        error=message.last_error,
        delivery_id="",
        message_hash=message.body_hash,
        at=at,
    )
    _log(
        task,
        outcome.value,
        at=at,
        by=_BY_DELIVERY,
        purpose=RESUME_PURPOSE,
        message_id=message.pk,
        message_hash=message.body_hash,
        error=task.last_progress_send_error,
        note="保活续跑执行失败" if outcome is Outcome.FAILED else "",
    )
    _save(task, rules, fields)


def recovery_outcome_record(message: RecordedMessage, outcome: Outcome, final: bool) -> None:
    """A recovery message's outcome goes to the task log only (its payload had no callbacks)."""
    task = _task_of_message(message)
    if task is None:
        return
    _log(
        task,
        outcome.value,
        at=whole_second(message.updated_at),
        by=_BY_DELIVERY,
        purpose=RECOVERY_PURPOSE,
        message_id=message.pk,
        message_hash=message.body_hash,
        error="" if outcome is Outcome.SENT else message.last_error,
    )
