"""The engine's configuration, resolved by the caller (Django settings, tests, bench)."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_INLINE_BYTES",
    "SIGNING_SECRET_ENV",
    "ArtifactSettings",
    "load_or_create_secret",
    "resolve_signing_secret",
]

DEFAULT_MAX_FILES = 64
DEFAULT_MAX_INLINE_BYTES = 10 * 1024 * 1024
DEFAULT_WORKSPACE = "~/.openclaw/workspace"
SIGNING_SECRET_ENV = "XWORKMATE_ARTIFACT_REF_SIGNING_SECRET"  # noqa: S105 (a variable name)


def _default_tmp_dir() -> str:
    # Node: os.tmpdir() + "/openclaw"; tempfile honours TMPDIR the same way.
    return os.path.join(tempfile.gettempdir(), "openclaw")


@dataclass(frozen=True)
class ArtifactSettings:
    """Everything the engine reads from configuration.

    ``workspace_roots[0]`` is the default workspace; a caller's ``workspaceDir`` must lie
    inside one of the roots (D-A9). ``signing_secret`` is already resolved (D-A10, see
    :func:`resolve_signing_secret`).
    """

    signing_secret: str
    workspace_roots: tuple[str, ...] = (DEFAULT_WORKSPACE,)
    max_files: int = DEFAULT_MAX_FILES
    max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES
    snapshot_max_files: int = DEFAULT_MAX_FILES
    scan_shared_media_roots: bool = False
    openclaw_media_dir: str = "~/.openclaw/media"
    openclaw_tmp_dir: str = field(default_factory=_default_tmp_dir)

    def __post_init__(self) -> None:
        if not self.signing_secret:
            raise ValueError("signing_secret must not be empty")
        if not self.workspace_roots or not all(self.workspace_roots):
            raise ValueError("workspace_roots needs at least one non-empty path")


def load_or_create_secret(path: str) -> str:
    """Return the secret stored at ``path``, creating it once (D-A10).

    Creation is atomic and exclusive (write a temp file, fsync, hard-link into place),
    so two workers starting together agree on one secret and refs survive restarts.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            stored = handle.read().strip()
        if stored:
            return stored
    except FileNotFoundError:
        pass  # first start: create it below
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd, temp_path = tempfile.mkstemp(prefix=".artifact-ref-secret-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        # If another process won the race, its secret is the one everybody uses.
        with contextlib.suppress(FileExistsError):
            os.link(temp_path, path)
    finally:
        os.unlink(temp_path)
    with open(path, encoding="utf-8") as handle:
        stored = handle.read().strip()
    if not stored:
        raise RuntimeError(f"artifact ref secret file {path} is empty")
    return stored


def resolve_signing_secret(
    configured: str | None, environ: Mapping[str, str], secret_path: str
) -> str:
    """Config, then ``XWORKMATE_ARTIFACT_REF_SIGNING_SECRET``, then the stored secret."""
    for candidate in (configured, environ.get(SIGNING_SECRET_ENV)):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return load_or_create_secret(secret_path)
