"""task_state.py set, an admin's mark, and clear: a long task's state and its session's lock."""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from longrun._rows import _derive, _save, _transition
from longrun.models import LABEL_MAX_LENGTH, LIVE, LongTask, SessionLock
from longrun.policies import reports
from longrun.policies.answers import EXIT_INVALID, EXIT_NO_KEY, EXIT_OK, Answer, LongrunError
from longrun.policies.facts import Rules
from longrun.policies.states import (
    ACTIVE_STATES,
    CAPPED_STATES,
    DONE,
    FINISHED_STATES,
    joins_session_cap,
)
from longrun.policies.timing import parse_progress_every, whole_second
from longrun.selectors import longrun_rules
from longrun.services._common import (
    _invalid,
    _key,
    _lock_conflict,
    _locked,
    _name,
    _session_lock,
    _state,
    _take_lock,
    _text,
    logger,
)
from xworkmate import sql
from xworkmate.lib.durations import format_duration
from xworkmate.lib.jstext import js_trim

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


# --- clear (§7.1) --------------------------------------------------------------------------------


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
