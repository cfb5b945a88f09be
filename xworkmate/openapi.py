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
    "ANY_BODY",
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
    503: ("UNAVAILABLE",),
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
    503: "the database is unavailable: retry after the `Retry-After` seconds (D-K22)",
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
    for status, note in {**dict.fromkeys((401, 500, 503), ""), **statuses}.items():
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
    """The REST error answers of an operation: 401, 500 and 503 always, plus ``statuses``.

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


# --- no NUL in any request string (D-K15) ---------------------------------------------------------

# A string without NUL, as an ECMAScript regex (what JSON Schema's `pattern` is).
# A request string with a pattern of its own (not blank, one line...) refuses NUL
# in that pattern; tests/xworkmate/test_openapi.py checks every one of them.
_NUL_FREE = "^[^\\u0000]*$"
# Marks a request body the service answers whatever it holds, NUL included (the
# bridge's hooks, D-A14): its schema states no rule, so none is added.
ANY_BODY = "x-any-body"
_JSON_VALUE = "NulFreeJsonValue"
_JSON_VALUE_REF = {"$ref": f"#/components/schemas/{_JSON_VALUE}"}


def _json_value() -> dict[str, Any]:
    """Any JSON value without NUL in its strings: what a field the schema leaves open (an
    unknown member, a value of any type) may be. OpenAPI 3.0 has no rule for the names
    of members (no `propertyNames`): that they hold no NUL either is said in words."""
    return {
        "description": "any JSON value; no string in it, the names of its members included, "
        "may hold a NUL",
        "nullable": True,
        "anyOf": [
            {"type": "string", "pattern": _NUL_FREE},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": _JSON_VALUE_REF},
            {"type": "object", "additionalProperties": _JSON_VALUE_REF},
        ],
    }


def _is_open(schema: dict[str, Any]) -> bool:
    """A schema that admits any value: no type, no shape, no choice of values."""
    shaping = ("$ref", "type", "enum", "properties", "items", "oneOf", "anyOf", "allOf", "not")
    return not any(keyword in schema for keyword in shaping)


class _NulFree:
    """Adds the NUL rule to the request schemas, each component once."""

    def __init__(self, components: dict[str, Any]) -> None:
        self.components = components
        self.done = {_JSON_VALUE}

    def visit(self, schema: Any) -> None:
        if not isinstance(schema, dict) or schema.get(ANY_BODY):
            return
        if "$ref" in schema:
            name = str(schema["$ref"]).rsplit("/", 1)[-1]
            if name not in self.done:
                self.done.add(name)
                self.visit(self.components.get(name))
            return
        if _is_open(schema) or "not" in schema:
            # Any value (but the one `not` names) is any NUL-free one. The rule is
            # never added inside `not`, where it would admit what it should refuse.
            schema["allOf"] = [*schema.get("allOf", ()), _JSON_VALUE_REF]
        is_text = schema.get("type") == "string" and schema.get("format") != "binary"
        if is_text and "enum" not in schema:
            schema.setdefault("pattern", _NUL_FREE)
        if schema.get("type") == "object" or "properties" in schema:
            for member in schema.get("properties", {}).values():
                self.visit(member)
            extra = schema.get("additionalProperties", True)
            if extra is True or extra == {}:
                # Unknown members are ignored, but read: they follow the body's rules too.
                schema["additionalProperties"] = _JSON_VALUE_REF
            else:
                self.visit(extra)
        self.visit(schema.get("items"))
        for keyword in ("oneOf", "anyOf", "allOf"):
            for branch in schema.get(keyword, ()):
                self.visit(branch)


def _refuse_nul(result: dict[str, Any]) -> None:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components[_JSON_VALUE] = _json_value()
    walker = _NulFree(components)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter.get("in") in ("query", "path"):
                    walker.visit(parameter.get("schema"))
            for media in operation.get("requestBody", {}).get("content", {}).values():
                walker.visit(media.get("schema"))


def _body_required(result: dict[str, Any]) -> None:
    """A request body is required exactly when `{}` would be refused.

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


# What the web server refuses before the service sees a request, for any operation: its
# answer is JSON too (xworkmate.webserver, D-K15), the gateway's envelope, which also
# has the REST shape's `error`.
_WEB_SERVER_REFUSALS = {
    414: "a request line (method, path and query) over 4094 bytes, refused by the web "
    "server (gunicorn) before the service sees it: send long values in a POST body",
    431: "request headers over the web server's limits (100 headers of at most 8190 bytes)",
}


def _web_server_refusals(result: dict[str, Any]) -> None:
    schema = error_schema(("INVALID_REQUEST",), envelope=True)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in _WEB_SERVER_REFUSALS.items():
                responses.setdefault(
                    str(status),
                    {
                        "content": {"application/json": {"schema": schema}},
                        "description": description,
                    },
                )


def postprocess_schema(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular hook: what every operation's schema shares beyond its own view's.

    A request body is required exactly when `{}` would be refused; no string of
    a request may hold a NUL (the service refuses one anywhere); and any
    operation may meet the web server's own refusals.
    """
    _body_required(result)
    _refuse_nul(result)
    _web_server_refusals(result)
    return result
