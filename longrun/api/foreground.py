"""validate_task_start.py and the foreground heartbeat (§7.2–§7.8)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import selectors
from longrun.api._base import _answered, _LongrunView, _optional, _page, _span
from longrun.api._fields import (
    _COOLDOWN_HELP,
    _Key,
    _minutes,
    _StaleQuery,
    _State,
    _task,
    _TaskQuery,
    _Text,
)
from longrun.api._schema import _ONE_TASK, _REPORT, _REPORT_NOTE, _document, _Errors, _schema
from longrun.policies.states import STATES
from xworkmate.auth import caller_of

# --- validate_task_start.py and the foreground heartbeat (§7.2–§7.8) -----------------------------


class ValidateTaskStartApi(_LongrunView):
    class QuerySerializer(serializers.Serializer[Any]):
        task = _task()
        expect_session_key = _Key(
            required=False, help_text="the real session key the task must be bound to"
        )
        expect_state = serializers.ListField(
            child=_State(),
            required=False,
            max_length=len(STATES),
            help_text="repeatable; default analyzing, executing, waiting",
        )

    @_schema(
        "validate-task-start",
        "Did the task really start in its target session? (validate_task_start.py)",
        _document(
            "`{ok, task, state, …, errors, message}`; a task not found (or another session's) "
            "is `{ok: false, error: task_not_found, …}` with exit code 1, as the original",
            required=("ok", "task", "message"),
        ),
        {400: _ONE_TASK[400], 403: _ONE_TASK[403]},
        query=QuerySerializer,
        description="Scope: `longrun:read`. Only `ok: true` lets the agent say the mode is "
        "on; a failed validation is 200 with exit code 2.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(self.QuerySerializer)
        return _answered(
            selectors.task_start_validation(
                name=values["task"],
                expect_session_key=_optional(values, "expect_session_key"),
                expect_states=values.get("expect_state", ()),
                confined_to=caller_of(request).confined_to,
            )
        )


_FOREGROUND_ERRORS: _Errors = {
    **_ONE_TASK,
    409: (
        "`missing origin_session_key for task: <t>`: an analyzing or executing task without "
        "a session key (exit 4)",
        ("CONFLICT",),
    ),
}


class ForegroundCheckApi(_LongrunView):
    @_schema(
        "check-foreground-progress",
        "Is a visible progress update due now? (check_foreground_progress.py)",
        _document("`{task, …, due, reason}`", required=("task", "due", "reason")),
        _FOREGROUND_ERRORS,
        query=_TaskQuery,
        description="Scope: `longrun:read`. Exit code 1 when due.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.foreground_check(
                name=values["task"], now=timezone.now(), confined_to=caller_of(request).confined_to
            )
        )


class ProgressUpdateApi(_LongrunView):
    @_schema(
        "build-progress-update",
        "The short progress message of a task (build_progress_update.py)",
        _document(
            "`{task, session_label, origin_session_key, state, message}`",
            required=("task", "message"),
        ),
        _ONE_TASK,
        query=_TaskQuery,
        description="Scope: `longrun:read`. 正在看什么 / 刚确认什么 / 下一步是什么.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.progress_update(
                name=values["task"], confined_to=caller_of(request).confined_to
            )
        )


class ForegroundTickApi(_LongrunView):
    @_schema(
        "foreground-tick",
        "The check, and the message when it is due (foreground_tick.py)",
        _document("`{task, due, check, message, delivery, sessionKey, session_label, state}`"),
        _FOREGROUND_ERRORS,
        query=_TaskQuery,
        description="Scope: `longrun:read`. Exit code 1 when due. A task that owes no "
        "progress (not analyzing or executing) answers `sessionKey`, `session_label` and "
        "`state` null, as the original.",
    )
    def get(self, request: Request) -> Response:
        values = self._query(_TaskQuery)
        return _answered(
            selectors.foreground_tick(
                name=values["task"], now=timezone.now(), confined_to=caller_of(request).confined_to
            )
        )


class WorkCycleTickApi(_LongrunView):
    """A POST although it writes nothing: the step text may be longer than a URL takes."""

    @extend_schema_serializer(component_name="LongrunWorkCycleInput")
    class InputSerializer(serializers.Serializer[Any]):
        task = _task()
        step = _Text(required=False, help_text="what this work cycle just did")

    @_schema(
        "work-cycle-tick",
        "Run after each step: must a progress message go out first? (work_cycle_tick.py)",
        _document(
            "`{task, step, continue, report_now, must_send_now, delivery, sessionKey, "
            "session_label, message, reason, instruction, protocol}`",
            required=("task", "must_send_now", "instruction", "protocol"),
        ),
        {**_FOREGROUND_ERRORS, 411: "", 415: ""},
        request=InputSerializer,
        description="Scope: `longrun:read` (it writes nothing). `must_send_now: true` is the "
        "gate: send the message first (exit code 1). A task that owes no progress answers "
        "`state=<state>` (D-B6).",
    )
    def post(self, request: Request) -> Response:
        values = self._body(self.InputSerializer)
        return _answered(
            selectors.work_cycle_tick(
                name=values["task"],
                step=_optional(values, "step"),
                now=timezone.now(),
                confined_to=caller_of(request).confined_to,
            )
        )


class _EmitForegroundQuery(_StaleQuery):
    unknown_cooldown_minutes = _minutes(_COOLDOWN_HELP)


class _DispatchQuery(serializers.Serializer[Any]):
    unknown_cooldown_minutes = _minutes(_COOLDOWN_HELP)


class EmitForegroundDueApi(_LongrunView):
    @_schema(
        "emit-foreground-due",
        "The heartbeat events due now (emit_foreground_due.py)",
        _document(
            "`{event_count, events, skipped_unknown_count, skipped_unknown}`",
            required=("event_count", "events"),
        ),
        _REPORT,
        query=_EmitForegroundQuery,
        description=f"{_REPORT_NOTE} Exit code 1 when there are events.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        values = self._query(_EmitForegroundQuery)
        page = _page(request)
        return _answered(
            selectors.foreground_due_events(
                now=timezone.now(),
                stale=_span(values, "stale_minutes", "minutes"),
                unknown_cooldown=_span(values, "unknown_cooldown_minutes", "minutes"),
                confined_to=caller_of(request).confined_to,
                page=page,
            ),
            page,
        )


class DispatchForegroundDueApi(_LongrunView):
    @_schema(
        "dispatch-foreground-due",
        "The sessions_send plan for the due heartbeats (dispatch_foreground_due.py)",
        _document(
            "`{dispatch_count, dispatches, skipped_unknown_count, skipped_unknown, note}`",
            required=("dispatch_count", "dispatches"),
        ),
        _REPORT,
        query=_DispatchQuery,
        description=f"{_REPORT_NOTE} Exit code 1 when there are dispatches.",
        paged=True,
    )
    def get(self, request: Request) -> Response:
        values = self._query(_DispatchQuery)
        page = _page(request)
        return _answered(
            selectors.foreground_dispatch_plan(
                now=timezone.now(),
                unknown_cooldown=_span(values, "unknown_cooldown_minutes", "minutes"),
                confined_to=caller_of(request).confined_to,
                page=page,
            ),
            page,
        )
