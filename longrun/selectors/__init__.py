"""Reads of long-run mode: each read-only script of the original as one function (§7).

Each answers an `Answer`, the original's output and exit code (D-B18), or
raises a `LongrunError`. The rules are in longrun.policies; these functions
load the rows and hand them over. The reports that walk every task (the
watchdog's) read the live tasks in creation order, as the original walked its
JSON object; one task they cannot handle is an error item, and the report
goes on (D-B5). One module per script family: tasks (task_state.py's reads),
trigger, validation (validate_task_start), foreground, watchdog, keepalive.
"""

from longrun.selectors._common import live_tasks, lock_table, longrun_rules, task_named
from longrun.selectors.foreground import (
    foreground_check,
    foreground_dispatch_plan,
    foreground_due_events,
    foreground_tick,
    progress_update,
    work_cycle_tick,
)
from longrun.selectors.keepalive import keepalive_resume_event, keepalive_tick
from longrun.selectors.tasks import locks_show, state_export, task_show, tasks_list
from longrun.selectors.trigger import message_mode
from longrun.selectors.validation import task_start_validation
from longrun.selectors.watchdog import (
    recovery_messages,
    recovery_report,
    sessions_send_payloads,
    watchdog_check,
)

__all__ = [
    "foreground_check",
    "foreground_dispatch_plan",
    "foreground_due_events",
    "foreground_tick",
    "keepalive_resume_event",
    "keepalive_tick",
    "live_tasks",
    "lock_table",
    "locks_show",
    "longrun_rules",
    "message_mode",
    "progress_update",
    "recovery_messages",
    "recovery_report",
    "sessions_send_payloads",
    "state_export",
    "task_named",
    "task_show",
    "task_start_validation",
    "tasks_list",
    "watchdog_check",
    "work_cycle_tick",
]
