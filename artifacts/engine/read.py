"""``xworkmate.artifacts.read`` (§13.6, D-A3) and the by-ref opener for downloads.

Both run the same checks: identity, scope format, workspace, ref verification and
binding, realpath containment, "is a regular file", and — with a ref — size and SHA-256
of the bytes actually read against the ref, so a file changed since its ref was issued
is refused.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import BinaryIO

from xworkmate.lib.errors import InputError

from .coerce import ABSENT, non_negative_integer, optional_string, typed_string
from .content import CHUNK_SIZE, content_type_for_path, digest_fd, label_for_path
from .errors import ArtifactMissingError, node_fs_error_message
from .paths import (
    in_task_tree,
    is_within_root,
    open_file_beneath,
    optional_artifact_scope,
    realpath_or_raise,
    relative_parts,
    resolve_scope_root,
    resolve_workspace_root,
    root_forms,
    safe_input_relative_path,
    safe_relative_path,
)
from .refs import RefPayload, sign_artifact_ref, verify_artifact_ref
from .scope import TaskIdentity, owned_identity, payload_header, read_identity, ref_identity
from .settings import DEFAULT_MAX_INLINE_BYTES, ArtifactSettings

__all__ = ["ArtifactChangedError", "OpenedArtifact", "open_artifact_by_ref", "read_artifact"]

_OUTSIDE = "relativePath must stay inside the workspace"
_CONTENT_MISMATCH = "artifactRef does not match file content"
_IDENTITY_MISMATCH = "artifactRef does not match sessionKey/runId"
# A second name of a file may sit anywhere on the file system: its bytes are not the
# scope's to hand out, so hard-linked files are never read (nor exported).
_HARD_LINK = "relativePath must not be a hard link"
_STILL_HASHING = "{path} is still being hashed; try again shortly"


class ArtifactChangedError(InputError):
    """The file changed while it was being streamed (see OpenedArtifact.verified_chunks)."""


@dataclass(frozen=True)
class _Target:
    identity: TaskIdentity
    workspace_root: str
    artifact_scope: str
    requested_path: str  # label and content type come from the requested name
    base_root: str  # the scope root, or the workspace root for a D-A3 fallback ref
    real_path: str
    ref: str
    payload: RefPayload | None
    max_inline_bytes: int


def _resolve_target(params: Mapping[str, object], settings: ArtifactSettings) -> _Target:
    identity = read_identity(params)
    max_inline_bytes = non_negative_integer(
        params.get("maxInlineBytes", ABSENT),
        "maxInlineBytes",
        settings.max_inline_bytes,
        DEFAULT_MAX_INLINE_BYTES,
    )
    param_scope = optional_artifact_scope(params.get("artifactScope"))
    workspace_root = resolve_workspace_root(params, settings)
    identity = owned_identity(identity, workspace_root)  # D-A16
    ref = typed_string(params.get("artifactRef"), "artifactRef")
    payload: RefPayload | None = None
    if ref:
        payload = verify_artifact_ref(
            ref, secret=settings.signing_secret, workspace_root=workspace_root
        )
        if (
            payload.session_scope != identity.session_scope
            or payload.run_scope != identity.expected_scope
            or payload.identity != ref_identity(identity)  # D-A17: the exact raw identity
        ):
            raise InputError(_IDENTITY_MISMATCH)
        relative_path = payload.relative_path
        artifact_scope = payload.artifact_scope
        if optional_string(params.get("relativePath")):
            requested = safe_input_relative_path(params.get("relativePath"), "relativePath")
            if requested != relative_path:
                raise InputError("artifactRef does not match relativePath")
        if param_scope and param_scope != artifact_scope:
            raise InputError("artifactRef does not match artifactScope")
        if artifact_scope != identity.expected_scope:
            raise InputError("artifactScope does not match sessionKey/runId")
    else:
        if not param_scope:
            raise InputError("artifactScope or artifactRef required")
        if param_scope != identity.expected_scope:
            raise InputError("artifactScope does not match sessionKey/runId")
        artifact_scope = param_scope
        relative_path = safe_input_relative_path(params.get("relativePath"), "relativePath")
    scope_root = resolve_scope_root(workspace_root, artifact_scope)
    # D-A3: a fallback file's ref is workspace-relative; everything else is scope-relative.
    base_root = workspace_root if payload is not None and payload.base else scope_root
    real_path = realpath_or_raise(os.path.join(base_root, relative_path))
    if not is_within_root(base_root, real_path):
        raise InputError(_OUTSIDE)
    if base_root == workspace_root and in_task_tree(real_path, root_forms(settings)):
        raise InputError(_OUTSIDE)  # D-A4: never another run's scope
    return _Target(
        identity=identity,
        workspace_root=workspace_root,
        artifact_scope=artifact_scope,
        requested_path=relative_path,
        base_root=base_root,
        real_path=real_path,
        ref=ref,
        payload=payload,
        max_inline_bytes=max_inline_bytes,
    )


def _open_target(target: _Target) -> tuple[int, os.stat_result]:
    """Open the checked realpath without following symlinks; it must be a regular file."""
    relative = relative_parts(target.workspace_root, target.real_path)
    if relative is None:
        raise InputError(_OUTSIDE)
    try:
        fd = open_file_beneath(target.workspace_root, relative)
    except FileNotFoundError as error:
        message = node_fs_error_message(error, "open", target.real_path)
        raise ArtifactMissingError(message) from error
    except IsADirectoryError as error:
        raise InputError("relativePath must point to a file") from error
    except OSError as error:
        if error.errno in (20, 40):  # ENOTDIR, ELOOP: a part was swapped for a symlink
            raise InputError(_OUTSIDE) from error
        raise InputError(node_fs_error_message(error, "open", target.real_path)) from error
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError("relativePath must point to a file")
    if info.st_nlink > 1:
        os.close(fd)
        raise InputError(_HARD_LINK)
    return fd, info


def _check_size(target: _Target, size: int) -> None:
    if target.payload is not None and size != target.payload.size_bytes:
        raise InputError(_CONTENT_MISMATCH)


def read_artifact(params: Mapping[str, object], settings: ArtifactSettings) -> dict[str, object]:
    """§13.6: one artifact, inlined when its size ≤ maxInlineBytes."""
    target = _resolve_target(params, settings)
    fd, info = _open_target(target)
    try:
        _check_size(target, info.st_size)
        digest = digest_fd(
            fd,
            info.st_size,
            inline_limit=target.max_inline_bytes,
            deadline=time.monotonic() + settings.hash_budget_seconds,
        )
    finally:
        os.close(fd)
    if digest is None:
        raise InputError(_STILL_HASHING.format(path=target.requested_path))
    if target.payload is not None and (
        digest.size_bytes != target.payload.size_bytes or digest.sha256 != target.payload.sha256
    ):
        raise InputError(_CONTENT_MISMATCH)
    relative_path = safe_relative_path(target.base_root, target.real_path)
    ref = target.ref or sign_artifact_ref(
        secret=settings.signing_secret,
        workspace_root=target.workspace_root,
        session_scope=target.identity.session_scope,
        run_scope=target.identity.expected_scope,
        artifact_scope=target.artifact_scope,
        relative_path=relative_path,
        size_bytes=digest.size_bytes,
        sha256=digest.sha256,
        identity=ref_identity(target.identity),
    )
    artifact: dict[str, object] = {
        "relativePath": relative_path,
        "label": label_for_path(target.requested_path),
        "contentType": content_type_for_path(target.requested_path),
        "sizeBytes": digest.size_bytes,
        "sha256": digest.sha256,
        "artifactRef": ref,
        "scopeKind": "task",
        "artifactScope": target.artifact_scope,
    }
    warnings: list[str] = []
    if digest.content is not None:
        artifact["encoding"] = "base64"
        artifact["content"] = digest.content
    else:
        warnings.append(f"{target.requested_path} exceeds maxInlineBytes and was not inlined")
    return {
        **payload_header(target.identity, target.workspace_root, target.artifact_scope),
        "artifacts": [artifact],
        "warnings": warnings,
        "expectedArtifactDirs": [],
        "expectedArtifactDirStatus": [],
        "constraintSatisfied": True,
        "missingRequiredExtensions": [],
        "missingRequiredFileCounts": {},
    }


@dataclass
class OpenedArtifact:
    """A verified, open artifact for a streaming download; close it (or use ``with``).

    ``file`` is positioned at 0 and is the very inode whose bytes were just hashed and
    matched against the ref.
    """

    file: BinaryIO
    relative_path: str
    label: str
    content_type: str
    size_bytes: int
    sha256: str
    artifact_scope: str
    real_path: str = field(repr=False)

    def close(self) -> None:
        self.file.close()

    def verified_chunks(self, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """The file's bytes, hashed as they go; the last chunk only once they matched.

        The file was verified when it was opened, but it may change while it is
        being sent. Holding back the final chunk until the whole digest is known
        means a changed file never completes a response: the stream fails instead
        (raising ArtifactChangedError), and the receiver sees a short body.
        """
        digest = hashlib.sha256()
        sent = 0
        pending = b""
        with self.file:
            self.file.seek(0)
            while chunk := self.file.read(chunk_size):
                digest.update(chunk)
                sent += len(chunk)
                if pending:
                    yield pending
                pending = chunk
            if (sent, digest.hexdigest()) != (self.size_bytes, self.sha256):
                raise ArtifactChangedError(_CONTENT_MISMATCH)
            if pending:
                yield pending

    def __enter__(self) -> OpenedArtifact:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def open_artifact_by_ref(
    ref: str, params: Mapping[str, object], settings: ArtifactSettings
) -> OpenedArtifact:
    """Open the file behind ``ref`` for streaming, with exactly the checks of ``read``.

    ``params`` supplies ``openclawSessionKey``, ``runId`` and optionally ``workspaceDir``
    (the caller's trusted context). The file is hashed in chunks before it is handed
    out, so the bytes streamed are the bytes the ref was issued for.
    """
    if not optional_string(ref):
        raise InputError("invalid artifactRef")
    target = _resolve_target({**params, "artifactRef": ref}, settings)
    fd, info = _open_target(target)
    try:
        _check_size(target, info.st_size)
        # A file this process hashed already costs nothing here; the bytes are
        # hashed again as they stream (OpenedArtifact.verified_chunks) in any case.
        digest = digest_fd(
            fd,
            info.st_size,
            inline_limit=None,
            deadline=time.monotonic() + settings.hash_budget_seconds,
        )
        if digest is None:
            raise InputError(_STILL_HASHING.format(path=target.requested_path))
        total = digest.size_bytes
        if target.payload is None or (total, digest.sha256) != (
            target.payload.size_bytes,
            target.payload.sha256,
        ):
            raise InputError(_CONTENT_MISMATCH)
        os.lseek(fd, 0, os.SEEK_SET)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    return OpenedArtifact(
        file=handle,
        relative_path=safe_relative_path(target.base_root, target.real_path),
        label=label_for_path(target.requested_path),
        content_type=content_type_for_path(target.requested_path),
        size_bytes=total,
        sha256=target.payload.sha256,
        artifact_scope=target.artifact_scope,
        real_path=target.real_path,
    )
