"""The foreground heartbeat's documents: its check, its ticks, its events (§7.3–§7.8)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from longrun.policies.answers import EXIT_ACTION, EXIT_OK, Answer
from longrun.policies.facts import TaskFacts
from longrun.policies.messages import (
    WORK_CYCLE_DUE,
    WORK_CYCLE_NOT_DUE,
    WORK_CYCLE_PROTOCOL,
    progress_message,
)
from longrun.policies.reports._common import _opt, wire_time
from longrun.policies.reports.tasks import missing_key_error
from longrun.policies.states import PROGRESS_STATES
from longrun.policies.timing import delivery_id, foreground_hash, is_progress_due

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
    """foreground_tick: the check, and the message when it is due.

    Where to send, and the state, are read from the check, as the original
    read them: a task that owes no progress (waiting, blocked, handoff, done)
    gets a check without them, so `sessionKey`, `session_label` and `state`
    are null, and there is nothing to send.
    """
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
            "sessionKey": check.body.get("origin_session_key"),
            "session_label": check.body.get("session_label"),
            "state": check.body.get("state"),
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
