"""What every operation of the OpenAPI schema (`/api/schema/`) shares.

Bridge developers generate their clients from the schema, so it must say what
the service does, not what it would ideally do: the error shapes with the
codes each status really carries, and when a request body is required.
schemathesis checks the schema against a live server in the test suite
(tests/integration/test_openapi_schemathesis.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drf_spectacular.utils import OpenApiResponse

__all__ = [
    "api_error_responses",
    "error_schema",
    "gateway_error_responses",
    "postprocess_schema",
    "requires_a_field",
]


# Which code each status carries, unless an operation says otherwise.
_CODES: dict[int, tuple[str, ...]] = {
    400: ("INVALID_REQUEST",),
    401: ("UNAUTHORIZED",),
    403: ("FORBIDDEN",),
    404: ("NOT_FOUND",),
    409: ("CONFLICT",),
    411: ("INVALID_REQUEST",),
    415: ("INVALID_REQUEST",),
    500: ("INTERNAL_ERROR",),
}

_DESCRIPTIONS: dict[int, str] = {
    400: "the request was refused; the message names the field and the rule",
    401: "no API key, an unknown one or a revoked one",
    403: "the API key lacks the operation's scope",
    411: (
        "a chunked request body on a server that cannot end it (gunicorn, which "
        "`make run` uses, reads chunked bodies): send Content-Length"
    ),
    415: "a request body that is not `application/json`",
    500: "a server error (logged with its traceback)",
}

# What any request may be refused for besides its own rules; added to each 400.
BODY_RULES = (
    "A body must be a UTF-8 JSON object of at most `gateway.max_body_bytes`, nested at "
    "most 128 levels, with finite numbers within the range of a 64-bit float; no string "
    "of a body (keys included) or of a query may contain NUL or a lone surrogate."
)


def error_schema(codes: Iterable[str], *, envelope: bool) -> dict[str, Any]:
    """`{"error": {"code", "message"}}`, wrapped in `{"ok": false, ...}` for the gateway."""
    detail = {
        "type": "object",
        "required": ["code", "message"],
        "properties": {
            "code": {"type": "string", "enum": list(codes)},
            "message": {"type": "string", "description": "English unless Accept-Language asks"},
        },
    }
    if not envelope:
        return {"type": "object", "required": ["error"], "properties": {"error": detail}}
    return {
        "type": "object",
        "required": ["ok", "error"],
        "properties": {"ok": {"type": "boolean", "enum": [False]}, "error": detail},
    }


def _responses(
    statuses: Mapping[int, str | tuple[str, tuple[str, ...]]], *, envelope: bool
) -> dict[int, OpenApiResponse]:
    answers: dict[int, OpenApiResponse] = {}
    for status, note in {**dict.fromkeys((401, 500), ""), **statuses}.items():
        text, codes = (note, _CODES[status]) if isinstance(note, str) else note
        description = text or _DESCRIPTIONS[status]
        if status == 400:
            description = f"{description}. {BODY_RULES}"
        answers[status] = OpenApiResponse(
            error_schema(codes, envelope=envelope), description=description
        )
    return dict(sorted(answers.items()))


def api_error_responses(
    statuses: Mapping[int, str | tuple[str, tuple[str, ...]]],
) -> dict[int, OpenApiResponse]:
    """The REST error answers of an operation: 401 and 500 always, plus ``statuses``.

    Each status maps to its description ("" for the standard one), or to
    (description, codes) when its code is not the usual one.
    """
    return _responses(statuses, envelope=False)


def gateway_error_responses(
    statuses: Mapping[int, str | tuple[str, tuple[str, ...]]],
) -> dict[int, OpenApiResponse]:
    """The same in the gateway's envelope (`{"ok": false, "error": ...}`)."""
    return _responses(statuses, envelope=True)


def _resolve(schema: Any, components: Mapping[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = components.get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
    return schema


def requires_a_field(schema: Any, components: Mapping[str, Any] | None = None) -> bool:
    """Whether `{}` fails the object schema for want of a property.

    A union requires one when every branch does; `$ref`s resolve against ``components``.
    """
    components = components or {}
    schema = _resolve(schema, components)
    if not isinstance(schema, dict):
        return False
    if schema.get("required"):
        return True
    for union in ("oneOf", "anyOf"):
        branches = schema.get(union)
        if branches and all(requires_a_field(branch, components) for branch in branches):
            return True
    return any(requires_a_field(part, components) for part in schema.get("allOf", ()))


def postprocess_schema(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular hook: a request body is required exactly when `{}` would be refused.

    Every endpoint reads a missing body as `{}`; so a body is optional where
    `{}` is a valid request and required where it lacks a required field.
    drf-spectacular marks a raw schema's body optional whatever it requires.
    """
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if not body:
                continue
            schemas = [media.get("schema") for media in body.get("content", {}).values()]
            if any(requires_a_field(schema, components) for schema in schemas):
                body["required"] = True
            else:
                body.pop("required", None)
    return result
