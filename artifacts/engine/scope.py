"""Request validation shared by export, read, snapshot and prepare (§10 steps 1-6)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass

from xworkmate.lib.errors import GatewayError

from .coerce import required_string
from .paths import (
    artifact_scope_for,
    ensure_directory_beneath,
    optional_artifact_scope,
    relative_parts,
    task_session_scope_for,
)

__all__ = [
    "SCOPE_MARKER",
    "TaskIdentity",
    "create_scope_directory",
    "payload_header",
    "read_identity",
    "scope_created_ms",
]

# Linux has no st_birthtime, so the engine records when it created a scope (§10 step 7
# porting note). The marker lives in a SKIPPED_DIRS directory, so it is never exported.
SCOPE_MARKER = ".xworkmate/scope.json"


@dataclass(frozen=True)
class TaskIdentity:
    run_id: str
    session_key: str
    session_scope: str
    expected_scope: str


def payload_header(
    identity: TaskIdentity, workspace_root: str, artifact_scope: str
) -> dict[str, object]:
    """The keys every artifact payload starts with, in the contract's order."""
    return {
        "runId": identity.run_id,
        "sessionKey": identity.session_key,
        "remoteWorkingDirectory": workspace_root,
        "remoteWorkspaceRefKind": "remotePath",
        "artifactScope": artifact_scope,
        "scopeKind": "task",
    }


def read_identity(params: Mapping[str, object]) -> TaskIdentity:
    run_id = required_string(params.get("runId"), "runId required")
    session_key = required_string(params.get("openclawSessionKey"), "openclawSessionKey required")
    return TaskIdentity(
        run_id=run_id,
        session_key=session_key,
        session_scope=task_session_scope_for(session_key),
        expected_scope=artifact_scope_for(session_key, run_id),
    )


def requested_scope(params: Mapping[str, object], identity: TaskIdentity) -> str:
    requested = optional_artifact_scope(params.get("artifactScope"))
    if requested and requested != identity.expected_scope:
        raise GatewayError("artifactScope does not match sessionKey/runId")
    return requested or identity.expected_scope


def _write_marker(dir_fd: int, created_ms: float) -> None:
    # The directory may exist from an agent's own writes; only the marker must be new.
    with contextlib.suppress(FileExistsError):
        os.mkdir(".xworkmate", 0o777, dir_fd=dir_fd)
    marker_dir = os.open(".xworkmate", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        fd = os.open(
            "scope.json",
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
            0o644,
            dir_fd=marker_dir,
        )
    except FileExistsError:
        os.close(marker_dir)
        return
    try:
        # No fsync: the marker is advisory. One lost to a crash (missing or
        # empty) only makes scope_created_ms fall back to the directory's own
        # times, and a flush to disk on every prepare would hold the session's
        # row lock for nothing.
        os.write(fd, json.dumps({"createdAtMs": created_ms}).encode("ascii"))
    finally:
        os.close(fd)
        os.close(marker_dir)


def create_scope_directory(workspace_root: str, scope_root: str, *, extra: str = "") -> str:
    """``mkdir -p`` the scope (and ``extra`` below it) without following symlinks.

    When this call creates the scope directory it records the creation time in the
    scope marker. Returns the absolute path of the deepest directory.
    """
    relative = relative_parts(workspace_root, scope_root)
    if relative is None:
        raise GatewayError("artifactScope must stay inside the workspace")
    created_ms = time.time() * 1000
    fd, created = ensure_directory_beneath(workspace_root, relative)
    try:
        if created:
            _write_marker(fd, created_ms)
    finally:
        os.close(fd)
    if not extra:
        return scope_root
    fd, _ = ensure_directory_beneath(workspace_root, f"{relative}/{extra}")
    os.close(fd)
    return os.path.join(scope_root, extra)


def _recorded_created_ms(scope_root: str) -> float | None:
    """The marker's time, or None when there is no usable marker.

    Opened with ``O_NOFOLLOW | O_NONBLOCK`` and read only if it is a regular file: the
    agent can write into its scope, and a FIFO or device there must not hang a request.
    """
    try:
        fd = os.open(
            os.path.join(scope_root, SCOPE_MARKER), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        )
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        recorded = json.loads(os.read(fd, 4096))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    value = recorded.get("createdAtMs") if isinstance(recorded, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def scope_created_ms(scope_root: str) -> float:
    """The scope's creation time: the engine's marker, else birth time, else mtime.

    Without a marker (a scope made by hand or by another server) the directory's own
    times are the best evidence left.
    """
    info = os.stat(scope_root)
    recorded = _recorded_created_ms(scope_root)
    if recorded is not None:
        return recorded
    birth = getattr(info, "st_birthtime", 0.0)
    return float(birth) * 1000 if birth else info.st_mtime_ns / 1e6
