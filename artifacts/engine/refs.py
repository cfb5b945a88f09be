"""``artifactRef`` signing and verification (§12), byte-compatible with the original.

A ref is ``base64url(compact JSON payload) + "." + base64url(HMAC-SHA256(secret, body))``.
The signature is compared as text, in constant time, so no two encodings of one MAC
(base64url's unused low bits in the last character) are both accepted.

D-A3: a file exported through the ``expectedArtifactDirs`` fallback lives relative to
the workspace root, not the task scope. Its ref carries one extra signed key,
``"base":"workspace"``, appended after ``sha256`` so scope refs (and the §12.3 golden
vector) stay byte-identical to the original.

D-A17: a ref is valid only for the exact raw identity it was signed for. When the
scope names do not spell the raw session key and run id (``agent:main:x`` is
``agent_main_x`` on disk), the raw pair is signed too, as ``openclawSessionKey`` and
``runId`` after everything else; an identity its names spell exactly signs nothing
more, so its refs stay byte-identical to the original.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
from dataclasses import dataclass

from xworkmate.lib.errors import InputError

from .coerce import js_number, optional_string
from .paths import (
    TASK_SCOPE_ROOT,
    optional_artifact_scope,
    safe_input_relative_path,
    safe_task_artifact_scope,
)

__all__ = [
    "WORKSPACE_BASE",
    "RefPayload",
    "sign_artifact_ref",
    "verify_artifact_ref",
    "workspace_root_hash",
]

WORKSPACE_BASE = "workspace"
_INVALID = "invalid artifactRef"
_SHA256_HEX = re.compile(r"[a-f0-9]{64}")


@dataclass(frozen=True)
class RefPayload:
    """The verified content of a ref (v2)."""

    session_scope: str
    run_scope: str
    artifact_scope: str
    relative_path: str
    size_bytes: int
    sha256: str
    base: str = ""  # "" = relative to artifact_scope; "workspace" = D-A3 fallback file
    identity: tuple[str, str] | None = None  # D-A17: the raw (session key, run id) signed


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _mac(secret: str, body: str) -> str:
    return _b64url(hmac.new(secret.encode("utf-8"), body.encode("ascii"), hashlib.sha256).digest())


def workspace_root_hash(workspace_root: str) -> str:
    return hashlib.sha256(workspace_root.encode("utf-8")).hexdigest()


def sign_artifact_ref(
    *,
    secret: str,
    workspace_root: str,
    session_scope: str,
    run_scope: str,
    artifact_scope: str,
    relative_path: str,
    size_bytes: int,
    sha256: str,
    base: str = "",
    identity: tuple[str, str] | None = None,
) -> str:
    payload: dict[str, object] = {
        "v": 2,
        "workspaceRootHash": workspace_root_hash(workspace_root),
        "scopeKind": "task",
        "sessionScope": session_scope,
        "runScope": run_scope,
    }
    if artifact_scope:
        payload["artifactScope"] = artifact_scope
    payload["relativePath"] = relative_path
    payload["sizeBytes"] = size_bytes
    payload["sha256"] = sha256
    if base:
        payload["base"] = base
    if identity is not None:
        payload["openclawSessionKey"], payload["runId"] = identity
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    body = _b64url(text.encode("utf-8"))
    return f"{body}.{_mac(secret, body)}"


def _decode_body(body: str) -> dict[str, object]:
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        decoded = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, binascii.Error) as error:
        raise InputError(_INVALID) from error
    # JSON.parse of a non-object gives a value whose properties are all undefined.
    return decoded if isinstance(decoded, dict) else {}


def _session_scope(value: object) -> str:
    try:
        scope = safe_input_relative_path(value, "artifactRef sessionScope")
    except InputError as error:
        raise InputError(_INVALID) from error
    parts = scope.split("/")
    if len(parts) != 2 or parts[0] != TASK_SCOPE_ROOT:
        raise InputError(_INVALID)
    return scope


def _run_scope(value: object) -> str:
    try:
        return safe_task_artifact_scope(value)
    except InputError as error:
        raise InputError(_INVALID) from error


def verify_artifact_ref(ref: str, *, secret: str, workspace_root: str) -> RefPayload:
    """§12.4, checks in order; the first failure wins."""
    parts = ref.split(".")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise InputError(_INVALID)
    body, signature = parts
    if not body.isascii() or not signature.isascii():
        raise InputError(_INVALID)
    if not hmac.compare_digest(_mac(secret, body).encode("ascii"), signature.encode("ascii")):
        raise InputError(_INVALID)
    payload = _decode_body(body)
    if payload.get("scopeKind") != "task":
        raise InputError(_INVALID)
    relative_path = safe_input_relative_path(
        payload.get("relativePath"), "artifactRef relativePath"
    )
    artifact_scope = optional_artifact_scope(payload.get("artifactScope"))
    if not artifact_scope:
        raise InputError(_INVALID)
    size_number = js_number(payload.get("sizeBytes"))
    size_bytes = math.floor(size_number) if math.isfinite(size_number) and size_number >= 0 else -1
    sha256 = optional_string(payload.get("sha256")).lower()
    version = payload.get("v")
    if (
        isinstance(version, bool)
        or not isinstance(version, int | float)
        or version != 2
        or size_bytes < 0
        or not _SHA256_HEX.fullmatch(sha256)
    ):
        raise InputError(_INVALID)
    session_scope = _session_scope(payload.get("sessionScope"))
    run_scope = _run_scope(payload.get("runScope"))
    if not run_scope.startswith(session_scope + "/"):
        raise InputError(_INVALID)
    base = ""
    if "base" in payload:
        if payload["base"] != WORKSPACE_BASE:
            raise InputError(_INVALID)
        # D-A4 holds for refs too: a workspace-relative ref never points into tasks/.
        if any(part.lower() == TASK_SCOPE_ROOT for part in relative_path.split("/")):
            raise InputError(_INVALID)
        base = WORKSPACE_BASE
    identity: tuple[str, str] | None = None
    if "openclawSessionKey" in payload or "runId" in payload:
        session_key, run_id = payload.get("openclawSessionKey"), payload.get("runId")
        if not isinstance(session_key, str) or not isinstance(run_id, str):
            raise InputError(_INVALID)
        identity = (session_key, run_id)
    if payload.get("workspaceRootHash") != workspace_root_hash(workspace_root):
        raise InputError("artifactRef does not match workspace")
    return RefPayload(
        session_scope=session_scope,
        run_scope=run_scope,
        artifact_scope=artifact_scope,
        relative_path=relative_path,
        size_bytes=size_bytes,
        sha256=sha256,
        base=base,
        identity=identity,
    )
