"""The keepalive: plan (or queue) the resume of every idle task (§7.9)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from longrun._rows import (
    RESUME_PURPOSE,
    _already_queued,
    _apply_progress,
    _log,
    _message_key,
    _save,
    _transition,
)
from longrun.ladder import ladder_climb
from longrun.models import LongTask, TaskEvent
from longrun.monitors._common import _claim, _reported_in
from longrun.policies.answers import EXIT_ACTION, EXIT_NO_KEY, EXIT_OK, Answer, LongrunError
from longrun.policies.facts import Rules
from longrun.policies.ladder import RESUME
from longrun.policies.messages import (
    KEEPALIVE_PLANNED_NOTE,
    KEEPALIVE_RUN_NOTE,
    RESUME_DISABLED_NOTE,
    RESUME_QUEUED_NOTE,
    resume_budget_note,
    resume_message,
)
from longrun.policies.states import BLOCKED, PROGRESS_STATES
from longrun.policies.timing import (
    idle_for_seconds,
    idle_limit,
    idle_timed_out,
    latest_activity,
    whole_second,
)
from longrun.selectors import live_tasks, longrun_rules
from xworkmate.claims import claim_and_handle
from xworkmate.delivery.services import outbox_enqueue


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
    if rules.auto_resume and _budget_spent(task, rules, now):
        return dispatch | _block_for_a_person(task, rules=rules, now=now, by=by)
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
    # D-B30: the second rung, whether the resume was queued or only planned.
    ladder_climb(
        task,
        RESUME,
        reason=f"idle_timeout (idle {idle_for}s, {source}); {dispatch['status']}",
        at=now,
        by=by,
        message_id=message_id,
        once_since=latest,
    )
    return dispatch


# --- the resume budget (D-B29) -------------------------------------------------------------

RESUME_BUDGET_WINDOW = timedelta(hours=24)


def _resumes_queued(task: LongTask, now: datetime) -> int:
    return task.events.filter(
        kind=TaskEvent.QUEUED, purpose=RESUME_PURPOSE, at__gt=now - RESUME_BUDGET_WINDOW
    ).count()


def _budget_spent(task: LongTask, rules: Rules, now: datetime) -> bool:
    return _resumes_queued(task, now) >= rules.max_resumes_per_day


def _block_for_a_person(
    task: LongTask, *, rules: Rules, now: datetime, by: str
) -> dict[str, Any]:
    """An idle task that has had its automatic resumes of the day: blocked, saying why,
    so it waits for a person instead of spending the agent's quota on resumes."""
    note = resume_budget_note(_resumes_queued(task, now), rules.max_resumes_per_day)
    old_state = task.state
    task.state = BLOCKED
    task.updated_at = max(now, task.updated_at)
    _transition(task, old_state, at=now, by=by, note=note)
    _save(task, rules, ["state", "updated_at"])
    return {"status": "blocked", "note": note}


def keepalive_run_once(
    *, now: datetime, idle: timedelta | None = None, by: str = "keepalive"
) -> Answer:
    """run_keepalive_once: plan a resume for every idle analyzing or executing task.

    With `longrun.auto_resume` off (the default) each resume is only planned
    ("默认只生成计划"); on, it is queued in the outbox (`longrun.resume`),
    once per idle spell (D-B20), and counts as a resume only when the channel
    confirms it (D-B10, `resume_outcome_record`). The attempt is recorded as
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

    claim_and_handle(list(candidates), claim=_claim, handle=handle, failed=_reported_in(errors))
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
