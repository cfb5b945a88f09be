"""The confirmation gate over the API: relay the user's confirmation or change request (D-C5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from plans.api._common import _WRITE_ERRORS, _documented, _plan_answer, _PlansView, _visible_entry
from plans.api._fields import _STEP_MAX, _PlanOut, _TextField
from plans.models import Entry
from plans.services import entry_confirm, entry_request_changes
from xworkmate.auth import TURN_HELP, Caller, caller_of
from xworkmate.openapi import api_error_responses


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
