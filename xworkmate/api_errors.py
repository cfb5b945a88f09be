"""One JSON error shape for the whole API.

REST endpoints answer `{"error": {"code": ..., "message": ...}}`; gateway
endpoints wrap the same in the contract's envelope `{"ok": false, "error": ...}`.
That holds for the answers Django gives before or around a view too (no
route, a request Django refuses, a server error): under `/api/` and
`/gateway` the root URLconf's handlers answer the same JSON, never HTML.

The API kit's error side: `refusal_response` answers a refusal the code raised
(an InputError: its code, message and HTTP status), `InputErrorAPIView` is a
view whose services' refusals answer so instead of a 500; `error_body` is the
shape itself.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from xworkmate.lib.errors import InputError

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


def refusal_response(
    exc: InputError, *, status: int | None = None, envelope: bool = False
) -> Response:
    """A refusal as the API answers it: its code and message, its HTTP status unless
    `status` says otherwise (in the gateway's envelope when `envelope`)."""
    response = Response(
        error_body(exc.code, exc.message, envelope=envelope),
        status=exc.http_status if status is None else status,
    )
    if response.status_code == 503:  # a host away (D-K31): retry, as for the database
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class InputErrorAPIView(APIView):
    """A REST view whose services' refusals (InputError) answer with their code and rule."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, InputError):
            return refusal_response(exc)
        return super().handle_exception(exc)


def _message(detail: Any) -> str:
    """Flatten DRF's detail (str, list or field dict) into one readable line."""
    if isinstance(detail, dict):
        return "; ".join(f"{field}: {_message(value)}" for field, value in detail.items())
    if isinstance(detail, list):
        return "; ".join(_message(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    # As DRF's own handler does, Django's 404 and 403 become DRF's (and so get the shape).
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*exc.args)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(*exc.args)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response  # a real server error: Django's 500 handling and logging apply
    code = next((c for cls, c in _CODES if isinstance(exc, cls)), "ERROR")
    envelope = bool(getattr(context.get("view"), "gateway_envelope", False))
    response.data = error_body(code, _message(exc.detail), envelope=envelope)
    return response


def is_api_path(path: str) -> bool:
    return path.startswith("/api/") or path in ("/api", "/gateway") or path.startswith("/gateway/")


def is_gateway_path(path: str) -> bool:
    return path == "/gateway" or path.startswith("/gateway/")


def api_error_response(request: HttpRequest, status: int, code: str, message: str) -> JsonResponse:
    """The error answer of an API path that no view answered (the envelope under /gateway)."""
    body = error_body(code, message, envelope=is_gateway_path(request.path))
    return JsonResponse(body, status=status, json_dumps_params={"separators": (",", ":")})


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_path(request.path):
        return defaults.bad_request(request, exception)
    detail = str(exception) or "the request was refused"
    return api_error_response(request, 400, "INVALID_REQUEST", f"bad request: {detail}")


def handler403(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_path(request.path):
        return defaults.permission_denied(request, exception)
    return api_error_response(request, 403, "FORBIDDEN", str(exception) or "forbidden")


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api_path(request.path):
        return defaults.page_not_found(request, exception)
    return api_error_response(
        request, 404, "NOT_FOUND", f"no API endpoint at {request.method} {request.path}"
    )


def handler500(request: HttpRequest) -> HttpResponse:
    # Django has logged the exception with its traceback before calling this.
    if not is_api_path(request.path):
        return defaults.server_error(request)
    # Called inside Django's `except`, so the exception is at hand: a database
    # outage met before any view (a middleware's query) is a 503 too.
    if is_database_outage(sys.exc_info()[1]):
        return database_unavailable(request)
    return api_error_response(request, 500, "INTERNAL_ERROR", "internal server error")


# --- a database outage: "retry", not "bug" (D-K22) ---------------------------------------

RETRY_AFTER_SECONDS = 5
UNAVAILABLE = "UNAVAILABLE"
logger = logging.getLogger(__name__)


def is_database_outage(exc: BaseException | None) -> bool:
    """The database cannot be reached or stopped answering (connection refused, dropped,
    a server shutting down, SQLite locked): the request may succeed when retried."""
    return isinstance(exc, OperationalError | InterfaceError)


def database_unavailable(request: HttpRequest) -> JsonResponse:
    """503 with Retry-After, in the error shape of the path (the envelope under /gateway)."""
    response = api_error_response(
        request, 503, UNAVAILABLE, "the database is unavailable; retry later"
    )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseOutageMiddleware:
    """Answers an API request whose view met a database outage with a 503 (D-K22)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not is_api_path(request.path) or not is_database_outage(exc):
            return None  # Django's own handling (and handler500) applies
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, exc)
        return database_unavailable(request)
