"""`POST /api/plans/clarification-check`: does a clarification reply keep §2.2?"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from plans.api._common import _PlansView
from plans.api._fields import _TextField
from plans.policies import clarification_problems
from xworkmate.openapi import api_error_responses


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
