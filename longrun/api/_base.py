"""What every long-run endpoint shares: its answer, its refusals, its page, its scope."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, ClassVar

from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from longrun.operations import table
from longrun.policies.answers import (
    EXIT_ACTION,
    EXIT_INVALID,
    EXIT_LOCKED,
    EXIT_NO_KEY,
    Answer,
    LongrunError,
)
from xworkmate.api_errors import error_body
from xworkmate.api_fields import list_fields, query_values
from xworkmate.auth import HasScope, caller_of
from xworkmate.lib.paging import Page
from xworkmate.paging import page_headers, page_of

EXIT_CODE_HEADER = "X-Longrun-Exit-Code"
# The task list, the lock table and the reports that survey every task answer
# this many tasks at a time (D-K13); the headers say where the next page starts.
LIST_PAGE, MAX_LIST_PAGE = 100, 500
# Where `_schema` leaves the name of the operation a handler answers (the table's).
OPERATION_ATTRIBUTE = "longrun_operation"
_OPERATIONS = {operation.name: operation for operation in table.operations()}


# --- the answers ---------------------------------------------------------------------------------


def _original_text(body: object) -> str:
    """What the script printed on stderr: its line, or its JSON document on one line."""
    return body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)


def _refusal_status(exc: LongrunError) -> tuple[int, str]:
    if exc.exit_code == EXIT_ACTION:
        return 404, "NOT_FOUND"
    # The JSON refusals depend on what is stored, not on the request alone: a
    # lock another task holds (3), no session key given or kept (4), a task
    # that is done (2, the reopen guard of D-B17).
    if exc.exit_code in (EXIT_LOCKED, EXIT_NO_KEY) or not isinstance(exc.body, str):
        return 409, "CONFLICT"
    return 400, "INVALID_REQUEST"


def _answered(answer: Answer, page: Page | None = None) -> Response:
    headers = {EXIT_CODE_HEADER: str(answer.exit_code)}
    if page is not None and answer.listed is not None:
        headers |= page_headers(page, *answer.listed)
    return Response(answer.body, headers=headers)


def _page(request: Request) -> Page:
    """The page of a list or a report: the body stays the script's, the headers page it."""
    return page_of(request, default=LIST_PAGE, maximum=MAX_LIST_PAGE)


def _for_every_session(request: Request, operation: str) -> None:
    if caller_of(request).is_agent:
        raise PermissionDenied(
            f"{operation} acts on every session's tasks: a key bound to a session may not run it"
        )


def _optional(values: dict[str, Any], name: str) -> str:
    value: str = values.get(name, "")
    return value


class _LongrunView(APIView):
    """A long-run endpoint: the original's refusals keep their text and exit code.

    Its operation is the one its handler's `_schema` names, and its scope that
    operation's in the table (longrun/skill/scripts/_operations.py).
    """

    permission_classes = [HasScope]
    required_scope = table.READ
    operation: ClassVar[table.Operation | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in ("get", "post"):
            name = getattr(getattr(cls, method, None), OPERATION_ATTRIBUTE, None)
            if name is None:
                continue
            operation = _OPERATIONS[name]
            if operation.method != method.upper() or operation.scope is None:
                raise TypeError(f"{cls.__name__}.{method}: the table has {name} as {operation}")
            cls.operation = operation
            cls.required_scope = operation.scope

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, LongrunError):
            status, code = _refusal_status(exc)
            return Response(
                error_body(code, _original_text(exc.body), envelope=False),
                status=status,
                headers={EXIT_CODE_HEADER: str(exc.exit_code)},
            )
        response = super().handle_exception(exc)
        # A refusal the original never had (a key, a scope, a malformed body).
        exit_code = EXIT_ACTION if response.status_code == 404 else EXIT_INVALID
        response[EXIT_CODE_HEADER] = str(exit_code)
        return response

    def _body(self, serializer: type[serializers.Serializer[Any]]) -> dict[str, Any]:
        data = serializer(data=self.request.data)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)

    def _query(self, serializer: type[serializers.Serializer[Any]]) -> dict[str, Any]:
        # One value per parameter (a list field takes every one): the kernel's kit.
        values = query_values(
            self.request.query_params.lists(), lists=list_fields(serializer())
        )
        data = serializer(data=values)
        data.is_valid(raise_exception=True)
        return dict(data.validated_data)


def _span(values: dict[str, Any], name: str, unit: str) -> timedelta | None:
    value = values.get(name)
    return None if value is None else timedelta(**{unit: value})
