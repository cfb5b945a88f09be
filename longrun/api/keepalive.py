"""Keepalive (§7.9): keepalive_tick.py, emit_keepalive_resume.py, run_keepalive_once.py."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors, services
from longrun.api._base import _answered, _for_every_session, _LongrunView, _span
from longrun.api._fields import _IDLE_HELP, _Count, _QueryCount, _TaskQuery
from longrun.api._schema import _EVERY_SESSION, _ONE_TASK, _document, _schema
from longrun.policies.timing import MAX_THRESHOLD_SECONDS
from xworkmate.auth import caller_of

# --- keepalive (§7.9) ----------------------------------------------------------------------------


class _KeepaliveQuery(_TaskQuery):
    idle_seconds = _QueryCount(
        required=False, min_value=1, max_value=MAX_THRESHOLD_SECONDS, help_text=_IDLE_HELP
    )


class KeepaliveTickApi(_LongrunView):
    @_schema(
        "keepalive-tick",
        "Has the task been idle too long? (keepalive_tick.py)",
        _document(
            "`{task, …, should_resume, reason, resume_message, instruction}`",
            required=("task", "should_resume", "reason"),
        ),
        _ONE_TASK,
        query=_KeepaliveQuery,
        description="Scope: `longrun:read`. Exit code 1 when it should resume.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_KeepaliveQuery)
        return _answered(
            selectors.keepalive_tick(
                name=values["task"],
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                confined_to=caller_of(request).confined_to,
            )
        )


class EmitKeepaliveResumeApi(_LongrunView):
    @_schema(
        "emit-keepalive-resume",
        "The resume event of an idle task (emit_keepalive_resume.py)",
        _document("`{event_count, events}` (and `reason` when none)", required=("event_count",)),
        {
            **_ONE_TASK,
            409: (
                "`missing origin_session_key; cannot emit portable keepalive event` (exit 4)",
                ("CONFLICT",),
            ),
        },
        query=_KeepaliveQuery,
        description="Scope: `longrun:read`. Generated, not sent. Exit code 1 with an event.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_KeepaliveQuery)
        return _answered(
            selectors.keepalive_resume_event(
                name=values["task"],
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                confined_to=caller_of(request).confined_to,
            )
        )


class RunKeepaliveOnceApi(_LongrunView):
    @extend_schema_serializer(component_name="LongrunRunKeepaliveInput")
    class InputSerializer(serializers.Serializer[Any]):
        idle_seconds = _Count(
            required=False, min_value=1, max_value=MAX_THRESHOLD_SECONDS, help_text=_IDLE_HELP
        )

    @_schema(
        "run-keepalive-once",
        "Plan (or, with longrun.auto_resume, queue) a resume for every idle task "
        "(run_keepalive_once.py)",
        _document(
            "`{scanned_active_tasks, dispatch_count, resumed_count, failed_count, dispatches, "
            "note}`",
            required=("dispatch_count", "dispatches"),
        ),
        _EVERY_SESSION,
        request=InputSerializer,
        description="Scope: `longrun:write`, a key not bound to a session. Celery beat runs "
        "it by itself; this runs it once now. Exit code 1 when a task failed.",
    )
    def post(self, request: Request) -> Response:
        _for_every_session(request, "run-keepalive-once")
        values = self._body(self.InputSerializer)
        return _answered(
            services.keepalive_run_once(
                now=timezone.now(),
                idle=_span(values, "idle_seconds", "seconds"),
                by=caller_of(request).name,
            )
        )
