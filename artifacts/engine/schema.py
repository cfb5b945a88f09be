"""JSON Schemas of the engine's params, for the API documentation (never enforced).

The engine validates params itself, with the contract's coercions and
messages (numbers as strings, `"<nil>"` from the Go bridge...), so these
schemas describe what the bridge sends. The gateway app reuses the fragments
for `tasks.get` and `session.prepare`, which pass them through to the engine.
"""

from __future__ import annotations

from typing import Any

STR = {"type": "string"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
STR_LIST = {"type": "array", "items": STR}


def json_object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON request body with these properties, as drf-spectacular takes it."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return {"application/json": schema}


def described(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """``schema`` with a description."""
    return {**schema, "description": text}


IDS = {
    "openclawSessionKey": described(STR, "OpenClaw session key, e.g. agent:main:thread-42"),
    "runId": described(STR, "the run (turn) id"),
}
WHERE = {
    "workspaceDir": described(STR, "inside a configured workspace root; default the first root"),
    "artifactScope": described(STR, "tasks/<session>/<run>; must match the session and run"),
}
LIMITS = {
    "maxFiles": described(NUM, "default artifacts.max_files (64)"),
    "maxInlineBytes": described(NUM, "default artifacts.max_inline_bytes (10485760)"),
    "sinceUnixMs": described(NUM, "only files changed at or after this time (epoch ms)"),
}
EXPORT_OPTIONS = {
    **LIMITS,
    "includeContent": described(BOOL, "inline base64 content up to maxInlineBytes"),
    "expectedArtifactDirs": described(
        STR_LIST, "workspace-relative dirs exported when the scope is empty (not under tasks/)"
    ),
    "requiredArtifactExtensions": described(STR_LIST, "e.g. [\"pdf\", \"md\"]"),
    "expectedFileCountByExtension": {"type": "object", "additionalProperties": NUM},
}

EXPORT = json_object({**IDS, **WHERE, **EXPORT_OPTIONS}, ("openclawSessionKey", "runId"))

LIST = json_object({**IDS, **WHERE, **LIMITS}, ("openclawSessionKey", "runId"))

READ = json_object(
    {
        **IDS,
        **WHERE,
        "artifactRef": described(STR, "the signed ref from export or list"),
        "relativePath": described(STR, "with artifactScope, instead of artifactRef"),
        "maxInlineBytes": LIMITS["maxInlineBytes"],
    },
    ("openclawSessionKey", "runId"),
)

COLLECT_AND_SNAPSHOT = json_object(
    {
        **IDS,
        **WHERE,
        "sourceFiles": described(STR_LIST, "absolute paths of files the task referenced"),
        "maxFiles": described(NUM, "default artifacts.snapshot_max_files (64)"),
    },
    ("openclawSessionKey", "runId"),
)
