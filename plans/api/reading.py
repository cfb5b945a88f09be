"""Reading plans: the list, one plan, its PLAN.md, its runs, its cron.add export (D-C9)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from plans.api._common import (
    _BAD_PAGE,
    _PAGE_PARAMETERS,
    _READ_ERRORS,
    _page,
    _plan_answer,
    _plan_json,
    _PlansView,
    _visible_entry,
)
from plans.api._fields import _PlanField, _PlanOut
from plans.api.jobs import PLAN_UPDATE_SCHEMA, plan_update
from plans.files import plan_file_read
from plans.planfile import PlanFileError
from plans.selectors import entries_visible_to, job_of, jobs_of, runs_page
from plans.services import PlanGateError
from plans.timeline import DEFAULT_EVENTS, MAX_EVENTS, plan_timeline
from plans.wire import cron_add_request, run_json
from xworkmate.api_errors import error_body
from xworkmate.auth import caller_of
from xworkmate.openapi import api_error_responses
from xworkmate.paging import page_of, page_parameters


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


class PlanDetailApi(_PlansView):
    # Reading a plan needs plans:read; Studio's update (PUT) changes its job.
    method_scopes = {"PUT": "plans:write"}

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.required_scope = self.method_scopes.get(request.method or "", "plans:read")
        super().initial(request, *args, **kwargs)

    @extend_schema(
        operation_id="plans_detail",
        summary="One plan: its state, revisions and job",
        responses={200: _PlanOut, **api_error_responses(_READ_ERRORS)},
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        return Response({"plan": _plan_answer(request, _visible_entry(request, task_id))})

    @PLAN_UPDATE_SCHEMA
    def put(self, request: Request, task_id: str) -> Response:
        return plan_update(request, task_id)


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
            content = plan_file_read(entry.plan.archive_id)
        except PlanFileError as exc:
            return Response(
                error_body("BAD_GATEWAY", f"Failed to read PLAN.md: {exc}", envelope=False),
                status=502,
            )
        if content is None:
            raise NotFound("PLAN.md not found")
        return Response({"content": content})


class PlanTimelineApi(_PlansView):
    @extend_schema(
        operation_id="plans_timeline",
        summary="The plan's timeline: revisions, confirmations and every fire time, oldest first",
        description=(
            "Scope: `plans:read`. Why did it (not) run: each PLAN.md revision, change request "
            "and confirmation (with the revision's SHA-256), and every fire time's row: ran "
            "(its run, delivery and outcome), missed (the service was down) or skipped (the "
            "previous run was out, the job was in its error backoff, or it was paused), each "
            "with its reason. While the job is paused, `pausedSince` says since when and the "
            "fire times passed so far in the pause are listed with outcome `paused` (not yet "
            "stored: each becomes a skipped row when the job is resumed or cancelled, D-C26). "
            f"The newest `limit` events (1-{MAX_EVENTS}, default {DEFAULT_EVENTS}); "
            "`more` says older ones exist. `download=1` answers it as a JSON file."
        ),
        parameters=[
            *page_parameters(default=DEFAULT_EVENTS, maximum=MAX_EVENTS, offset=False),
            OpenApiParameter("download", str, enum=["1"], description="as a file download"),
        ],
        responses={
            200: OpenApiResponse(description="{taskId, events, more, pausedSince?}"),
            **api_error_responses(
                {
                    **_READ_ERRORS,
                    400: (
                        "Invalid query parameter `limit`, or `download` not 1",
                        ("INVALID_REQUEST",),
                    ),
                }
            ),
        },
        tags=["plans"],
    )
    def get(self, request: Request, task_id: str) -> Response:
        entry = _visible_entry(request, task_id)
        page = page_of(
            request, default=DEFAULT_EVENTS, maximum=MAX_EVENTS, offset=False,
            refusal=str(_BAD_PAGE),
        )
        download = request.query_params.get("download")
        if download not in (None, "1"):
            raise ValidationError({"download": "must be 1 (a file) or left out"})
        response = Response(
            plan_timeline(entry, job_of(entry), now=timezone.now(), limit=page.limit)
        )
        if download == "1":
            response["Content-Disposition"] = (
                f'attachment; filename="plan-{entry.task_id}-timeline.json"'
            )
        return response


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
