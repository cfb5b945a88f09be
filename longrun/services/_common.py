"""What several services share: input checks, a task's row lock, a session's lock, a resume.

Every input is checked before the first write (longrun.services), here once
for all of them.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from longrun.models import NAME_MAX_LENGTH, TEXT_MAX_LENGTH, LongTask, SessionLock
from longrun.policies.answers import EXIT_INVALID, EXIT_LOCKED, LongrunError
from longrun.policies.states import STATES
from xworkmate import sql
from xworkmate.lib.jstext import KEY_MAX_LENGTH, js_trim

# One logger for all the services, under the name their log lines have always had.
logger = logging.getLogger("longrun.services")


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


# --- rows: lock ----------------------------------------------------------------------------------


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


# --- a session's lock (§4.4) ---------------------------------------------------------------------


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


# --- a resume: mark-resume, or one the channel confirmed -----------------------------------------


def _resumed(task: LongTask, reason: str, *, at: datetime) -> None:
    task.last_resume_at = at
    task.last_resume_reason = reason
    task.last_resume_count += 1
