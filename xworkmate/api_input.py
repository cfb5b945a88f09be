"""What every request goes through before a view sees it: chunked bodies and request strings.

- A `Transfer-Encoding: chunked` body has no Content-Length, and Django then
  reads it as empty: a hook's event would be lost while the call answers 200.
  Where the server ends the input stream itself (gunicorn says so with
  `wsgi.input_terminated`), the body is read here, at most one byte past the
  size limit, and handed on as an ordinary body of known length, so the usual
  limit and parsing apply. Where it does not, the request is refused with 411.
- Query parameters of API paths must not hold NUL or lone surrogates, the
  same rule as every string of a JSON body (xworkmate.lib.strict_json).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.translation import gettext as _

from xworkmate.api_errors import api_error_response, is_api_path
from xworkmate.lib.strict_json import text_problem
from xworkmate.middleware import api_language
from xworkmate.parsers import max_body_bytes

__all__ = ["ApiInputMiddleware"]


def _is_chunked(request: HttpRequest) -> bool:
    return "chunked" in str(request.META.get("HTTP_TRANSFER_ENCODING", "")).lower()


def _read_up_to(stream: IO[bytes], size: int) -> bytes:
    parts: list[bytes] = []
    remaining = size
    while remaining > 0:
        part = stream.read(remaining)
        if not part:
            break
        parts.append(part)
        remaining -= len(part)
    return b"".join(parts)


class ApiInputMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = is_api_path(request.path)
        refused = self._take_chunked_body(request, api=api)
        if refused is None and api:
            # Before the language middleware: a refusal here speaks the API's language too.
            language = api_language(request.headers.get("Accept-Language", ""))
            with translation.override(language):
                refused = self._check_query(request)
            if refused is not None:
                refused["Content-Language"] = language
        return refused if refused is not None else self.get_response(request)

    def _take_chunked_body(self, request: HttpRequest, *, api: bool) -> HttpResponse | None:
        if not _is_chunked(request):
            return None
        stream = request.META.get("wsgi.input")
        if stream is None or not request.META.get("wsgi.input_terminated"):
            message = "a chunked request body is not supported here: send Content-Length"
            if api:
                return api_error_response(request, 411, "INVALID_REQUEST", message)
            return HttpResponse(message, status=411, content_type="text/plain")
        limit = max_body_bytes() if api else int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        # One byte more than the limit is enough for the body's reader to say "too large".
        body = _read_up_to(stream, limit + 1)
        request._stream = io.BytesIO(body)
        request.META["CONTENT_LENGTH"] = str(len(body))
        return None

    def _check_query(self, request: HttpRequest) -> HttpResponse | None:
        try:
            params = list(request.GET.lists())
        except TooManyFieldsSent as exc:
            return api_error_response(
                request, 400, "INVALID_REQUEST", _("query string: %(why)s") % {"why": exc}
            )
        for name, values in params:
            problem = text_problem(name)
            if problem is not None:
                return api_error_response(
                    request, 400, "INVALID_REQUEST",
                    _("query parameter names %(problem)s") % {"problem": _(problem)},
                )
            for value in values:
                problem = text_problem(value)
                if problem is not None:
                    return api_error_response(
                        request, 400, "INVALID_REQUEST", f"{name}: {_(problem)}"
                    )
        return None
