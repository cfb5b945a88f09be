"""One JSON error shape for the whole API.

REST endpoints answer `{"error": {"code": ..., "message": ...}}`; gateway
endpoints wrap the same in the contract's envelope `{"ok": false, "error": ...}`.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

_CODES: tuple[tuple[type[exceptions.APIException], str], ...] = (
    (exceptions.NotAuthenticated, "UNAUTHORIZED"),
    (exceptions.AuthenticationFailed, "UNAUTHORIZED"),
    (exceptions.PermissionDenied, "FORBIDDEN"),
    (exceptions.NotFound, "NOT_FOUND"),
    (exceptions.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (exceptions.UnsupportedMediaType, "INVALID_REQUEST"),
    (exceptions.ParseError, "INVALID_REQUEST"),
    (exceptions.ValidationError, "INVALID_REQUEST"),
    (exceptions.Throttled, "RATE_LIMITED"),
)


def error_body(code: str, message: str, *, envelope: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    return {"ok": False, **body} if envelope else body


def _message(detail: Any) -> str:
    """Flatten DRF's detail (str, list or field dict) into one readable line."""
    if isinstance(detail, dict):
        return "; ".join(f"{field}: {_message(value)}" for field, value in detail.items())
    if isinstance(detail, list):
        return "; ".join(_message(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response  # a real server error: Django's 500 handling and logging apply
    code = next((c for cls, c in _CODES if isinstance(exc, cls)), "ERROR")
    envelope = bool(getattr(context.get("view"), "gateway_envelope", False))
    response.data = error_body(code, _message(exc.detail), envelope=envelope)
    return response
