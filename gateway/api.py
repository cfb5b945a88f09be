"""REST endpoints of the gateway app beside its methods: hooks and native tasks.

- `POST /api/gateway/hooks/session_start` and `POST /api/gateway/hooks/agent_end`:
  the bridge's hooks as REST calls (D-A14). Once the key is accepted they
  always answer 200: a problem is logged with the contract's text and shows
  only as `false` in the answer, as a hook in the original never failed its caller.
- `POST /api/gateway/native-tasks`: the platform upserts its task-registry
  records, which `xworkmate.tasks.get` reads first.
"""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gateway.hooks import agent_end_hook, session_start_hook
from gateway.models import NativeTask
from gateway.policies import task_string
from gateway.services import native_task_upsert
from xworkmate.api_fields import KeyField
from xworkmate.auth import HasScope, caller_of
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, WHITESPACE_CLASS, js_trim
from xworkmate.lib.jstime import wire_time
from xworkmate.openapi import ANY_BODY, api_error_responses
from xworkmate.parsers import read_json_object

logger = logging.getLogger("xworkmate.gateway")


def _hook_body(request: Request, failure_log: str) -> dict[str, Any] | None:
    """The JSON object of a hook call, or None (logged) when it is not one."""
    try:
        # DRF has not parsed the body (request.data is never touched here).
        return read_json_object(request._request)
    except InputError as exc:
        logger.warning("%s: Error: %s", failure_log, exc.message)
        return None


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# The hooks never fail their caller (D-A14): any body at all is answered 200,
# what is not usable only shows as `false`. So nothing here is typed or required.
_HOOK_ANY = "read when it is an object; anything else counts as `{}`"
_SESSION_START_BODY = {
    "description": "Any body is answered 200 (D-A14); a body that is refused (not JSON, too "
    "large, a NUL...) is logged and the answer says `false`.",
    ANY_BODY: True,
    "properties": {
        "event": {
            "description": "the session's start: `openclawSessionKey` and `runId` prepare the "
            "task scope, `appThreadKey` also records the mapping (`source: session_start`); "
            "`workspaceDir`, `expectedArtifactDirs`, `artifactScope` and `schemaVersion` as in "
            "session.prepare. When it has a `context`, that object is read instead. "
            f"{_HOOK_ANY}",
        }
    },
}
_AGENT_END_BODY = {
    "description": _SESSION_START_BODY["description"],
    ANY_BODY: True,
    "properties": {
        "event": {
            "description": "`runId`, `success` (true records `completed`, anything else "
            "`failed`), `messages` (the last assistant text is the output) and `error`; "
            f"{_HOOK_ANY}",
        },
        "ctx": {"description": f"`sessionKey` (else the event's) and `runId`; {_HOOK_ANY}"},
    },
}
_HOOK_ERRORS = api_error_responses({403: "the API key lacks `gateway:write`", 411: ""})


class SessionStartHookView(APIView):
    """`session_start(event)`: prepare the run's scope, then record the mapping."""

    permission_classes = [HasScope]
    required_scope = "gateway:write"

    @extend_schema(
        operation_id="hook_session_start",
        summary="Hook session_start: prepare the task scope and record the mapping",
        request={"application/json": _SESSION_START_BODY},
        responses={
            200: inline_serializer(
                "SessionStartHookAnswer",
                {
                    "ok": serializers.BooleanField(),
                    "prepared": serializers.BooleanField(),
                    "mapped": serializers.BooleanField(),
                },
            ),
            **_HOOK_ERRORS,
        },
        tags=["gateway hooks"],
    )
    def post(self, request: Request) -> Response:
        body = _hook_body(request, "xworkmate session_start preparation failed")
        result = session_start_hook(_object((body or {}).get("event")), caller_of(request))
        return Response({"ok": True, "prepared": result.prepared, "mapped": result.mapped})


class AgentEndHookView(APIView):
    """`agent_end(event, ctx)`: record the run as completed or failed."""

    permission_classes = [HasScope]
    required_scope = "gateway:write"

    @extend_schema(
        operation_id="hook_agent_end",
        summary="Hook agent_end: record the terminal run state and final assistant text",
        request={"application/json": _AGENT_END_BODY},
        responses={
            200: inline_serializer(
                "AgentEndHookAnswer",
                {"ok": serializers.BooleanField(), "recorded": serializers.BooleanField()},
            ),
            **_HOOK_ERRORS,
        },
        tags=["gateway hooks"],
    )
    def post(self, request: Request) -> Response:
        body = _hook_body(request, "xworkmate agent_end state capture failed") or {}
        result = agent_end_hook(
            _object(body.get("event")), _object(body.get("ctx")), caller_of(request)
        )
        return Response({"ok": True, "recorded": result.recorded})


_STATUSES = ", ".join(s for s, _ in NativeTask.STATUSES)
# taskState.ts `optionalString`: a task id is a string ("<nil>" means none), or a
# number or boolean read as its text.
_NOT_NIL = f"^(?![{WHITESPACE_CLASS}]*<nil>[{WHITESPACE_CLASS}]*$)"


@extend_schema_field(
    {
        "type": "object",
        "required": ["taskId", "status"],
        "properties": {
            "taskId": {
                "description": "a string, or a number or boolean read as its text; at most "
                f"{KEY_MAX_LENGTH} characters once trimmed",
                "anyOf": [
                    {
                        "type": "string",
                        "pattern": _NOT_NIL + NOT_BLANK_PATTERN[1:],
                        "maxLength": KEY_MAX_LENGTH,
                    },
                    {"type": "number"},
                    {"type": "boolean"},
                ],
            },
            "status": {"type": "string", "enum": [s for s, _ in NativeTask.STATUSES]},
            "runId": {
                "type": "string",
                "nullable": True,
                "maxLength": KEY_MAX_LENGTH,
                "description": "the run; an agent key's own run when it sends none",
            },
        },
        "additionalProperties": True,
    }
)
class _TaskField(serializers.DictField):
    """The record: a JSON object, checked by the serializer's validate_task."""


AGENT_OWN_RUN_ONLY = "an agent key records native tasks of its own session and run only"


class NativeTaskUpsertView(APIView):
    """Create or update one native task record; terminal statuses are sticky."""

    permission_classes = [HasScope]
    required_scope = "gateway:write"

    @extend_schema_serializer(component_name="NativeTaskUpsertInput")
    class InputSerializer(serializers.Serializer):  # type: ignore[type-arg]
        sessionKey = KeyField()
        task = _TaskField(
            help_text="the registry record, returned as `task` by tasks.get; "
            f"needs taskId and status ({_STATUSES}), may carry runId"
        )

        def validate_task(self, value: dict[str, Any]) -> dict[str, Any]:
            task_id = task_string(value.get("taskId"))
            if not task_id:
                raise serializers.ValidationError("taskId: required, a non-empty string")
            if len(task_id) > KEY_MAX_LENGTH:
                raise serializers.ValidationError(
                    f"taskId: must be at most {KEY_MAX_LENGTH} characters"
                )
            run_id = value.get("runId")
            if run_id is not None and (
                not isinstance(run_id, str) or len(js_trim(run_id)) > KEY_MAX_LENGTH
            ):
                raise serializers.ValidationError(
                    f"runId: must be a string of at most {KEY_MAX_LENGTH} characters"
                )
            status = value.get("status")
            # A list or object is refused too (it cannot even be looked up in a set).
            if not isinstance(status, str) or status not in {s for s, _ in NativeTask.STATUSES}:
                raise serializers.ValidationError(
                    f"status: must be one of {_STATUSES} (got {status!r})"
                )
            return value

    @extend_schema_serializer(component_name="NativeTaskUpsertOutput")
    class OutputSerializer(serializers.Serializer):  # type: ignore[type-arg]
        created = serializers.BooleanField()
        applied = serializers.BooleanField(
            help_text="false when a terminal status was already recorded (it stays)"
        )
        sessionKey = serializers.CharField(source="task.session_key")
        taskId = serializers.CharField(source="task.task_id")
        runId = serializers.CharField(source="task.run_id")
        status = serializers.CharField(source="task.status")
        task = serializers.DictField(source="task.record")
        updatedAt = serializers.SerializerMethodField(
            help_text="UTC, milliseconds, Z (as every time on the gateway's wire)"
        )

        def get_updatedAt(self, result: Any) -> str:
            return wire_time(result.task.updated_at)

    @extend_schema(
        operation_id="native_task_upsert",
        summary="Upsert a native (OpenClaw task registry) task record",
        description="Scope `gateway:write`. 201 when the record is new, 200 otherwise. "
        "An agent key records tasks of its own session and run only.",
        request=InputSerializer,
        responses={
            200: OutputSerializer,
            201: OutputSerializer,
            **api_error_responses(
                {
                    400: "",
                    403: "the API key lacks `gateway:write`, or an agent key names another "
                    "session or run",
                    411: "",
                    415: "",
                }
            ),
        },
        tags=["gateway"],
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        record: dict[str, Any] = data.validated_data["task"]
        raw_run = record.get("runId")
        session_key = js_trim(data.validated_data["sessionKey"])
        run_id = js_trim(raw_run) if isinstance(raw_run, str) else ""
        caller = caller_of(request)
        if caller.is_agent:
            # An agent key reports on its own run only: a record of another
            # session or run is refused, never written (terminal states are
            # sticky, so a forged one would stand for good).
            if session_key != caller.bound_session or run_id not in ("", caller.bound_run):
                raise PermissionDenied(AGENT_OWN_RUN_ONLY)
            run_id = caller.bound_run
        result = native_task_upsert(
            session_key=session_key,
            task_id=task_string(record.get("taskId")),
            run_id=run_id,
            status=str(record["status"]),
            record=record,
            now=timezone.now(),
        )
        return Response(
            self.OutputSerializer(result).data,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )
