"""Request validation shared by export, read, snapshot and prepare (§10 steps 1-6)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

from xworkmate.lib.errors import InputError

from .coerce import required_string
from .paths import (
    TASK_SCOPE_ROOT,
    artifact_scope_for,
    ensure_directory_beneath,
    open_directory_beneath,
    optional_artifact_scope,
    relative_parts,
    resolve_scope_root,
    task_session_scope_for,
)

__all__ = [
    "SCOPE_MARKER",
    "ScopeClaim",
    "TaskIdentity",
    "alternative_scope",
    "claim_scope",
    "discard_scope",
    "owned_identity",
    "payload_header",
    "read_identity",
    "ref_identity",
    "scope_created_ms",
    "scope_owner",
]

# Linux has no st_birthtime, so the engine records when it created a scope (§10 step 7
# porting note). The marker lives in a SKIPPED_DIRS directory, so it is never exported.
SCOPE_MARKER = ".xworkmate/scope.json"
_MARKER_DIR, _, _CREATED_FILE = SCOPE_MARKER.partition("/")
_OWNER_FILE = "owner.json"


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
    """The raw identity of the call and the scope names the original derives from it.

    The names are lossy (§5.1); which scope the identity really owns is settled
    against the workspace by `owned_identity` / `claim_scope` (D-A16).
    """
    run_id = required_string(params.get("runId"), "runId required", "runId")
    session_key = required_string(
        params.get("openclawSessionKey"), "openclawSessionKey required", "openclawSessionKey"
    )
    return TaskIdentity(
        run_id=run_id,
        session_key=session_key,
        session_scope=task_session_scope_for(session_key),
        expected_scope=artifact_scope_for(session_key, run_id),
    )


def requested_scope(params: Mapping[str, object], identity: TaskIdentity) -> str:
    requested = optional_artifact_scope(params.get("artifactScope"))
    if requested and requested != identity.expected_scope:
        raise InputError("artifactScope does not match sessionKey/runId")
    return requested or identity.expected_scope


def _open_marker_dir(dir_fd: int) -> int:
    # The directory may exist from an agent's own writes; only the markers must be new.
    with contextlib.suppress(FileExistsError):
        os.mkdir(_MARKER_DIR, 0o777, dir_fd=dir_fd)
    return os.open(_MARKER_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)


def _write_marker(dir_fd: int, created_ms: float) -> None:
    marker_dir = _open_marker_dir(dir_fd)
    try:
        fd = os.open(
            _CREATED_FILE,
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


# --- ownership (D-A16) ---------------------------------------------------------------
#
# The original's scope names are lossy (`agent:main:线程-1` and `agent:main:任务-1`
# both become `agent_main_-1`; names are cut at 96 characters), so two identities can
# name one directory. The first identity to prepare a scope claims it in
# `.xworkmate/owner.json`; a later identity whose name collides gets its own
# directory, the original name plus `__` and a hash of its raw identity. The
# original's naming never produces `__`, so that name cannot be anyone's first name.


def _owner_record(identity: TaskIdentity) -> bytes:
    return json.dumps(
        {"openclawSessionKey": identity.session_key, "runId": identity.run_id},
        ensure_ascii=True,
    ).encode("ascii")


def _parse_owner(raw: bytes) -> tuple[str, str] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    session_key, run_id = record.get("openclawSessionKey"), record.get("runId")
    if isinstance(session_key, str) and isinstance(run_id, str):
        return session_key, run_id
    return None


def _read_owner_at(marker_dir: int) -> tuple[str, str] | bool | None:
    """The recorded owner; None when unclaimed; False when the record is unreadable."""
    try:
        fd = os.open(_OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=marker_dir)
    except FileNotFoundError:
        return None
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        owner = _parse_owner(os.read(fd, 64 * 1024))
    except OSError:
        return False
    finally:
        os.close(fd)
    return owner if owner is not None else False


def scope_owner(workspace_root: str, scope: str) -> tuple[str, str] | bool | None:
    """Who claimed ``scope``: (session key, run id); None if nobody; False if unknown."""
    try:
        fd = open_directory_beneath(workspace_root, f"{scope}/{_MARKER_DIR}")
    except OSError:
        # Missing, or not a plain directory on the way (a symlink or a file was put
        # there): nobody claimed it; what the caller then does with such a path is
        # refused or warned about as before.
        return None
    try:
        return _read_owner_at(fd)
    finally:
        os.close(fd)


def alternative_scope(identity: TaskIdentity) -> str:
    """The deterministic scope of an identity whose original name is taken."""
    raw = f"{identity.session_key}\n{identity.run_id}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return f"{identity.expected_scope}__{digest}"


def ref_identity(identity: TaskIdentity) -> tuple[str, str] | None:
    """The raw pair a ref must sign (D-A17), or None when the scope names spell it."""
    if identity.expected_scope == f"{TASK_SCOPE_ROOT}/{identity.session_key}/{identity.run_id}":
        return None
    return identity.session_key, identity.run_id


def owned_identity(identity: TaskIdentity, workspace_root: str) -> TaskIdentity:
    """The identity with the scope it owns, for reading (never writes anything).

    A scope nobody has claimed (made before claims existed, or by hand) still
    answers to the original name.
    """
    owner = scope_owner(workspace_root, identity.expected_scope)
    if owner is None or owner == (identity.session_key, identity.run_id):
        return identity
    return replace(identity, expected_scope=alternative_scope(identity))


def _claim(dir_fd: int, identity: TaskIdentity) -> bool:
    """Claim the scope open at ``dir_fd`` for ``identity``; False when another owns it.

    The record is written to a temporary name and linked into place, so a reader
    (or a racing claimer) sees either no owner or a complete one.
    """
    marker_dir = _open_marker_dir(dir_fd)
    try:
        temp = f".owner.{os.getpid()}.{secrets.token_hex(6)}"
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=marker_dir
        )
        try:
            os.write(fd, _owner_record(identity))
        finally:
            os.close(fd)
        try:
            os.link(temp, _OWNER_FILE, src_dir_fd=marker_dir, dst_dir_fd=marker_dir)
            return True
        except FileExistsError:
            return _read_owner_at(marker_dir) == (identity.session_key, identity.run_id)
        finally:
            os.unlink(temp, dir_fd=marker_dir)
    finally:
        os.close(marker_dir)


class ScopeClaim(NamedTuple):
    identity: TaskIdentity  # with the scope it owns
    path: str  # the absolute path of the deepest directory
    created: bool  # this call made the scope's directory (then claimed it)


def claim_scope(
    workspace_root: str, identity: TaskIdentity, *, extra: str = ""
) -> ScopeClaim:
    """Create the identity's scope (and ``extra`` below it) and claim it (D-A16).

    ``mkdir -p`` without following symlinks; a scope this call creates records its
    creation time.
    """
    for scope in (identity.expected_scope, alternative_scope(identity)):
        scope_root = resolve_scope_root(workspace_root, scope)
        relative = relative_parts(workspace_root, scope_root)
        if relative is None:
            raise InputError("artifactScope must stay inside the workspace")
        created_ms = time.time() * 1000
        fd, created = ensure_directory_beneath(workspace_root, relative)
        try:
            if created:
                _write_marker(fd, created_ms)
            claimed = _claim(fd, identity)
        finally:
            os.close(fd)
        if not claimed:
            continue
        owned = replace(identity, expected_scope=scope)
        if not extra:
            return ScopeClaim(owned, scope_root, created)
        fd, _ = ensure_directory_beneath(workspace_root, f"{relative}/{extra}")
        os.close(fd)
        return ScopeClaim(owned, os.path.join(scope_root, extra), created)
    # Only a hash collision of two raw identities (or tampering) can get here.
    raise InputError("artifactScope is owned by another session")


_NO_FOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def discard_scope(workspace_root: str, identity: TaskIdentity) -> bool:
    """Remove the scope ``claim_scope`` just made for ``identity``, if it is still bare (D-A19).

    For a prepare whose rows did not commit. Only a directory holding nothing but
    the engine's two markers, with the claim ``identity``'s, is removed; anything
    else found in it (a file, another owner) keeps it, as it then is somebody's.
    Nothing is followed: the directories are opened beneath the workspace, the
    entries removed by name relative to them. The session's directory above it
    stays (other runs of the session, or of a session of the same name, use it).
    Returns whether the scope is gone.
    """
    parent_scope, _, name = identity.expected_scope.rpartition("/")
    try:
        parent = open_directory_beneath(workspace_root, parent_scope)
    except OSError:
        return False
    try:
        scope = os.open(name, _NO_FOLLOW_DIR, dir_fd=parent)
        try:
            marker_dir = os.open(_MARKER_DIR, _NO_FOLLOW_DIR, dir_fd=scope)
            try:
                bare = (
                    os.listdir(scope) == [_MARKER_DIR]
                    and set(os.listdir(marker_dir)) <= {_CREATED_FILE, _OWNER_FILE}
                    and _read_owner_at(marker_dir) == (identity.session_key, identity.run_id)
                )
                if not bare:
                    return False
                for marker in (_OWNER_FILE, _CREATED_FILE):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(marker, dir_fd=marker_dir)
            finally:
                os.close(marker_dir)
            os.rmdir(_MARKER_DIR, dir_fd=scope)
        finally:
            os.close(scope)
        os.rmdir(name, dir_fd=parent)  # refused should anything have appeared meanwhile
    except OSError:
        return False
    finally:
        os.close(parent)
    return True


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
