"""``xworkmate.artifacts.collect-and-snapshot`` (§13.4) with D-A2 and D-A12.

D-A2: the default copies only the absolute ``sourceFiles`` the task referenced (HEAD);
the seed's whole-root scan of the shared staging roots runs only when
``ArtifactSettings.scan_shared_media_roots`` is on and no ``sourceFiles`` are given.

D-A12: a copy never overwrites anything. Each copy is written to a temporary file,
fsynced, and hard-linked into place, which fails instead of replacing an existing name;
a clash takes the next numeric suffix (``chart-1.png``) and adds the warning
``snapshot name clash for <wanted>; saved as <actual>``. A destination that already
holds the very same bytes (a retried call) is reused without a copy or a warning.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from xworkmate.lib.errors import InputError
from xworkmate.lib.openclaw import DEFAULT_MEDIA_DIR

from .coerce import file_limit, non_negative_number, optional_string, param
from .collation import collation_key
from .content import CHUNK_SIZE, label_for_path, node_extname
from .errors import node_fs_error_message
from .paths import (
    ensure_directory_beneath,
    expand_user_path,
    is_within_root,
    optional_artifact_scope,
    relative_parts,
    resolve_scope_root,
    resolve_workspace_root,
    safe_display_path,
    safe_input_relative_path,
    safe_scope_segment,
)
from .scope import (
    claim_scope,
    owned_identity,
    payload_header,
    read_identity,
    requested_scope,
)
from .settings import DEFAULT_MAX_FILES, ArtifactSettings

__all__ = ["NO_SOURCES_WARNING", "collect_and_snapshot"]

NO_SOURCES_WARNING = "no task-referenced source files supplied; shared media roots were not scanned"
_SNAPSHOT_DIR = "artifacts"
_MAX_SUFFIX = 10000


@dataclass(frozen=True)
class _Source:
    label: str
    real_path: str
    relative_path: str  # below the snapshot label directory
    device: int
    inode: int


def _staging_roots(settings: ArtifactSettings) -> list[str]:
    roots: list[str] = []
    for configured in (
        settings.openclaw_media_dir or DEFAULT_MEDIA_DIR,
        settings.openclaw_tmp_dir,
    ):
        expanded = expand_user_path(configured)
        try:
            roots.append(os.path.realpath(expanded, strict=True))
        except OSError:
            roots.append(expanded)  # a missing root is compared as resolved, as in Node
    return roots


def _accept_sources(
    source_files: list[object], roots: list[str], warnings: list[str]
) -> list[_Source]:
    labels = ("generated-media", "generated-tmp")
    accepted: list[_Source] = []
    seen: set[str] = set()
    for entry in source_files:
        requested = optional_string(entry)
        if not requested or not requested.startswith("/") or "\0" in requested:
            warnings.append("skipped non-absolute snapshot source file")
            continue
        try:
            real_path = os.path.realpath(requested, strict=True)
        except OSError as error:
            message = node_fs_error_message(error, "realpath", requested)
            warnings.append(
                f"cannot read referenced source file {label_for_path(requested)}: Error: {message}"
            )
            continue
        if real_path in seen:
            continue
        seen.add(real_path)
        root_index = next(
            (index for index, root in enumerate(roots) if is_within_root(root, real_path)), None
        )
        name = label_for_path(real_path)
        if root_index is None:
            warnings.append(f"skipped referenced source file outside managed staging roots: {name}")
            continue
        try:
            info = os.stat(real_path)
        except OSError as error:
            message = node_fs_error_message(error, "stat", real_path)
            warnings.append(f"cannot read referenced source file {name}: Error: {message}")
            continue
        if not stat.S_ISREG(info.st_mode):
            warnings.append(f"skipped referenced source that is not a file: {name}")
            continue
        if info.st_nlink > 1:
            # Its other name may be any file of the file system: not a staged file.
            warnings.append(f"skipped hard-linked source file: {name}")
            continue
        accepted.append(_Source(labels[root_index], real_path, name, info.st_dev, info.st_ino))
    return accepted


def _scan_staging_root(
    label: str, root: str, since_unix_ms: float, warnings: list[str]
) -> list[_Source]:
    """The seed's whole-root scan (D-A2, only when configured)."""
    try:
        source_root = os.path.realpath(root, strict=True)
    except FileNotFoundError:
        return []
    except OSError as error:
        warnings.append(
            f"cannot read {label}: Error: {node_fs_error_message(error, 'realpath', root)}"
        )
        return []
    found: list[tuple[float, str, _Source]] = []
    pending = [source_root]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as iterator:
                entries = sorted(iterator, key=lambda item: collation_key(item.name))
        except OSError as error:
            message = node_fs_error_message(error, "scandir", current)
            display = safe_display_path(source_root, current)
            warnings.append(f"cannot read {label}/{display}: Error: {message}")
            continue
        subdirs: list[str] = []
        for entry in entries:
            if entry.is_symlink():
                warnings.append(
                    f"skipped symlink {label}/{safe_display_path(source_root, entry.path)}"
                )
            elif entry.is_dir(follow_symlinks=False):
                subdirs.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                changed = max(info.st_mtime_ns, info.st_ctime_ns) / 1e6
                if changed < since_unix_ms:
                    continue
                relative = relative_parts(source_root, entry.path)
                if not relative:
                    warnings.append(f"skipped path outside {label}: {entry.name}")
                    continue
                found.append(
                    (
                        changed,
                        relative,
                        _Source(label, entry.path, relative, info.st_dev, info.st_ino),
                    )
                )
        # Depth first in sorted order: push the sub-directories reversed.
        pending.extend(reversed(subdirs))
    found.sort(key=lambda item: (-item[0], collation_key(item[1])))
    return [source for _, _, source in found]


def _suffixed(name: str, number: int) -> str:
    extension = node_extname(name)
    stem = name[: len(name) - len(extension)] if extension else name
    return f"{stem}-{number}{extension}"


def _same_content(dir_fd: int, name: str, size: int, sha256: str) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            return False
        digest = hashlib.sha256()
        while chunk := os.read(fd, CHUNK_SIZE):
            digest.update(chunk)
        return digest.hexdigest() == sha256
    finally:
        os.close(fd)


def _copy_to_temp(source_fd: int, dir_fd: int) -> tuple[str, int, str]:
    temp_name = f".snapshot-{secrets.token_hex(8)}.tmp"
    out_fd = os.open(
        temp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd
    )
    digest = hashlib.sha256()
    size = 0
    try:
        while chunk := os.read(source_fd, CHUNK_SIZE):
            digest.update(chunk)
            view = memoryview(chunk)
            while view:
                written = os.write(out_fd, view)
                view = view[written:]
            size += len(chunk)
        os.fsync(out_fd)
    except BaseException:
        os.close(out_fd)
        os.unlink(temp_name, dir_fd=dir_fd)
        raise
    os.close(out_fd)
    return temp_name, size, digest.hexdigest()


def _place_without_overwrite(dir_fd: int, temp_name: str, wanted: str, size: int, sha: str) -> str:
    """Link the temp file under ``wanted`` or the first free ``wanted-N``; never replace."""
    try:
        for number in range(_MAX_SUFFIX):
            name = wanted if number == 0 else _suffixed(wanted, number)
            try:
                os.link(temp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                return name
            except FileExistsError:
                if _same_content(dir_fd, name, size, sha):
                    return name
        raise InputError(f"snapshot name clash for {wanted} could not be resolved")
    finally:
        os.unlink(temp_name, dir_fd=dir_fd)


def _snapshot_one(
    workspace_root: str, snapshot_relative: str, source: _Source, destination: str
) -> str:
    """Copy ``source`` to ``artifacts/<destination>``; returns the path actually used."""
    directory, _, wanted = destination.rpartition("/")
    dir_fd, _ = ensure_directory_beneath(workspace_root, f"{snapshot_relative}/{directory}")
    try:
        source_fd = os.open(source.real_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            info = os.fstat(source_fd)
            if (info.st_dev, info.st_ino) != (source.device, source.inode) or not stat.S_ISREG(
                info.st_mode
            ):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory", source.real_path)
            temp_name, size, sha = _copy_to_temp(source_fd, dir_fd)
        finally:
            os.close(source_fd)
        placed = _place_without_overwrite(dir_fd, temp_name, wanted, size, sha)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return f"{directory}/{placed}"


def collect_and_snapshot(
    params: Mapping[str, object], settings: ArtifactSettings
) -> dict[str, object]:
    identity = read_identity(params)
    since_unix_ms = non_negative_number(param(params, "sinceUnixMs"), "sinceUnixMs", 0)
    max_files = file_limit(
        param(params, "maxFiles"), settings.snapshot_max_files, DEFAULT_MAX_FILES
    )
    optional_artifact_scope(params.get("artifactScope"))  # its format, in the original's order
    workspace_root = resolve_workspace_root(params, settings)
    identity = owned_identity(identity, workspace_root)  # D-A16
    artifact_scope = requested_scope(params, identity)
    source_files = params.get("sourceFiles")
    if source_files is not None and not isinstance(source_files, list):
        raise InputError("sourceFiles must be an array of strings")
    # D-A6: all params are valid; the writes start here.
    identity, snapshot_root, _ = claim_scope(workspace_root, identity, extra=_SNAPSHOT_DIR)
    artifact_scope = identity.expected_scope
    scope_root = resolve_scope_root(workspace_root, artifact_scope)
    snapshot_relative = f"{artifact_scope}/{_SNAPSHOT_DIR}"

    warnings: list[str] = []
    copied: list[str] = []
    plan: list[tuple[str, _Source]] = []
    if (isinstance(source_files, list) and source_files) or not settings.scan_shared_media_roots:
        sources = _accept_sources(
            source_files if isinstance(source_files, list) else [],
            _staging_roots(settings),
            warnings,
        )
        plan = [(f"{safe_scope_segment(s.label)}/{s.relative_path}", s) for s in sources]
        if not sources:
            warnings.append(NO_SOURCES_WARNING)
    else:
        media_root, tmp_root = _staging_roots(settings)
        for label, root in (("media", media_root), ("tmp-openclaw", tmp_root)):
            for source in _scan_staging_root(label, root, since_unix_ms, warnings):
                relative = safe_input_relative_path(source.relative_path, "snapshot source path")
                plan.append((f"{safe_scope_segment(label)}/{relative}", source))

    for destination, source in plan:
        if len(copied) >= max_files:
            warnings.append(
                f"snapshot file limit reached; skipped remaining files after {max_files}"
            )
            break
        try:
            placed = _snapshot_one(workspace_root, snapshot_relative, source, destination)
        except FileNotFoundError as error:
            # The source vanished (or was replaced) after it was accepted.
            message = node_fs_error_message(error, "open", source.real_path)
            name = label_for_path(source.real_path)
            warnings.append(f"cannot read referenced source file {name}: Error: {message}")
            continue
        except OSError as error:
            message = node_fs_error_message(error, "copyfile", source.real_path)
            raise InputError(message) from error
        if placed != destination:
            warnings.append(
                f"snapshot name clash for {_SNAPSHOT_DIR}/{destination}; "
                f"saved as {_SNAPSHOT_DIR}/{placed}"
            )
        entry = f"{_SNAPSHOT_DIR}/{placed}"
        if entry not in copied:
            copied.append(entry)
    return {
        **payload_header(identity, workspace_root, artifact_scope),
        "artifactDirectory": scope_root,
        "snapshotDirectory": snapshot_root,
        "copiedFiles": copied,
        "warnings": warnings,
    }
