"""The text watchdog, recover_due_tasks and emit_recovery_message print without --json.

One rendering of each report's document: the skill's wrapper scripts render
the server's answer with it (_xworkmate.py), and the server's command line
renders its own with this same file (longrun.cli, loaded by
longrun.operations), so both print the same lines. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# What an empty value prints (longrun.policies.messages.UNSET, which the
# skill's folder cannot import).
UNSET = "未设置"


def shown(value: object) -> str:
    """A value in a line of text; an empty one prints 未设置, never None (D-B14)."""
    return UNSET if value is None or value == "" else str(value)


def error_lines(title: str, body: dict[str, Any]) -> list[str]:
    """The tasks a run could not handle (D-B5), after the original's lines."""
    errors = body.get("errors", [])
    return [title, *(f"- {item['task']} | {item['error']}" for item in errors)] if errors else []


def _watchdog_lines(item: dict[str, Any]) -> list[str]:
    return [
        f"- {item['task']} | {item['state']} | {shown(item['session'])} | {item['reason']}",
        f"  goal: {shown(item['goal'])}",
        f"  note: {shown(item['note'])}",
    ]


def watchdog(body: dict[str, Any]) -> str:
    """`watchdog.py check` (§7.10)."""
    lines: list[str] = []
    if not body["due"] and not body["progress"] and "errors" not in body:
        lines.append("watchdog: all tracked tasks are within expected window")
    if body["due"]:
        lines.append("watchdog: tasks needing follow-up")
        for item in body["due"]:
            lines += _watchdog_lines(item)
            lines.append(f"  next: {shown(item['next_check'])} | updated: {item['updated_at']}")
    if body["progress"]:
        lines.append("watchdog: tasks needing visible progress update")
        for item in body["progress"]:
            lines += _watchdog_lines(item)
            lines.append(
                f"  progress_every: {item['progress_every']} "
                f"| last_progress: {shown(item['last_progress_at'])}"
            )
    lines += error_lines("watchdog: tasks that could not be checked", body)
    return "\n".join(lines)


def recover(body: dict[str, Any]) -> str:
    """`recover_due_tasks.py`."""
    if not body["items"]:
        lines = [] if "errors" in body else ["recover: no overdue tasks"]
    else:
        lines = [
            f"recover: {body['due_count']} overdue task(s), "
            f"{body['progress_count']} progress update(s)"
        ]
    for item in body["items"]:
        recovery = item["recovery"]
        lines += [
            f"- task: {item['task']}",
            f"  kind: {item['kind']}",
            f"  state/session: {item['state']} / {shown(item['session'])}",
            f"  reason: {item['reason']}",
            f"  goal: {shown(item['goal'])}",
            f"  note: {shown(item['note'])}",
            f"  suggested action: {recovery['kind']}",
            f"  suggested session: {shown(recovery['suggested_session'])}",
            f"  suggested sessionKey: {recovery['suggested_session_key']}",
            f"  suggested message: {recovery['suggested_message']}",
        ]
    lines += error_lines("recover: tasks that could not be checked", body)
    return "\n".join(lines)


def emit(body: dict[str, Any]) -> str:
    """`emit_recovery_message.py`."""
    messages = [item["message"] for item in body["messages"]]
    separator = "\n\n" + "=" * 60 + "\n\n"
    lines = [separator.join(messages)] if messages else []
    lines += error_lines("emit: tasks that could not be checked", body)
    return "\n".join(lines) or "emit: no recovery messages to send"


# By the name an operation gives in its `render` (_operations.py).
TEXTS: dict[str, Callable[[dict[str, Any]], str]] = {
    "watchdog": watchdog,
    "recover": recover,
    "emit": emit,
}
