"""The write path of long-run mode: every state change of a long task, its locks and its log.

Each function is one operation of the original scripts (task_state.py's
subcommands, run_keepalive_once, run_watchdog_once, cleanup_state) or one of
the monitors Celery beat calls, and answers the original's output and exit
code (`Answer`, D-B18) or raises `LongrunError` having written nothing: every
input is checked before the first write, and each operation is one
transaction.

Messages go out only through the outbox, in the transaction of the change
that causes them, and count as sent only when the channel confirms it
(D-B10): the outcome handlers at the end of this module, registered in
LongrunConfig.ready(), write the task's bookkeeping from the channel's real
answer. A message is linked to its task by its idempotency key
(`longrun:<task id>:<kind>:<token>`), so the handlers know a task's message
without a query and pass over any other at no cost.

The monitors find their work through the deadline indexes (longrun.models),
claim each task with SELECT … FOR UPDATE SKIP LOCKED, decide again inside the
claim with the pure rules (a duplicate tick, or another worker, finds nothing
left to do), and handle each task in a transaction of its own, so one task
that fails is an error item of the run and the others go on (D-B5).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from django.db import IntegrityError, transaction
from django.db.models import Q

from longrun.models import (
    DURATION_MAX_LENGTH,
    LABEL_MAX_LENGTH,
    LIVE,
    NAME_MAX_LENGTH,
    SHA256_LENGTH,
    TEXT_MAX_LENGTH,
    LongTask,
    SessionLock,
    TaskEvent,
    Transition,
)
from longrun.policies import reports
from longrun.policies.answers import (
    EXIT_ACTION,
    EXIT_INVALID,
    EXIT_LOCKED,
    EXIT_NO_KEY,
    EXIT_OK,
    Answer,
    LongrunError,
)
from longrun.policies.cleanup import CleanupTask, cleanup_plan
from longrun.policies.facts import Rules
from longrun.policies.messages import (
    KEEPALIVE_PLANNED_NOTE,
    KEEPALIVE_RESUMED_NOTE,
    KEEPALIVE_RUN_NOTE,
    RESUME_DISABLED_NOTE,
    RESUME_QUEUED_NOTE,
    resume_message,
)
from longrun.policies.statefile import TaskRecord, plan_locks, read_state
from longrun.policies.states import (
    ACTIVE_STATES,
    BLOCKED,
    CAPPED_STATES,
    DONE,
    FAILED,
    FINISHED_STATES,
    PROGRESS_STATES,
    SENT,
    STATES,
    UNKNOWN,
    joins_session_cap,
)
from longrun.policies.timing import (
    PROGRESS,
    RECOVERY,
    Verdict,
    idle_for_seconds,
    idle_limit,
    idle_timed_out,
    latest_activity,
    parse_next_check,
    parse_progress_every,
    progress_deadline,
    progress_slot,
    recently_unknown,
    stale_limit,
    watchdog_verdict,
    whole_second,
)
from longrun.selectors import live_tasks, lock_table, longrun_rules
from xworkmate import sql
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.lib.durations import format_duration
from xworkmate.lib.wire import KEY_MAX_LENGTH, js_trim

logger = logging.getLogger(__name__)

__all__ = [
    "PROGRESS_PURPOSE",
    "RECOVERY_PURPOSE",
    "RESUME_PURPOSE",
    "ActivitySignal",
    "ProgressOutcome",
    "heartbeat_run_once",
    "keepalive_run_once",
    "lock_acquire",
    "lock_release",
    "progress_answer_record",
    "recovery_answer_record",
    "resume_answer_record",
    "task_activity_record",
    "task_clear",
    "task_progress_record",
    "task_resume_record",
    "task_set",
    "task_state_mark",
    "tasks_cleanup",
    "tasks_clear_all",
    "tasks_import",
    "watchdog_run_once",
]

PROGRESS_PURPOSE = "longrun.progress"
RESUME_PURPOSE = "longrun.resume"
RECOVERY_PURPOSE = "longrun.recovery"

# The bookkeeping subcommands: touch-progress and mark-progress-attempt / -sent /
# -unknown / -failed.
ProgressOutcome = Literal["touch", "attempt", "sent", "unknown", "failed"]
_PROGRESS_OUTCOMES = ("touch", "attempt", "sent", "unknown", "failed")
# mark-visible-reply and mark-tool-result.
ActivitySignal = Literal["visible_reply", "tool_result"]
_ACTIVITY_SIGNALS = ("visible_reply", "tool_result")

_KEY_PREFIX = "longrun"
# Who the log names when the service itself acted.
_BY_DELIVERY = "delivery"


# --- input checks: all before the first write ----------------------------------------------------


def _invalid(field: str, rule: str) -> LongrunError:
    return LongrunError(
        exit_code=EXIT_INVALID, body=f"invalid {field}: {rule}", field=field, rule=rule
    )


def _text(field: str, value: object, limit: int = TEXT_MAX_LENGTH) -> str:
    """A free-text value as given; empty is fine (D-B3)."""
    if not isinstance(value, str):
        raise _invalid(field, "must be a string")
    if len(value) > limit:
        raise _invalid(field, f"must be at most {limit} characters")
    # Neither PostgreSQL text nor UTF-8 can hold these.
    if "\0" in value or any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        raise _invalid(field, "must not contain a NUL character or a lone surrogate")
    return value


def _key(field: str, value: object, *, required: bool) -> str:
    """A name or session key, trimmed as the bridge trims (D-K7)."""
    text = js_trim(_text(field, value, limit=KEY_MAX_LENGTH))
    if required and not text:
        raise _invalid(field, "required, must not be blank")
    return text


def _name(value: object) -> str:
    name = _key("task", value, required=True)
    if len(name) > NAME_MAX_LENGTH:
        raise _invalid("task", f"must be at most {NAME_MAX_LENGTH} characters")
    return name


def _state(value: object) -> str:
    if value not in STATES:
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body=f"invalid state: {value}",
            field="state",
            rule=f"must be one of {', '.join(STATES)}",
        )
    return str(value)


def _lock_conflict(key: str, holder: str, requested: str, *, with_ok: bool) -> LongrunError:
    body: dict[str, Any] = {"ok": False} if with_ok else {}
    body |= {
        "error": "session lock exists",
        "origin_session_key": key,
        "current_task": holder,
        "requested_task": requested,
    }
    return LongrunError(
        exit_code=EXIT_LOCKED,
        body=body,
        field="origin_session_key",
        rule=f"one long task per session: {holder!r} holds this session's lock",
    )


# --- rows: lock, derive, save, log ---------------------------------------------------------------


def _locked(name: str, confined_to: str | None = None) -> LongTask | None:
    """The live task `name`, its row locked; None when absent or another session's.

    `confined_to` is an agent's session: a task bound to any other key is not
    its own, so it is not found, whoever holds it.
    """
    # Hand-written SQL (xworkmate.sql): every report of the agent starts here.
    task = sql.select_locked(LongTask, _LIVE_NAMED, [name])
    return task if task is not None and _own(task, confined_to) else None


# The live task of a name, as SQL over the alias `t` (LIVE, by hand).
_LIVE_NAMED = "t.name = %s AND t.archived_at IS NULL"


def _own(task: LongTask, confined_to: str | None) -> bool:
    """Whether an agent confined to a session (or anyone else, None) may act on `task`."""
    return confined_to is None or task.origin_session_key == confined_to


def _claimed(pk: int) -> LongTask | None:
    """The live task `pk` if no other worker holds it; None otherwise (it is theirs)."""
    return LongTask.objects.select_for_update(skip_locked=True).filter(LIVE, pk=pk).first()


def _session_lock(key: str) -> SessionLock | None:
    """The lock of `key`, its row locked for this transaction (not its task's).

    Every writer locks a task's row before a lock's row, so two writers never
    wait for each other in opposite orders.
    """
    return (
        SessionLock.objects.select_for_update(of=("self",))
        .select_related("task")
        .filter(origin_session_key=key)
        .first()
    )


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


# --- task_state.py set (§7.1, §4.4) --------------------------------------------------------------


def task_set(
    *,
    name: str,
    session: str,
    state: str,
    goal: str,
    done_when: str,
    blocked_when: str,
    boundary: str,
    next_check: str,
    note: str,
    origin_session_key: str = "",
    progress_every: str = "",
    force_lock: bool = False,
    reopen: bool = False,
    confined_to: str | None = None,
    by: str,
    now: datetime,
) -> Answer:
    """Create or update the task `name` (§4.3) and hold or release its session's lock (§4.4).

    Checks in the original's order: the state (exit 2), the session key an
    active state needs (given or kept from before; exit 4), the lock (exit 3,
    unless `force_lock` takes it over). Leaving `done` needs `reopen` (D-B17);
    a `progress_every` that is not a duration is refused (D-B3). A key change
    moves the task's lock in the same transaction (D-B11); every state change
    is logged (D-B17). A caller `confined_to` a session finds another
    session's task of that name not found (exit 1): names are one namespace,
    so it must choose another.
    """
    now = whole_second(now)
    rules = longrun_rules()
    checked = {
        "name": _name(name),
        "state": _state(state),
        "session_label": _text("session", session, LABEL_MAX_LENGTH),
        "goal": _text("goal", goal),
        "done_when": _text("done_when", done_when),
        "blocked_when": _text("blocked_when", blocked_when),
        "boundary": _text("boundary", boundary),
        "next_check": _text("next_check", next_check).strip(),
        "note": _text("note", note),
    }
    key = _key("origin_session_key", origin_session_key, required=False)
    every = js_trim(_text("progress_every", progress_every, 32))
    every_seconds = int(parse_progress_every(every).total_seconds()) if every else None
    # A concurrent first `set` of the same name may win the insert; the second
    # attempt then finds its row and updates it.
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                task = _set(
                    checked,
                    key,
                    every,
                    every_seconds,
                    force_lock,
                    reopen,
                    confined_to,
                    by,
                    now,
                    rules,
                )
            break
        except IntegrityError:
            if attempt == 2:
                raise
    return Answer(EXIT_OK, reports.task_record(task, rules.zone))


def _set(
    checked: dict[str, str],
    key: str,
    every: str,
    every_seconds: int | None,
    force_lock: bool,
    reopen: bool,
    confined_to: str | None,
    by: str,
    now: datetime,
    rules: Rules,
) -> LongTask:
    name, state = checked["name"], checked["state"]
    task = _locked(name)
    if task is not None and confined_to is not None and task.origin_session_key != confined_to:
        # Checked on the locked row: a first `set` of the name by another session
        # that won the insert is found here on the retry, never taken over.
        raise reports.task_not_found(name)
    if task is not None and task.state == DONE and state != DONE and not reopen:
        raise _reopen_required(name, state)
    key = key or (task.origin_session_key if task is not None else "")
    if state in ACTIVE_STATES and not key:
        raise LongrunError(
            exit_code=EXIT_NO_KEY,
            body={
                "error": "missing origin_session_key",
                "task": name,
                "state": state,
                "message": "long-run start/update requires a real origin_session_key; "
                "state registration alone does not mean the task started in the target session",
            },
            field="origin_session_key",
            rule=f"required for the state {state}",
        )
    lock = None
    if state in ACTIVE_STATES:
        lock = _session_lock(key)
        if lock is not None and lock.task.name != name and not force_lock:
            raise _lock_conflict(key, lock.task.name, name, with_ok=False)
    before = (task.origin_session_key, task.state) if task is not None else None
    if joins_session_cap(before, key, state):
        _check_session_cap(key, name, rules.max_live_tasks)
    old_state = task.state if task is not None else ""
    if task is None:
        default_every = format_duration(rules.progress_every)  # D-B2
        task = LongTask(
            **checked,
            origin_session_key=key,
            progress_every=every or default_every,
            progress_every_seconds=every_seconds or int(rules.progress_every.total_seconds()),
            last_progress_at=now,
            created_at=now,
            updated_at=now,
        )
        _derive(task, rules)
        with transaction.atomic():
            task.save(force_insert=True)
    else:
        for field, value in checked.items():
            setattr(task, field, value)
        task.origin_session_key = key
        if every_seconds is not None:
            task.progress_every, task.progress_every_seconds = every, every_seconds
        if old_state != state:
            # A new phase starts counting undelivered heartbeats afresh (D-B12).
            task.undelivered_heartbeats = 0
        task.updated_at = max(now, task.created_at)
        _save(
            task,
            rules,
            [
                *checked,
                "origin_session_key",
                "progress_every",
                "progress_every_seconds",
                "undelivered_heartbeats",
                "updated_at",
            ],
        )
    _transition(task, old_state, at=now, by=by, note=task.note)
    if state in ACTIVE_STATES:
        _hold_lock(task, key, lock, now)
    else:
        SessionLock.objects.filter(task=task).delete()
    return task


def _check_session_cap(key: str, name: str, cap: int) -> None:
    """Refuse one more task not done in `key`'s session past the cap (D-B26).

    The count and the write that follows must be one decision: two
    registrations that each counted cap - 1 would both pass. A lock on the
    session key's name, held until the transaction ends, makes the next one
    count after this one committed (no row can be locked for a task that does
    not exist yet; on SQLite the transaction holds the database anyway).
    """
    sql.lock_name(f"longrun:session-cap:{key}")
    live = LongTask.objects.filter(LIVE, origin_session_key=key, state__in=CAPPED_STATES).count()
    if live >= cap:
        raise LongrunError(
            exit_code=EXIT_INVALID,
            body={
                "error": "too many live tasks",
                "origin_session_key": key,
                "requested_task": name,
                "live_tasks": live,
                "max_live_tasks": cap,
                "message": f"origin_session_key: a session has at most {cap} long tasks that "
                "are not done (longrun.max_live_tasks_per_session); set one done before "
                "registering another",
            },
            field="origin_session_key",
            rule=f"at most {cap} tasks not done per session (longrun.max_live_tasks_per_session)",
        )


def _reopen_required(name: str, state: str) -> LongrunError:
    return LongrunError(
        exit_code=EXIT_INVALID,
        body={
            "error": "reopen required",
            "task": name,
            "state": DONE,
            "requested_state": state,
            "message": f"task is done; pass --reopen to set it to {state}",
        },
        field="state",
        rule="leaving done needs reopen",
    )


def task_state_mark(*, name: str, state: str, note: str, by: str, now: datetime) -> Answer:
    """A person ends a task's run from the admin: blocked, handoff or done, saying why.

    Only the state changes, and the session's lock is released as `set` releases
    it; the task's next step stays the agent's, the person's note is the
    transition's (D-B17). Leaving `done` is `set --reopen`'s, not this.
    """
    now = whole_second(now)
    name, state = _name(name), _state(state)
    if state not in FINISHED_STATES:
        raise _invalid("state", f"must be one of {', '.join(FINISHED_STATES)}")
    note = _text("note", note)
    if not note.strip():
        raise _invalid("note", "required: say why")
    rules = longrun_rules()
    with transaction.atomic():
        task = _locked(name)
        if task is None:
            raise reports.task_not_found(name)
        if task.state == DONE and state != DONE:
            raise _reopen_required(name, state)
        if task.state != state:
            old_state, task.state = task.state, state
            task.undelivered_heartbeats = 0
            task.updated_at = max(now, task.updated_at)
            _save(task, rules, ["state", "undelivered_heartbeats", "updated_at"])
            _transition(task, old_state, at=now, by=by, note=note)
            SessionLock.objects.filter(task=task).delete()
    return Answer(EXIT_OK, reports.task_record(task, rules.zone))


def _hold_lock(task: LongTask, key: str, lock: SessionLock | None, now: datetime) -> None:
    """`task` holds `key`'s lock, and no other: its lock moves with its key (D-B11)."""
    SessionLock.objects.filter(task=task).exclude(origin_session_key=key).delete()
    _take_lock(task, key, lock, now, with_ok=False)


def _take_lock(
    task: LongTask, key: str, lock: SessionLock | None, now: datetime, *, with_ok: bool
) -> None:
    """Give `key`'s lock (`lock`, None when free) to `task`."""
    if lock is None:
        try:
            with transaction.atomic():
                SessionLock.objects.create(origin_session_key=key, task=task, acquired_at=now)
        except IntegrityError:
            # Another task took the free key between the check and this insert.
            holder = SessionLock.objects.filter(origin_session_key=key).values_list(
                "task__name", flat=True
            )
            raise _lock_conflict(key, holder.first() or "", task.name, with_ok=with_ok) from None
    elif lock.task_id != task.pk:
        lock.task = task
        lock.acquired_at = now
        lock.save(update_fields=["task", "acquired_at"])


# --- touch-progress, mark-* (§7.1, §8) -----------------------------------------------------------


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


def _resumed(task: LongTask, reason: str, *, at: datetime) -> None:
    task.last_resume_at = at
    task.last_resume_reason = reason
    task.last_resume_count += 1


# --- locks and clear (§7.1) ----------------------------------------------------------------------


def lock_acquire(
    *,
    session_key: str,
    name: str,
    force: bool = False,
    confined_to: str | None = None,
    now: datetime,
) -> Answer:
    """acquire-lock: `name` holds `session_key`'s lock (taken over only with `force`)."""
    now = whole_second(now)
    key = _key("session", session_key, required=True)
    name = _name(name)
    with transaction.atomic():
        task = _locked(name, confined_to)
        lock = _session_lock(key)
        if lock is not None and lock.task.name != name and not force:
            raise _lock_conflict(key, lock.task.name, name, with_ok=True)
        if task is None:
            # A lock always names a task of the store (the original could name any string).
            raise reports.task_not_found(name)
        _take_lock(task, key, lock, now, with_ok=True)
    return Answer(EXIT_OK, {"ok": True, "origin_session_key": key, "task": name})


def lock_release(*, session_key: str, name: str = "") -> Answer:
    """release-lock: free `session_key`, only if `name` holds it when a name is given."""
    key = _key("session", session_key, required=True)
    name = _key("task", name, required=False)
    with transaction.atomic():
        lock = _session_lock(key)
        if lock is None or (name and lock.task.name != name):
            return Answer(
                EXIT_ACTION, {"ok": False, "origin_session_key": key, "task": name or None}
            )
        holder = lock.task.name
        lock.delete()
    return Answer(EXIT_OK, {"ok": True, "origin_session_key": key, "task": holder})


def task_clear(*, name: str, confined_to: str | None = None) -> Answer:
    """clear --task: forget the task, its locks and its logs."""
    name = _name(name)
    with transaction.atomic():
        task = _locked(name, confined_to)
        if task is None:
            raise reports.task_not_found(name)
        task.delete()
    logger.info("long task %r cleared", name)
    return Answer(EXIT_OK, f"cleared: {name}")


def tasks_clear_all() -> Answer:
    """clear without a task: an empty store. Archived tasks stay archived."""
    with transaction.atomic():
        count, _ = LongTask.objects.filter(LIVE).delete()
    logger.info("all live long tasks cleared (%d rows with their locks and logs)", count)
    return Answer(EXIT_OK, "cleared all tasks")


# --- the heartbeat monitor (§7.7, §7.8) ----------------------------------------------------------


def _heartbeat(
    task: LongTask,
    *,
    now: datetime,
    stale: timedelta,
    cooldown: timedelta,
    by: str,
) -> tuple[str, dict[str, Any] | None]:
    """Queue the task's heartbeat if it is due: (status, event with its outbox id).

    Statuses: `queued`; `already_queued` (this slot's heartbeat went out before:
    the slot's idempotency key gives the same message back); `in_flight`
    (an earlier heartbeat still waits for its final answer: one at a time,
    D-B20); `skipped_unknown` (this very heartbeat had an unknown outcome
    within the cooldown); `not_due`.
    """
    verdict = watchdog_verdict(task, now, stale)
    if verdict.kind != PROGRESS:
        return "not_due", None
    if task.heartbeat_message_id is not None:
        return "in_flight", None
    if not task.origin_session_key:
        raise reports.missing_key_error(task.name)
    event = reports.foreground_event(
        task, reason=verdict.reason, slot=progress_slot(now, task.progress_every_seconds)
    )
    if recently_unknown(task, event.message_hash, now, cooldown):
        return "skipped_unknown", event.skipped()
    message = outbox_enqueue(
        purpose=PROGRESS_PURPOSE,
        target=task.origin_session_key,
        body=event.message,
        idempotency_key=_message_key(task, "fg", event.message_hash),
        now=now,
    )
    body = event.body | {"message_id": message.pk}
    if _already_queued(message.pk):
        return "already_queued", body
    _log(
        task,
        TaskEvent.QUEUED,
        at=now,
        by=by,
        purpose=PROGRESS_PURPOSE,
        message_id=message.pk,
        delivery_id=event.delivery_id,
        message_hash=event.message_hash,
    )
    task.heartbeat_message_id = message.pk
    task.save(update_fields=["heartbeat_message_id"])
    return "queued", body


def _run_each(
    candidates: Iterable[tuple[int, str]],
    errors: list[dict[str, str]],
    handle: Callable[[LongTask], None],
) -> None:
    """Claim each candidate in a transaction of its own and hand it to `handle` (D-B5).

    A task another worker holds is theirs (skipped); a task that fails becomes
    an error item of the run, and the run goes on.
    """
    for pk, name in candidates:
        try:
            with transaction.atomic():
                task = _claimed(pk)
                if task is not None:
                    handle(task)
        except LongrunError as exc:
            errors.append(reports.error_item(name, exc.text))
        except Exception as exc:
            logger.exception("long task %r: the run could not handle it", name)
            errors.append(reports.error_item(name, f"{type(exc).__name__}: {exc}"))


def heartbeat_run_once(
    *,
    now: datetime,
    stale: timedelta | None = None,
    unknown_cooldown: timedelta | None = None,
    by: str = "heartbeat",
) -> Answer:
    """Queue the heartbeat of every task that owes visible progress (the monitor).

    emit_foreground_due and its dispatcher, with the outbox doing the send:
    the events are the original's (the slot's hash and delivery id), a task
    that needs recovery gets none, and what the channel answers is recorded
    by `progress_answer_record`.
    """
    now = whole_second(now)
    rules = longrun_rules()
    stale = stale or rules.stale
    cooldown = unknown_cooldown or rules.unknown_cooldown
    candidates = (
        live_tasks()
        .filter(progress_due_at__lte=now, heartbeat_message_id__isnull=True)
        .order_by("progress_due_at", "id")
        .values_list("pk", "name")
    )
    events: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []

    def handle(task: LongTask) -> None:
        status, body = _heartbeat(task, now=now, stale=stale, cooldown=cooldown, by=by)
        if status == "queued" and body is not None:
            events.append(body)
        elif status == "skipped_unknown" and body is not None:
            skipped.append(body)

    _run_each(list(candidates), errors, handle)
    body: dict[str, Any] = {
        "event_count": len(events),
        "events": events,
        "skipped_unknown_count": len(skipped),
        "skipped_unknown": skipped,
    }
    if errors:
        body["errors"] = errors
    return Answer(EXIT_ACTION if events or errors else EXIT_OK, body)


# --- keepalive (§7.9) ----------------------------------------------------------------------------


def _resume(task: LongTask, *, now: datetime, rules: Rules, by: str) -> dict[str, Any]:
    """Plan (or, with auto_resume, queue) the resume of an idle task: its dispatch."""
    if not task.origin_session_key:
        raise LongrunError(
            exit_code=EXIT_NO_KEY,
            body="missing origin_session_key; cannot emit portable keepalive event",
            field="origin_session_key",
            rule="a resume goes to the task's real session key",
        )
    source, latest = latest_activity(task)
    idle_for = idle_for_seconds(task, now)
    text = resume_message(task, idle_for=idle_for, source=source)
    dispatch: dict[str, Any] = {
        "tool": "openclaw_agent_resume",
        "sessionKey": task.origin_session_key,
        "origin_session_key": task.origin_session_key,
        # Resolved by the delivery channel when it sends, never guessed (D-B13).
        "sessionId": None,
        "resolvedFrom": None,
        "resolveMode": "not-resolved",
        "message": text,
        "task": task.name,
        "reason": "idle_timeout",
        "idle_for_seconds": idle_for,
        "last_activity_source": source,
    }
    message_id = None
    if rules.auto_resume:
        message = outbox_enqueue(
            purpose=RESUME_PURPOSE,
            target=task.origin_session_key,
            body=text,
            idempotency_key=_message_key(task, "ka", str(int(latest.timestamp()))),
            now=now,
        )
        dispatch["message_id"] = message.pk
        if _already_queued(message.pk):
            dispatch |= {"status": "already_queued", "message": message.body}
            return dispatch
        dispatch |= {"status": "queued", "note": RESUME_QUEUED_NOTE}
        message_id = message.pk
    else:
        dispatch |= {"status": "planned", "note": RESUME_DISABLED_NOTE}
    message_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    fields = _apply_progress(
        task, "attempt", error="", delivery_id="", message_hash=message_hash, at=now
    )
    _log(
        task,
        TaskEvent.ATTEMPT,
        at=now,
        by=by,
        purpose=RESUME_PURPOSE,
        message_hash=message_hash,
        note=KEEPALIVE_PLANNED_NOTE,
    )
    if message_id is not None:
        _log(
            task,
            TaskEvent.QUEUED,
            at=now,
            by=by,
            purpose=RESUME_PURPOSE,
            message_id=message_id,
            message_hash=message_hash,
        )
    _save(task, rules, fields)
    return dispatch


def keepalive_run_once(
    *, now: datetime, idle: timedelta | None = None, by: str = "keepalive"
) -> Answer:
    """run_keepalive_once: plan a resume for every idle analyzing or executing task.

    With `longrun.auto_resume` off (the default) each resume is only planned
    ("默认只生成计划"); on, it is queued in the outbox (`longrun.resume`),
    once per idle spell (D-B20), and counts as a resume only when the channel
    confirms it (D-B10, `resume_answer_record`). The attempt is recorded as
    the original recorded it, without moving the task's clocks (D-B9) or its
    next step (D-B8).
    """
    now = whole_second(now)
    rules = longrun_rules()
    idle = idle or rules.idle
    progressing = live_tasks().filter(state__in=PROGRESS_STATES)
    scanned = progressing.count()
    candidates = (
        progressing.filter(last_activity_at__lte=idle_limit(now, idle))
        .order_by("last_activity_at", "id")
        .values_list("pk", "name")
    )
    dispatches: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []

    def handle(task: LongTask) -> None:
        if idle_timed_out(task, now, idle):
            dispatches.append(_resume(task, now=now, rules=rules, by=by))

    _run_each(list(candidates), errors, handle)
    body: dict[str, Any] = {
        "scanned_active_tasks": scanned,
        "dispatch_count": len(dispatches),
        "resumed_count": sum(1 for d in dispatches if d.get("status") == "queued"),
        "failed_count": len(errors),
        "dispatches": dispatches,
        "note": KEEPALIVE_RUN_NOTE,
    }
    if errors:
        body["errors"] = errors
    return Answer(EXIT_ACTION if errors else EXIT_OK, body)


# --- watchdog (§7.10) ----------------------------------------------------------------------------


def _recovery_token(task: LongTask, reason: str, now: datetime, stale: timedelta) -> str:
    """One recovery message per task, reason and stale window (D-B20)."""
    window = int(now.timestamp()) // max(1, int(stale.total_seconds()))
    raw = json.dumps(
        {
            "task": task.name,
            "state": task.state,
            "sessionKey": task.origin_session_key,
            "reason": reason,
            "window": window,
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _recover(
    task: LongTask, verdict: Verdict, *, now: datetime, stale: timedelta, rules: Rules, by: str
) -> dict[str, Any]:
    """Queue an overdue task's recovery message, or its heartbeat: its payload."""
    if not task.origin_session_key:
        raise reports.missing_key_error(task.name)
    item = reports.recovery_item(task, verdict, rules.zone)
    payload = reports.watchdog_payload(task, item)
    if verdict.kind == PROGRESS:
        status, event = _heartbeat(
            task, now=now, stale=stale, cooldown=rules.unknown_cooldown, by=by
        )
        payload["status"] = status
        if event is not None and "message_id" in event:
            payload |= {"message": event["message"], "message_id": event["message_id"]}
        return payload
    message = outbox_enqueue(
        purpose=RECOVERY_PURPOSE,
        target=task.origin_session_key,
        body=payload["message"],
        idempotency_key=_message_key(task, "rc", _recovery_token(task, verdict.reason, now, stale)),
        now=now,
    )
    payload["message_id"] = message.pk
    if _already_queued(message.pk):
        payload["status"] = "already_queued"
        return payload
    payload["status"] = "queued"
    _log(task, TaskEvent.QUEUED, at=now, by=by, purpose=RECOVERY_PURPOSE, message_id=message.pk)
    return payload


def watchdog_run_once(
    *, now: datetime, stale: timedelta | None = None, by: str = "watchdog"
) -> Answer:
    """run_watchdog_once: send each overdue task its recovery message (the monitor).

    A task past its checkpoint or stale gets its recovery suggestion through
    the outbox (`longrun.recovery`), once per stale window; a task that owes
    progress gets its heartbeat, the very one the heartbeat monitor would
    queue (one message per slot whichever runs first). Each payload is the
    original's, with the outbox message it became and its status.
    """
    now = whole_second(now)
    rules = longrun_rules()
    stale = stale or rules.stale
    # One indexed range scan per deadline rather than one OR the planner may
    # answer with a scan of every active task.
    active = live_tasks().filter(state__in=ACTIVE_STATES)
    candidates: dict[int, str] = {}
    for deadline in (
        Q(next_check_at__lte=now),
        Q(updated_at__lte=stale_limit(now, stale)),
        Q(progress_due_at__lte=now),
    ):
        candidates.update(active.filter(deadline).values_list("pk", "name"))
    payloads: list[dict[str, Any]] = []
    counts = {RECOVERY: 0, PROGRESS: 0}
    errors: list[dict[str, str]] = []

    def handle(task: LongTask) -> None:
        verdict = watchdog_verdict(task, now, stale)
        if verdict.kind in counts:
            payloads.append(_recover(task, verdict, now=now, stale=stale, rules=rules, by=by))
            counts[verdict.kind] += 1

    _run_each(sorted(candidates.items()), errors, handle)
    body: dict[str, Any] = {
        "due_count": counts[RECOVERY],
        "progress_count": counts[PROGRESS],
        "tool": "sessions_send",
        "payloads": payloads,
    }
    if errors:
        body["errors"] = errors
    return Answer(EXIT_ACTION if payloads or errors else EXIT_OK, body)


# --- cleanup (§7.11, D-B16) ----------------------------------------------------------------------


def tasks_cleanup(
    *,
    now: datetime,
    apply: bool = False,
    drop_tasks: Iterable[str] = (),
    drop_test_prefixes: Iterable[str] = (),
) -> Answer:
    """cleanup_state: drop test and broken tasks, archive old finished ones, repair locks.

    Without `apply` it only reports (the original's dry run); with it, the
    report is what was done. Always exit 0.
    """
    now = whole_second(now)
    rules = longrun_rules()
    names = [_name(name) for name in drop_tasks]
    prefixes = [_key("drop_test_prefix", prefix, required=True) for prefix in drop_test_prefixes]
    with transaction.atomic():
        rows = live_tasks()
        tasks = list(rows.select_for_update() if apply else rows)
        locks = lock_table()
        plan = cleanup_plan(
            [CleanupTask(t.name, t.state, t.origin_session_key, t.updated_at) for t in tasks],
            locks,
            drop_tasks=names,
            drop_prefixes=prefixes,
            now=now,
            archive_after=rules.archive_after,
        )
        if apply:
            _apply_cleanup(tasks, locks, plan.dropped, plan.archived, plan.locks, now)
    body = {
        # One column holds both session and session_label: nothing to normalise.
        "normalized": [],
        "dropped": plan.dropped,
        "archived": plan.archived,
        "lock_repairs": plan.lock_repairs,
        "task_count_before": len(tasks),
        "task_count_after": len(plan.remaining),
        "lock_count_before": len(locks),
        "lock_count_after": len(plan.locks),
        "apply": apply,
    }
    return Answer(EXIT_OK, body)


def _apply_cleanup(
    tasks: list[LongTask],
    locks: dict[str, str],
    dropped: list[dict[str, Any]],
    archived: list[dict[str, Any]],
    wanted: dict[str, str],
    now: datetime,
) -> None:
    by_name = {task.name: task for task in tasks}
    stale_keys = [key for key, holder in locks.items() if wanted.get(key) != holder]
    SessionLock.objects.filter(origin_session_key__in=stale_keys).delete()
    LongTask.objects.filter(pk__in=[by_name[item["task"]].pk for item in dropped]).delete()
    LongTask.objects.filter(pk__in=[by_name[item["task"]].pk for item in archived]).update(
        archived_at=now
    )
    SessionLock.objects.bulk_create(
        SessionLock(origin_session_key=key, task=by_name[holder], acquired_at=now)
        for key, holder in wanted.items()
        if locks.get(key) != holder
    )
    logger.info(
        "long-run cleanup: %d dropped, %d archived, %d locks rewritten",
        len(dropped),
        len(archived),
        len(stale_keys),
    )


# --- the original's state file (§4.2–§4.4) -------------------------------------------------------


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


# --- what the channel answered (registered in LongrunConfig.ready()) -----------------------------


class _Answered(Protocol):
    """The outbox message an outcome handler is given (xworkmate.delivery's Message)."""

    pk: Any
    idempotency_key: str
    body_hash: str
    last_error: str
    updated_at: datetime


def _answered_task(message: _Answered) -> LongTask | None:
    task_id = _task_id_of(message.idempotency_key)
    if task_id is None:
        return None
    task = LongTask.objects.select_for_update().filter(pk=task_id).first()
    if task is None:
        logger.info("message %s answered after its long task %s was cleared", message.pk, task_id)
    return task


def progress_answer_record(message: _Answered, outcome: Outcome, final: bool) -> None:
    """A heartbeat's answer: the task's progress is sent, unknown or failed (D-B10, D-B12).

    The service's own send is not the agent's activity: `updated_at` stays
    (D-B19). The heartbeat stops being in flight once sent or finally answered.
    """
    task = _answered_task(message)
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


def resume_answer_record(message: _Answered, outcome: Outcome, final: bool) -> None:
    """A resume's answer: only a confirmed one counts as a resume (D-B10)."""
    task = _answered_task(message)
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


def recovery_answer_record(message: _Answered, outcome: Outcome, final: bool) -> None:
    """A recovery message's answer goes to the task log only (its payload had no callbacks)."""
    task = _answered_task(message)
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
