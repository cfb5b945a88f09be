"""REST endpoints of the plans app."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from plans.conf import plans_conf, plans_workspace
from plans.models import Entry, Job
from plans.planfile import PlanFileError, read_plan_file
from plans.policies import clarification_problems
from plans.schedule import ScheduleError
from plans.schedule.schema import STRIPPED_CLASS, schedule_schema
from plans.selectors import (
    DEFAULT_RUNS_PAGE,
    MAX_PREVIEW_RUNS,
    MAX_RUNS_PAGE,
    MAX_SCHEDULE_MS,
    PreviewRequestError,
    entries_visible_to,
    entry_visible_to,
    job_of,
    jobs_of,
    runs_page,
    schedule_preview,
)
from plans.services import (
    PlanGateError,
    Proposal,
    entry_cancel,
    entry_confirm,
    entry_request_changes,
    entry_revise,
    job_pause,
    job_resume,
    job_run_now,
    plan_propose,
)
from plans.wire import cron_add_request, entry_json, run_json
from xworkmate.api_errors import error_body
from xworkmate.auth import TURN_HELP, Caller, HasScope, caller_of
from xworkmate.lib.errors import GatewayError
from xworkmate.lib.jstime import ms_to_iso
from xworkmate.lib.paging import Page
from xworkmate.lib.wire import KEY_MAX_LENGTH
from xworkmate.openapi import api_error_responses
from xworkmate.paging import page_of, page_parameters


class _ScheduleField(serializers.DictField):
    """A schedule object; the scheduler checks it (its messages are the answer's)."""

    preview = False  # a job's schedule: everyMs a whole number


class _PreviewScheduleField(_ScheduleField):
    preview = True  # the preview floors a fractional everyMs (D-C10)


class _ScheduleSchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    """A schedule's shape per kind, with this service's plans.min_every (D-K15)."""

    target_class = _ScheduleField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        min_every = plans_conf().min_every
        return schedule_schema(
            min_every_ms=int(min_every.total_seconds() * 1000), preview=self.target.preview
        )


# Not blank once stripped as DRF strips (Python's str.strip, STRIPPED_CLASS), and no
# NUL: the service refuses one in any string (D-K15).
@extend_schema_field(
    {"type": "string", "pattern": f"^[^\\u0000]*[^\\u0000{STRIPPED_CLASS}][^\\u0000]*$"}
)
class _TextField(serializers.CharField):
    """A string field that refuses a number instead of turning it into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


# The upper bound is the preview's own check (D-C12), with its own message.
@extend_schema_field({"type": "integer", "minimum": 0, "maximum": MAX_SCHEDULE_MS})
class _AfterMsField(serializers.IntegerField):
    pass


class SchedulePreviewApi(APIView):
    """`POST /api/plans/schedule-preview`: the next fire times of a schedule."""

    permission_classes = [HasScope]
    required_scope = "plans:read"

    @extend_schema_serializer(component_name="SchedulePreviewInput")
    class InputSerializer(serializers.Serializer[Any]):
        schedule = _PreviewScheduleField(
            help_text='{"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"}, '
            '{"kind": "every", "everyMs": 3600000, "anchorMs": ...} or '
            '{"kind": "at", "at": "2026-12-01T09:00:00+08:00"}; a schedule the scheduler '
            "refuses is a 400 INVALID_SCHEDULE with its message"
        )
        afterMs = _AfterMsField(required=False, min_value=0, help_text="epoch ms; default now")
        count = serializers.IntegerField(default=10, min_value=1, max_value=MAX_PREVIEW_RUNS)
        jobId = _TextField(
            required=False, max_length=200, help_text="job id for the top-of-hour stagger"
        )
        hostTz = _TextField(
            required=False,
            help_text="IANA zone of a cron schedule without tz (else a 400 INVALID_SCHEDULE); "
            "default plans.time_zone",
        )

    @extend_schema_serializer(component_name="SchedulePreviewRun")
    class RunSerializer(serializers.Serializer[Any]):
        ms = serializers.IntegerField()
        iso = serializers.CharField(help_text="UTC, milliseconds, Z")

    @extend_schema(
        operation_id="plans_schedule_preview",
        summary="Preview the next runs of a schedule",
        description=(
            "Scope: `plans:read`. Times follow OpenClaw's scheduler (croner 10), DST included."
        ),
        request=InputSerializer,
        responses={
            200: inline_serializer(
                "SchedulePreview",
                {"runs": serializers.ListField(child=RunSerializer())},
            ),
            **api_error_responses(
                {
                    400: (
                        "INVALID_SCHEDULE with the scheduler's message, or INVALID_REQUEST "
                        "naming the field",
                        ("INVALID_SCHEDULE", "INVALID_REQUEST"),
                    ),
                    403: "the API key lacks `plans:read`",
                    411: "",
                    415: "",
                }
            ),
        },
        examples=[
            OpenApiExample(
                "cron",
                request_only=True,
                value={
                    "schedule": {"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"},
                    "afterMs": 1772870400000,
                    "count": 2,
                },
            )
        ],
        tags=["plans"],
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        config = settings.XWORKMATE
        try:
            runs = schedule_preview(
                schedule=params["schedule"],
                after_ms=params.get("afterMs", int(time.time() * 1000)),
                count=params["count"],
                host_tz=params.get("hostTz") or plans_conf(config).time_zone,
                min_every_ms=int(plans_conf(config).min_every.total_seconds() * 1000),
                job_id=params.get("jobId"),
            )
        except PreviewRequestError as exc:
            return Response(error_body("INVALID_REQUEST", str(exc), envelope=False), status=400)
        except ScheduleError as exc:
            return Response(error_body("INVALID_SCHEDULE", str(exc), envelope=False), status=400)
        return Response({"runs": [{"ms": ms, "iso": ms_to_iso(ms)} for ms in runs]})


# --- plans: propose, review, confirm, run -------------------------------------------------------

# PLAN.md values the API takes are one line each, without braces: the entry's rules
# (R6, R4) would refuse a line break or a template placeholder ({{…}}, {ARCHIVE_ID})
# later, after the schema said yes. No brace at all keeps the schema's pattern
# plain (a pattern with lookaheads stalls schema-driven clients and fuzzers); no
# NUL, as in every string (D-K15).
_LINE_CHARS = "^\\u0000\\n\\r{}"


@extend_schema_field(
    {
        "type": "string",
        "pattern": f"^[{_LINE_CHARS}]*[{_LINE_CHARS}{STRIPPED_CLASS}][{_LINE_CHARS}]*$",
    }
)
class _PlanLineField(_TextField):
    """One line of a PLAN.md entry: text, not blank, no line break, no brace."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if "\n" in value or "\r" in value:
            raise ValidationError("must be one line (no line break)")
        if "{" in value or "}" in value:
            raise ValidationError("must not contain { or } (the template's placeholder marks)")
        return value


_UUID_PATTERN = "[0-9a-fA-F-]{36}"
_NAME_MAX, _TEXT_MAX, _STEP_MAX, _MAX_STEPS = 200, 4000, 2000, 20


def _visible_entry(request: Request, task_id: str) -> Entry:
    entry = entry_visible_to(task_id, caller_of(request).confined_to)
    if entry is None:
        raise NotFound("Plan not found")
    return entry


# The contract's one message for any bad paging parameter (§6, case 92).
_BAD_PAGE = "Invalid query parameter `{name}`"


def _page(request: Request) -> Page:
    return page_of(request, default=DEFAULT_RUNS_PAGE, maximum=MAX_RUNS_PAGE, refusal=_BAD_PAGE)


_PAGE_PARAMETERS = page_parameters(default=DEFAULT_RUNS_PAGE, maximum=MAX_RUNS_PAGE)


def _plan_answer(request: Request, entry: Entry) -> dict[str, Any]:
    """One plan as it is now (a service may have changed it since it was read)."""
    fresh = entry_visible_to(str(entry.task_id), None)
    if fresh is None:
        raise NotFound("Plan not found")
    return _plan_json(request, fresh, job_of(fresh))


def _plan_json(request: Request, entry: Entry, job: Job | None) -> dict[str, Any]:
    url = request.build_absolute_uri(reverse("admin:plans_entry_change", args=[entry.pk]))
    return entry_json(entry, job, review_url=url)


class _PlansView(APIView):
    """A plans endpoint: the services' refusals answer with their code and rule (D-C16)."""

    permission_classes = [HasScope]
    required_scope = "plans:read"

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, GatewayError):
            return Response(
                error_body(exc.code, exc.message, envelope=False), status=exc.http_status
            )
        return super().handle_exception(exc)


_PLAN_SCHEMA = {
    "type": "object",
    "description": "a plan: one Task_ID of a PLAN.md, its protocol state and its job "
    "(OpenClaw's CronJob, §8.1); absent values are left out",
    "required": ["taskId", "taskName", "archiveId", "planPath", "state", "revision"],
    "properties": {
        "taskId": {"type": "string", "format": "uuid"},
        "taskName": {"type": "string"},
        "archiveId": {"type": "string"},
        "planPath": {"type": "string"},
        "sessionKey": {"type": "string"},
        "agentId": {"type": "string"},
        "state": {"type": "string", "enum": [code for code, _ in Entry.STATES]},
        "revision": {"type": "object"},
        "confirmedRevision": {"type": "integer"},
        "awaitingConfirmation": {"type": "boolean"},
        "schedule": {"type": "object"},
        "job": {"type": "object"},
        "reviewUrl": {"type": "string"},
    },
}


@extend_schema_field(_PLAN_SCHEMA)
class _PlanField(serializers.JSONField):
    pass


_PlanOut = inline_serializer("Plan", {"plan": _PlanField()})


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string"},
            "sessionTarget": {"type": "string", "enum": ["isolated"]},
            "wakeMode": {"type": "string", "enum": ["now"]},
            "enabled": {"type": "boolean", "enum": [True]},
            "payload": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind"],
                "properties": {
                    "kind": {"type": "string", "enum": ["agentTurn"]},
                    "message": {"type": "string", "maxLength": 4000},
                },
            },
            "delivery": {
                "type": "object",
                "additionalProperties": False,
                "required": ["mode", "bestEffort"],
                "properties": {
                    "mode": {"type": "string", "enum": ["none"]},
                    "bestEffort": {"type": "boolean", "enum": [True]},
                },
            },
        },
    }
)
class _JobField(serializers.DictField):
    """A cron.add job; the service names the rule a wrong shape breaks (D-C7)."""


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
    missed = serializers.ChoiceField(
        choices=["run-latest", "skip"],
        required=False,
        help_text="fire times missed while the service was down: run the newest once "
        "(default) or skip them; both are recorded",
    )
    turnId = _TextField(required=False, max_length=200, help_text=TURN_HELP)
    job = _JobField(
        required=False,
        help_text="the job as OpenClaw's cron.add would take it; only the shape D-C7 allows "
        "(isolated, agentTurn, wakeMode now, delivery none + bestEffort) is accepted, and "
        "payload.message (if any) is the message",
    )


def _proposal_values(data: dict[str, Any]) -> dict[str, Any]:
    names = {
        "taskName": "task_name",
        "persona": "persona",
        "objective": "objective",
        "result": "result",
        "schedule": "schedule",
        "message": "message",
        "missed": "missed",
        "job": "job",
    }
    values = {names[k]: v for k, v in data.items() if k in names}
    if "steps" in data:
        values["steps"] = tuple(data["steps"])
    return values


_Errors = dict[int, str | tuple[str, tuple[str, ...]]]
_WRITE_ERRORS: _Errors = {
    400: ("a field breaks its rule (named), or the schedule is refused", ("INVALID_REQUEST",)),
    403: "the key lacks `plans:write`, or an agent key names another session or turn",
    409: (
        "BLOCKED (the PLAN.md write did not verify) or REFUSED (the gate's rule, named)",
        ("BLOCKED", "REFUSED", "CONFLICT"),
    ),
    411: "",
    415: "",
}


def _documented(
    serializer: type[serializers.Serializer[Any]], component: str, *required: str
) -> type[serializers.Serializer[Any]]:
    """The request as the schema states it for the bridge's keys, which must send `required`.

    An agent key may leave those out (its own session and run are used, D-C14);
    the view validates with `serializer` itself, where they are optional.
    """

    class Documented(serializer):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            for name in required:
                self.fields[name].required = True

    Documented.__name__ = component
    documented: type[serializers.Serializer[Any]] = extend_schema_serializer(
        component_name=component
    )(Documented)
    return documented


class ProposePlanApi(_PlansView):
    """`POST /api/plans/propose`: write a new entry into the session's PLAN.md (Gate A)."""

    required_scope = "plans:write"

    class InputSerializer(_ProposalFields):
        sessionKey = _TextField(
            required=False,
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
        if not session:
            raise ValidationError({"sessionKey": "required, the session the plan belongs to"})
        entry = plan_propose(
            session_key=session,
            proposal=Proposal(**_proposal_values(params)),
            turn_id=caller.turn(params.get("turnId", "")),
            written_by=caller.name,
            now=timezone.now(),
        )
        return Response({"plan": _plan_answer(request, entry)}, status=201)


class PlansListApi(_PlansView):
    @extend_schema(
        operation_id="plans_list",
        summary="The plans this key may see, newest change first",
        parameters=_PAGE_PARAMETERS,
        responses={
            200: inline_serializer(
                "PlanList",
                {
                    "plans": serializers.ListField(child=_PlanField()),
                    "total": serializers.IntegerField(),
                    "offset": serializers.IntegerField(),
                    "limit": serializers.IntegerField(),
                    "hasMore": serializers.BooleanField(),
                    "nextOffset": serializers.IntegerField(allow_null=True),
                },
            ),
            **api_error_responses(
                {
                    400: "Invalid query parameter `limit` (or `offset`)",
                    403: "the key lacks `plans:read`",
                }
            ),
        },
        tags=["plans"],
    )
    def get(self, request: Request) -> Response:
        page = _page(request)
        entries = entries_visible_to(caller_of(request).confined_to)
        total = entries.count()
        shown = list(entries[page.offset : page.end])
        jobs = jobs_of(shown)  # one query for the page, not one per plan
        return Response(
            {
                "plans": [_plan_json(request, entry, jobs.get(entry.pk)) for entry in shown],
                **page.fields(len(shown), total),
            }
        )


_READ_ERRORS: _Errors = {
    403: "the key lacks `plans:read`",
    404: "Plan not found (or not this key's)",
}


class PlanDetailApi(_PlansView):
    @extend_schema(
        operation_id="plans_detail",
        summary="One plan: its state, revisions and job",
        responses={200: _PlanOut, **api_error_responses(_READ_ERRORS)},
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        return Response({"plan": _plan_answer(request, _visible_entry(request, task_id))})


class PlanContentApi(_PlansView):
    @extend_schema(
        operation_id="plans_content",
        summary="The PLAN.md the plan is in, as it is on disk",
        responses={
            200: inline_serializer("PlanContent", {"content": serializers.CharField()}),
            **api_error_responses(
                {
                    **_READ_ERRORS,
                    404: "Plan not found, or PLAN.md not found",
                    502: ("Failed to read PLAN.md: <why>", ("BAD_GATEWAY",)),
                }
            ),
        },
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        try:
            content = read_plan_file(plans_workspace(), entry.plan.archive_id)
        except PlanFileError as exc:
            return Response(
                error_body("BAD_GATEWAY", f"Failed to read PLAN.md: {exc}", envelope=False),
                status=502,
            )
        if content is None:
            raise NotFound("PLAN.md not found")
        return Response({"content": content})


class PlanRunsApi(_PlansView):
    @extend_schema(
        operation_id="plans_runs",
        summary="The plan's runs (the run log of §8.5), newest first",
        parameters=[
            *_PAGE_PARAMETERS,
            OpenApiParameter("sortDir", {"type": "string", "enum": ["asc", "desc"]}),
        ],
        responses={
            200: inline_serializer(
                "PlanRuns",
                {
                    "entries": serializers.ListField(child=serializers.JSONField()),
                    "total": serializers.IntegerField(),
                    "offset": serializers.IntegerField(),
                    "limit": serializers.IntegerField(),
                    "hasMore": serializers.BooleanField(),
                    "nextOffset": serializers.IntegerField(allow_null=True),
                },
            ),
            **api_error_responses(
                {**_READ_ERRORS, 400: "Invalid query parameter `limit` (or `offset`, `sortDir`)"}
            ),
        },
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        page = _page(request)
        directions = request.query_params.getlist("sortDir") or ["desc"]
        direction = directions[0]
        if len(directions) > 1 or direction not in ("asc", "desc"):
            raise ValidationError("Invalid query parameter `sortDir`")
        job = job_of(entry)
        runs, total = (
            runs_page(job, limit=page.limit, offset=page.offset, newest_first=direction == "desc")
            if job
            else ([], 0)
        )
        return Response(
            {
                "entries": [run_json(run, job_id=job.job_id) for run in runs] if job else [],
                **page.fields(len(runs), total),
            }
        )


class PlanExportApi(_PlansView):
    @extend_schema(
        operation_id="plans_export",
        summary="The confirmed plan as the exact OpenClaw cron.add request (D-C9)",
        responses={
            200: inline_serializer("CronAddRequest", {"request": serializers.JSONField()}),
            **api_error_responses(
                {**_READ_ERRORS, 409: ("REFUSED: the plan has no confirmed job", ("REFUSED",))}
            ),
        },
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        job = job_of(_visible_entry(request, task_id))
        if job is None:
            raise PlanGateError("D-C9: only a confirmed plan exports; confirm it first")
        return Response({"request": cron_add_request(job)})


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


class _UserMessage(serializers.Serializer[Any]):
    revision = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, help_text="the PLAN.md revision the user answered"
    )
    message = _TextField(max_length=_STEP_MAX, help_text="the user's own message, verbatim")
    turnId = _TextField(required=False, max_length=200, help_text=TURN_HELP)


class _UserMessageApi(_PlansView):
    """Relays the user's own message about revision k; `_relay` says what it does."""

    required_scope = "plans:write"

    class InputSerializer(_UserMessage):
        pass

    def _relay(self, entry: Entry, params: dict[str, Any], *, turn: str, caller: Caller) -> None:
        raise NotImplementedError

    def post(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        caller = caller_of(request)
        self._relay(entry, params, turn=caller.turn(params.get("turnId", "")), caller=caller)
        return Response({"plan": _plan_answer(request, entry)})


def _message_schema(
    operation: str, component: str, summary: str, description: str
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    return extend_schema(
        operation_id=operation,
        summary=summary,
        description=f"Scope: `plans:write`. {description}",
        request=_documented(_UserMessageApi.InputSerializer, component, "turnId"),
        responses={200: _PlanOut, **api_error_responses({**_WRITE_ERRORS, 404: "Plan not found"})},
        tags=["plans"],
    )


class ConfirmPlanApi(_UserMessageApi):
    def _relay(self, entry: Entry, params: dict[str, Any], *, turn: str, caller: Caller) -> None:
        entry_confirm(
            task_id=str(entry.task_id),
            revision=params["revision"],
            message=params["message"],
            turn_id=turn,
            relayed_by=caller.name,
            # An agent key's run began when the bridge issued it (D-C18).
            agent_key_issued_at=caller.agent_key_issued_at,
            now=timezone.now(),
        )

    @_message_schema(
        "plans_confirm",
        "ConfirmPlanInput",
        "Relay the user's confirmation of revision k; only then the job exists",
        "The message must be an explicit confirmation (plans.confirmation_phrases), from a "
        "later turn than the revision's, of the current revision (D-C5); every refusal names "
        "its rule.",
    )
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


class RequestChangesApi(_UserMessageApi):
    def _relay(self, entry: Entry, params: dict[str, Any], *, turn: str, caller: Caller) -> None:
        entry_request_changes(
            task_id=str(entry.task_id),
            revision=params["revision"],
            comment=params["message"],
            turn_id=turn,
            relayed_by=caller.name,
            now=timezone.now(),
        )

    @_message_schema(
        "plans_request_changes",
        "RequestChangesInput",
        "Relay the user's change request for revision k (nothing is scheduled)",
        "The entry is REVISING until the change is written into PLAN.md (revise).",
    )
    def post(self, request: Request, task_id: str) -> Response:
        return super().post(request, task_id)


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


class ClarificationCheckApi(_PlansView):
    """`POST /api/plans/clarification-check`: does a reply to a vague request keep §2.2?"""

    @extend_schema_serializer(component_name="ClarificationCheckInput")
    class InputSerializer(serializers.Serializer[Any]):
        reply = _TextField(max_length=20000, help_text="the agent's clarification reply")

    @extend_schema(
        operation_id="plans_clarification_check",
        summary="Check a clarification reply: baseline, 2-3 options, 其他：[由用户补充]",
        request=InputSerializer,
        responses={
            200: inline_serializer(
                "ClarificationCheck",
                {
                    "ok": serializers.BooleanField(),
                    "problems": serializers.ListField(child=serializers.CharField()),
                },
            ),
            **api_error_responses({400: "", 403: "the key lacks `plans:read`", 411: "", 415: ""}),
        },
        tags=["plans"],
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        problems = clarification_problems(data.validated_data["reply"])
        return Response({"ok": not problems, "problems": problems})
