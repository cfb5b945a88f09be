"""A task as the original printed it, and the refusals every report may answer (§4.3, §7.1)."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from longrun.policies.answers import EXIT_ACTION, EXIT_NO_KEY, LongrunError
from longrun.policies.facts import TaskFacts
from longrun.policies.reports._common import _opt, wire_time


def task_record(task: TaskFacts, zone: tzinfo) -> dict[str, Any]:
    """The stored record as `task_state.py set` / `show` printed it (§4.3).

    `session` and `session_label` are one value: the original forced them equal.
    """
    return {
        "task": task.name,
        "session": task.session_label,
        "origin_session_key": _opt(task.origin_session_key),
        "state": task.state,
        "goal": task.goal,
        "done_when": task.done_when,
        "blocked_when": task.blocked_when,
        "boundary": task.boundary,
        "next_check": task.next_check,
        "note": task.note,
        "progress_every": task.progress_every,
        "last_progress_at": wire_time(task.last_progress_at, zone),
        "last_progress_attempt_at": wire_time(task.last_progress_attempt_at, zone),
        "last_progress_sent_at": wire_time(task.last_progress_sent_at, zone),
        "last_progress_unknown_at": wire_time(task.last_progress_unknown_at, zone),
        "last_progress_delivery_status": _opt(task.last_progress_delivery_status),
        "last_progress_delivery_id": _opt(task.last_progress_delivery_id),
        "last_progress_message_hash": _opt(task.last_progress_message_hash),
        "last_progress_send_error": _opt(task.last_progress_send_error),
        "last_visible_reply_at": wire_time(task.last_visible_reply_at, zone),
        "last_tool_result_at": wire_time(task.last_tool_result_at, zone),
        "last_resume_at": wire_time(task.last_resume_at, zone),
        "last_resume_reason": _opt(task.last_resume_reason),
        "last_resume_count": task.last_resume_count,
        "updated_at": wire_time(task.updated_at, zone),
        "session_label": task.session_label,
    }


def list_line(task: TaskFacts, zone: tzinfo) -> str:
    return (
        f"- {task.name} | {task.state} | {task.session_label} | next={task.next_check} "
        f"| updated={wire_time(task.updated_at, zone)}"
    )


def error_item(name: str, error: str) -> dict[str, str]:
    """A task a run could not handle, reported beside the others (D-B5)."""
    return {"task": name, "error": error}


def task_not_found(name: str) -> LongrunError:
    """The original's refusal of a name it does not track (exit 1)."""
    return LongrunError(
        exit_code=EXIT_ACTION,
        body=f"task not found: {name}",
        field="task",
        rule="must name a tracked long task",
    )


def missing_key_error(name: str) -> LongrunError:
    return LongrunError(
        exit_code=EXIT_NO_KEY,
        body=f"missing origin_session_key for task: {name}",
        field="origin_session_key",
        rule="a task that owes progress reports to its real session key",
    )
