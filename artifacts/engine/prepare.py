"""The artifact part of ``xworkmate.session.prepare`` (§13.1 step 4).

The session mapping and the run record belong to the gateway app; it calls
:func:`validate_prepare_params` before writing the mapping (D-A6: nothing is written
for a request that will fail) and :func:`prepare_artifact_scope` afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .export import expected_dir_status
from .paths import (
    normalize_expected_artifact_dirs,
    optional_artifact_scope,
    resolve_scope_root,
    resolve_workspace_root,
)
from .scope import (
    TaskIdentity,
    claim_scope,
    owned_identity,
    payload_header,
    read_identity,
    requested_scope,
)
from .settings import ArtifactSettings

__all__ = ["PreparePlan", "prepare_artifact_scope", "validate_prepare_params"]


@dataclass(frozen=True)
class PreparePlan:
    identity: TaskIdentity
    expected_dirs: list[str]
    artifact_scope: str
    workspace_root: str
    scope_root: str


def validate_prepare_params(
    params: Mapping[str, object], settings: ArtifactSettings
) -> PreparePlan:
    """Every check of the artifact prepare, in the original's order, writing nothing."""
    identity = read_identity(params)
    expected_dirs = normalize_expected_artifact_dirs(params.get("expectedArtifactDirs"))
    optional_artifact_scope(params.get("artifactScope"))  # its format, in the original's order
    workspace_root = resolve_workspace_root(params, settings)
    identity = owned_identity(identity, workspace_root)  # D-A16
    # The original always prepares the derived scope (a requested one must equal it).
    requested_scope(params, identity)
    artifact_scope = identity.expected_scope
    return PreparePlan(
        identity=identity,
        expected_dirs=expected_dirs,
        artifact_scope=artifact_scope,
        workspace_root=workspace_root,
        scope_root=resolve_scope_root(workspace_root, artifact_scope),
    )


def prepare_artifact_scope(
    params: Mapping[str, object], settings: ArtifactSettings
) -> dict[str, object]:
    """Create ``tasks/<session>/<run>`` and report the expected-dir status.

    The gateway adds ``mapping``, ``appThreadKey`` and ``openclawSessionKey`` after these
    keys (§13.1 success payload).
    """
    return create_prepared_scope(validate_prepare_params(params, settings))


def create_prepared_scope(plan: PreparePlan) -> dict[str, object]:
    """The writing half of :func:`prepare_artifact_scope`, for a plan already validated.

    The scope is claimed for the plan's identity (D-A16); should another identity
    have claimed its name since the plan was made, the identity's own name is used.
    """
    identity, scope_root = claim_scope(plan.workspace_root, plan.identity)
    return {
        **payload_header(identity, plan.workspace_root, identity.expected_scope),
        "artifactDirectory": scope_root,
        "relativeArtifactDirectory": identity.expected_scope,
        "warnings": [],
        "expectedArtifactDirs": plan.expected_dirs,
        "expectedArtifactDirStatus": expected_dir_status(plan.workspace_root, plan.expected_dirs),
    }
