"""Entries and their revisions: propose a plan into PLAN.md, revise it (F4, F5)."""

from __future__ import annotations

import re
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from plans.api._common import _WRITE_ERRORS, _documented, _plan_answer, _PlansView, _visible_entry
from plans.api._fields import (
    _MAX_STEPS,
    _NAME_MAX,
    _STEP_MAX,
    _TEXT_MAX,
    _JobField,
    _PlanLineField,
    _PlanOut,
    _ScheduleField,
    _TextField,
)
from plans.runpolicy import (
    MAX_LATENESS_SECONDS,
    MIN_LATENESS_SECONDS,
    MISSED_POLICIES,
    MISSED_RUN_ALL,
    OVERLAP_POLICIES,
)
from plans.services import Proposal, entry_revise, plan_propose
from xworkmate.api_fields import StrictIntegerField
from xworkmate.auth import TURN_HELP, caller_of
from xworkmate.lib.jstext import KEY_MAX_LENGTH
from xworkmate.openapi import api_error_responses


def _choice_error(choices: tuple[str, ...]) -> str:
    # DRF says only "not a valid choice"; the rule names the choices (the input is
    # DRF's own {input} placeholder).
    allowed = ", ".join(f'"{name}"' for name in choices)
    return f'must be one of {allowed} (got "{{input}}")'


class _ProposalFields(serializers.Serializer[Any]):
    taskName = _PlanLineField(max_length=_NAME_MAX, help_text="the plan's name")
    persona = _PlanLineField(max_length=_NAME_MAX, help_text="Role_Context: who runs it")
    objective = _PlanLineField(max_length=_TEXT_MAX, help_text="O: the pain point, and SOUL.md")
    result = _PlanLineField(max_length=_TEXT_MAX, help_text="R: success criteria, deliverables")
    steps = serializers.ListField(
        child=_PlanLineField(max_length=_STEP_MAX),
        min_length=1,
        max_length=_MAX_STEPS,
        help_text="A: the plan's own steps (frequency, logic, failure handling, archiving); "
        "they follow the template's four steps",
    )
    schedule = _ScheduleField(help_text="what the job will run on: cron, every or at")
    message = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=_TEXT_MAX,
        help_text="the job message; it must start with the first instruction (default: "
        "the instruction alone); on propose, {{TASK_UUID}} stands for the new Task_ID",
    )
    # The run policies (D-C23, D-C24); the service checks them with the rule they break.
    missed = serializers.ChoiceField(
        choices=list(MISSED_POLICIES),
        required=False,
        error_messages={"invalid_choice": _choice_error(MISSED_POLICIES)},
        help_text="fire times missed while the service was down: run-latest runs the newest "
        "once (default), skip runs none that is late, run-all runs each no older than "
        "maxLatenessSeconds, oldest first; every one that does not run is recorded",
    )
    maxLatenessSeconds = StrictIntegerField(
        required=False,
        help_text=f'with missed "run-all" (and only then): how late, in seconds '
        f"({MIN_LATENESS_SECONDS}-{MAX_LATENESS_SECONDS}), a missed fire time may still run",
    )
    overlap = serializers.ChoiceField(
        choices=list(OVERLAP_POLICIES),
        required=False,
        error_messages={"invalid_choice": _choice_error(OVERLAP_POLICIES)},
        help_text="a fire time that comes while the previous run is still out: skip it "
        "(default), buffer one to run when the run ends, or allow a run beside it; every "
        "skip is recorded",
    )
    turnId = _TextField(required=False, max_length=200, help_text=TURN_HELP)
    job = _JobField(
        required=False,
        help_text="the job as OpenClaw's cron.add would take it; only the shape D-C7 allows "
        "(isolated, agentTurn, wakeMode now, delivery none + bestEffort) is accepted, and "
        "payload.message (if any) is the message",
    )



def _one_of(names: list[str]) -> dict[str, Any]:
    # A pattern, not an enum: the schema's enum hook would name each enum a component.
    return {"type": "string", "pattern": "^(" + "|".join(re.escape(n) for n in names) + ")$"}


class _RunPolicyRules(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """The schema states the run policies' rules the service checks (D-C23).

    A field schema cannot say "only with another field's value", so the body's
    schema does: maxLatenessSeconds goes with missed "run-all" only, and in its
    range, and a body that names "run-all" gives it (a revise that restates "run-all"
    while the entry keeps its lateness is accepted too; the schema asks for the
    lateness with it, which is always right to send; so does one giving the lateness
    alone to an entry already on "run-all").
    """

    target_class = _ProposalFields
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        lateness = schema.get("properties", {}).get("maxLatenessSeconds")
        if lateness is not None:
            lateness.update(minimum=MIN_LATENESS_SECONDS, maximum=MAX_LATENESS_SECONDS)
        rules: list[dict[str, Any]] = [{
            "anyOf": [
                {"not": {"required": ["maxLatenessSeconds"]}},
                {"required": ["missed"], "properties": {"missed": _one_of([MISSED_RUN_ALL])}},
            ]
        }]
        others = [name for name in MISSED_POLICIES if name != MISSED_RUN_ALL]
        rules.append({
            "anyOf": [
                {"not": {"required": ["missed"]}},
                {"properties": {"missed": _one_of(others)}},
                {"required": ["maxLatenessSeconds"]},
            ]
        })
        schema["allOf"] = [*schema.get("allOf", []), *rules]
        return schema


def _proposal_values(data: dict[str, Any]) -> dict[str, Any]:
    names = {
        "taskName": "task_name",
        "persona": "persona",
        "objective": "objective",
        "result": "result",
        "schedule": "schedule",
        "message": "message",
        "missed": "missed",
        "maxLatenessSeconds": "max_lateness_seconds",
        "overlap": "overlap",
        "job": "job",
    }
    values = {names[k]: v for k, v in data.items() if k in names}
    if "steps" in data:
        values["steps"] = tuple(data["steps"])
    return values


class ProposePlanApi(_PlansView):
    """`POST /api/plans/propose`: write a new entry into the session's PLAN.md (Gate A)."""

    required_scope = "plans:write"

    class InputSerializer(_ProposalFields):
        sessionKey = _TextField(
            required=False,
            # Blank is the archive protocol's BLOCKED receipt, not a field error (§5.6).
            allow_blank=True,
            max_length=KEY_MAX_LENGTH,
            help_text="the OpenClaw session the plan belongs to; ARCHIVE_ID is its last "
            "segment. Required for the bridge; an agent key's own session otherwise",
        )

    @extend_schema(
        operation_id="plans_propose",
        summary="Propose a plan: write it into PLAN.md; nothing is scheduled",
        description="Scope: `plans:write`. Writes `archives/<ARCHIVE_ID>/PLAN.md` (atomic, read "
        "back), answers the plan awaiting a person's confirmation and its `reviewUrl`.",
        request=_documented(InputSerializer, "ProposePlanInput", "sessionKey", "turnId"),
        responses={201: _PlanOut, **api_error_responses(_WRITE_ERRORS)},
        tags=["plans"],
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        caller = caller_of(request)
        session = caller.session(
            params.get("sessionKey", ""),
            "sessionKey",
            refusal="sessionKey: an agent key proposes in its own session only",
        )
        # A blank, missing or unknown Session is refused by the service with the archive
        # protocol's receipt (ARCHIVE_STATUS: BLOCKED / ARCHIVE_REASON: invalid Session).
        entry = plan_propose(
            session_key=session,
            proposal=Proposal(**_proposal_values(params)),
            turn_id=caller.turn(params.get("turnId", "")),
            written_by=caller.name,
            now=timezone.now(),
        )
        return Response({"plan": _plan_answer(request, entry)}, status=201)


class RevisePlanApi(_PlansView):
    required_scope = "plans:write"

    class InputSerializer(_ProposalFields):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            for name, field in self.fields.items():
                if name != "turnId":
                    field.required = False

    @extend_schema(
        operation_id="plans_revise",
        summary="Write a change into PLAN.md as a new revision, then ask again (F4, F5)",
        description="Scope: `plans:write`. The job, if any, keeps the confirmed revision until "
        "the new one is confirmed (D-C3).",
        request=_documented(InputSerializer, "RevisePlanInput", "turnId"),
        responses={200: _PlanOut, **api_error_responses({**_WRITE_ERRORS, 404: "Plan not found"})},
        tags=["plans"],
    )
    def post(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        caller = caller_of(request)
        entry = entry_revise(
            task_id=str(entry.task_id),
            changes=_proposal_values(params),
            turn_id=caller.turn(params.get("turnId", "")),
            written_by=caller.name,
            now=timezone.now(),
        )
        return Response({"plan": _plan_answer(request, entry)})
