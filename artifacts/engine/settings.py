"""The engine's configuration, resolved by the caller (Django settings, tests, bench)."""

from __future__ import annotations

from dataclasses import dataclass, field

from xworkmate.lib.openclaw import DEFAULT_MEDIA_DIR, DEFAULT_WORKSPACE, default_tmp_dir

__all__ = [
    "DEFAULT_HASH_BUDGET_SECONDS",
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_INLINE_BYTES",
    "DEFAULT_MAX_INLINE_TOTAL_BYTES",
    "ArtifactSettings",
]

DEFAULT_MAX_FILES = 64
DEFAULT_MAX_INLINE_BYTES = 10 * 1024 * 1024
# 16 files of 10 MiB would be 224 MB of base64 in one answer; the total is capped.
DEFAULT_MAX_INLINE_TOTAL_BYTES = 32 * 1024 * 1024
# How long one request may spend hashing files it has not hashed before.
DEFAULT_HASH_BUDGET_SECONDS = 10.0


@dataclass(frozen=True)
class ArtifactSettings:
    """Everything the engine reads from configuration.

    ``workspace_roots[0]`` is the default workspace; a caller's ``workspaceDir`` must lie
    inside one of the roots (D-A9). ``signing_secret`` is already resolved (D-A10, see
    artifacts.conf, which takes it from the service config or the data home).
    """

    signing_secret: str
    workspace_roots: tuple[str, ...] = (DEFAULT_WORKSPACE,)
    max_files: int = DEFAULT_MAX_FILES
    max_inline_bytes: int = DEFAULT_MAX_INLINE_BYTES
    snapshot_max_files: int = DEFAULT_MAX_FILES
    scan_shared_media_roots: bool = False
    openclaw_media_dir: str = DEFAULT_MEDIA_DIR
    openclaw_tmp_dir: str = field(default_factory=default_tmp_dir)
    max_inline_total_bytes: int = DEFAULT_MAX_INLINE_TOTAL_BYTES
    hash_budget_seconds: float = DEFAULT_HASH_BUDGET_SECONDS

    def __post_init__(self) -> None:
        if not self.signing_secret:
            raise ValueError("signing_secret must not be empty")
        if not self.workspace_roots or not all(self.workspace_roots):
            raise ValueError("workspace_roots needs at least one non-empty path")
