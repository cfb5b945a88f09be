"""The gateway endpoints: `POST /gateway/<method>` and `POST /gateway`.

Both answer the contract's envelope: `{"ok": true, "payload": ...}` or
`{"ok": false, "error": {"code", "message"}}` with 400 (INVALID_REQUEST),
409 (CONFLICT), 404 (unknown method), 401/403 (key missing or out of scope).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from xworkmate.api_errors import error_body
from xworkmate.auth import HasScope, key_has_scope, request_key
from xworkmate.gateway import (
    GatewayCall,
    GatewayError,
    GatewayMethod,
    body_too_large,
    get_method,
    parse_body,
    scoped_params,
    split_envelope,
)

_ERROR = inline_serializer(
    "GatewayError",
    {
        "ok": serializers.BooleanField(default=False),
        "error": inline_serializer(
            "GatewayErrorDetail",
            {"code": serializers.CharField(), "message": serializers.CharField()},
        ),
    },
)
_ERROR_RESPONSES = {
    400: OpenApiResponse(_ERROR, description="INVALID_REQUEST: bad JSON or params"),
    401: OpenApiResponse(_ERROR, description="missing, unknown or revoked API key"),
    403: OpenApiResponse(_ERROR, description="API key lacks the method's scope"),
    404: OpenApiResponse(_ERROR, description="unknown method"),
    409: OpenApiResponse(_ERROR, description="CONFLICT"),
}


def _read_params(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an oversize body is refused without buffering it."""
    limit = int(settings.XWORKMATE.get("gateway", "max_body_bytes"))
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        raise body_too_large(limit)
    # DRF never parsed this body (we do not touch request.data), so the raw
    # Django request stream is still unread; limit+1 bytes tell "too large".
    return parse_body(request._request.read(limit + 1), limit=limit)


def _call(request: Request, method: GatewayMethod, params: dict[str, Any]) -> Response:
    if not key_has_scope(request, method.scope):
        raise PermissionDenied(f"API key lacks scope {method.scope} for {method.name}")
    key = request_key(request)
    # The trusted scope of a bound (agent) key applies to every method (§13.0).
    call = GatewayCall(method=method.name, params=scoped_params(params, key), api_key=key)
    payload = method.handler(call)
    return Response({"ok": True, "payload": dict(payload)})


def _failure(exc: GatewayError) -> Response:
    return Response(error_body(exc.code, exc.message, envelope=True), status=exc.http_status)


class GatewayMethodView(APIView):
    """`POST /gateway/<method>` with the params as the JSON body."""

    gateway_envelope = True
    permission_classes = [HasScope]
    required_scope = "gateway:read"  # each method then checks its own scope

    @extend_schema(
        operation_id="gateway_call_by_path",
        summary="Call a gateway method (params as body)",
        request={"application/json": {"type": "object", "additionalProperties": True}},
        responses={200: OpenApiResponse(description="`{ok: true, payload}`"), **_ERROR_RESPONSES},
        tags=["gateway"],
    )
    def post(self, request: Request, method: str) -> Response:
        try:
            target = get_method(method)
            params = _read_params(request)
            return _call(request, target, params)
        except GatewayError as exc:
            return _failure(exc)


class GatewayView(APIView):
    """`POST /gateway` with `{"method": ..., "params": {...}}`."""

    gateway_envelope = True
    permission_classes = [HasScope]
    required_scope = "gateway:read"

    @extend_schema(
        operation_id="gateway_call",
        summary="Call a gateway method (method and params in the body)",
        request=inline_serializer(
            "GatewayRequest",
            {
                "method": serializers.CharField(),
                "params": serializers.DictField(required=False),
            },
        ),
        responses={200: OpenApiResponse(description="`{ok: true, payload}`"), **_ERROR_RESPONSES},
        tags=["gateway"],
    )
    def post(self, request: Request) -> Response:
        try:
            name, params = split_envelope(_read_params(request))
            return _call(request, get_method(name), params)
        except GatewayError as exc:
            return _failure(exc)


def method_view(method: GatewayMethod) -> type[APIView]:
    """A view bound to one method, so OpenAPI documents each method as its own path."""

    @extend_schema(
        operation_id=method.name.replace(".", "_").replace("-", "_"),
        summary=method.summary,
        description=f"{method.description}\n\nScope: `{method.scope}`.".strip(),
        request=method.params_doc or {"application/json": {"type": "object"}},
        responses={
            200: OpenApiResponse(method.payload_doc, description="`{ok: true, payload}`"),
            **_ERROR_RESPONSES,
        },
        tags=list(method.tags),
    )
    def post(self: APIView, request: Request) -> Response:
        try:
            return _call(request, get_method(method.name), _read_params(request))
        except GatewayError as exc:
            return _failure(exc)

    return type(
        f"Gateway_{method.name}",
        (APIView,),
        {
            "gateway_envelope": True,
            "permission_classes": [HasScope],
            "required_scope": "gateway:read",
            "post": post,
        },
    )
