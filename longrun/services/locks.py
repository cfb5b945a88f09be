"""acquire-lock and release-lock: one long task per session (§4.4, §7.1)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from longrun.policies import reports
from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.timing import whole_second
from longrun.services._common import _key, _lock_conflict, _locked, _name, _session_lock, _take_lock


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
            # A lock always names a task of the store (D-B28; the original took any name).
            raise reports.task_not_found(name)
        _take_lock(task, key, lock, now, with_ok=True)
    return Answer(EXIT_OK, {"ok": True, "origin_session_key": key, "task": name})


def lock_release(*, session_key: str, name: str = "") -> Answer:
    """release-lock: free `session_key`, only if `name` holds it when a name is given."""
    key = _key("session", session_key, required=True)
    name = _key("task", name, required=False)
    # The answer names the task asked for, null without one, as the original's did: the
    # holder is not echoed back (`locks` shows it).
    body = {"origin_session_key": key, "task": name or None}
    with transaction.atomic():
        lock = _session_lock(key)
        if lock is None or (name and lock.task.name != name):
            return Answer(EXIT_ACTION, {"ok": False, **body})
        lock.delete()
    return Answer(EXIT_OK, {"ok": True, **body})
