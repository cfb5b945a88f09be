"""URLs of the long-run app (included by the root URLconf): one per script and subcommand.

The paths and their names are the operation table's
(longrun/skill/scripts/_operations.py); each view answers the operation its
schema names (longrun.api).
"""

from __future__ import annotations

from django.urls import URLPattern, path
from rest_framework.views import APIView

from longrun import api
from longrun.api._base import _LongrunView
from longrun.operations import table

# One view per operation with an endpoint.
_VIEWS: tuple[type[_LongrunView], ...] = (
    api.TaskSetApi,
    api.TaskShowApi,
    api.TaskListApi,
    api.LocksApi,
    api.TouchProgressApi,
    api.MarkProgressAttemptApi,
    api.MarkProgressSentApi,
    api.MarkProgressUnknownApi,
    api.MarkProgressFailedApi,
    api.MarkVisibleReplyApi,
    api.MarkToolResultApi,
    api.MarkResumeApi,
    api.AcquireLockApi,
    api.ReleaseLockApi,
    api.ClearApi,
    api.ValidateTaskStartApi,
    api.ForegroundCheckApi,
    api.ProgressUpdateApi,
    api.ForegroundTickApi,
    api.WorkCycleTickApi,
    api.EmitForegroundDueApi,
    api.DispatchForegroundDueApi,
    api.KeepaliveTickApi,
    api.EmitKeepaliveResumeApi,
    api.RunKeepaliveOnceApi,
    api.WatchdogApi,
    api.RecoverDueTasksApi,
    api.EmitRecoveryMessageApi,
    api.BuildSessionsSendPayloadsApi,
    api.RunWatchdogOnceApi,
    api.CleanupStateApi,
    api.DetectTriggerApi,
)
_VIEW_OF: dict[str, type[APIView]] = {
    view.operation.name: view for view in _VIEWS if view.operation is not None
}

urlpatterns: list[URLPattern] = [
    path(operation.route, _VIEW_OF[operation.name].as_view(), name=operation.view_name)
    for operation in table.operations()
    if operation.route is not None
]
