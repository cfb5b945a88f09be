"""The session mapping as both methods read it (§13.1 steps 1-2) and show it
(`XWorkmateSessionMappingV1`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# normalize_expected_artifact_dirs is the one normaliser of §7 (with D-A4):
# prepare must check the dirs before the session key, as the original does,
# and validate_prepare_params checks them after it.
from artifacts.engine import normalize_expected_artifact_dirs
from gateway.models import SessionMapping
from gateway.policies import (
    CREATED_AT_MAX_LENGTH,
    SESSION_KEY_NOT_A_STRING,
    schema_version_is_one,
    task_string,
)
from gateway.services import MappingInput
from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import check_max_length
from xworkmate.lib.jstime import wire_time


def _metadata_envelope(params: Mapping[str, Any]) -> Mapping[str, Any]:
    """`params.xworkmate || params.xworkmateMetadata || params` (plain objects only)."""
    for key in ("xworkmate", "xworkmateMetadata"):
        value = params.get(key)
        if isinstance(value, dict):
            return value
    return params


def read_mapping_request(params: Mapping[str, Any]) -> MappingInput:
    """§13.1 steps 1-2: the mapping metadata, checked in the original's order, writing nothing."""
    env = _metadata_envelope(params)
    if not schema_version_is_one(env.get("schemaVersion")):
        raise InputError("schemaVersion must be 1")
    app_thread_key = task_string(env.get("appThreadKey"))
    if not app_thread_key:
        raise InputError("appThreadKey required")
    expected_dirs = normalize_expected_artifact_dirs(env.get("expectedArtifactDirs"))
    # JS `??`: an empty top-level string does not fall back to the envelope.
    raw_key = params.get("openclawSessionKey")
    raw_key = env.get("openclawSessionKey") if raw_key is None else raw_key
    if isinstance(raw_key, int | float):
        # The original printed a number as its text, so 7 and "7" named one session
        # and a mapping was written for either; a key is a string (issue 9, bad input).
        raise InputError(SESSION_KEY_NOT_A_STRING)
    session_key = task_string(raw_key)
    if not session_key:
        raise InputError("openclawSessionKey required")
    created_at = task_string(env.get("createdAt"))
    check_max_length("appThreadKey", app_thread_key)
    check_max_length("openclawSessionKey", session_key)
    check_max_length("createdAt", created_at, CREATED_AT_MAX_LENGTH)
    return MappingInput(
        app_thread_key=app_thread_key,
        session_key=session_key,
        expected_dirs=expected_dirs,
        created_at_text=created_at,
    )


def mapping_payload(mapping: SessionMapping) -> dict[str, Any]:
    """`XWorkmateSessionMappingV1`, in its key order."""
    return {
        "schemaVersion": 1,
        "appThreadKey": mapping.app_thread_key,
        "openclawSessionKey": mapping.session.session_key,
        "expectedArtifactDirs": list(mapping.expected_artifact_dirs),
        "createdAt": mapping.created_at_text,
        "updatedAt": wire_time(mapping.updated_at),
        "source": mapping.source,
    }
