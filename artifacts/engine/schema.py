"""JSON Schemas of the engine's params and payloads, for the API documentation (never enforced).

The engine validates params itself, with the contract's coercions and
messages; these schemas say exactly what it accepts, so that a client
generated from the OpenAPI schema sends what the engine takes, and so that
schemathesis, run against a live server, finds no request the schema and the
engine judge differently. Hence some fields are untyped: the engine reads
one type and ignores every other (as the original plugin did), and a schema
typing them would call valid requests invalid. What a schema cannot say
(a workspace must lie inside a configured root, a ref must be one the
service signed) is in the descriptions, and such a request is a 400.

The gateway app reuses the fragments for `tasks.get` and `session.prepare`.
"""

from __future__ import annotations

from typing import Any

from xworkmate.lib.jstext import NOT_BLANK_PATTERN, WHITESPACE_CLASS
from xworkmate.lib.paging import MAX_LISTED_FILES

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
STR_LIST: Schema = {"type": "array", "items": STR}


def described(schema: Schema, text: str) -> Schema:
    """``schema`` with a description."""
    return {**schema, "description": text}


def params_object(properties: dict[str, Any], *required: str, **extra: Any) -> Schema:
    """A method's params: these properties, and any others (unknown params are ignored)."""
    schema: Schema = {"type": "object", "properties": properties, "additionalProperties": True}
    if required:
        schema["required"] = list(required)
    return {**schema, **extra}


def not_blank(text: str) -> Schema:
    """A string that is not empty once trimmed as JavaScript trims (and has no NUL)."""
    return {"type": "string", "pattern": NOT_BLANK_PATTERN, "description": text}


def anything(text: str) -> Schema:
    """A param the engine reads when it has the right type and ignores otherwise."""
    return {"description": text}


# D-A8: numbers, and strings JavaScript's Number() reads as a number (blank is 0).
_WS = f"[{WHITESPACE_CLASS}]*"
NUMERIC_STRING_PATTERN = (
    f"^{_WS}(?:[+-]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?Infinity"
    f"|0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+)?{_WS}$"
)


def number_like(text: str) -> Schema:
    return {
        "description": f"{text}. A number, or a string JavaScript's Number() reads as one "
        "(D-A8); any other type is refused",
        "anyOf": [{"type": "number"}, {"type": "string", "pattern": NUMERIC_STRING_PATTERN}],
    }


IDS: dict[str, Schema] = {
    "openclawSessionKey": not_blank("OpenClaw session key, e.g. agent:main:thread-42"),
    "runId": not_blank("the run (turn) id"),
}
WORKSPACE_DIR = {
    "type": "string",
    "nullable": True,
    "description": "a directory inside a configured workspace root (`workspace.roots`), "
    "outside any `tasks` tree; blank or null means the first root. Anything else is a 400",
}
ARTIFACT_SCOPE = anything(
    "`tasks/<session>/<run>`: when a non-blank string, it must be the run's own scope "
    "(else a 400); any other value is ignored"
)
WHERE: dict[str, Schema] = {"workspaceDir": WORKSPACE_DIR, "artifactScope": ARTIFACT_SCOPE}
LIMITS: dict[str, Schema] = {
    "maxFiles": number_like(
        f"default artifacts.max_files (64); below 1 means the default; at most "
        f"{MAX_LISTED_FILES} are listed, whatever it says (D-K13)"
    ),
    "maxInlineBytes": number_like(
        "default artifacts.max_inline_bytes (10485760); below 0 means the default"
    ),
    "sinceUnixMs": number_like("only files changed at or after this time (epoch ms)"),
}
EXPECTED_ARTIFACT_DIRS: Schema = {
    "type": "array",
    "nullable": True,
    "maxItems": 32768,
    "items": anything(
        "a workspace-relative directory: no absolute path or drive letter, no `.`, `..` or "
        "`tasks` part (else a 400); blank entries and entries that are not strings are ignored"
    ),
    "description": "directories exported when the task scope is empty (D-A4)",
}
EXPORT_OPTIONS: dict[str, Schema] = {
    **LIMITS,
    "includeContent": anything(
        "inline base64 content up to maxInlineBytes: false turns it off; any other value, "
        "or none, leaves it on"
    ),
    "expectedArtifactDirs": EXPECTED_ARTIFACT_DIRS,
    "requiredArtifactExtensions": anything(
        'an array of extensions, e.g. ["pdf", "md"]; entries that are not strings, and any '
        "other value, are ignored"
    ),
    "expectedFileCountByExtension": anything(
        'an object of minimum counts, e.g. {"pdf": 1}; counts are numbers or numeric '
        "strings, anything else (and any value that is not an object) is ignored"
    ),
}

EXPORT = params_object({**IDS, **WHERE, **EXPORT_OPTIONS}, "openclawSessionKey", "runId")

# An export that never inlines: includeContent is not read.
LIST = params_object(
    {**IDS, **WHERE, **{k: v for k, v in EXPORT_OPTIONS.items() if k != "includeContent"}},
    "openclawSessionKey",
    "runId",
)

READ = params_object(
    {
        **IDS,
        **WHERE,
        "artifactRef": {
            "type": "string",
            "nullable": True,
            "description": "the signed ref from export or list, for this session and run "
            "(else a 400); blank or null means none",
        },
        "relativePath": anything(
            "with artifactScope, instead of artifactRef: a path inside the scope; with a ref "
            "it must name the ref's file. Ignored when not a non-blank string"
        ),
        "maxInlineBytes": LIMITS["maxInlineBytes"],
    },
    "openclawSessionKey",
    "runId",
    description="One file: by `artifactRef`, or by `artifactScope` plus `relativePath`.",
    anyOf=[
        {"required": ["artifactRef"], "properties": {"artifactRef": not_blank("a ref")}},
        {
            "required": ["artifactScope", "relativePath"],
            "properties": {
                "artifactScope": not_blank("the run's scope"),
                "relativePath": not_blank("a path inside the scope"),
            },
        },
    ],
)

COLLECT_AND_SNAPSHOT = params_object(
    {
        **IDS,
        **WHERE,
        "sourceFiles": {
            "type": "array",
            "nullable": True,
            "items": anything(
                "an absolute path of a file under artifacts.openclaw_media_dir or "
                "artifacts.openclaw_tmp_dir; anything else is skipped with a warning"
            ),
            "description": "the files the task referenced",
        },
        "maxFiles": number_like(
            f"default artifacts.snapshot_max_files (64); at most {MAX_LISTED_FILES} are copied"
        ),
        "sinceUnixMs": LIMITS["sinceUnixMs"],
    },
    "openclawSessionKey",
    "runId",
)


# --- payloads --------------------------------------------------------------------------

STRINGS: Schema = {"type": "array", "items": STR}


def payload_object(properties: dict[str, Any], *required: str) -> Schema:
    return {"type": "object", "properties": properties, "required": list(required)}


HEADER: dict[str, Schema] = {
    "runId": STR,
    "sessionKey": STR,
    "remoteWorkingDirectory": described(STR, "the workspace's real path"),
    "remoteWorkspaceRefKind": {"type": "string", "enum": ["remotePath"]},
    "artifactScope": STR,
    "scopeKind": {"type": "string", "enum": ["task"]},
}
HEADER_KEYS = tuple(HEADER)

ARTIFACT = payload_object(
    {
        "relativePath": STR,
        "label": STR,
        "contentType": STR,
        "sizeBytes": {"type": "integer", "minimum": 0},
        "sha256": described(STR, "absent while a very large file is still being hashed"),
        "artifactRef": described(STR, "absent while a very large file is still being hashed"),
        "scopeKind": {"type": "string", "enum": ["task"]},
        "artifactScope": STR,
        "encoding": {"type": "string", "enum": ["base64"]},
        "content": described(STR, "base64, when inlined"),
    },
    "relativePath",
    "label",
    "contentType",
    "sizeBytes",
    "scopeKind",
    "artifactScope",
)

EXPECTED_DIR_STATUS: Schema = {
    "type": "array",
    "items": payload_object({"relativePath": STR, "exists": BOOL}, "relativePath", "exists"),
}

MANIFEST = payload_object(
    {
        **HEADER,
        "artifacts": {"type": "array", "items": ARTIFACT},
        "warnings": STRINGS,
        "expectedArtifactDirs": STRINGS,
        "expectedArtifactDirStatus": EXPECTED_DIR_STATUS,
        "constraintSatisfied": BOOL,
        "missingRequiredExtensions": STRINGS,
        "missingRequiredFileCounts": {
            "type": "object",
            "additionalProperties": payload_object(
                {"expected": {"type": "integer"}, "actual": {"type": "integer"}},
                "expected",
                "actual",
            ),
        },
    },
    *HEADER_KEYS,
    "artifacts",
    "warnings",
    "expectedArtifactDirs",
    "expectedArtifactDirStatus",
    "constraintSatisfied",
    "missingRequiredExtensions",
    "missingRequiredFileCounts",
)

PREPARED = payload_object(
    {
        **HEADER,
        "artifactDirectory": STR,
        "relativeArtifactDirectory": STR,
        "warnings": STRINGS,
        "expectedArtifactDirs": STRINGS,
        "expectedArtifactDirStatus": EXPECTED_DIR_STATUS,
    },
    *HEADER_KEYS,
    "artifactDirectory",
    "relativeArtifactDirectory",
    "warnings",
    "expectedArtifactDirs",
    "expectedArtifactDirStatus",
)

SNAPSHOT = payload_object(
    {
        **HEADER,
        "artifactDirectory": STR,
        "snapshotDirectory": STR,
        "copiedFiles": STRINGS,
        "warnings": STRINGS,
    },
    *HEADER_KEYS,
    "artifactDirectory",
    "snapshotDirectory",
    "copiedFiles",
    "warnings",
)
