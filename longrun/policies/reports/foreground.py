"""The original scripts' JSON documents, built from a task's facts (§4.3, §7).

Key order and wording are the original's (D-B18). Fields the original wrote
as null when unset (the session key, the delivery bookkeeping) are null here
when empty; text fields may be empty strings (D-B3). Times are shown as the
original's `now_iso()` wrote them: ISO 8601 to the second with the offset of
the configured zone (`2026-04-02T12:00:00+08:00`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from longrun.policies.answers import (
    EXIT_ACTION,
    EXIT_INVALID,
    EXIT_NO_KEY,
    EXIT_OK,
    Answer,
    LongrunError,
)
from longrun.policies.facts import TaskFacts
from longrun.policies.messages import (
    KEEPALIVE_INSTRUCTION,
    KEEPALIVE_RESUMED_NOTE,
    START_FAILED,
    START_OK,
    TASK_NOT_STARTED,
    WORK_CYCLE_DUE,
    WORK_CYCLE_NOT_DUE,
    WORK_CYCLE_PROTOCOL,
    progress_message,
    recovery_suggestion,
    recovery_text,
    resume_message,
)
from longrun.policies.states import ACTIVE_STATES, PROGRESS_STATES
from longrun.policies.timing import (
    PROGRESS,
    Verdict,
    delivery_id,
    foreground_hash,
    idle_for_seconds,
    idle_timed_out,
    is_progress_due,
    latest_activity,
)

__all__ = [
    "SESSIONS_SEND_TIMEOUT_SECONDS",
    "ForegroundEvent",
    "dispatch_of",
    "error_item",
    "foreground_check",
    "foreground_event",
    "foreground_tick",
    "keepalive_event",
    "keepalive_tick",
    "list_line",
    "missing_key_error",
    "progress_update",
    "recovery_item",
    "recovery_message_item",
    "sessions_send_payload",
    "start_validation",
    "start_validation_not_found",
    "task_not_found",
    "task_record",
    "watchdog_payload",
    "watchdog_summary",
    "wire_time",
    "work_cycle_tick",
]

# How long sessions_send waits for the target session (the original's payloads).
SESSIONS_SEND_TIMEOUT_SECONDS = 30


def wire_time(moment: datetime | None, zone: tzinfo) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(zone).isoformat(timespec="seconds")


def _opt(text: str) -> str | None:
    return text or None


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


# --- validate_task_start (§7.2) ------------------------------------------------------------------


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


# --- the foreground heartbeat (§7.3–§7.6) --------------------------------------------------------


def foreground_check(task: TaskFacts, now: datetime, zone: tzinfo) -> Answer:
    """check_foreground_progress: is a visible progress update due now?"""
    if task.state not in PROGRESS_STATES:
        return Answer(EXIT_OK, {"task": task.name, "due": False, "reason": f"state={task.state}"})
    if not task.origin_session_key:
        raise missing_key_error(task.name)
    due = is_progress_due(task, now)
    return Answer(
        EXIT_ACTION if due else EXIT_OK,
        {
            "task": task.name,
            "session": task.session_label,
            "session_label": task.session_label,
            "origin_session_key": task.origin_session_key,
            "state": task.state,
            "progress_every": task.progress_every,
            "last_progress_sent_at": wire_time(task.last_progress_sent_at, zone),
            "last_progress_at": wire_time(task.last_progress_at, zone),
            "updated_at": wire_time(task.updated_at, zone),
            "due": due,
            "reason": f"progress_due ({task.progress_every})" if due else "within_window",
        },
    )


def progress_update(task: TaskFacts) -> Answer:
    """build_progress_update: the message, and where it goes."""
    return Answer(
        EXIT_OK,
        {
            "task": task.name,
            "session_label": task.session_label,
            "origin_session_key": _opt(task.origin_session_key),
            "state": task.state,
            "message": progress_message(task),
        },
    )


def foreground_tick(task: TaskFacts, now: datetime, zone: tzinfo) -> Answer:
    """foreground_tick: the check, and the message when it is due."""
    check = foreground_check(task, now, zone)
    due = bool(check.body["due"])
    return Answer(
        check.exit_code,
        {
            "task": task.name,
            "due": due,
            "check": check.body,
            "message": progress_message(task) if due else None,
            "delivery": "session",
            "sessionKey": _opt(task.origin_session_key),
            "session_label": task.session_label,
            "state": task.state,
        },
    )


def work_cycle_tick(task: TaskFacts, *, step: str, now: datetime, zone: tzinfo) -> Answer:
    """work_cycle_tick: run after each step; `must_send_now` is the gate (§7.6).

    A task that owes no progress (waiting, blocked, handoff, done) answers
    "nothing to send" with `state=<state>` (D-B6).
    """
    tick = foreground_tick(task, now, zone)
    due = bool(tick.body["due"])
    return Answer(
        tick.exit_code,
        {
            "task": task.name,
            "step": step,
            "continue": True,
            "report_now": due,
            "must_send_now": due,
            "delivery": "session",
            "sessionKey": _opt(task.origin_session_key),
            "session_label": task.session_label,
            "message": tick.body["message"],
            "reason": tick.body["check"]["reason"],
            "instruction": WORK_CYCLE_DUE if due else WORK_CYCLE_NOT_DUE,
            "protocol": dict(WORK_CYCLE_PROTOCOL),
        },
    )


# --- foreground events (§7.7, §7.8) --------------------------------------------------------------


@dataclass(frozen=True)
class ForegroundEvent:
    """A due heartbeat: the event emit_foreground_due printed, with its hash."""

    message_hash: str
    delivery_id: str
    message: str
    body: dict[str, Any]

    def skipped(self) -> dict[str, str]:
        """The skipped_unknown entry for this event."""
        return {
            "task": self.body["task"],
            "delivery_id": self.delivery_id,
            "message_hash": self.message_hash,
            "reason": "recent_unknown_delivery",
        }


def foreground_event(task: TaskFacts, *, reason: str, slot: int) -> ForegroundEvent:
    """The task's heartbeat in `slot`; its hash and delivery id are the slot's (§7.7)."""
    message_hash = foreground_hash(task, slot)
    fg_id = delivery_id(message_hash)
    message = progress_message(task)
    callback = {
        "task": task.name,
        "note": task.note,
        "delivery_id": fg_id,
        "message_hash": message_hash,
    }
    body: dict[str, Any] = {
        "kind": "foreground-progress",
        "delivery": "session",
        "sessionKey": task.origin_session_key,
        "task": task.name,
        "session_label": task.session_label,
        "state": task.state,
        "reason": reason,
        "message": message,
        "delivery_id": fg_id,
        "message_hash": message_hash,
        "onSuccess": {"script": "task_state.py mark-progress-sent", **callback},
        "onUnknown": {"script": "task_state.py mark-progress-unknown", **callback},
        "onError": {"script": "task_state.py mark-progress-failed", **callback},
    }
    return ForegroundEvent(message_hash, fg_id, message, body)


def dispatch_of(event: dict[str, Any]) -> dict[str, Any]:
    """dispatch_foreground_due's sessions_send plan for one event."""
    return {
        "tool": "sessions_send",
        "sessionKey": event["sessionKey"],
        "message": event["message"],
        "task": event["task"],
        "delivery": event["delivery"],
        "delivery_id": event["delivery_id"],
        "message_hash": event["message_hash"],
        "session_label": event["session_label"],
        "origin_session_key": event["sessionKey"],
        "onSuccess": event["onSuccess"],
        "onUnknown": event["onUnknown"],
        "onError": event["onError"],
    }


# --- keepalive (§7.9) ----------------------------------------------------------------------------


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


# --- watchdog and recovery (§7.10) ---------------------------------------------------------------


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
