"""The agent tool ``openclaw_multi_session_artifacts`` (§13.7): Markdown manifests.

Session, run and workspace come from the caller's trusted context (the authenticated
agent), never from the tool params: those keys are stripped before anything runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from xworkmate.lib.errors import InputError
from xworkmate.lib.run_identity import with_run_identity

from .export import list_artifacts
from .read import read_artifact
from .settings import ArtifactSettings

__all__ = [
    "TOOL_DEFINITION",
    "ToolContext",
    "format_manifest_markdown",
    "tool_execute",
]

TOOL_DEFINITION: dict[str, object] = {
    "name": "openclaw_multi_session_artifacts",
    "label": "openclaw-multi-session-plugins",
    "description": (
        "List generated artifacts in the current OpenClaw workspace or read one small "
        "artifact as base64 for XWorkmate."
    ),
    "parameters": {
        "type": "object",
        "additionalProperties": False,
        "required": ["action"],
        "properties": {
            "action": {
                "type": "string",
                "enum": ["list", "read"],
                "description": (
                    "Use list to show workspace artifacts, or read to return one small file."
                ),
            },
            "relativePath": {
                "type": "string",
                "description": (
                    "Artifact path relative to artifactScope. Required for "
                    "action=read without artifactRef."
                ),
            },
            "artifactScope": {
                "type": "string",
                "description": (
                    "Task artifact scope returned by prepare/export, for example "
                    "tasks/<session>/<run>."
                ),
            },
            "artifactRef": {
                "type": "string",
                "description": (
                    "Plugin-signed artifact reference returned by export/list. "
                    "Bound to the issuing task scope."
                ),
            },
            "sinceUnixMs": {
                "type": "number",
                "description": (
                    "Only list files changed at or after this Unix timestamp in milliseconds."
                ),
            },
            "maxFiles": {"type": "number", "description": "Maximum number of files to list."},
            "maxInlineBytes": {
                "type": "number",
                "description": "Maximum bytes to inline when reading an artifact.",
            },
        },
    },
}

# What the agent's key decides, never its params: the run, the workspace, and the
# fallback dirs (those come from the bridge's mapping, not from the agent).
_CONTEXT_KEYS = (
    "sessionKey",
    "openclawSessionKey",
    "runId",
    "workspaceDir",
    "expectedArtifactDirs",
)


@dataclass(frozen=True)
class ToolContext:
    """The trusted run context (host ``sessionScope`` values win over plain ones)."""

    session_key: str = ""
    run_id: str = ""
    workspace_dir: str = ""
    relative_task_directory: str = ""


def _js_round_half_up(value: float, digits: int) -> str:
    """``Number.prototype.toFixed`` (ties go up, on the exact binary value)."""
    quantum = Decimal(1).scaleb(-digits)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


def _format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    kib = size / 1024
    if kib < 1024:
        return f"{math.floor(kib + 0.5)} KB"  # Math.round
    mib = kib / 1024
    return f"{_js_round_half_up(mib, 0 if mib >= 10 else 1)} MB"


def _escape_cell(text: str) -> str:
    return text.replace("|", "\\|")


def format_manifest_markdown(payload: Mapping[str, object]) -> str:
    """``formatArtifactManifestMarkdown`` for an export/list/read payload."""
    scope = payload.get("artifactScope") or payload.get("scopeKind") or "workspace"
    lines = [
        "## XWorkmate artifacts",
        "",
        f"Workspace: `{payload.get('remoteWorkingDirectory', '')}`",
        f"Artifact scope: `{scope}`",
        "",
    ]
    artifacts = payload.get("artifacts")
    rows = artifacts if isinstance(artifacts, Sequence) else []
    if not rows:
        lines.append("No artifacts found for this task run.")
    else:
        lines.append("| File | Type | Size | SHA-256 | Inline |")
        lines.append("| --- | --- | ---: | --- | --- |")
        for artifact in rows:
            if not isinstance(artifact, Mapping):
                continue
            size = artifact.get("sizeBytes")
            lines.append(
                f"| `{_escape_cell(str(artifact.get('relativePath', '')))}` "
                f"| {_escape_cell(str(artifact.get('contentType', '')))} "
                f"| {_format_size(size if isinstance(size, int) else 0)} "
                f"| `{str(artifact.get('sha256', ''))[:12]}` "
                f"| {'yes' if artifact.get('encoding') == 'base64' else 'no'} |"
            )
    warnings = payload.get("warnings")
    if isinstance(warnings, Sequence) and not isinstance(warnings, str) and warnings:
        lines.extend(["", "Warnings:"])
        lines.extend(f"- {warning}" for warning in warnings)
    return "\n".join(lines)


def tool_execute(
    params: Mapping[str, object], context: ToolContext, settings: ArtifactSettings
) -> str:
    """Run the tool; returns the text of its single ``{"type": "text"}`` content block."""
    if not context.session_key:
        raise InputError("sessionKey required")
    if not context.run_id:
        raise InputError("runId required")
    base = with_run_identity(
        params,
        drop=_CONTEXT_KEYS,
        session_key=context.session_key,
        run_id=context.run_id,
        workspace_dir=context.workspace_dir,
        artifact_scope=context.relative_task_directory,
    )
    action = params.get("action")
    if action == "list":
        return format_manifest_markdown(list_artifacts(base, settings))
    if action == "read":
        payload = read_artifact(base, settings)
        manifest = format_manifest_markdown(payload)
        artifacts = payload["artifacts"]
        artifact = artifacts[0] if isinstance(artifacts, list) and artifacts else {}
        relative_path = artifact.get("relativePath", "")
        content = artifact.get("content")
        if content:  # "" is falsy in JS too, so an empty file takes the else branch (Q8)
            tail = f"Base64 content for `{relative_path}`:\n\n```base64\n{content}\n```"
        else:
            tail = (
                f"`{relative_path}` is larger than maxInlineBytes; "
                "use the workspace path to download it directly."
            )
        return "\n".join([manifest, "", tail])
    raise InputError("action must be list or read")
