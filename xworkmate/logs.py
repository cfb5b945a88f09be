"""Log lines as text or JSON, with what the line happened for bound (D-K27).

`service.log_format = "json"` writes one JSON object a line: time, level,
logger, message, and whichever of the request id, the caller's session key and
run id, and the Celery task's name are bound where the line was logged. They
are bound through contextvars, so each request and each task sees only its own:

- RequestIdMiddleware binds the request id: the client's `X-Request-ID` when it
  is a sane token, else a fresh one; the answer carries it back either way;
- xworkmate.auth binds an agent key's session and run once the key is known;
- xworkmate.celery binds the task's name (and its id) around each task run.

Framework-free apart from the middleware's types: settings.py names the
classes of this module in LOGGING before Django is set up.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

FIELDS = ("request_id", "session_key", "run_id", "task_name", "task_id")
_CONTEXT: dict[str, contextvars.ContextVar[str]] = {
    name: contextvars.ContextVar(name, default="") for name in FIELDS
}
REQUEST_ID_HEADER = "X-Request-ID"
# What a client's X-Request-ID may be to be kept: a log-safe token (no spaces,
# quotes or control characters), at most 128 characters.
_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:@/+=-]{1,128}$")


def bind(**values: str) -> list[contextvars.Token[str]]:
    """Bind fields for what runs next in this context; unbind() with the tokens."""
    return [_CONTEXT[name].set(value) for name, value in values.items()]


def unbind(tokens: list[contextvars.Token[str]]) -> None:
    for token in reversed(tokens):
        token.var.reset(token)


def bound() -> dict[str, str]:
    """The fields bound now, without the empty ones."""
    return {name: var.get() for name, var in _CONTEXT.items() if var.get()}


def request_id_for(given: str | None) -> str:
    """The client's request id if it is a sane token, else a fresh one."""
    if given and _REQUEST_ID_RE.match(given):
        return given
    return uuid.uuid4().hex


class ContextFilter(logging.Filter):
    """Puts the bound fields on each record (as attributes; "" when not bound)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _CONTEXT.items():
            if not hasattr(record, name):
                setattr(record, name, var.get())
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line; the bound fields only where they are set."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = getattr(record, name, "") or _CONTEXT[name].get()
            if value:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class RequestIdMiddleware:
    """Binds the request id for the request's log lines and answers it back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_for(request.headers.get(REQUEST_ID_HEADER))
        tokens = bind(request_id=request_id, session_key="", run_id="")
        try:
            response = self.get_response(request)
        finally:
            unbind(tokens)
        response[REQUEST_ID_HEADER] = request_id
        return response
