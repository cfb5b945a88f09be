"""The watchdog's documents: its summaries, recovery items, messages and payloads (§7.10)."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from longrun.policies.facts import TaskFacts
from longrun.policies.messages import recovery_suggestion, recovery_text
from longrun.policies.reports._common import _opt, wire_time
from longrun.policies.timing import PROGRESS, Verdict

# How long sessions_send waits for the target session (the original's payloads).
SESSIONS_SEND_TIMEOUT_SECONDS = 30


def watchdog_summary(task: TaskFacts, verdict: Verdict, zone: tzinfo) -> dict[str, Any]:
    return {
        "task": task.name,
        "session": task.session_label,
        "session_label": task.session_label,
        "origin_session_key": _opt(task.origin_session_key),
        "state": task.state,
        "reason": verdict.reason,
        "kind": verdict.kind,
        "goal": task.goal,
        "boundary": task.boundary,
        "next_check": task.next_check,
        "progress_every": task.progress_every,
        "last_progress_at": wire_time(task.last_progress_at, zone),
        "updated_at": wire_time(task.updated_at, zone),
        "note": task.note,
    }


def recovery_item(task: TaskFacts, verdict: Verdict, zone: tzinfo) -> dict[str, Any]:
    """recover_due_tasks' item: the task, and what to send where."""
    kind, summary, suggested = recovery_suggestion(
        state=task.state, kind=verdict.kind, reason=verdict.reason, note=task.note, goal=task.goal
    )
    return {
        "task": task.name,
        "state": task.state,
        "session": task.session_label,
        "session_label": task.session_label,
        "origin_session_key": _opt(task.origin_session_key),
        "boundary": task.boundary,
        "reason": verdict.reason,
        "goal": task.goal,
        "next_check": task.next_check,
        "updated_at": wire_time(task.updated_at, zone),
        "note": task.note,
        "kind": verdict.kind,
        "recovery": {
            "kind": kind,
            "summary": summary,
            "suggested_message": suggested,
            "suggested_session": task.session_label,
            "suggested_session_key": task.origin_session_key,
        },
    }


def recovery_message_item(task: TaskFacts, item: dict[str, Any]) -> dict[str, Any]:
    """emit_recovery_message's entry for one recover_due_tasks item."""
    return {
        "task": task.name,
        "session": task.session_label,
        "origin_session_key": task.origin_session_key,
        "kind": item["kind"],
        "message": recovery_text(
            task=task,
            kind=item["kind"],
            reason=item["reason"],
            recovery_kind=item["recovery"]["kind"],
            suggested_message=item["recovery"]["suggested_message"],
        ),
    }


def sessions_send_payload(task: TaskFacts, message_item: dict[str, Any]) -> dict[str, Any]:
    """build_sessions_send_payloads' payload: the whole recovery text."""
    return {
        "sessionKey": task.origin_session_key,
        "label": task.session_label,
        "message": message_item["message"],
        "kind": message_item["kind"],
        "timeoutSeconds": SESSIONS_SEND_TIMEOUT_SECONDS,
    }


def watchdog_payload(task: TaskFacts, item: dict[str, Any]) -> dict[str, Any]:
    """run_watchdog_once's payload: the bare suggested message, and its bookkeeping.

    A progress item's answer is recorded as progress sent or attempted; a
    recovery item's is only logged.
    """
    progress = item["kind"] == PROGRESS
    return {
        "sessionKey": task.origin_session_key,
        "label": task.session_label,
        "task": task.name,
        "kind": item["kind"],
        "message": item["recovery"]["suggested_message"],
        "timeoutSeconds": SESSIONS_SEND_TIMEOUT_SECONDS,
        "onSuccess": {
            "script": "task_state.py touch-progress" if progress else None,
            "task": task.name,
            "note": task.note,
        },
        "onError": {
            "script": "task_state.py mark-progress-attempt" if progress else None,
            "task": task.name,
            "note": task.note,
        },
    }
