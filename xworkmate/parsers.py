"""Reading request bodies: one size limit and one strict JSON decoding for every API endpoint.

The gateway views and the hooks read their bodies themselves
(`read_json_object`); every DRF-parsed endpoint goes through
`StrictJSONParser` (REST_FRAMEWORK's only parser). Both refuse a body over
`gateway.max_body_bytes` without buffering it and decode it with
xworkmate.lib.strict_json, so the same input gets the same answer everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from django.http import HttpRequest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from xworkmate.config.kernel import request_body_limit
from xworkmate.lib.errors import InputError
from xworkmate.methods import body_too_large, parse_body

__all__ = ["StrictJSONParser", "max_body_bytes", "read_json_object"]


def max_body_bytes() -> int:
    return request_body_limit(settings.XWORKMATE)


def _declared_length(meta: Mapping[str, Any]) -> int:
    declared = str(meta.get("CONTENT_LENGTH") or "0")
    return int(declared) if declared.isdigit() else 0


def _read(stream: IO[bytes] | HttpRequest, meta: Mapping[str, Any]) -> dict[str, Any]:
    limit = max_body_bytes()
    if _declared_length(meta) > limit:
        raise body_too_large(limit)
    # limit + 1 bytes tell "too large" for a body whose length was not declared.
    return parse_body(stream.read(limit + 1), limit=limit)


def read_json_object(request: HttpRequest) -> dict[str, Any]:
    """The body of a request nobody has parsed yet, as a JSON object (InputError otherwise)."""
    return _read(request, request.META)


class StrictJSONParser(BaseParser):
    """`application/json` bodies for DRF views: a JSON object, size-limited, strictly decoded.

    Not a subclass of DRF's JSONParser on purpose: DRF hands that one
    `request.body`, which buffers the whole body and raises RequestDataTooBig
    above DATA_UPLOAD_MAX_MEMORY_SIZE; this one gets the unread stream.
    """

    media_type = "application/json"
    renderer_class = JSONRenderer

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        request = (parser_context or {}).get("request")
        meta: Mapping[str, Any] = request.META if request is not None else {}
        try:
            return _read(stream, meta)
        except InputError as exc:
            raise ParseError(exc.message) from exc
