"""``xworkmate.artifacts.export`` and ``xworkmate.artifacts.list`` (§10, §13.3, §13.5)."""

from __future__ import annotations

import math
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass

from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import js_trim

from .coerce import (
    file_limit,
    js_key_order,
    js_number,
    js_object_entries,
    js_parse_int,
    non_negative_integer,
    non_negative_number,
    optional_boolean,
    optional_string,
    param,
    typed_string,
)
from .collation import collation_key
from .collect import TASK_SCOPES_SKIPPED, Candidate, collect_candidates
from .content import content_type_for_path, digest_fd, label_for_path
from .errors import ArtifactMissingError, node_fs_error_message
from .ignore import load_artifact_ignore_rules
from .paths import (
    BeneathOpener,
    directory_exists,
    in_task_tree,
    normalize_expected_artifact_dirs,
    relative_parts,
    resolve_scope_root,
    resolve_workspace_root,
    root_forms,
)
from .refs import sign_artifact_ref
from .scope import (
    TaskIdentity,
    owned_identity,
    payload_header,
    read_identity,
    ref_identity,
    requested_scope,
    scope_created_ms,
)
from .settings import DEFAULT_MAX_FILES, DEFAULT_MAX_INLINE_BYTES, ArtifactSettings

__all__ = [
    "check_export_options",
    "expected_dir_status",
    "export_artifacts",
    "list_artifacts",
]

NOT_PREPARED_WARNING = "artifact scope is not prepared for this task run"


def _has_bad_ext_char(extension: str) -> bool:
    return "/" in extension or "\\" in extension or "\0" in extension


def _strip_leading_dots(text: str) -> str:
    return text.lstrip(".")


def normalize_required_extensions(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    result: list[str] = []
    for entry in value:
        extension = _strip_leading_dots(optional_string(entry).lower())
        if extension and not _has_bad_ext_char(extension) and extension not in result:
            result.append(extension)
    return result


def normalize_expected_file_counts(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    result: dict[str, int] = {}
    for raw_extension, raw_count in js_object_entries(value):
        extension = _strip_leading_dots(js_trim(str(raw_extension).lower()))
        if not extension or _has_bad_ext_char(extension):
            continue
        if isinstance(raw_count, int | float) and not isinstance(raw_count, bool):
            count = js_number(raw_count)
        else:
            count = js_parse_int(optional_string(raw_count))
        if not math.isfinite(count) or count <= 0:
            continue
        result[extension] = math.floor(count)
    return js_key_order(result)


def _matches_required(relative_path: str, extensions: list[str]) -> bool:
    lower = relative_path.lower()
    return any(lower.endswith(f".{extension}") for extension in extensions)


def expected_dir_status(workspace_root: str, dirs: list[str]) -> list[dict[str, object]]:
    return [
        {"relativePath": entry, "exists": directory_exists(os.path.join(workspace_root, entry))}
        for entry in dirs
    ]


def _select(candidates: list[Candidate], required: list[str], limit: int) -> list[Candidate]:
    """The first ``limit`` candidates in §10 step 11 order.

    Sorting everything by the cheap numeric keys first, then collating only the prefix
    that can reach the result (ties on the boundary included), gives exactly the order
    of the full comparator sort without building a collation key for every file.
    """

    def primary(candidate: Candidate) -> tuple[int, float]:
        rank = 0 if required and _matches_required(candidate.relative_path, required) else 1
        return rank, -candidate.changed_at_ms

    ordered = sorted(candidates, key=primary)
    end = min(limit, len(ordered))
    if 0 < end < len(ordered):
        boundary = primary(ordered[end - 1])
        while end < len(ordered) and primary(ordered[end]) == boundary:
            end += 1
    head = ordered[:end]
    head.sort(key=lambda c: (*primary(c), collation_key(c.relative_path)))
    return head[:limit]


def _open_candidate(opener: BeneathOpener, candidate: Candidate) -> int:
    """Open a walked file; refuse it if it is no longer the inode the walk checked."""
    relative = relative_parts(opener.root, candidate.absolute_path)
    vanished = FileNotFoundError(2, "No such file or directory")
    try:
        if relative is None:
            raise vanished
        fd = opener.open_file(relative)
    except OSError as error:
        message = node_fs_error_message(error, "open", candidate.absolute_path)
        if isinstance(error, FileNotFoundError):
            raise ArtifactMissingError(message) from error
        if error.errno in (20, 40):  # ENOTDIR, ELOOP: a path part became a symlink
            raise ArtifactMissingError(
                node_fs_error_message(vanished, "open", candidate.absolute_path)
            ) from error
        raise InputError(message) from error
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != (candidate.device, candidate.inode) or not stat.S_ISREG(
        info.st_mode
    ):
        # Replaced between walk and read: the file the walk approved has vanished.
        os.close(fd)
        raise ArtifactMissingError(node_fs_error_message(vanished, "open", candidate.absolute_path))
    return fd


@dataclass(frozen=True)
class _Request:
    """An export's params, every one checked (D-A6: nothing is written before this exists)."""

    identity: TaskIdentity
    max_files: int
    max_inline_bytes: int
    since_unix_ms: float
    include_content: bool
    required: list[str]
    expected_counts: dict[str, int]
    workspace_root: str
    expected_dirs: list[str]
    artifact_scope: str
    scope_root: str
    task_roots: list[str]  # every configured root: no fallback file comes from a tasks tree


def check_export_options(params: Mapping[str, object]) -> None:
    """The checks of an export's options that need no workspace, in the export's order.

    The numbers (D-A8), `workspaceDir`'s type and `expectedArtifactDirs`. A
    lookup (tasks.get) runs them before anything else, so a bad option is
    refused whether or not the lookup gets as far as building a manifest.
    """
    for name in ("maxFiles", "maxInlineBytes", "sinceUnixMs"):
        non_negative_number(param(params, name), name, 0)
    typed_string(params.get("workspaceDir"), "workspaceDir")
    normalize_expected_artifact_dirs(params.get("expectedArtifactDirs"))


def _read_request(
    params: Mapping[str, object], settings: ArtifactSettings, force_include_content: bool | None
) -> _Request:
    """Check every param in the original's order; the first bad one raises."""
    identity = read_identity(params)
    max_files = file_limit(param(params, "maxFiles"), settings.max_files, DEFAULT_MAX_FILES)
    max_inline_bytes = non_negative_integer(
        param(params, "maxInlineBytes"),
        "maxInlineBytes",
        settings.max_inline_bytes,
        DEFAULT_MAX_INLINE_BYTES,
    )
    since_unix_ms = non_negative_number(param(params, "sinceUnixMs"), "sinceUnixMs", 0)
    include_content = (
        force_include_content
        if force_include_content is not None
        else optional_boolean(params.get("includeContent"), True)
    )
    required = normalize_required_extensions(params.get("requiredArtifactExtensions"))
    expected_counts = normalize_expected_file_counts(params.get("expectedFileCountByExtension"))
    workspace_root = resolve_workspace_root(params, settings)
    expected_dirs = normalize_expected_artifact_dirs(params.get("expectedArtifactDirs"))
    identity = owned_identity(identity, workspace_root)  # D-A16
    artifact_scope = requested_scope(params, identity)
    return _Request(
        identity=identity,
        max_files=max_files,
        max_inline_bytes=max_inline_bytes,
        since_unix_ms=since_unix_ms,
        include_content=include_content,
        required=required,
        expected_counts=expected_counts,
        workspace_root=workspace_root,
        expected_dirs=expected_dirs,
        artifact_scope=artifact_scope,
        scope_root=resolve_scope_root(workspace_root, artifact_scope),
        task_roots=root_forms(settings),
    )


def _effective_since(request: _Request, scope_prepared: bool, warnings: list[str]) -> float:
    """`sinceUnixMs`, never later than the scope's creation (files written since count).

    The original prepared an unprepared scope here; an export is a read (a key with
    gateway:read only may call it), so it writes nothing: session.prepare does that.
    """
    if request.since_unix_ms <= 0 or not scope_prepared:
        return request.since_unix_ms
    try:
        return min(request.since_unix_ms, scope_created_ms(request.scope_root))
    except OSError as error:
        message = node_fs_error_message(error, "stat", request.scope_root)
        warnings.append(f"Unable to read artifact scope timestamp: Error: {message}")
        return request.since_unix_ms


def _scope_candidates(request: _Request, since: float, warnings: list[str]) -> list[Candidate]:
    if not directory_exists(request.scope_root):
        return []
    root = request.scope_root
    rules = load_artifact_ignore_rules(root, root, request.workspace_root, warnings)
    return collect_candidates(
        scan_root=root,
        relative_root=root,
        since_unix_ms=since,
        warnings=warnings,
        ignore_rules=rules,
    )


def _fallback_candidates(request: _Request, since: float, warnings: list[str]) -> list[Candidate]:
    """Files of `expectedArtifactDirs`, used only when the task scope has none (§10 step 9)."""
    candidates: list[Candidate] = []
    workspace_root = request.workspace_root
    task_roots = request.task_roots
    for entry in request.expected_dirs:
        dir_path = os.path.join(workspace_root, entry.rstrip("/"))
        if not directory_exists(dir_path):
            continue
        if in_task_tree(os.path.realpath(dir_path), task_roots):
            # Not even its ignore file is read: its rules would be echoed as warnings.
            if TASK_SCOPES_SKIPPED not in warnings:
                warnings.append(TASK_SCOPES_SKIPPED)
            continue
        rules = load_artifact_ignore_rules(dir_path, workspace_root, workspace_root, warnings)
        candidates.extend(
            collect_candidates(
                scan_root=dir_path,
                relative_root=workspace_root,
                since_unix_ms=since,
                warnings=warnings,
                ignore_rules=rules,
                task_roots=task_roots,
            )
        )
    return candidates


@dataclass
class _Budget:
    """What one answer may still spend: inlined bytes, and time hashing new files."""

    inline_left: int
    deadline: float


def _manifest_entry(
    request: _Request,
    candidate: Candidate,
    secret: str,
    budget: _Budget,
    opener: BeneathOpener,
    warnings: list[str],
) -> dict[str, object]:
    """One exported file: hashed (and inlined) from the very inode the walk approved."""
    relative_path = candidate.relative_path
    inline_limit = None
    if request.include_content:
        inline_limit = min(request.max_inline_bytes, budget.inline_left)
        if candidate.size_bytes > budget.inline_left >= 0 and (
            candidate.size_bytes <= request.max_inline_bytes
        ):
            warnings.append(f"{relative_path} was not inlined: the answer's inline total is spent")
            inline_limit = None
    fd = _open_candidate(opener, candidate)
    try:
        digest = digest_fd(
            fd, candidate.size_bytes, inline_limit=inline_limit, deadline=budget.deadline
        )
    finally:
        os.close(fd)
    artifact: dict[str, object] = {
        "relativePath": relative_path,
        "label": label_for_path(relative_path),
        "contentType": content_type_for_path(relative_path),
    }
    if digest is None:
        # Still being hashed (a very large file): listed with what is known.
        artifact.update(
            {
                "sizeBytes": candidate.size_bytes,
                "scopeKind": "task",
                "artifactScope": request.artifact_scope,
            }
        )
        warnings.append(f"{relative_path} is still being hashed; sha256 and artifactRef follow")
        return artifact
    artifact.update(
        {
            "sizeBytes": digest.size_bytes,
            "sha256": digest.sha256,
            "artifactRef": sign_artifact_ref(
                secret=secret,
                workspace_root=request.workspace_root,
                session_scope=request.identity.session_scope,
                run_scope=request.identity.expected_scope,
                artifact_scope=request.artifact_scope,
                relative_path=relative_path,
                size_bytes=digest.size_bytes,
                sha256=digest.sha256,
                base=candidate.base,
                identity=ref_identity(request.identity),
            ),
            "scopeKind": "task",
            "artifactScope": request.artifact_scope,
        }
    )
    if digest.content is not None:
        artifact["encoding"] = "base64"
        artifact["content"] = digest.content
        budget.inline_left -= digest.size_bytes
    elif inline_limit is not None and digest.size_bytes > request.max_inline_bytes:
        warnings.append(f"{relative_path} exceeds maxInlineBytes and was not inlined")
    return artifact


def _unmet_constraints(
    request: _Request, artifacts: list[dict[str, object]]
) -> tuple[list[str], dict[str, object]]:
    """Required extensions with no exported file, and per-extension counts not reached."""
    exported = [str(artifact["relativePath"]).lower() for artifact in artifacts]
    missing_extensions = [
        extension
        for extension in request.required
        if not any(path.endswith(f".{extension}") for path in exported)
    ]
    missing_counts: dict[str, object] = {}
    for extension, expected in request.expected_counts.items():
        actual = sum(1 for path in exported if path.endswith(f".{extension}"))
        if actual < expected:
            missing_counts[extension] = {"expected": expected, "actual": actual}
    return missing_extensions, js_key_order(missing_counts)


def export_artifacts(
    params: Mapping[str, object],
    settings: ArtifactSettings,
    *,
    force_include_content: bool | None = None,
) -> dict[str, object]:
    """§10: the manifest of the task scope (with the expected-dir fallback)."""
    request = _read_request(params, settings, force_include_content)
    warnings: list[str] = []
    scope_prepared = directory_exists(request.scope_root)
    since = _effective_since(request, scope_prepared, warnings)
    candidates = _scope_candidates(request, since, warnings) or _fallback_candidates(
        request, since, warnings
    )
    if not scope_prepared and not candidates:
        warnings.append(NOT_PREPARED_WARNING)
    budget = _Budget(
        inline_left=settings.max_inline_total_bytes,
        deadline=time.monotonic() + settings.hash_budget_seconds,
    )
    with BeneathOpener(request.workspace_root) as opener:
        artifacts = [
            _manifest_entry(request, candidate, settings.signing_secret, budget, opener, warnings)
            for candidate in _select(candidates, request.required, request.max_files)
        ]
    if len(candidates) > request.max_files:
        limit = request.max_files
        warnings.append(f"artifact limit reached; skipped remaining files after {limit}")
    missing_extensions, missing_counts = _unmet_constraints(request, artifacts)
    return {
        **payload_header(request.identity, request.workspace_root, request.artifact_scope),
        "artifacts": artifacts,
        "warnings": warnings,
        "expectedArtifactDirs": request.expected_dirs,
        "expectedArtifactDirStatus": expected_dir_status(
            request.workspace_root, request.expected_dirs
        ),
        "constraintSatisfied": not missing_extensions and not missing_counts,
        "missingRequiredExtensions": missing_extensions,
        "missingRequiredFileCounts": missing_counts,
    }


def list_artifacts(params: Mapping[str, object], settings: ArtifactSettings) -> dict[str, object]:
    """§13.5: export with ``includeContent`` forced off."""
    return export_artifacts(params, settings, force_include_content=False)
