"""The artifact part of ``xworkmate.session.prepare`` (§13.1 step 4).

The session mapping and the run record belong to the gateway app; it calls
:func:`validate_prepare_params` before writing the mapping (D-A6: nothing is written
for a request that will fail), :func:`create_prepared_scope` afterwards, in the
same transaction, and :func:`discard_prepared_scope` should that transaction not
commit (D-A19).
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
    discard_scope,
    owned_identity,
    payload_header,
    read_identity,
    requested_scope,
)
from .settings import ArtifactSettings

__all__ = [
    "PreparePlan",
    "PreparedScope",
    "create_prepared_scope",
    "discard_prepared_scope",
    "prepare_artifact_scope",
    "validate_prepare_params",
]


@dataclass(frozen=True)
class PreparePlan:
    identity: TaskIdentity
    expected_dirs: list[str]
    artifact_scope: str
    workspace_root: str
    scope_root: str


@dataclass(frozen=True)
class PreparedScope:
    payload: dict[str, object]
    identity: TaskIdentity  # with the scope it owns
    created: bool  # the scope's directory is this prepare's own


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
    return create_prepared_scope(validate_prepare_params(params, settings)).payload


def create_prepared_scope(plan: PreparePlan) -> PreparedScope:
    """The writing half of :func:`prepare_artifact_scope`, for a plan already validated.

    The scope is claimed for the plan's identity (D-A16); should another identity
    have claimed its name since the plan was made, the identity's own name is used.
    """
    identity, scope_root, created = claim_scope(plan.workspace_root, plan.identity)
    prepared = PreparedScope({}, identity, created)
    try:
        status = expected_dir_status(plan.workspace_root, plan.expected_dirs)
    except BaseException:
        discard_prepared_scope(plan, prepared)
        raise
    payload: dict[str, object] = {
        **payload_header(identity, plan.workspace_root, identity.expected_scope),
        "artifactDirectory": scope_root,
        "relativeArtifactDirectory": identity.expected_scope,
        "warnings": [],
        "expectedArtifactDirs": plan.expected_dirs,
        "expectedArtifactDirStatus": status,
    }
    return PreparedScope(payload, identity, created)


def discard_prepared_scope(plan: PreparePlan, prepared: PreparedScope) -> None:
    """Undo :func:`create_prepared_scope` for a prepare that did not commit (D-A19).

    Only a scope this prepare made goes, and only while it is bare: a scope an
    earlier prepare of the run made is the committed run's, and stays.
    """
    if prepared.created:
        discard_scope(plan.workspace_root, prepared.identity)
