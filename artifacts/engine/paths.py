"""Workspace resolution (§4, D-A9, D-A13), scope naming (§5) and path safety (§6, D-A11).

Every containment test works on path parts of absolute, normalised paths, so a file
named ``..notes.md`` is an ordinary file (D-A11). Writes under the workspace go through
directory file descriptors opened with ``O_NOFOLLOW``, so a symlink swapped into the
path can never redirect a write or a read outside the workspace.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping

from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import js_trim

from .coerce import ABSENT, optional_string, typed_string
from .errors import ArtifactMissingError, WorkspaceUnavailableError, node_fs_error_message
from .settings import ArtifactSettings

__all__ = [
    "TASK_SCOPE_ROOT",
    "WORKSPACE_OUTSIDE_ROOTS",
    "BeneathOpener",
    "artifact_scope_for",
    "directory_exists",
    "ensure_directory_beneath",
    "expand_user_path",
    "in_task_tree",
    "is_within_root",
    "normalize_expected_artifact_dirs",
    "open_directory_beneath",
    "open_file_beneath",
    "optional_artifact_scope",
    "realpath_or_raise",
    "relative_parts",
    "resolve_scope_root",
    "resolve_workspace_root",
    "safe_display_path",
    "safe_input_relative_path",
    "safe_relative_path",
    "safe_scope_segment",
    "safe_task_artifact_scope",
    "task_session_scope_for",
]

TASK_SCOPE_ROOT = "tasks"
WORKSPACE_OUTSIDE_ROOTS = "workspaceDir must be inside a configured workspace root"
WORKSPACE_IN_TASK_SCOPES = "workspaceDir must stay outside task scopes"
WORKSPACE_NOT_A_DIRECTORY = "workspaceDir must be a directory"
EXPECTED_DIR_IN_TASK_SCOPES = "expectedArtifactDir must stay outside task scopes"
# Linear work for any count below this; a longer list is refused (a bridge names a few).
MAX_EXPECTED_ARTIFACT_DIRS = 32768
_SEPARATORS = re.compile(r"[\\/]")
_DRIVE_LETTER = re.compile(r"^[A-Za-z]:[\\/]")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


# --- workspace ---------------------------------------------------------------------------


def _normalize_absolute(path: str) -> str:
    normalized = os.path.normpath(path)
    # POSIX keeps a leading "//"; Node's path.resolve does not.
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def expand_user_path(raw: str) -> str:
    """``~`` → home, ``~/x`` → home/x, anything else resolved against the CWD."""
    home = os.path.expanduser("~")
    if raw == "~":
        return home
    if raw.startswith("~/"):
        return _normalize_absolute(os.path.join(home, raw[2:]))
    return _normalize_absolute(os.path.abspath(raw))


def is_within_root(root: str, target: str) -> bool:
    """True when ``target`` is ``root`` or below it, compared by path parts (D-A11)."""
    if target == root:
        return True
    prefix = root if root.endswith("/") else root + "/"
    return target.startswith(prefix)


def relative_parts(root: str, target: str) -> str | None:
    """The POSIX path of ``target`` below ``root`` ("" for the root), None when outside."""
    if target == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    if target.startswith(prefix):
        return target[len(prefix) :]
    return None


def safe_relative_path(root: str, target: str) -> str:
    """§6.2 ``safeRelativePath`` by parts: "" for the root itself or anything outside."""
    return relative_parts(root, target) or ""


def safe_display_path(root: str, target: str) -> str:
    return safe_relative_path(root, target) or os.path.basename(target)


def realpath_or_raise(path: str) -> str:
    """``fs.realpath`` with Node's error text (D-A13 wording for a missing path)."""
    try:
        return os.path.realpath(path, strict=True)
    except OSError as error:
        message = node_fs_error_message(error, "realpath", path)
        if isinstance(error, FileNotFoundError):
            raise ArtifactMissingError(message) from error
        raise InputError(message) from error


def root_forms(settings: ArtifactSettings) -> list[str]:
    forms: list[str] = []
    for root in settings.workspace_roots:
        expanded = expand_user_path(root)
        forms.append(expanded)
        # A root reached through a symlink (macOS /tmp, a mounted volume) also covers
        # its real location, which is what remoteWorkingDirectory reports back.
        real = os.path.realpath(expanded)
        if real != expanded:
            forms.append(real)
    return forms


def in_task_tree(real_path: str, roots: list[str]) -> bool:
    """Whether ``real_path`` lies in a ``tasks`` tree of any workspace under a root.

    Any directory inside a root may serve as a workspace, so every ``tasks`` part
    below a root (in any case: a case-insensitive file system aliases them) may hold
    other runs' scopes; nothing outside a run's own scope may reach into one (D-A4).
    """
    for root in roots:
        relative = relative_parts(root, real_path)
        if relative and any(part.lower() == TASK_SCOPE_ROOT for part in relative.split("/")):
            return True
    return False


def resolve_workspace_root(params: Mapping[str, object], settings: ArtifactSettings) -> str:
    """§4 with D-A9/D-A13: the realpath of the caller's or the default workspace.

    Order (D-A9): the expanded path must lie inside a configured root whether or not it
    exists; then it must exist (ENOENT wording); then its realpath must still lie inside
    a root (a symlink inside a root pointing elsewhere is refused). Beyond the original,
    it must be a directory, and never one inside a task scope (another run's files).
    """
    explicit = typed_string(params.get("workspaceDir"), "workspaceDir")
    candidate = expand_user_path(explicit or settings.workspace_roots[0])
    roots = root_forms(settings)
    if not any(is_within_root(root, candidate) for root in roots):
        raise InputError(WORKSPACE_OUTSIDE_ROOTS)
    real = realpath_or_raise(candidate)
    if not any(is_within_root(root, real) for root in roots):
        raise InputError(WORKSPACE_OUTSIDE_ROOTS)
    if in_task_tree(real, roots):
        raise InputError(WORKSPACE_IN_TASK_SCOPES)
    if not directory_exists(real):
        raise WorkspaceUnavailableError(WORKSPACE_NOT_A_DIRECTORY)
    return real


def directory_exists(path: str) -> bool:
    """``directoryExists``: ``stat`` (follows symlinks) says it is a directory."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


# --- scopes ------------------------------------------------------------------------------

_SCOPE_SEPARATORS = re.compile(r"[\\/]+")
_SCOPE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SCOPE_UNDERSCORES = re.compile(r"_+")
_SCOPE_EDGES = re.compile(r"^[._-]+|[._-]+$")


def safe_scope_segment(value: str) -> str:
    """§5.1 ``safeScopeSegment``, step by step."""
    segment = _SCOPE_SEPARATORS.sub("_", js_trim(value))
    segment = _SCOPE_UNSAFE.sub("_", segment)
    segment = _SCOPE_UNDERSCORES.sub("_", segment)
    segment = _SCOPE_EDGES.sub("", segment)
    return segment[:96] or "scope"


def task_session_scope_for(session_key: str) -> str:
    return f"{TASK_SCOPE_ROOT}/{safe_scope_segment(session_key)}"


def artifact_scope_for(session_key: str, run_id: str) -> str:
    return f"{task_session_scope_for(session_key)}/{safe_scope_segment(run_id)}"


def safe_input_relative_path(value: object, label: str) -> str:
    """§6.1 ``safeInputRelativePath``.

    Beyond the original, a Windows drive-letter path (``C:\\x``) is refused like an
    absolute path, as §7 already does for expected dirs (issue 3, bad input).
    """
    text = optional_string(value)
    if not text:
        raise InputError(f"{label} required")
    if text.startswith("/") or "\0" in text or _DRIVE_LETTER.match(text):
        raise InputError(f"{label} must stay inside the workspace")
    parts = [part for part in _SEPARATORS.split(text) if part]
    if not parts or any(part in ("..", ".") for part in parts):
        raise InputError(f"{label} must stay inside the workspace")
    return "/".join(parts)


def safe_task_artifact_scope(value: object) -> str:
    scope = safe_input_relative_path(value, "artifactScope")
    parts = scope.split("/")
    if len(parts) != 3 or parts[0] != TASK_SCOPE_ROOT:
        raise InputError("artifactScope must be a task artifact scope")
    return scope


def optional_artifact_scope(value: object) -> str:
    return safe_task_artifact_scope(value) if optional_string(value) else ""


def resolve_scope_root(workspace_root: str, scope: str) -> str:
    checked = safe_task_artifact_scope(scope)
    root = os.path.join(workspace_root, checked)
    if not is_within_root(workspace_root, root):
        raise InputError("artifactScope must stay inside the workspace")
    return root


# --- expected artifact dirs (§7, D-A4) ---------------------------------------------------


def _safe_expected_artifact_dir(value: object) -> str:
    text = optional_string(value)
    if not text:
        return ""
    if _DRIVE_LETTER.match(text) or text.startswith("/") or "\0" in text:
        raise InputError("expectedArtifactDir must stay inside the workspace")
    parts = [part for part in _SEPARATORS.split(text) if part]
    if not parts or any(part in ("..", ".") for part in parts):
        raise InputError("expectedArtifactDir must stay inside the workspace")
    # D-A4: the fallback scan must never reach other runs' scopes, at any depth (a
    # nested workspace has its own tasks/). Compared without case so a
    # case-insensitive file system cannot alias "Tasks" to "tasks".
    if any(part.lower() == TASK_SCOPE_ROOT for part in parts):
        raise InputError(EXPECTED_DIR_IN_TASK_SCOPES)
    return "/".join(parts) + "/"


def normalize_expected_artifact_dirs(value: object) -> list[str]:
    """§7: the entries, normalised and de-duplicated in order; absent means none.

    Beyond the original (which turned any non-array into []), a value that is not an
    array is refused, and so is a list longer than MAX_EXPECTED_ARTIFACT_DIRS.
    """
    if value is None or value is ABSENT:
        return []
    if not isinstance(value, list):
        raise InputError("expectedArtifactDirs must be an array of strings")
    if len(value) > MAX_EXPECTED_ARTIFACT_DIRS:
        raise InputError(
            f"expectedArtifactDirs must have at most {MAX_EXPECTED_ARTIFACT_DIRS} entries"
        )
    seen: dict[str, None] = {}  # insertion-ordered: linear de-duplication
    for entry in value:
        normalized = _safe_expected_artifact_dir(entry)
        if normalized:
            seen.setdefault(normalized)
    return list(seen)


# --- descriptor-relative file system access ----------------------------------------------


def _split_parts(relative: str) -> list[str]:
    return [part for part in relative.split("/") if part]


def _raise_symlink_component(parent_fd: int, part: str, error: OSError, path: str) -> None:
    try:
        mode = os.lstat(part, dir_fd=parent_fd).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        raise InputError("artifactScope must stay inside the workspace") from error
    raise InputError(node_fs_error_message(error, "mkdir", path)) from error


def ensure_directory_beneath(root: str, relative: str) -> tuple[int, bool]:
    """``mkdir -p root/relative`` without following any symlink below ``root``.

    Returns an open descriptor of the final directory (the caller closes it) and whether
    this call created it. A symlink anywhere on the way is refused with
    ``artifactScope must stay inside the workspace``: a writer must never be redirected.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    created = False
    current = root
    try:
        for part in _split_parts(relative):
            current = os.path.join(current, part)
            try:
                os.mkdir(part, 0o777, dir_fd=fd)
                created = True
            except FileExistsError:
                created = False
            except OSError as error:
                raise InputError(node_fs_error_message(error, "mkdir", current)) from error
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                _raise_symlink_component(fd, part, error, current)
                raise  # unreachable: the helper always raises
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, created


class BeneathOpener:
    """Opens files below one root for one call, each directory on the way opened once.

    The same guarantees as :func:`open_file_beneath` (no symlink followed below
    ``root``, FIFOs never block), without walking the path from the root again for
    every file of one directory. The directory descriptors are closed by ``close``.
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self._dirs: dict[str, int] = {}

    def _directory(self, relative: str) -> int:
        fd = self._dirs.get(relative)
        if fd is None:
            if not relative:
                fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            else:
                parent, _, name = relative.rpartition("/")
                fd = os.open(name, _DIR_FLAGS, dir_fd=self._directory(parent))
            self._dirs[relative] = fd
        return fd

    def open_file(self, relative: str) -> int:
        parent, _, name = relative.rpartition("/")
        if not name:
            raise IsADirectoryError(21, "Is a directory", self.root)
        return os.open(name, _FILE_FLAGS, dir_fd=self._directory(parent))

    def close(self) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()

    def __enter__(self) -> BeneathOpener:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_directory_beneath(root: str, relative: str) -> int:
    """Open the directory ``root/relative`` with no symlink followed below ``root``."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in _split_parts(relative):
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file_beneath(root: str, relative: str) -> int:
    """Open ``root/relative`` for reading with no symlink followed below ``root``.

    ``root`` must be a canonical (realpath'd) directory and ``relative`` the POSIX path
    of an already realpath'd target, so a legitimate open never meets a symlink; one
    that does was swapped in after the checks and is refused with ``ELOOP``/``ENOTDIR``.
    ``O_NONBLOCK`` keeps a FIFO swapped in from blocking the request.
    """
    parts = _split_parts(relative)
    if not parts:
        raise IsADirectoryError(21, "Is a directory", root)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
