"""The original scripts' JSON documents, built from a task's facts (§4.3, §7).

Key order and wording are the original's (D-B18). Fields the original wrote
as null when unset (the session key, the delivery bookkeeping) are null here
when empty; text fields may be empty strings (D-B3). Times are shown as the
original's `now_iso()` wrote them: ISO 8601 to the second with the offset of
the configured zone (`2026-04-02T12:00:00+08:00`). One module per script
family: tasks (a task's record and the common refusals), validation,
foreground, keepalive, watchdog.
"""

from longrun.policies.reports._common import wire_time
from longrun.policies.reports.foreground import (
    ForegroundEvent,
    dispatch_of,
    foreground_check,
    foreground_event,
    foreground_tick,
    progress_update,
    work_cycle_tick,
)
from longrun.policies.reports.keepalive import keepalive_event, keepalive_tick
from longrun.policies.reports.tasks import (
    error_item,
    list_line,
    missing_key_error,
    task_not_found,
    task_record,
)
from longrun.policies.reports.validation import start_validation, start_validation_not_found
from longrun.policies.reports.watchdog import (
    SESSIONS_SEND_TIMEOUT_SECONDS,
    recovery_item,
    recovery_message_item,
    sessions_send_payload,
    watchdog_payload,
    watchdog_summary,
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
