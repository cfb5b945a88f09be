"""The keepalive's documents: its tick and its resume event (§7.9)."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo

from longrun.policies.answers import EXIT_ACTION, EXIT_NO_KEY, EXIT_OK, Answer, LongrunError
from longrun.policies.facts import TaskFacts
from longrun.policies.messages import KEEPALIVE_INSTRUCTION, KEEPALIVE_RESUMED_NOTE, resume_message
from longrun.policies.reports._common import _opt, wire_time
from longrun.policies.states import PROGRESS_STATES
from longrun.policies.timing import idle_for_seconds, idle_timed_out, latest_activity


def keepalive_tick(task: TaskFacts, now: datetime, idle: timedelta, zone: tzinfo) -> Answer:
    source, latest = latest_activity(task)
    resume = idle_timed_out(task, now, idle)
    idle_for = idle_for_seconds(task, now)
    return Answer(
        EXIT_ACTION if resume else EXIT_OK,
        {
            "task": task.name,
            "state": task.state,
            "origin_session_key": _opt(task.origin_session_key),
            "session_label": task.session_label,
            "active_states": list(PROGRESS_STATES),
            "idle_seconds_threshold": int(idle.total_seconds()),
            "last_activity_source": source,
            "last_activity_at": wire_time(latest, zone),
            "idle_for_seconds": idle_for,
            "should_resume": resume,
            "reason": "idle_timeout" if resume else "still_active",
            "resume_message": resume_message(task, idle_for=idle_for, source=source)
            if resume
            else None,
            "instruction": KEEPALIVE_INSTRUCTION,
        },
    )


def keepalive_event(task: TaskFacts, now: datetime, idle: timedelta, zone: tzinfo) -> Answer:
    """emit_keepalive_resume: the resume event of an idle task, or none."""
    tick = keepalive_tick(task, now, idle, zone).body
    if not tick["should_resume"]:
        return Answer(EXIT_OK, {"event_count": 0, "events": [], "reason": tick["reason"]})
    if not task.origin_session_key:
        raise LongrunError(
            exit_code=EXIT_NO_KEY,
            body="missing origin_session_key; cannot emit portable keepalive event",
            field="origin_session_key",
            rule="a resume goes to the task's real session key",
        )
    event = {
        "kind": "keepalive-resume",
        "delivery": "session",
        "sessionKey": task.origin_session_key,
        "task": task.name,
        "state": task.state,
        "message": tick["resume_message"],
        "reason": tick["reason"],
        "idle_for_seconds": tick["idle_for_seconds"],
        "last_activity_source": tick["last_activity_source"],
        "onSuccess": {
            "script": "task_state.py mark-resume",
            "task": task.name,
            "reason": tick["reason"],
            "note": KEEPALIVE_RESUMED_NOTE,
        },
    }
    return Answer(EXIT_ACTION, {"event_count": 1, "events": [event]})
