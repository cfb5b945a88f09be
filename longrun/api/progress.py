"""task_state.py's progress and activity reports (§7.1): touch-progress,
mark-progress-<outcome>, mark-visible-reply, mark-tool-result and mark-resume."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from longrun import services
from longrun.api._base import _answered, _LongrunView, _optional
from longrun.api._fields import _Key, _task, _Text
from longrun.api._schema import _RECORD_SCHEMA, _WRITE, _schema
from longrun.models import SHA256_LENGTH
from xworkmate.auth import caller_of


class _ProgressInput(serializers.Serializer[Any]):
    task = _task()
    note = _Text(required=False, help_text="kept in the task log, not as the next step (D-B8)")
    delivery_id = _Key(required=False)
    message_hash = _Key(required=False, max_length=SHA256_LENGTH)


class _ProgressErrorInput(_ProgressInput):
    error = _Text(required=False, help_text="why the send failed")


class _ProgressApi(_LongrunView):
    """touch-progress and mark-progress-<outcome>: the agent reports a delivery."""

    outcome: services.ProgressOutcome
    input_serializer: type[serializers.Serializer[Any]] = _ProgressInput

    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(self.input_serializer)
        return _answered(
            services.task_progress_record(
                name=values["task"],
                outcome=self.outcome,
                error=_optional(values, "error"),
                note=_optional(values, "note"),
                delivery_id=_optional(values, "delivery_id"),
                message_hash=_optional(values, "message_hash"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


def _progress_view(
    name: str, outcome: services.ProgressOutcome, summary: str
) -> type[_ProgressApi]:
    serializer = (
        _ProgressErrorInput if outcome in ("attempt", "unknown", "failed") else _ProgressInput
    )

    class View(_ProgressApi):
        input_serializer = serializer

        @_schema(
            name,
            summary,
            _RECORD_SCHEMA,
            _WRITE,
            request=extend_schema_serializer(component_name=f"Longrun{outcome.title()}Input")(
                type(f"Longrun{outcome.title()}Input", (serializer,), {})
            ),
            description="Scope: `longrun:write`. Sent and touch are the agent's visible "
            "progress; an attempt, an unknown outcome or a failure moves no activity clock (D-B9).",
        )
        def post(self, request: Request) -> Response:
            return super().post(request)

    View.outcome = outcome
    View.__name__ = View.__qualname__ = f"{outcome.title()}ProgressApi"
    return View


TouchProgressApi = _progress_view(
    "touch-progress", "touch", "The progress message arrived (task_state.py touch-progress)"
)
MarkProgressAttemptApi = _progress_view(
    "mark-progress-attempt", "attempt", "A progress send was attempted (mark-progress-attempt)"
)
MarkProgressSentApi = _progress_view(
    "mark-progress-sent", "sent", "A foreground event was delivered (mark-progress-sent)"
)
MarkProgressUnknownApi = _progress_view(
    "mark-progress-unknown", "unknown", "A send timed out: outcome unknown (mark-progress-unknown)"
)
MarkProgressFailedApi = _progress_view(
    "mark-progress-failed", "failed", "A send failed (mark-progress-failed)"
)


class _NoteInput(serializers.Serializer[Any]):
    task = _task()
    note = _Text(required=False, help_text="kept in the task log")


class _ActivityApi(_LongrunView):
    signal: services.ActivitySignal

    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(_NoteInput)
        return _answered(
            services.task_activity_record(
                name=values["task"],
                signal=self.signal,
                note=_optional(values, "note"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )


class MarkVisibleReplyApi(_ActivityApi):
    signal = "visible_reply"

    @_schema(
        "mark-visible-reply",
        "The agent replied visibly (task_state.py mark-visible-reply)",
        _RECORD_SCHEMA,
        _WRITE,
        request=extend_schema_serializer(component_name="LongrunActivityInput")(_NoteInput),
        description="Scope: `longrun:write`. A keepalive activity signal.",
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class MarkToolResultApi(_ActivityApi):
    signal = "tool_result"

    @_schema(
        "mark-tool-result",
        "A tool answered (task_state.py mark-tool-result)",
        _RECORD_SCHEMA,
        _WRITE,
        request=extend_schema_serializer(component_name="LongrunActivityInput")(_NoteInput),
        description="Scope: `longrun:write`. A keepalive activity signal.",
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class MarkResumeApi(_LongrunView):
    @extend_schema_serializer(component_name="LongrunResumeInput")
    class InputSerializer(_NoteInput):
        reason = _Key(required=False, max_length=64, help_text="default manual")

    @_schema(
        "mark-resume",
        "The task was resumed (task_state.py mark-resume)",
        _RECORD_SCHEMA,
        _WRITE,
        request=InputSerializer,
        description="Scope: `longrun:write`.",
    )
    def post(self, request: Request) -> Response:
        caller = caller_of(request)
        values = self._body(self.InputSerializer)
        return _answered(
            services.task_resume_record(
                name=values["task"],
                reason=_optional(values, "reason"),
                note=_optional(values, "note"),
                confined_to=caller.confined_to,
                by=caller.name,
                now=timezone.now(),
            )
        )
