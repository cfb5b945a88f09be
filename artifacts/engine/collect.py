"""File collection of §8 (``collectCandidates``).

Depth-first walk in ICU order, symlinks skipped with a warning, ``SKIPPED_DIRS`` pruned
at any depth, ``changedAt = max(mtime, ctime)``. The walk never follows a symlink, so
the realpath of every file it meets is the realpath of its directory plus its name:
one ``realpath`` per scan root replaces one per file (§8 takes a realpath per file)
with the same result.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from .collation import collation_key
from .errors import ArtifactMissingError, GatewayError, node_fs_error_message
from .ignore import IgnoreRules
from .paths import TASK_SCOPE_ROOT, relative_parts, safe_display_path

__all__ = ["SKIPPED_DIRS", "Candidate", "collect_candidates"]

SKIPPED_DIRS = frozenset(
    {".git", ".openclaw", ".xworkmate", ".pi", ".dart_tool", ".next", ".turbo", "node_modules"}
)


@dataclass(slots=True)
class Candidate:
    absolute_path: str  # realpath
    relative_path: str  # POSIX, relative to the scan's relative root
    size_bytes: int
    changed_at_ms: float
    device: int
    inode: int
    base: str = ""  # "workspace" for files found by the expected-dir fallback (D-A3)


def _scan_sorted(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as iterator:
        entries = list(iterator)
    entries.sort(key=lambda entry: collation_key(entry.name))
    return entries


def _printable(name: str) -> str:
    # A name that is not UTF-8 decodes with surrogates; show it as Node would (U+FFFD).
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _is_utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(slots=True)
class _Frame:
    path: str  # the path as walked (for display), not resolved
    relative: str | None  # realpath relative to the relative root; None = outside
    real: str
    entries: Iterator[os.DirEntry[str]]


def collect_candidates(
    *,
    scan_root: str,
    relative_root: str,
    since_unix_ms: float,
    warnings: list[str],
    ignore_rules: IgnoreRules,
    exclude_task_scopes: bool = False,
) -> list[Candidate]:
    """Walk ``scan_root``; paths are made relative to ``relative_root``.

    ``exclude_task_scopes`` is set for the expected-dir fallback, whose paths are
    workspace-relative: a directory symlinked into ``tasks/`` must not hand out other
    runs' files (D-A4); such files are skipped with ``skipped path inside task scopes
    <path>``. Fallback candidates are marked with ``base="workspace"`` for their refs.
    """
    candidates: list[Candidate] = []
    stack: list[_Frame] = []

    def enter(path: str, real: str) -> None:
        try:
            entries = _scan_sorted(path)
        except OSError as error:
            message = node_fs_error_message(error, "scandir", path)
            warnings.append(
                f"cannot read {safe_display_path(relative_root, path)}: Error: {message}"
            )
            return
        stack.append(_Frame(path, relative_parts(relative_root, real), real, iter(entries)))

    enter(scan_root, os.path.realpath(scan_root))
    while stack:
        frame = stack[-1]
        entry = next(frame.entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        if not _is_utf8(name):
            shown = _printable(safe_display_path(relative_root, os.path.join(frame.path, name)))
            warnings.append(f"cannot read {shown}: Error: EILSEQ: illegal byte sequence")
            continue
        if entry.is_symlink():
            display = safe_display_path(relative_root, os.path.join(frame.path, name))
            warnings.append(f"skipped symlink {display}")
            continue
        if entry.is_dir(follow_symlinks=False):
            if name not in SKIPPED_DIRS:
                enter(os.path.join(frame.path, name), os.path.join(frame.real, name))
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            # As in the original, a file that vanishes mid-walk aborts the export.
            message = node_fs_error_message(error, "stat", entry.path)
            if isinstance(error, FileNotFoundError):
                raise ArtifactMissingError(message) from error
            raise GatewayError(message) from error
        changed_at_ms = max(info.st_mtime_ns, info.st_ctime_ns) / 1e6
        if changed_at_ms < since_unix_ms:
            continue
        if frame.relative is None:
            warnings.append(f"skipped path outside workspace {name}")
            continue
        relative_path = f"{frame.relative}/{name}" if frame.relative else name
        if exclude_task_scopes and relative_path.split("/", 1)[0].lower() == TASK_SCOPE_ROOT:
            warnings.append(f"skipped path inside task scopes {relative_path}")
            continue
        if ignore_rules.matches(relative_path):
            continue
        candidates.append(
            Candidate(
                absolute_path=os.path.join(frame.real, name),
                relative_path=relative_path,
                size_bytes=info.st_size,
                changed_at_ms=changed_at_ms,
                device=info.st_dev,
                inode=info.st_ino,
                base="workspace" if exclude_task_scopes else "",
            )
        )
    return candidates
