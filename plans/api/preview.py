"""`POST /api/plans/schedule-preview`: what a schedule means, and when it fires."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiExample,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from plans.api._fields import _PreviewScheduleField, _TextField
from plans.conf import plans_conf
from plans.schedule import ScheduleError
from plans.selectors import MAX_PREVIEW_RUNS, MAX_SCHEDULE_MS, PreviewRequestError, schedule_preview
from xworkmate.api_errors import error_body
from xworkmate.auth import HasScope
from xworkmate.lib.jstime import ms_to_iso
from xworkmate.openapi import api_error_responses


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
