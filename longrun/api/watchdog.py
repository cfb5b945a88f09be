"""The watchdog and recovery (§7.10), and cleanup_state.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors, services
from longrun.api._base import _answered, _for_every_session, _LongrunView, _page, _span
from longrun.api._fields import (
    _DROP_MAX,
    _STALE_HELP,
    _Count,
    _Flag,
    _Key,
    _minutes,
    _StaleQuery,
    _task,
)
from longrun.api._schema import _EVERY_SESSION, _REPORT, _REPORT_NOTE, _document, _schema
from longrun.models import NAME_MAX_LENGTH
from longrun.policies.answers import Answer
from xworkmate.auth import caller_of

# --- the watchdog and recovery (§7.10) -----------------------------------------------------------


def _report_view(
    operation: str,
    summary: str,
    answer: dict[str, Any],
    read: Callable[..., Answer],
) -> type[_LongrunView]:
    class View(_LongrunView):
        @_schema(
            operation,
            summary,
            answer,
            _REPORT,
            query=_StaleQuery,
            description=f"{_REPORT_NOTE} Exit code 1 when a task is due.",
            paged=True,
        )
        def get(self, request: Request) -> Response:
            values = self._query(_StaleQuery)
            page = _page(request)
            return _answered(
                read(
                    now=timezone.now(),
                    stale=_span(values, "stale_minutes", "minutes"),
                    confined_to=caller_of(request).confined_to,
                    page=page,
                ),
                page,
            )

    View.__name__ = View.__qualname__ = (
        "".join(part.title() for part in operation.split("-")) + "Api"
    )
    return View


WatchdogApi = _report_view(
    "watchdog",
    "Which tasks need recovery, which a progress update (watchdog.py check --json)",
    _document("`{due, progress, ok}`", required=("due", "progress", "ok")),
    selectors.watchdog_check,
)
RecoverDueTasksApi = _report_view(
    "recover-due-tasks",
    "Each overdue task with its recovery suggestion (recover_due_tasks.py --json)",
    _document("`{due_count, progress_count, items}`", required=("due_count", "items")),
    selectors.recovery_report,
)
EmitRecoveryMessageApi = _report_view(
    "emit-recovery-message",
    "The recovery message of each overdue task (emit_recovery_message.py --json)",
    _document("`{due_count, progress_count, messages}`", required=("due_count", "messages")),
    selectors.recovery_messages,
)
BuildSessionsSendPayloadsApi = _report_view(
    "build-sessions-send-payloads",
    "sessions_send payloads for the overdue tasks, not sent (build_sessions_send_payloads.py)",
    _document("`{due_count, progress_count, tool, payloads}`", required=("due_count", "payloads")),
    selectors.sessions_send_payloads,
)


class RunWatchdogOnceApi(_LongrunView):
    @extend_schema_serializer(component_name="LongrunRunWatchdogInput")
    class InputSerializer(serializers.Serializer[Any]):
        stale_minutes = _minutes(_STALE_HELP, _Count)

    @_schema(
        "run-watchdog-once",
        "Send each overdue task its recovery message or heartbeat (run_watchdog_once.py)",
        _document(
            "`{due_count, progress_count, tool, payloads}`, each payload with its outbox "
            "message and status",
            required=("due_count", "payloads"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Messages go through "
        "the outbox and count as sent only when the channel confirms (D-B10, D-B20). Celery "
        "beat runs it by itself; this runs it once now. Exit code 1 when a payload was made.",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "run-watchdog-once")
        values = self._body(self.InputSerializer)
        return _answered(
            services.watchdog_run_once(
                now=timezone.now(),
                stale=_span(values, "stale_minutes", "minutes"),
                by=caller_of(request).name,
            )
        )


class CleanupStateApi(_LongrunView):
    @extend_schema_serializer(component_name="LongrunCleanupInput")
    class InputSerializer(serializers.Serializer[Any]):
        apply = _Flag(required=False, default=False, help_text="without it, only a report")
        drop_task = serializers.ListField(
            child=_task(), required=False, max_length=_DROP_MAX, help_text="--drop-task"
        )
        drop_test_prefix = serializers.ListField(
            child=_Key(max_length=NAME_MAX_LENGTH),
            required=False,
            max_length=_DROP_MAX,
            help_text="--drop-test-prefix, beside the default 回归-",
        )

    @_schema(
        "cleanup-state",
        "Drop test and broken tasks, archive old finished ones, repair locks (cleanup_state.py)",
        _document(
            "`{normalized, dropped, archived, lock_repairs, task_count_before, task_count_after, "
            "lock_count_before, lock_count_after, apply}`",
            required=("dropped", "apply"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Nothing is deleted "
        "without `apply` (D-B16).",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "cleanup-state")
        values = self._body(self.InputSerializer)
        return _answered(
            services.tasks_cleanup(
                now=timezone.now(),
                apply=values["apply"],
                drop_tasks=values.get("drop_task", ()),
                drop_test_prefixes=values.get("drop_test_prefix", ()),
            )
        )
