"""validate_task_start.py: did the task really start in its target session (§7.2)?"""

from __future__ import annotations

from collections.abc import Iterable

from longrun.models import SessionLock
from longrun.policies import reports
from longrun.policies.answers import EXIT_INVALID, Answer, LongrunError
from longrun.policies.states import ACTIVE_STATES, STATES
from longrun.selectors._common import live_tasks
from xworkmate.lib.jstext import js_trim


def task_start_validation(
    *,
    name: str,
    expect_session_key: str = "",
    expect_states: Iterable[str] = (),
    confined_to: str | None = None,
) -> Answer:
    """Whether the task really started in its target session: only then may the agent say so."""
    states = list(expect_states) or list(ACTIVE_STATES)
    for state in states:
        if state not in STATES:
            raise LongrunError(
                exit_code=EXIT_INVALID,
                body=f"invalid state: {state}",
                field="expect_state",
                rule=f"must be one of {', '.join(STATES)}",
            )
    task = live_tasks(confined_to).filter(name=js_trim(name)).first()
    if task is None:
        return reports.start_validation_not_found(name)
    owner = (
        SessionLock.objects.filter(origin_session_key=task.origin_session_key)
        .values_list("task__name", flat=True)
        .first()
        if task.origin_session_key
        else None
    )
    return reports.start_validation(
        task,
        lock_owner=owner,
        expect_session_key=js_trim(expect_session_key),
        expect_states=states,
    )
