"""Params acting on one run, whatever they named: how a trusted identity overrides the body's."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["with_run_identity"]


def with_run_identity(
    params: Mapping[str, Any],
    *,
    drop: Collection[str],
    session_key: str,
    run_id: str,
    workspace_dir: str = "",
    artifact_scope: str = "",
) -> dict[str, Any]:
    """`params` acting on one run whatever they said: the keys in `drop` removed,
    the run's session and id set, and its workspace and scope where it has them.

    Used where the identity comes from a trusted source, not the body: a key
    bound to a run (xworkmate.methods.scoped_params) and the artifacts tool's
    context (artifacts.engine.tool).
    """
    scoped = {key: value for key, value in params.items() if key not in drop}
    scoped["openclawSessionKey"] = session_key
    scoped["runId"] = run_id
    if workspace_dir:
        scoped["workspaceDir"] = workspace_dir
    if artifact_scope:
        scoped["artifactScope"] = artifact_scope
    return scoped
