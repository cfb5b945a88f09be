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
from typing import NoReturn

from xworkmate.lib.errors import GatewayError

from .collation import collation_key
from .errors import ArtifactMissingError, node_fs_error_message
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


def _sort_key(entry: os.DirEntry[str]) -> tuple[str, str, str]:
    return collation_key(entry.name)


@dataclass(slots=True)
class _Frame:
    path: str  # the path as walked (for display), not resolved
    relative: str | None  # realpath relative to the relative root; None = outside
    real: str
    entries: Iterator[os.DirEntry[str]]


class _Walk:
    """One depth-first walk; state shared by the fast and the ordered paths."""

    def __init__(
        self,
        *,
        relative_root: str,
        since_unix_ms: float,
        warnings: list[str],
        ignore_rules: IgnoreRules,
        exclude_task_scopes: bool,
    ) -> None:
        self.relative_root = relative_root
        self.since_unix_ms = since_unix_ms
        self.warnings = warnings
        self.ignore_rules = ignore_rules
        self.exclude_task_scopes = exclude_task_scopes
        self.base = "workspace" if exclude_task_scopes else ""
        self.candidates: list[Candidate] = []
        self.stack: list[_Frame] = []

    def enter(self, path: str, real: str) -> None:
        try:
            with os.scandir(path) as iterator:
                entries = list(iterator)
        except OSError as error:
            message = node_fs_error_message(error, "scandir", path)
            display = safe_display_path(self.relative_root, path)
            self.warnings.append(f"cannot read {display}: Error: {message}")
            return
        relative = relative_parts(self.relative_root, real)
        if relative is not None:
            # Fast path. Regular files inside the root never produce a warning, so
            # their visiting order cannot show: take them now, unsorted, and keep ICU
            # order (which the warnings and the recursion do show) for the rest.
            rest: list[os.DirEntry[str]] = []
            files: list[os.DirEntry[str]] = []
            for entry in entries:
                if entry.is_file(follow_symlinks=False) and _is_utf8(entry.name):
                    files.append(entry)
                else:
                    rest.append(entry)
            self._take_files(files, relative, real)
            entries = rest
        entries.sort(key=_sort_key)
        self.stack.append(_Frame(path, relative, real, iter(entries)))

    def _take_files(self, files: list[os.DirEntry[str]], relative: str, real: str) -> None:
        prefix = f"{relative}/" if relative else ""
        real_prefix = real if real.endswith("/") else real + "/"
        since = self.since_unix_ms
        matches = self.ignore_rules.matches
        append = self.candidates.append
        for entry in files:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                _raise_vanished(error, entry.path)
            changed_at_ms = max(info.st_mtime_ns, info.st_ctime_ns) / 1e6
            if changed_at_ms < since:
                continue
            name = entry.name
            relative_path = prefix + name
            if self.exclude_task_scopes and _in_task_scopes(relative_path):
                self.warnings.append(f"skipped path inside task scopes {relative_path}")
                continue
            if matches(relative_path):
                continue
            append(
                Candidate(
                    real_prefix + name,
                    relative_path,
                    info.st_size,
                    changed_at_ms,
                    info.st_dev,
                    info.st_ino,
                    self.base,
                )
            )

    def visit(self, frame: _Frame, entry: os.DirEntry[str]) -> None:
        """One entry in ICU order (directories, symlinks, and files outside the root)."""
        name = entry.name
        if not _is_utf8(name):
            shown = _printable(safe_display_path(self.relative_root, entry.path))
            self.warnings.append(f"cannot read {shown}: Error: EILSEQ: illegal byte sequence")
            return
        if entry.is_symlink():
            display = safe_display_path(self.relative_root, os.path.join(frame.path, name))
            self.warnings.append(f"skipped symlink {display}")
            return
        if entry.is_dir(follow_symlinks=False):
            if name not in SKIPPED_DIRS:
                self.enter(os.path.join(frame.path, name), os.path.join(frame.real, name))
            return
        if not entry.is_file(follow_symlinks=False):
            return
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            _raise_vanished(error, entry.path)
        changed_at_ms = max(info.st_mtime_ns, info.st_ctime_ns) / 1e6
        if changed_at_ms < self.since_unix_ms:
            return
        # Only files of a directory outside the relative root reach this point.
        self.warnings.append(f"skipped path outside workspace {name}")


def _raise_vanished(error: OSError, path: str) -> NoReturn:
    # As in the original, a file that vanishes mid-walk aborts the export.
    message = node_fs_error_message(error, "stat", path)
    if isinstance(error, FileNotFoundError):
        raise ArtifactMissingError(message) from error
    raise GatewayError(message) from error


def _in_task_scopes(relative_path: str) -> bool:
    return relative_path.split("/", 1)[0].lower() == TASK_SCOPE_ROOT


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

    The candidates come back in no particular order; export sorts them (§10 step 11).
    """
    walk = _Walk(
        relative_root=relative_root,
        since_unix_ms=since_unix_ms,
        warnings=warnings,
        ignore_rules=ignore_rules,
        exclude_task_scopes=exclude_task_scopes,
    )
    walk.enter(scan_root, os.path.realpath(scan_root))
    stack = walk.stack
    while stack:
        frame = stack[-1]
        entry = next(frame.entries, None)
        if entry is None:
            stack.pop()
            continue
        walk.visit(frame, entry)
    return walk.candidates
