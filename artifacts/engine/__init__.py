"""Framework-free artifact engine of the xworkmate gateway (issue 3).

One function per gateway method; each takes the request params (a JSON object) and an
:class:`ArtifactSettings`, returns the exact payload dict, or raises
``xworkmate.lib.errors.InputError`` (``code`` + contract ``message``). Of the
project it imports only ``xworkmate.lib``: no framework, so it runs and is
tested on its own (D-K2).
"""

from .errors import ArtifactMissingError, WorkspaceUnavailableError, node_fs_error_message
from .export import check_export_options, export_artifacts, list_artifacts
from .paths import (
    artifact_scope_for,
    normalize_expected_artifact_dirs,
    safe_scope_segment,
    task_session_scope_for,
)
from .prepare import (
    PreparedScope,
    PreparePlan,
    create_prepared_scope,
    discard_prepared_scope,
    prepare_artifact_scope,
    validate_prepare_params,
)
from .read import ArtifactChangedError, OpenedArtifact, open_artifact_by_ref, read_artifact
from .refs import RefPayload, sign_artifact_ref, verify_artifact_ref
from .settings import ArtifactSettings
from .snapshot import collect_and_snapshot
from .tool import (
    TOOL_DEFINITION,
    ToolContext,
    format_manifest_markdown,
    tool_execute,
)

__all__ = [
    "TOOL_DEFINITION",
    "ArtifactChangedError",
    "ArtifactMissingError",
    "ArtifactSettings",
    "OpenedArtifact",
    "PreparePlan",
    "PreparedScope",
    "RefPayload",
    "ToolContext",
    "WorkspaceUnavailableError",
    "artifact_scope_for",
    "check_export_options",
    "collect_and_snapshot",
    "create_prepared_scope",
    "discard_prepared_scope",
    "export_artifacts",
    "format_manifest_markdown",
    "list_artifacts",
    "node_fs_error_message",
    "normalize_expected_artifact_dirs",
    "open_artifact_by_ref",
    "prepare_artifact_scope",
    "read_artifact",
    "safe_scope_segment",
    "sign_artifact_ref",
    "task_session_scope_for",
    "tool_execute",
    "validate_prepare_params",
    "verify_artifact_ref",
]
