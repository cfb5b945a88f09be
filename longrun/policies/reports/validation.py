"""validate_task_start's answer (§7.2)."""

from __future__ import annotations

from collections.abc import Iterable

from longrun.policies.answers import EXIT_ACTION, EXIT_INVALID, EXIT_OK, Answer
from longrun.policies.facts import TaskFacts
from longrun.policies.messages import START_FAILED, START_OK, TASK_NOT_STARTED
from longrun.policies.reports._common import _opt
from longrun.policies.states import ACTIVE_STATES


def start_validation(
    task: TaskFacts,
    *,
    lock_owner: str | None,
    expect_session_key: str,
    expect_states: Iterable[str],
) -> Answer:
    expected = sorted(set(expect_states))
    key = task.origin_session_key
    errors: list[str] = []
    if task.state not in expected:
        errors.append(f"state_mismatch:{task.state}")
    if task.state in ACTIVE_STATES and not key:
        errors.append("missing_origin_session_key")
    if expect_session_key and expect_session_key != key:
        errors.append("origin_session_key_mismatch")
    if task.state in ACTIVE_STATES and key and lock_owner != task.name:
        errors.append("session_lock_mismatch")
    return Answer(
        EXIT_INVALID if errors else EXIT_OK,
        {
            "ok": not errors,
            "task": task.name,
            "state": task.state,
            "session": task.session_label,
            "session_label": task.session_label,
            "origin_session_key": _opt(key),
            "lock_owner": lock_owner,
            "expected_states": expected,
            "errors": errors,
            "message": START_FAILED if errors else START_OK,
        },
    )


def start_validation_not_found(name: str) -> Answer:
    return Answer(
        EXIT_ACTION,
        {"ok": False, "error": "task_not_found", "task": name, "message": TASK_NOT_STARTED},
    )
