"""The job's cron-compatible methods: pause, resume, cancel (D-C4), run now (cron.run), and
Studio's update of a plan's name and enabled flag (§6)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from plans.api._common import _WRITE_ERRORS, _plan_answer, _PlansView, _visible_entry
from plans.api._fields import _PlanOut, _TextField
from plans.models import Entry
from plans.services import entry_cancel, job_pause, job_resume, job_run_now, job_update
from xworkmate.auth import TURN_HELP, caller_of
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import NOT_BLANK_PATTERN, check_max_length, js_trim
from xworkmate.openapi import api_error_responses


class _TurnInput(serializers.Serializer[Any]):
    turnId = _TextField(required=False, max_length=200, help_text=TURN_HELP)


class _JobActionApi(_PlansView):
    required_scope = "plans:write"

    def _act(self, request: Request, entry: Entry, turn: str, now: datetime) -> None:
        raise NotImplementedError

    def post(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        data = _TurnInput(data=request.data)
        data.is_valid(raise_exception=True)
        self._act(request, entry, data.validated_data.get("turnId", ""), timezone.now())
        return Response({"plan": _plan_answer(request, entry)})


def _job_action_schema(
    action: str, summary: str, description: str
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    return extend_schema(
        operation_id=f"plans_{action}",
        summary=summary,
        description=f"Scope: `plans:write`. {description}",
        request=extend_schema_serializer(component_name=f"{action.title()}PlanInput")(
            type(f"{action.title()}PlanInput", (_TurnInput,), {})
        ),
        responses={200: _PlanOut, **api_error_responses({**_WRITE_ERRORS, 404: "Plan not found"})},
        tags=["plans"],
    )


class PausePlanApi(_JobActionApi):
    def _act(self, request: Request, entry: Entry, turn: str, now: datetime) -> None:
        job_pause(task_id=str(entry.task_id), now=now)

    @_job_action_schema(
        "pause", "Pause the plan's job", "Not a plan change: PLAN.md stays as it is (D-C4)."
    )
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class ResumePlanApi(_JobActionApi):
    def _act(self, request: Request, entry: Entry, turn: str, now: datetime) -> None:
        job_resume(task_id=str(entry.task_id), now=now)

    @_job_action_schema(
        "resume", "Resume the plan's job", "Its next run is computed from now (§11 case 73)."
    )
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class CancelPlanApi(_JobActionApi):
    def _act(self, request: Request, entry: Entry, turn: str, now: datetime) -> None:
        # The cancel is a PLAN.md write: it carries its turn when there is one.
        caller = caller_of(request)
        entry_cancel(
            task_id=str(entry.task_id),
            turn_id=caller.turn(turn) if turn or caller.is_agent else "",
            written_by=caller.name,
            now=now,
        )

    @_job_action_schema(
        "cancel",
        "Cancel the plan",
        "Sets the entry's Status to Cancelled in PLAN.md first, then takes its job off the "
        "schedule (D-C4); the job's runs are kept.",
    )
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class RunPlanApi(_PlansView):
    required_scope = "plans:write"

    @extend_schema_serializer(component_name="RunPlanInput")
    class InputSerializer(serializers.Serializer[Any]):
        mode = serializers.ChoiceField(
            choices=["force", "due"], default="force", help_text="force (default) or due"
        )

    @extend_schema(
        operation_id="plans_run",
        summary="Run the plan's job now (cron.run)",
        request=InputSerializer,
        responses={
            200: inline_serializer(
                "RunAnswer",
                {
                    "ok": serializers.BooleanField(),
                    "ran": serializers.BooleanField(),
                    "reason": serializers.ChoiceField(
                        choices=["already-running", "not-due"], required=False
                    ),
                },
            ),
            **api_error_responses({**_WRITE_ERRORS, 404: "Plan not found"}),
        },
        tags=["plans"],
    )
    def post(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = job_run_now(
            task_id=str(entry.task_id), mode=data.validated_data["mode"], now=timezone.now()
        )
        return Response(answer)


# --- Studio's PUT /plans/<id> (§6) -------------------------------------------------------

# Studio's own refusals, in its order and words (spec §6).
_NOT_AN_OBJECT = "Request body must be a JSON object"
_ONLY_NAME_AND_ENABLED = "Request body must contain only `name` and/or `enabled`"
_BLANK_NAME = "name must be a non-empty string when provided"
_NOT_A_BOOLEAN = "enabled must be a boolean when provided"
JOB_NAME_MAX = 500  # the job's name column


def plan_update_input(body: object) -> tuple[str | None, bool | None]:
    """The name (trimmed) and enabled flag a plan update asks for; None = unchanged.

    Anything but those two keys is refused, an empty body too: the schedule, the
    delivery and PLAN.md never change through an update (they need a revision
    and its confirmation).
    """
    if not isinstance(body, dict):
        raise InputError(_NOT_AN_OBJECT)
    if not body or set(body) - {"name", "enabled"}:
        raise InputError(_ONLY_NAME_AND_ENABLED)
    name = body.get("name")
    if "name" in body and (not isinstance(name, str) or not js_trim(name)):
        raise InputError(_BLANK_NAME)
    enabled = body.get("enabled")
    if "enabled" in body and not isinstance(enabled, bool):
        raise InputError(_NOT_A_BOOLEAN)
    trimmed = check_max_length("name", js_trim(name), JOB_NAME_MAX) if name is not None else None
    return trimmed, enabled


def plan_update(request: Request, task_id: str) -> Response:
    """PUT /api/plans/<id>: rename the plan's job, or pause / resume it (plans:write, D-C22)."""
    entry = _visible_entry(request, task_id)
    name, enabled = plan_update_input(request.data)
    job_update(task_id=str(entry.task_id), name=name, enabled=enabled, now=timezone.now())
    return Response({"plan": _plan_answer(request, entry)})


PLAN_UPDATE_SCHEMA = extend_schema(
    operation_id="plans_update",
    summary="Rename the plan's job, or pause or resume it (Studio's plan update)",
    description=(
        "Scope: `plans:write`. The body holds only `name` (a non-empty string) and/or "
        "`enabled` (a boolean); anything else, or an empty body, is refused with Studio's "
        "message. The schedule and PLAN.md never change here: `enabled: false` pauses "
        "the job as `pause` does, `true` resumes it as `resume` does (D-C4)."
    ),
    # The body as plan_update_input takes it: one or both keys, nothing else.
    request={
        "application/json": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            # One of the two at least: so the body itself is required.
            "anyOf": [{"required": ["name"]}, {"required": ["enabled"]}],
            "properties": {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": JOB_NAME_MAX,
                    "pattern": NOT_BLANK_PATTERN,
                },
                "enabled": {"type": "boolean"},
            },
        }
    },
    responses={200: _PlanOut, **api_error_responses({**_WRITE_ERRORS, 404: "Plan not found"})},
    tags=["plans"],
)
