"""OpenAPI descriptions of the gateway methods' params (documentation only).

The engines validate params themselves, with the contract's coercions and
messages (numbers as strings, `"<nil>"` from the Go bridge...), so these
schemas describe what the bridge sends; they are not enforced.
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_NUM = {"type": "number"}
_BOOL = {"type": "boolean"}
_STR_LIST = {"type": "array", "items": _STR}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return {"application/json": schema}


def _doc(schema: dict[str, Any], text: str) -> dict[str, Any]:
    return {**schema, "description": text}


_IDS = {
    "openclawSessionKey": _doc(_STR, "OpenClaw session key, e.g. agent:main:thread-42"),
    "runId": _doc(_STR, "the run (turn) id"),
}
_WHERE = {
    "workspaceDir": _doc(_STR, "inside a configured workspace root; default the first root"),
    "artifactScope": _doc(_STR, "tasks/<session>/<run>; must match the session and run"),
}
_LIMITS = {
    "maxFiles": _doc(_NUM, "default artifacts.max_files (64)"),
    "maxInlineBytes": _doc(_NUM, "default artifacts.max_inline_bytes (10485760)"),
    "sinceUnixMs": _doc(_NUM, "only files changed at or after this time (epoch ms)"),
}
_EXPORT_OPTIONS = {
    **_LIMITS,
    "includeContent": _doc(_BOOL, "inline base64 content up to maxInlineBytes"),
    "expectedArtifactDirs": _doc(
        _STR_LIST, "workspace-relative dirs exported when the scope is empty (not under tasks/)"
    ),
    "requiredArtifactExtensions": _doc(_STR_LIST, "e.g. [\"pdf\", \"md\"]"),
    "expectedFileCountByExtension": {"type": "object", "additionalProperties": _NUM},
}

SESSION_PREPARE = _object(
    {
        "schemaVersion": _doc(_NUM, "must be 1 (default)"),
        "appThreadKey": _doc(_STR, "the app's thread, mapped to one OpenClaw session"),
        **_IDS,
        "expectedArtifactDirs": _EXPORT_OPTIONS["expectedArtifactDirs"],
        **_WHERE,
        "createdAt": _doc(_STR, "kept verbatim for a new mapping"),
        "requestId": _STR,
        "externalTaskId": _STR,
        "xworkmate": _doc({"type": "object"}, "optional envelope holding the mapping fields"),
    },
    ("appThreadKey", "openclawSessionKey", "runId"),
)

TASKS_GET = _object(
    {
        "appThreadKey": _STR,
        **_IDS,
        "taskId": _STR,
        "includeArtifacts": _doc(_BOOL, "default true; false skips the manifest"),
        **_WHERE,
        **_EXPORT_OPTIONS,
        "includeContent": _doc(_BOOL, "default false here"),
    }
)

EXPORT = _object({**_IDS, **_WHERE, **_EXPORT_OPTIONS}, ("openclawSessionKey", "runId"))

LIST = _object({**_IDS, **_WHERE, **_LIMITS}, ("openclawSessionKey", "runId"))

READ = _object(
    {
        **_IDS,
        **_WHERE,
        "artifactRef": _doc(_STR, "the signed ref from export or list"),
        "relativePath": _doc(_STR, "with artifactScope, instead of artifactRef"),
        "maxInlineBytes": _LIMITS["maxInlineBytes"],
    },
    ("openclawSessionKey", "runId"),
)

COLLECT_AND_SNAPSHOT = _object(
    {
        **_IDS,
        **_WHERE,
        "sourceFiles": _doc(_STR_LIST, "absolute paths of files the task referenced"),
        "maxFiles": _doc(_NUM, "default artifacts.snapshot_max_files (64)"),
    },
    ("openclawSessionKey", "runId"),
)
