"""The write path of long-run mode: every state change of a long task, its locks and its log.

Each function is one operation of the original scripts (task_state.py's
subcommands, run_keepalive_once, run_watchdog_once, cleanup_state) or one of
the monitors Celery beat calls, and answers the original's output and exit
code (`Answer`, D-B18) or raises `LongrunError` having written nothing: every
input is checked before the first write, and each operation is one
transaction. One module per operation: tasks (set, an admin's mark, clear),
reports (an agent's report on its task), locks, cleanup, statefile
(import-state) and outcomes; the monitors are longrun.monitors, their names
importable from here too.

Messages go out only through the outbox, in the transaction of the change
that causes them, and count as sent only when the channel confirms it
(D-B10): the outcome handlers of longrun.services.outcomes, registered in
LongrunConfig.ready(), write the task's bookkeeping from the channel's real
answer. A message is linked to its task by its idempotency key
(`longrun:<task id>:<kind>:<token>`, longrun._rows), so the handlers know a
task's message without a query and pass over any other at no cost.
"""

from longrun._rows import PROGRESS_PURPOSE, RECOVERY_PURPOSE, RESUME_PURPOSE
from longrun.monitors import heartbeat_run_once, keepalive_run_once, watchdog_run_once
from longrun.services.cleanup import tasks_cleanup
from longrun.services.locks import lock_acquire, lock_release
from longrun.services.outcomes import (
    progress_outcome_record,
    recovery_outcome_record,
    resume_outcome_record,
)
from longrun.services.reports import (
    ActivitySignal,
    ProgressOutcome,
    task_activity_record,
    task_progress_record,
    task_resume_record,
)
from longrun.services.statefile import tasks_import
from longrun.services.tasks import task_clear, task_set, task_state_mark, tasks_clear_all

__all__ = [
    "PROGRESS_PURPOSE",
    "RECOVERY_PURPOSE",
    "RESUME_PURPOSE",
    "ActivitySignal",
    "ProgressOutcome",
    "heartbeat_run_once",
    "keepalive_run_once",
    "lock_acquire",
    "lock_release",
    "progress_outcome_record",
    "recovery_outcome_record",
    "resume_outcome_record",
    "task_activity_record",
    "task_clear",
    "task_progress_record",
    "task_resume_record",
    "task_set",
    "task_state_mark",
    "tasks_cleanup",
    "tasks_clear_all",
    "tasks_import",
    "watchdog_run_once",
]
