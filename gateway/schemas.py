"""JSON Schemas of the gateway's own methods, for the API documentation (never enforced).

As the artifact engine's (artifacts/engine/schema.py, whose fragments these
reuse): the methods check their params themselves, with the contract's
coercions and messages (gateway.methods); these schemas say exactly what
they accept and answer, for the OpenAPI schema the bridge's clients are
generated from.
"""

from __future__ import annotations

from typing import Any

from artifacts.engine.schema import (
    BOOL,
    EXPORT_OPTIONS,
    IDS,
    MANIFEST,
    PREPARED,
    STR,
    STRINGS,
    WHERE,
    anything,
    described,
    params_object,
    payload_object,
)
from gateway.models import SessionMapping
from gateway.policies import CREATED_AT_MAX_LENGTH, MODE
from xworkmate.lib.jstext import KEY_MAX_LENGTH, NOT_BLANK_PATTERN, WHITESPACE_CLASS

__all__ = [
    "SESSION_PREPARE_PARAMS",
    "SESSION_PREPARE_PAYLOAD",
    "TASKS_GET_PARAMS",
    "TASKS_GET_PAYLOAD",
]

# What a task id, thread key or createdAt may be (taskState.ts `optionalString`):
# a string (trimmed; "<nil>" from the Go bridge means none), a number or a boolean,
# read as its text.
_SCALAR_TEXT = "a string, or a number or boolean read as its text"
_WIRE_KEY = {
    "anyOf": [
        {
            "type": "string",
            "pattern": "^(?![" + WHITESPACE_CLASS + "]*<nil>[" + WHITESPACE_CLASS + "]*$)"
            + NOT_BLANK_PATTERN[1:],
            "maxLength": KEY_MAX_LENGTH,
        },
        {"type": "number"},
        {"type": "boolean"},
    ],
}
_SCHEMA_VERSION_ONE = "^[" + WHITESPACE_CLASS + "]*\\+?0*1(?:\\.0*)?[" + WHITESPACE_CLASS + "]*$"

# The mapping's own fields: at the top level of the params, or all of them in
# an `xworkmate` (else `xworkmateMetadata`) object when one is sent (§13.1).
_MAPPING_FIELDS: dict[str, Any] = {
    "schemaVersion": {
        "description": "must be 1 (the default), as JavaScript's Number() reads it: "
        '1, "1", true and [1] are 1',
        "nullable": True,
        "anyOf": [
            {"type": "number", "enum": [1]},
            {"type": "boolean", "enum": [True]},
            {"type": "string", "pattern": _SCHEMA_VERSION_ONE},
            {
                "type": "array",
                "minItems": 1,
                "maxItems": 1,
                "items": {
                    "anyOf": [
                        {"type": "number", "enum": [1]},
                        {"type": "string", "pattern": _SCHEMA_VERSION_ONE},
                    ]
                },
            },
        ],
    },
    "appThreadKey": described(
        _WIRE_KEY, f"the app's thread, mapped to one OpenClaw session: {_SCALAR_TEXT}"
    ),
    "expectedArtifactDirs": EXPORT_OPTIONS["expectedArtifactDirs"],
    "createdAt": {
        "description": f"kept verbatim for a new mapping: {_SCALAR_TEXT}, at most "
        f"{CREATED_AT_MAX_LENGTH} characters; other values mean none",
        "anyOf": [
            {"type": "string", "maxLength": CREATED_AT_MAX_LENGTH},
            {"not": {"type": "string"}},
        ],
    },
}
_SESSION_KEY = {
    **IDS["openclawSessionKey"],
    "maxLength": KEY_MAX_LENGTH,
    "description": "OpenClaw session key, e.g. agent:main:thread-42 (a string: a number is "
    "refused); when absent or null here, the envelope's",
}
_NOT_AN_OBJECT = {"not": {"type": "object"}}


def _mapping_envelope(name: str, *other_envelopes: str) -> dict[str, Any]:
    """The params when the mapping fields come in the object `name`."""
    envelope = {
        "type": "object",
        "required": ["appThreadKey"],
        "properties": {
            **_MAPPING_FIELDS,
            "openclawSessionKey": anything("read only when the top level has none (or null)"),
        },
        "additionalProperties": True,
    }
    return {
        "description": f"the mapping fields in `{name}`",
        "required": [name],
        "properties": {name: envelope, **dict.fromkeys(other_envelopes, _NOT_AN_OBJECT)},
        # The session key: the top level's when it is there (a string), else the envelope's.
        "anyOf": [
            {"required": ["openclawSessionKey"], "properties": {"openclawSessionKey": STR}},
            {
                "properties": {
                    "openclawSessionKey": {"type": "string", "nullable": True, "enum": [None]},
                    name: {
                        "required": ["openclawSessionKey"],
                        "properties": {"openclawSessionKey": _SESSION_KEY},
                    },
                }
            },
        ],
    }


SESSION_PREPARE_PARAMS = params_object(
    {
        # Typed in the first variant only: with an envelope object they are not read.
        **{
            name: anything(f"{field['description']}; read here only without an envelope object")
            for name, field in _MAPPING_FIELDS.items()
        },
        "openclawSessionKey": {**_SESSION_KEY, "nullable": True},
        "runId": {**IDS["runId"], "maxLength": KEY_MAX_LENGTH},
        **WHERE,
        "requestId": anything("not used"),
        "externalTaskId": anything("not used"),
        "xworkmate": anything(
            "an object holding the mapping fields (schemaVersion, appThreadKey, "
            "expectedArtifactDirs, createdAt, openclawSessionKey) instead of the top level; "
            "ignored when not an object"
        ),
        "xworkmateMetadata": anything("the same, when `xworkmate` is not an object"),
    },
    "runId",
    description="The mapping fields (`schemaVersion`, `appThreadKey`, `expectedArtifactDirs`, "
    "`createdAt`) come from `xworkmate` when it is an object, else from `xworkmateMetadata` "
    "when that is one, else from the top level.",
    oneOf=[
        {
            "description": "the mapping fields at the top level",
            "required": ["appThreadKey", "openclawSessionKey", "runId"],
            "properties": {
                **_MAPPING_FIELDS,
                "openclawSessionKey": STR,
                "xworkmate": _NOT_AN_OBJECT,
                "xworkmateMetadata": _NOT_AN_OBJECT,
            },
        },
        _mapping_envelope("xworkmate"),
        _mapping_envelope("xworkmateMetadata", "xworkmate"),
    ],
)

_LOOKUP_KEY = (
    "the lookup: a string (numbers and booleans are read as their text; other values as none)"
)

TASKS_GET_PARAMS = params_object(
    {
        "appThreadKey": anything(f"{_LOOKUP_KEY}; the session is the thread's mapped one"),
        "openclawSessionKey": {
            "type": "string",
            "description": "the session to look up, wins over appThreadKey: a string (any "
            "other value, null included, is refused naming the field, D-A18)",
        },
        "runId": anything(f"{_LOOKUP_KEY}; without it there is no manifest"),
        "taskId": anything(f"{_LOOKUP_KEY}; the native task's id, default runId"),
        "includeArtifacts": anything("false skips the manifest; any other value keeps it"),
        **WHERE,
        **EXPORT_OPTIONS,
        "includeContent": anything(
            "inline base64 content: off when absent, null or false; any other value turns it on"
        ),
    },
    description="Without openclawSessionKey and appThreadKey the answer is the lookup error "
    "`invalid_lookup`. The manifest's options are checked whether or not a manifest is built; "
    "`expectedArtifactDirs` applies only when the session has no mapping (the mapping's win).",
)

_MAPPING = payload_object(
    {
        "schemaVersion": {"type": "integer", "enum": [1]},
        "appThreadKey": STR,
        "openclawSessionKey": STR,
        "expectedArtifactDirs": STRINGS,
        "createdAt": STR,
        "updatedAt": described(STR, "UTC, milliseconds, Z"),
        "source": {"type": "string", "enum": [s for s, _ in SessionMapping.SOURCES]},
    },
    "schemaVersion",
    "appThreadKey",
    "openclawSessionKey",
    "expectedArtifactDirs",
    "createdAt",
    "updatedAt",
    "source",
)

SESSION_PREPARE_PAYLOAD = {
    **PREPARED,
    "properties": {
        **PREPARED["properties"],
        "mapping": _MAPPING,
        "appThreadKey": STR,
        "openclawSessionKey": STR,
    },
    "required": [*PREPARED["required"], "mapping", "appThreadKey", "openclawSessionKey"],
}

_LOOKUP_ERROR = payload_object(
    {
        "ok": {"type": "boolean", "enum": [False]},
        "code": {
            "type": "string",
            "enum": [
                "invalid_lookup",
                "mapping_not_found",
                "task_not_found",
                "no_native_task_record",
            ],
        },
        "message": STR,
        "mapping": _MAPPING,
        "expectedArtifactDirs": STRINGS,
    },
    "ok",
    "code",
    "message",
)
_TASK_STATUS = payload_object(
    {
        "success": BOOL,
        "status": {"type": "string", "enum": ["running", "completed", "failed", "unknown"]},
        "taskStatus": described(STR, "the native record's own status, else status"),
        "terminal": BOOL,
        "terminalSource": {"type": "string", "enum": ["session_prepare", "agent_end"]},
        "evidence": {"type": "string", "enum": ["artifacts_present"]},
        "mode": {"type": "string", "enum": [MODE]},
        "mapping": _MAPPING,
        "appThreadKey": STR,
        "openclawSessionKey": STR,
        "runId": STR,
        "taskId": STR,
        "task": described({"type": "object"}, "the native record, or the recorded run"),
        "output": STR,
        "resultSummary": STR,
        "error": STR,
        "message": STR,
        "expectedArtifactDirs": STRINGS,
        # null when a status was found but no manifest built (artifact evidence aside).
        **{
            key: {"type": "string", "nullable": True}
            for key in ("artifactScope", "remoteWorkingDirectory", "remoteWorkspaceRefKind")
        },
        "scopeKind": {"type": "string", "nullable": True},
        "artifacts": MANIFEST["properties"]["artifacts"],
        "constraintSatisfied": BOOL,
        "missingRequiredExtensions": STRINGS,
        "warnings": STRINGS,
        "artifactCount": {"type": "integer", "minimum": 0},
    },
    "success",
    "status",
    "taskStatus",
    "mode",
    "openclawSessionKey",
    "runId",
    "taskId",
    "task",
    "expectedArtifactDirs",
    "artifacts",
    "warnings",
    "artifactCount",
)
TASKS_GET_PAYLOAD = {
    "description": "the run's status, or a lookup error (`ok: false`)",
    "oneOf": [_LOOKUP_ERROR, {**_TASK_STATUS, "not": {"required": ["ok"]}}],
}
