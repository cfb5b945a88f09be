"""An agent's report on its task (§7.1, §8).

touch-progress, mark-progress-<outcome>, mark-visible-reply, mark-tool-result
and mark-resume: the service's most frequent writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from django.db import transaction

from longrun._rows import (
    PROGRESS_PURPOSE,
    _apply_progress,
    _block_if_too_many_misses,
    _count_heartbeat,
    _derived_values,
    _event_row,
    _log,
    _save,
    _too_many_misses,
)
from longrun.ladder import ladder_after_misses
from longrun.models import SHA256_LENGTH, LongTask, TaskEvent
from longrun.policies import reports
from longrun.policies.answers import EXIT_OK, Answer
from longrun.policies.facts import Rules
from longrun.policies.states import FAILED, SENT, UNKNOWN
from longrun.policies.timing import whole_second
from longrun.selectors import longrun_rules
from longrun.services._common import (
    _LIVE_NAMED,
    _invalid,
    _key,
    _locked,
    _name,
    _own,
    _resumed,
    _text,
)
from xworkmate import sql

# The bookkeeping subcommands: touch-progress and mark-progress-attempt / -sent /
# -unknown / -failed.
ProgressOutcome = Literal["touch", "attempt", "sent", "unknown", "failed"]
_PROGRESS_OUTCOMES = ("touch", "attempt", "sent", "unknown", "failed")
# mark-visible-reply and mark-tool-result.
ActivitySignal = Literal["visible_reply", "tool_result"]
_ACTIVITY_SIGNALS = ("visible_reply", "tool_result")


# --- an agent's report on its task ---------------------------------------------------------------


class _NeedsLock(Exception):
    """The report changes more than its task's row and one task-log event."""


# What a report does to its task, in memory: the fields it wrote and its task-log
# event (_log's arguments). With `locked` false it may raise _NeedsLock.
_Change = Callable[[LongTask, bool], tuple[list[str], dict[str, Any]]]
_OPTIMISTIC_TRIES = 3


def _report(
    name: str, confined_to: str | None, rules: Rules, change: _Change
) -> LongTask:
    """Apply one of the agent's reports to its live task; the task as written.

    The reports are the service's most frequent writes (every heartbeat of
    every task). On PostgreSQL the task is read without a lock and written,
    with its task-log event, in one statement that holds only if the row is
    still the version read (D-B25): two round trips instead of BEGIN, a locking
    read, two writes and COMMIT. A report that needs more than that (_NeedsLock),
    another database, or a row that keeps changing under it takes the row lock.
    """
    if sql.has_row_versions():
        for _ in range(_OPTIMISTIC_TRIES):
            found = sql.select_versioned(LongTask, _LIVE_NAMED, [name])
            task, version = found if found is not None else (None, "")
            if task is None or not _own(task, confined_to):
                raise reports.task_not_found(name)
            try:
                fields, event = change(task, False)
            except _NeedsLock:
                break
            if sql.update_versioned_with_insert(
                LongTask,
                task.pk,
                version,
                _derived_values(task, rules, fields),
                TaskEvent,
                _event_row(task, **event),
            ):
                return task
    with transaction.atomic():
        locked = _locked(name, confined_to)
        if locked is None:
            raise reports.task_not_found(name)
        fields, event = change(locked, True)
        _log(locked, **event)
        _save(locked, rules, fields)
    return locked


def task_progress_record(
    *,
    name: str,
    outcome: ProgressOutcome,
    error: str = "",
    note: str = "",
    delivery_id: str = "",
    message_hash: str = "",
    confined_to: str | None = None,
    by: str,
    now: datetime,
) -> Answer:
    """The agent reports a progress delivery: touch-progress or mark-progress-<outcome>.

    `touch` and `sent` are the agent's own visible progress and move
    `updated_at`; an attempt, an unknown outcome or a failure does not (D-B9).
    `note` goes to the task log, not to the task's next step (D-B8).
    """
    now = whole_second(now)
    if outcome not in _PROGRESS_OUTCOMES:
        raise _invalid("outcome", f"must be one of {', '.join(_PROGRESS_OUTCOMES)}")
    name = _name(name)
    error, note = _text("error", error), _text("note", note)
    delivery_id = _key("delivery_id", delivery_id, required=False)
    message_hash = _key("message_hash", message_hash, required=False)
    if len(message_hash) > SHA256_LENGTH:
        raise _invalid("message_hash", f"must be at most {SHA256_LENGTH} characters")
    rules = longrun_rules()

    def change(task: LongTask, locked: bool) -> tuple[list[str], dict[str, Any]]:
        fields = _apply_progress(
            task,
            outcome,
            error=error,
            delivery_id=delivery_id,
            message_hash=message_hash,
            at=now,
        )
        if outcome in ("touch", "sent"):
            task.updated_at = max(now, task.updated_at)
            fields.append("updated_at")
        logged_error = task.last_progress_send_error if outcome in (UNKNOWN, FAILED) else error
        _count_heartbeat(task, outcome, error)
        if _too_many_misses(task, rules) and not locked:
            raise _NeedsLock
        fields += _block_if_too_many_misses(
            task, outcome, logged_error, at=now, by=by, rules=rules
        )
        ladder_after_misses(task, fields, at=now, by=by)  # D-B30: a person may be told
        return fields, {
            "kind": SENT if outcome == "touch" else outcome,
            "at": now,
            "by": by,
            "purpose": PROGRESS_PURPOSE,
            "delivery_id": delivery_id,
            "message_hash": message_hash,
            "error": logged_error,
            "note": note,
        }

    task = _report(name, confined_to, rules, change)
    return Answer(EXIT_OK, reports.task_record(task, rules.zone))


def task_activity_record(
    *,
    name: str,
    signal: ActivitySignal,
    note: str = "",
    confined_to: str | None = None,
    by: str,
    now: datetime,
) -> Answer:
    """mark-visible-reply / mark-tool-result: the agent is active; the keepalive's clocks move."""
    now = whole_second(now)
    if signal not in _ACTIVITY_SIGNALS:
        raise _invalid("signal", f"must be one of {', '.join(_ACTIVITY_SIGNALS)}")
    name, note = _name(name), _text("note", note)
    rules = longrun_rules()

    def change(task: LongTask, locked: bool) -> tuple[list[str], dict[str, Any]]:
        field = f"last_{signal}_at"
        setattr(task, field, now)
        task.updated_at = max(now, task.updated_at)
        return [field, "updated_at"], {"kind": signal, "at": now, "by": by, "note": note}

    task = _report(name, confined_to, rules, change)
    return Answer(EXIT_OK, reports.task_record(task, rules.zone))


def task_resume_record(
    *,
    name: str,
    reason: str = "",
    note: str = "",
    confined_to: str | None = None,
    by: str,
    now: datetime,
) -> Answer:
    """mark-resume: the task was resumed (`reason` defaults to `manual`)."""
    now = whole_second(now)
    name, note = _name(name), _text("note", note)
    reason = _key("reason", reason, required=False)
    if len(reason) > 64:
        raise _invalid("reason", "must be at most 64 characters")
    rules = longrun_rules()

    def change(task: LongTask, locked: bool) -> tuple[list[str], dict[str, Any]]:
        _resumed(task, reason or "manual", at=now)
        task.updated_at = max(now, task.updated_at)
        fields = ["last_resume_at", "last_resume_reason", "last_resume_count", "updated_at"]
        return fields, {"kind": TaskEvent.RESUME, "at": now, "by": by, "note": note}

    task = _report(name, confined_to, rules, change)
    return Answer(EXIT_OK, reports.task_record(task, rules.zone))
