"""URLs of the long-run app (included by the root URLconf): one per script and subcommand."""

from __future__ import annotations

from django.urls import URLPattern, path

from longrun import api

_STATE = "api/longrun/task-state"

urlpatterns: list[URLPattern] = [
    path(f"{_STATE}/set", api.TaskSetApi.as_view(), name="longrun-set"),
    path(f"{_STATE}/show", api.TaskShowApi.as_view(), name="longrun-show"),
    path(f"{_STATE}/list", api.TaskListApi.as_view(), name="longrun-list"),
    path(f"{_STATE}/locks", api.LocksApi.as_view(), name="longrun-locks"),
    path(f"{_STATE}/touch-progress", api.TouchProgressApi.as_view(), name="longrun-touch"),
    path(
        f"{_STATE}/mark-progress-attempt",
        api.MarkProgressAttemptApi.as_view(),
        name="longrun-mark-attempt",
    ),
    path(
        f"{_STATE}/mark-progress-sent", api.MarkProgressSentApi.as_view(), name="longrun-mark-sent"
    ),
    path(
        f"{_STATE}/mark-progress-unknown",
        api.MarkProgressUnknownApi.as_view(),
        name="longrun-mark-unknown",
    ),
    path(
        f"{_STATE}/mark-progress-failed",
        api.MarkProgressFailedApi.as_view(),
        name="longrun-mark-failed",
    ),
    path(
        f"{_STATE}/mark-visible-reply",
        api.MarkVisibleReplyApi.as_view(),
        name="longrun-mark-visible-reply",
    ),
    path(
        f"{_STATE}/mark-tool-result",
        api.MarkToolResultApi.as_view(),
        name="longrun-mark-tool-result",
    ),
    path(f"{_STATE}/mark-resume", api.MarkResumeApi.as_view(), name="longrun-mark-resume"),
    path(f"{_STATE}/acquire-lock", api.AcquireLockApi.as_view(), name="longrun-acquire-lock"),
    path(f"{_STATE}/release-lock", api.ReleaseLockApi.as_view(), name="longrun-release-lock"),
    path(f"{_STATE}/clear", api.ClearApi.as_view(), name="longrun-clear"),
    path(
        "api/longrun/validate-task-start",
        api.ValidateTaskStartApi.as_view(),
        name="longrun-validate-task-start",
    ),
    path(
        "api/longrun/check-foreground-progress",
        api.ForegroundCheckApi.as_view(),
        name="longrun-check-foreground-progress",
    ),
    path(
        "api/longrun/build-progress-update",
        api.ProgressUpdateApi.as_view(),
        name="longrun-build-progress-update",
    ),
    path(
        "api/longrun/foreground-tick",
        api.ForegroundTickApi.as_view(),
        name="longrun-foreground-tick",
    ),
    path(
        "api/longrun/work-cycle-tick",
        api.WorkCycleTickApi.as_view(),
        name="longrun-work-cycle-tick",
    ),
    path(
        "api/longrun/emit-foreground-due",
        api.EmitForegroundDueApi.as_view(),
        name="longrun-emit-foreground-due",
    ),
    path(
        "api/longrun/dispatch-foreground-due",
        api.DispatchForegroundDueApi.as_view(),
        name="longrun-dispatch-foreground-due",
    ),
    path(
        "api/longrun/keepalive-tick", api.KeepaliveTickApi.as_view(), name="longrun-keepalive-tick"
    ),
    path(
        "api/longrun/emit-keepalive-resume",
        api.EmitKeepaliveResumeApi.as_view(),
        name="longrun-emit-keepalive-resume",
    ),
    path(
        "api/longrun/run-keepalive-once",
        api.RunKeepaliveOnceApi.as_view(),
        name="longrun-run-keepalive-once",
    ),
    path("api/longrun/watchdog", api.WatchdogApi.as_view(), name="longrun-watchdog"),
    path(
        "api/longrun/recover-due-tasks",
        api.RecoverDueTasksApi.as_view(),
        name="longrun-recover-due-tasks",
    ),
    path(
        "api/longrun/emit-recovery-message",
        api.EmitRecoveryMessageApi.as_view(),
        name="longrun-emit-recovery-message",
    ),
    path(
        "api/longrun/build-sessions-send-payloads",
        api.BuildSessionsSendPayloadsApi.as_view(),
        name="longrun-build-sessions-send-payloads",
    ),
    path(
        "api/longrun/run-watchdog-once",
        api.RunWatchdogOnceApi.as_view(),
        name="longrun-run-watchdog-once",
    ),
    path("api/longrun/cleanup-state", api.CleanupStateApi.as_view(), name="longrun-cleanup-state"),
    path(
        "api/longrun/detect-trigger", api.DetectTriggerApi.as_view(), name="longrun-detect-trigger"
    ),
]
