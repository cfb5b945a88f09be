"""What the services and the monitors share when they write a long task.

A task's row: its derived deadlines, its save under the row lock and its log;
its outbox messages, linked to it by their idempotency key
(`longrun:<task id>:<kind>:<token>`), so the outcome handlers know a task's
message without a query and pass over any other at no cost; and the delivery
bookkeeping of its heartbeats. A module of the app rather than of
longrun.services, so that longrun.monitors can use it while longrun.services
still re-exports the monitors: no import cycle either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q

from longrun.models import LongTask, SessionLock, TaskEvent, Transition
from longrun.policies import reports
from longrun.policies.facts import Rules
from longrun.policies.states import ACTIVE_STATES, BLOCKED, FAILED, SENT, UNKNOWN
from longrun.policies.timing import latest_activity, parse_next_check, progress_deadline
from xworkmate import sql

PROGRESS_PURPOSE = "longrun.progress"
RESUME_PURPOSE = "longrun.resume"
RECOVERY_PURPOSE = "longrun.recovery"

_KEY_PREFIX = "longrun"


# --- rows: derive, save, log ---------------------------------------------------------------------


_DERIVED = ("next_check_at", "progress_due_at", "last_activity_at")


def _derive(task: LongTask, rules: Rules) -> None:
    """The stored deadlines and clocks, from the facts they depend on."""
    task.next_check_at = parse_next_check(task.next_check, anchor=task.updated_at, zone=rules.zone)
    task.progress_due_at = progress_deadline(task)
    task.last_activity_at = latest_activity(task)[1]


def _derived_values(task: LongTask, rules: Rules, fields: Iterable[str]) -> dict[str, Any]:
    """The values to write: `fields` and the deadlines derived from the task's facts."""
    _derive(task, rules)
    return {name: getattr(task, name) for name in sorted({*fields, *_DERIVED})}


def _save(task: LongTask, rules: Rules, fields: Iterable[str]) -> None:
    """Write `fields` and the derived deadlines of a task this transaction has locked."""
    values = _derived_values(task, rules, fields)
    if sql.update(LongTask, values, {"id": task.pk}) != 1:  # pragma: no cover - locked row
        raise RuntimeError(f"long task {task.pk} vanished under its row lock")


def _event_row(
    task: LongTask,
    kind: str,
    *,
    at: datetime,
    by: str,
    purpose: str = "",
    message_id: int | None = None,
    delivery_id: str = "",
    message_hash: str = "",
    error: str = "",
    note: str = "",
) -> dict[str, Any]:
    """The task-log row of one event (every column but the id)."""
    return {
        "task_id": task.pk,
        "kind": kind,
        "at": at,
        "by": by,
        "purpose": purpose,
        "message_id": message_id,
        "delivery_id": delivery_id,
        "message_hash": message_hash,
        "error": error,
        "note": note,
    }


def _log(task: LongTask, kind: str, **event: Any) -> TaskEvent:
    return sql.insert(TaskEvent, _event_row(task, kind, **event))


def _transition(task: LongTask, old: str, *, at: datetime, by: str, note: str) -> None:
    if old != task.state:
        Transition.objects.create(
            task=task, at=at, by=by, from_state=old, to_state=task.state, note=note
        )


# --- a task's messages: the idempotency key names the task ---------------------------------------


def _message_key(task: LongTask, kind: str, token: str) -> str:
    return f"{_KEY_PREFIX}:{task.pk}:{kind}:{token}"


def _task_id_of(idempotency_key: str) -> int | None:
    """The task a message belongs to, read from its key; None for anyone else's message."""
    parts = idempotency_key.split(":", 3)
    if len(parts) != 4 or parts[0] != _KEY_PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1])


def _already_queued(message_id: int) -> bool:
    """Whether the outbox gave back a message queued before (same key: same slot or episode)."""
    return TaskEvent.objects.filter(kind=TaskEvent.QUEUED, message_id=message_id).exists()


# --- the delivery bookkeeping (touch-progress, mark-*; §7.1, §8) ---------------------------------


def _apply_progress(
    task: LongTask,
    outcome: str,
    *,
    error: str,
    delivery_id: str,
    message_hash: str,
    at: datetime,
) -> list[str]:
    """Write one delivery outcome into the task's bookkeeping fields; the fields written.

    The original's effects (§7.1), except that none of them is task activity
    (D-B9): `updated_at` is the caller's to move.
    """
    if outcome in ("touch", "sent"):
        task.last_progress_at = task.last_progress_sent_at = at
        if outcome == "sent":
            task.last_progress_attempt_at = at
        task.last_progress_unknown_at = None
        task.last_progress_delivery_status = SENT
        task.last_progress_send_error = ""
    elif outcome == "attempt":
        task.last_progress_attempt_at = at
        if error:
            task.last_progress_send_error = error
    elif outcome == UNKNOWN:
        task.last_progress_attempt_at = task.last_progress_unknown_at = at
        task.last_progress_delivery_status = UNKNOWN
        task.last_progress_send_error = error or "delivery result unknown"
    else:
        task.last_progress_attempt_at = at
        task.last_progress_delivery_status = FAILED
        task.last_progress_send_error = error or "delivery failed"
    if delivery_id:
        task.last_progress_delivery_id = delivery_id
    if message_hash:
        task.last_progress_message_hash = message_hash
    return [
        "last_progress_at",
        "last_progress_sent_at",
        "last_progress_attempt_at",
        "last_progress_unknown_at",
        "last_progress_delivery_status",
        "last_progress_send_error",
        "last_progress_delivery_id",
        "last_progress_message_hash",
    ]


def _undelivered(outcome: str, error: str) -> bool:
    """A heartbeat that did not arrive: unknown, failed, or an attempt that reports an error."""
    return outcome in (UNKNOWN, FAILED) or (outcome == "attempt" and bool(error))


def _count_heartbeat(task: LongTask, outcome: str, error: str) -> None:
    """Count a heartbeat's outcome: a delivery clears the misses, a miss adds one."""
    if outcome in ("touch", "sent"):
        task.undelivered_heartbeats = 0
    elif _undelivered(outcome, error):
        task.undelivered_heartbeats += 1


def _too_many_misses(task: LongTask, rules: Rules) -> bool:
    """Whether the counted misses turn the task blocked (D-B12)."""
    return (
        task.undelivered_heartbeats >= rules.blocked_after_failures
        and task.state in ACTIVE_STATES
    )


def _block_if_too_many_misses(
    task: LongTask, outcome: str, logged_error: str, *, at: datetime, by: str, rules: Rules
) -> list[str]:
    """After _count_heartbeat: the task turns blocked after too many misses; the fields written.

    The failure times and reasons are the transition's note, so the task shows
    why it stopped. Runs under the task's row lock, before the event of this
    outcome (`logged_error` its error) is logged.
    """
    if not _too_many_misses(task, rules):
        return ["undelivered_heartbeats"]
    earlier = (
        task.events.filter(purpose=PROGRESS_PURPOSE)
        .filter(Q(kind__in=(UNKNOWN, FAILED)) | (Q(kind=TaskEvent.ATTEMPT) & ~Q(error="")))
        .order_by("-at", "-id")[: rules.blocked_after_failures - 1]
    )
    misses = [*reversed(list(earlier)), TaskEvent(kind=outcome, at=at, error=logged_error)]
    listed = "；".join(
        f"{reports.wire_time(miss.at, rules.zone)} {miss.error or miss.get_kind_display()}"
        for miss in misses
    )
    old_state = task.state
    task.state = BLOCKED
    task.updated_at = max(at, task.updated_at)
    SessionLock.objects.filter(task=task).delete()
    _transition(
        task,
        old_state,
        at=at,
        by=by,
        note=f"连续 {task.undelivered_heartbeats} 次进度未送达：{listed}",
    )
    return ["undelivered_heartbeats", "state", "updated_at"]
