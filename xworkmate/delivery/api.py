"""The `record` channel's two endpoints: the bridge fetches pending messages and acks each.

- `GET /api/delivery/pending?sessionKey=…` (delivery:read): the messages waiting for
  that session, oldest first.
- `POST /api/delivery/<id>/ack` (delivery:write): the bridge put it into the
  session; only this makes a record message `sent`.

An agent key (bound to a session) sees and acknowledges its own session's
messages only; another session is refused, a message of one is not found.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from xworkmate.auth import HasScope, caller_of
from xworkmate.delivery.models import Message
from xworkmate.delivery.selectors import pending_for_session, record_channels
from xworkmate.delivery.services import message_acknowledge
from xworkmate.lib.jstext import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, js_trim
from xworkmate.lib.jstime import wire_time
from xworkmate.openapi import api_error_responses
from xworkmate.paging import page_of, page_parameters

MAX_FETCH = 100
_MAX_ID = 2**63 - 1
OTHER_SESSION = "an agent key fetches and acknowledges its own session's messages only"


class MessageSerializer(serializers.Serializer[Message]):
    """A message as the bridge gets it (the same fields as the webhook's body)."""

    id = serializers.IntegerField()
    purpose = serializers.CharField()
    sessionKey = serializers.CharField(source="target")
    message = serializers.CharField(source="body")
    messageHash = serializers.CharField(source="body_hash")
    idempotencyKey = serializers.CharField(source="idempotency_key")
    createdAt = serializers.SerializerMethodField()

    def get_createdAt(self, message: Message) -> str:
        return wire_time(message.created_at)


class PendingMessagesApi(APIView):
    permission_classes = [HasScope]
    required_scope = "delivery:read"

    @extend_schema(
        operation_id="delivery_pending",
        summary="Messages waiting for a session (the record channel)",
        parameters=[
            OpenApiParameter(
                "sessionKey",
                {"type": "string", "pattern": NOT_BLANK_PATTERN, "maxLength": KEY_MAX_LENGTH},
                required=True,
                description=(
                    "the session whose messages to fetch; an agent key may leave it out "
                    "(its own session), and may name no other"
                ),
            ),
            *page_parameters(default=MAX_FETCH, maximum=MAX_FETCH, offset=False),
        ],
        responses={
            200: inline_serializer(
                "PendingMessages",
                {
                    "messages": MessageSerializer(many=True),
                    "hasMore": serializers.BooleanField(
                        help_text="more messages wait than this answer holds: acknowledge "
                        "these and fetch again (the oldest come first)"
                    ),
                },
            ),
            **api_error_responses(
                {
                    400: "a missing or blank sessionKey, or a limit out of range",
                    403: "the key lacks `delivery:read`, or an agent key names another session",
                }
            ),
        },
        tags=["delivery"],
    )
    def get(self, request: Request) -> Response:
        named = js_trim(request.query_params.get("sessionKey", ""))
        if len(named) > KEY_MAX_LENGTH:
            raise ValidationError({"sessionKey": f"must be at most {KEY_MAX_LENGTH} characters"})
        page = page_of(request, default=MAX_FETCH, maximum=MAX_FETCH, offset=False)
        session = caller_of(request).session(named, "sessionKey", refusal=OTHER_SESSION)
        if not session:
            raise ValidationError({"sessionKey": "required, the session whose messages to fetch"})
        # One row past the page says whether more wait (a queue has no stable offset:
        # acknowledged messages leave it, so the next page is the next fetch).
        rows = list(pending_for_session(session, limit=page.limit + 1))
        shown = rows[: page.limit]
        return Response(
            {
                "messages": [MessageSerializer(row).data for row in shown],
                "hasMore": len(rows) > page.limit,
            }
        )


class AcknowledgeMessageApi(APIView):
    permission_classes = [HasScope]
    required_scope = "delivery:write"

    @extend_schema(
        operation_id="delivery_ack",
        summary="Acknowledge a fetched message: it is in the session (the record channel)",
        request=None,
        responses={
            200: inline_serializer(
                "Acknowledged",
                {
                    "id": serializers.IntegerField(),
                    "status": serializers.CharField(),
                    "acknowledged": serializers.BooleanField(
                        help_text="false when it had been acknowledged before"
                    ),
                },
            ),
            **api_error_responses(
                {
                    403: "the API key lacks `delivery:write`",
                    404: "no record message with this id (for an agent key: of its session)",
                }
            ),
        },
        tags=["delivery"],
    )
    def post(self, request: Request, message_id: int) -> Response:
        if message_id > _MAX_ID:  # beyond the id column: no such message (and no SQL error)
            raise NotFound(f"no record message {message_id} for this key")
        visible: Any = Message.objects.filter(pk=message_id, channel__in=record_channels())
        caller = caller_of(request)
        if caller.is_agent:
            visible = visible.filter(target=caller.bound_session)
        message = visible.first()
        if message is None:
            raise NotFound(f"no record message {message_id} for this key")
        acknowledged = message_acknowledge(message=message, by=caller.name, now=timezone.now())
        return Response({"id": message.pk, "status": Message.SENT, "acknowledged": acknowledged})
