"""The kernel's API views: gateway dispatch (`POST /gateway/<method>`, `POST /gateway`)
and `GET /api/ping`.

The gateway endpoints answer the contract's envelope: `{"ok": true, "payload": ...}`
or `{"ok": false, "error": {"code", "message"}}` with 400 (INVALID_REQUEST),
409 (CONFLICT), 404 (unknown method), 401/403 (key missing or out of scope).
Which methods exist is up to the apps (xworkmate.methods).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from xworkmate.api_errors import refusal_response
from xworkmate.auth import ApiKeyOrStaff, caller_of
from xworkmate.lib.errors import InputError
from xworkmate.methods import (
    GatewayCall,
    GatewayMethod,
    get_method,
    method_areas,
    scoped_params,
    split_envelope,
)
from xworkmate.openapi import api_error_responses, gateway_error_responses, requires_a_field
from xworkmate.parsers import read_json_object

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise

ANY_PARAMS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": True,
    "description": "the method's params (see its own path); unknown params are ignored",
}


def _success(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["ok", "payload"],
        "properties": {
            "ok": {"type": "boolean", "enum": [True]},
            "payload": dict(payload) if payload is not None else {"type": "object"},
        },
    }


def _errors(method: GatewayMethod | None) -> dict[int, Any]:
    """The error answers of a method's path (of every method's, for None)."""
    scope = f"`{method.scope}`" if method is not None else "the method's scope"
    notes = dict(method.errors) if method is not None else {}
    statuses: dict[int, Any] = {
        400: "INVALID_REQUEST: a param is missing, has the wrong type or breaks a rule",
        403: f"the API key lacks {scope}"
        + (f"; or {notes.pop(403)}" if 403 in notes else ""),
        411: "",
    }
    if method is None:
        # A name the route cannot hold (a line break) is no API endpoint at all.
        statuses[404] = (
            "`unknown method: <name>` (INVALID_REQUEST), or NOT_FOUND for a name with a "
            "line break",
            ("INVALID_REQUEST", "NOT_FOUND"),
        )
        statuses[409] = "CONFLICT: a session mapping conflict (session.prepare)"
    statuses.update(notes)
    return gateway_error_responses(statuses)


class _CanCallMethods(BasePermission):
    """A key that can read in some area with methods; each method then checks its own scope.

    So a key of an area without methods is refused before its body is read,
    and a plans method needs plans:read, not a gateway scope (D-K1).
    """

    message: str | _StrPromise = gettext_lazy("API key lacks the required scope")

    def has_permission(self, request: Request, view: Any) -> bool:
        caller = caller_of(request)
        if caller.key is None:
            return False
        needed = [f"{area}:read" for area in method_areas()]
        if any(caller.may(scope) for scope in needed):
            return True
        self.message = _("API key lacks scope %(scope)s") % {"scope": " or ".join(needed)}
        return False


def _read_params(request: Request) -> dict[str, Any]:
    """The body as a JSON object; an oversize body is refused without buffering it."""
    # DRF never parsed this body (we do not touch request.data), so the raw
    # Django request stream is still unread.
    return read_json_object(request._request)


def _call(request: Request, method: GatewayMethod, params: dict[str, Any]) -> Response:
    caller = caller_of(request)
    if not caller.may(method.scope):
        raise PermissionDenied(
            _("API key lacks scope %(scope)s for %(method)s")
            % {"scope": method.scope, "method": method.name}
        )
    # The trusted scope of a bound (agent) key applies to every method (§13.0).
    call = GatewayCall(method=method.name, params=scoped_params(params, caller), caller=caller)
    payload = method.handler(call)
    return Response({"ok": True, "payload": dict(payload)})


def _failure(exc: InputError) -> Response:
    return refusal_response(exc, envelope=True)


class GatewayMethodView(APIView):
    """`POST /gateway/<method>` with the params as the JSON body."""

    gateway_envelope = True
    permission_classes = [_CanCallMethods]

    @extend_schema(
        operation_id="gateway_call_by_path",
        summary="Call a gateway method (params as body)",
        description="Any method by name; each registered method also has its own path, which "
        "documents its params and payload. An unknown name is a 404.",
        parameters=[
            OpenApiParameter(
                "method", str, OpenApiParameter.PATH, description="e.g. xworkmate.tasks.get"
            )
        ],
        request={"application/json": ANY_PARAMS},
        responses={
            200: OpenApiResponse(_success(None), description="`{ok: true, payload}`"),
            **_errors(None),
        },
        tags=["gateway"],
    )
    def post(self, request: Request, method: str) -> Response:
        try:
            target = get_method(method)
            params = _read_params(request)
            return _call(request, target, params)
        except InputError as exc:
            return _failure(exc)


class GatewayView(APIView):
    """`POST /gateway` with `{"method": ..., "params": {...}}`."""

    gateway_envelope = True
    permission_classes = [_CanCallMethods]

    def post(self, request: Request) -> Response:
        try:
            name, params = split_envelope(_read_params(request))
            return _call(request, get_method(name), params)
        except InputError as exc:
            return _failure(exc)


def _envelope_variant(method: GatewayMethod) -> dict[str, Any]:
    params = dict(method.params_doc) if method.params_doc is not None else ANY_PARAMS
    # A missing or null `params` is `{}`: optional exactly when `{}` is valid params.
    needs_params = requires_a_field(params)
    return {
        "type": "object",
        "required": ["method", "params"] if needs_params else ["method"],
        "properties": {
            "method": {"type": "string", "enum": [method.name]},
            "params": params if needs_params else {**params, "nullable": True},
        },
        "additionalProperties": True,
    }


def envelope_view(methods: list[GatewayMethod]) -> type[APIView]:
    """GatewayView documented with the methods registered now, one body variant each."""
    payloads = [dict(m.payload_doc) for m in methods if m.payload_doc is not None]
    all_documented = len(payloads) == len(methods)
    body = {
        "description": "`method` names a registered method (surrounding whitespace is "
        "trimmed); `params` are its params, as documented on its own path. An unknown "
        "name is a 404.",
        "oneOf": [_envelope_variant(m) for m in methods],
    }
    success = _success({"anyOf": payloads} if payloads and all_documented else None)
    decorated = extend_schema(
        operation_id="gateway_call",
        summary="Call a gateway method (method and params in the body)",
        request={"application/json": body} if methods else {"application/json": ANY_PARAMS},
        responses={
            200: OpenApiResponse(success, description="`{ok: true, payload}`"),
            **_errors(None),
        },
        tags=["gateway"],
    )(GatewayView.post)
    return type("Gateway", (GatewayView,), {"post": decorated})


def method_view(method: GatewayMethod) -> type[APIView]:
    """A view bound to one method, so OpenAPI documents each method as its own path."""

    @extend_schema(
        operation_id=method.name.replace(".", "_").replace("-", "_"),
        summary=method.summary,
        description=f"{method.description}\n\nScope: `{method.scope}`.".strip(),
        request={
            "application/json": dict(method.params_doc) if method.params_doc else ANY_PARAMS
        },
        responses={
            200: OpenApiResponse(
                _success(method.payload_doc), description="`{ok: true, payload}`"
            ),
            **_errors(method),
        },
        tags=list(method.tags),
    )
    def post(self: APIView, request: Request) -> Response:
        try:
            return _call(request, get_method(method.name), _read_params(request))
        except InputError as exc:
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
        responses={
            200: inline_serializer("Ping", {"ok": serializers.BooleanField()}),
            **api_error_responses({}),
        },
        tags=["service"],
    )
    def get(self, request: Request) -> Response:
        return Response({"ok": True})
