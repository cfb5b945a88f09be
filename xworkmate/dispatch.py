"""The kernel's API views: gateway dispatch (`POST /gateway/<method>`, `POST /gateway`)
and `GET /api/ping`.

The gateway endpoints answer the contract's envelope: `{"ok": true, "payload": ...}`
or `{"ok": false, "error": {"code", "message"}}` with 400 (INVALID_REQUEST),
409 (CONFLICT), 404 (unknown method), 401/403 (key missing or out of scope).
Which methods exist is up to the apps (xworkmate.methods).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from xworkmate.api_errors import error_body
from xworkmate.auth import ApiKeyOrStaff, key_has_scope, request_key
from xworkmate.lib.errors import GatewayError
from xworkmate.methods import (
    GatewayCall,
    GatewayMethod,
    get_method,
    method_areas,
    scoped_params,
    split_envelope,
)
from xworkmate.parsers import read_json_object

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


class _CanCallMethods(BasePermission):
    """A key that can read in some area with methods; each method then checks its own scope.

    So a key of an area without methods is refused before its body is read,
    and a plans method needs plans:read, not a gateway scope (D-K1).
    """

    message = "API key lacks the required scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        if request_key(request) is None:
            return False
        needed = [f"{area}:read" for area in method_areas()]
        if any(key_has_scope(request, scope) for scope in needed):
            return True
        self.message = f"API key lacks scope {' or '.join(needed)}"
        return False


def _read_params(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an oversize body is refused without buffering it."""
    # DRF never parsed this body (we do not touch request.data), so the raw
    # Django request stream is still unread.
    return read_json_object(request._request)


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
    permission_classes = [_CanCallMethods]

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
    permission_classes = [_CanCallMethods]

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
            "permission_classes": [_CanCallMethods],
            "post": post,
        },
    )


class PingView(APIView):
    """A constant body for any valid key: the benchmark's baseline for auth + DRF overhead."""

    permission_classes = [ApiKeyOrStaff]

    @extend_schema(
        operation_id="ping",
        summary="Constant answer for any valid API key",
        responses={200: inline_serializer("Ping", {"ok": serializers.BooleanField()})},
        tags=["service"],
    )
    def get(self, request: Request) -> Response:
        return Response({"ok": True})
