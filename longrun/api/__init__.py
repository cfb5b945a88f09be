"""REST endpoints of long-run mode: each script of the original skill, and its subcommands.

One endpoint per operation under `/api/longrun/`, named after the script
(`/api/longrun/work-cycle-tick`) or, for task_state.py, its subcommand
(`/api/longrun/task-state/set`). Fields are the scripts' flags in snake case
(`--origin-session-key` is `origin_session_key`). What an operation answers is
the original's output, unchanged (D-B21):

- an answer is 200 with the document the script printed on stdout (a JSON
  object, or a JSON string for the scripts that printed lines of text), and
  the header `X-Longrun-Exit-Code` carries the exit code it ended with (1 when
  something is due, 2 for a failed start validation);
- a refusal is the API's error shape `{"error": {"code", "message"}}` whose
  message is what the script printed on stderr (`task not found: A`, or its
  JSON document on one line), with the same header: exit 1 (task not found)
  is 404, exit 2 (an invalid value) is 400, a refusal that depends on what
  is stored (exit 3 lock held, exit 4 no session key, a task that is done) is 409.

An agent key (bound to a session) acts on its own session's tasks only: a
task bound to another session key is not found (404, nothing changes), naming
another session is 403, the reports cover its session's tasks, and the runs
that walk every session (run-keepalive-once, run-watchdog-once, cleanup-state,
clear without a task) are the bridge's.

The operations, their paths, methods and scopes are the skill's operation
table (longrun/skill/scripts/_operations.py): a view's scope is its
operation's there, and longrun.urls lays out the paths from it. One module
per resource: `task_state` (set, show, list, clear), `locks`, `progress`
(progress, activity and resume reports), `foreground` (start validation and
the foreground heartbeat), `keepalive`, `watchdog` (the reports, the
watchdog run and cleanup) and `trigger`; `_fields`, `_base` and `_schema`
hold what they share.
"""

from __future__ import annotations

from longrun.api._base import EXIT_CODE_HEADER, LIST_PAGE, MAX_LIST_PAGE
from longrun.api._fields import PROGRESS_EVERY_PATTERN
from longrun.api.foreground import (
    DispatchForegroundDueApi,
    EmitForegroundDueApi,
    ForegroundCheckApi,
    ForegroundTickApi,
    ProgressUpdateApi,
    ValidateTaskStartApi,
    WorkCycleTickApi,
)
from longrun.api.keepalive import EmitKeepaliveResumeApi, KeepaliveTickApi, RunKeepaliveOnceApi
from longrun.api.locks import AcquireLockApi, LocksApi, ReleaseLockApi
from longrun.api.progress import (
    MarkProgressAttemptApi,
    MarkProgressFailedApi,
    MarkProgressSentApi,
    MarkProgressUnknownApi,
    MarkResumeApi,
    MarkToolResultApi,
    MarkVisibleReplyApi,
    TouchProgressApi,
)
from longrun.api.task_state import ClearApi, TaskListApi, TaskSetApi, TaskShowApi
from longrun.api.trigger import DetectTriggerApi
from longrun.api.watchdog import (
    BuildSessionsSendPayloadsApi,
    CleanupStateApi,
    EmitRecoveryMessageApi,
    RecoverDueTasksApi,
    RunWatchdogOnceApi,
    WatchdogApi,
)

__all__ = [
    "EXIT_CODE_HEADER",
    "LIST_PAGE",
    "MAX_LIST_PAGE",
    "PROGRESS_EVERY_PATTERN",
    "AcquireLockApi",
    "BuildSessionsSendPayloadsApi",
    "CleanupStateApi",
    "ClearApi",
    "DetectTriggerApi",
    "DispatchForegroundDueApi",
    "EmitForegroundDueApi",
    "EmitKeepaliveResumeApi",
    "EmitRecoveryMessageApi",
    "ForegroundCheckApi",
    "ForegroundTickApi",
    "KeepaliveTickApi",
    "LocksApi",
    "MarkProgressAttemptApi",
    "MarkProgressFailedApi",
    "MarkProgressSentApi",
    "MarkProgressUnknownApi",
    "MarkResumeApi",
    "MarkToolResultApi",
    "MarkVisibleReplyApi",
    "ProgressUpdateApi",
    "RecoverDueTasksApi",
    "ReleaseLockApi",
    "RunKeepaliveOnceApi",
    "RunWatchdogOnceApi",
    "TaskListApi",
    "TaskSetApi",
    "TaskShowApi",
    "TouchProgressApi",
    "ValidateTaskStartApi",
    "WatchdogApi",
    "WorkCycleTickApi",
]
