"""The OpenAPI description of the long-run endpoints: exit-code header, errors, record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from longrun.api._base import EXIT_CODE_HEADER, LIST_PAGE, MAX_LIST_PAGE, OPERATION_ATTRIBUTE
from longrun.policies.states import STATES
from xworkmate.openapi import api_error_responses
from xworkmate.paging import page_header_parameters, page_parameters

# --- the OpenAPI description ---------------------------------------------------------------------

_EXIT_HEADER_DOC = OpenApiParameter(
    EXIT_CODE_HEADER,
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    required=True,
    response=[200],
    description="the exit code the original script ended with (D-B18): 0 nothing to do, "
    "1 something is due or was produced, 2 a failed start validation; refusals carry it too",
)

_Errors = dict[int, str | tuple[str, tuple[str, ...]]]
_ONE_TASK: _Errors = {
    400: "a field breaks its rule (named); the script's own refusals keep their text",
    403: "the key lacks the operation's scope",
    404: "`task not found: <task>`: no such task, or (for an agent key) another session's",
}
_STATE_CONFLICT = (
    "the refusal that depends on what is stored, as the script printed it: "
    '`{"error": "session lock exists", …}` (exit 3), `{"error": "missing origin_session_key", '
    '…}` or `missing origin_session_key for task: <t>` (exit 4), `{"error": "reopen required", '
    "…}` (a done task)"
)
_WRITE: _Errors = {
    **_ONE_TASK,
    403: "the key lacks `longrun:write`, or an agent key names another session",
    409: (_STATE_CONFLICT, ("CONFLICT",)),
    411: "",
    415: "",
}
_REPORT: _Errors = {
    400: "a threshold, `limit` or `offset` out of range (named)",
    403: "the key lacks `longrun:read`",
}
_EVERY_SESSION: _Errors = {
    400: "a field breaks its rule (named)",
    403: "the key lacks `longrun:write`, or is bound to a session (this run is the bridge's)",
    411: "",
    415: "",
}

_RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "the task record as task_state.py printed it (§4.3)",
    "required": ["task", "session", "state", "progress_every", "updated_at", "session_label"],
    "properties": {
        "task": {"type": "string"},
        "session": {"type": "string"},
        "origin_session_key": {"type": "string", "nullable": True},
        "state": {"type": "string", "enum": list(STATES)},
        "goal": {"type": "string"},
        "done_when": {"type": "string"},
        "blocked_when": {"type": "string"},
        "boundary": {"type": "string"},
        "next_check": {"type": "string"},
        "note": {"type": "string"},
        "progress_every": {"type": "string"},
        "last_progress_at": {"type": "string", "nullable": True},
        "last_progress_attempt_at": {"type": "string", "nullable": True},
        "last_progress_sent_at": {"type": "string", "nullable": True},
        "last_progress_unknown_at": {"type": "string", "nullable": True},
        "last_progress_delivery_status": {
            "type": "string",
            "nullable": True,
            "enum": ["sent", "unknown", "failed", None],
        },
        "last_progress_delivery_id": {"type": "string", "nullable": True},
        "last_progress_message_hash": {"type": "string", "nullable": True},
        "last_progress_send_error": {"type": "string", "nullable": True},
        "last_visible_reply_at": {"type": "string", "nullable": True},
        "last_tool_result_at": {"type": "string", "nullable": True},
        "last_resume_at": {"type": "string", "nullable": True},
        "last_resume_reason": {"type": "string", "nullable": True},
        "last_resume_count": {"type": "integer"},
        "updated_at": {"type": "string"},
        "session_label": {"type": "string"},
    },
}


_PAGED_NOTE = (
    f" One page at a time (`limit` 1-{MAX_LIST_PAGE}, default {LIST_PAGE}; D-K13): "
    "`X-Total-Count` says how many there are in all, `X-Next-Offset` the `offset` of the "
    "next page (absent on the last)."
)


def _document(description: str, required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": description}
    if required:
        schema["required"] = list(required)
    return schema


def _schema(
    operation: str,
    summary: str,
    answer: dict[str, Any],
    errors: _Errors,
    *,
    request: type[serializers.Serializer[Any]] | None = None,
    query: type[serializers.Serializer[Any]] | None = None,
    description: str = "",
    paged: bool = False,
) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    parameters: list[Any] = [_EXIT_HEADER_DOC]
    if query is not None:
        parameters.insert(0, query)
    if paged:
        parameters += [
            *page_parameters(default=LIST_PAGE, maximum=MAX_LIST_PAGE),
            *page_header_parameters(),
        ]
        description += _PAGED_NOTE
    described = extend_schema(
        operation_id=f"longrun_{operation.replace('-', '_')}",
        summary=summary,
        description=description,
        parameters=parameters,
        request=request,
        responses={200: OpenApiResponse(answer), **api_error_responses(errors)},
        tags=["longrun"],
    )

    def decorate(handler: Callable[..., Response]) -> Callable[..., Response]:
        handler = described(handler)
        # The view's scope is this operation's (_LongrunView.__init_subclass__).
        setattr(handler, OPERATION_ATTRIBUTE, operation)
        return handler

    return decorate


_REPORT_NOTE = (
    "Scope: `longrun:read`. A read-only report: it describes what is due, nothing is sent "
    "(D-B20). A task it cannot handle is an item of `errors` (D-B5). An agent key sees its "
    "session's tasks. It surveys the live tasks in creation order, and the counts are the "
    "page's."
)
