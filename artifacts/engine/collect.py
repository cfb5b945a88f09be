"""File collection of §8 (``collectCandidates``).

Depth-first walk in ICU order, symlinks skipped with a warning, ``SKIPPED_DIRS`` pruned
at any depth, ``changedAt = max(mtime, ctime)``. The walk never follows a symlink, so
the realpath of every file it meets is the realpath of its directory plus its name:
one ``realpath`` per scan root replaces one per file (§8 takes a realpath per file)
with the same result.

Beyond the original, two kinds of file are skipped with a warning: a hard-linked file
(its other name may lie anywhere, so its bytes are not the scope's to hand out) and
a file whose path would not read back as itself (a backslash is a separator to
``read``; leading or trailing whitespace is trimmed), so every ref an export
returns reads back (D-A3).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

from xworkmate.lib.errors import InputError
from xworkmate.lib.jstext import JS_WHITESPACE

from .collation import collation_key
from .errors import ArtifactMissingError, node_fs_error_message
from .ignore import IgnoreRules
from .paths import TASK_SCOPE_ROOT, in_task_tree, relative_parts, safe_display_path

__all__ = ["SKIPPED_DIRS", "TASK_SCOPES_SKIPPED", "Candidate", "collect_candidates"]

# Said once, naming nothing: the names inside other runs' scopes are not ours to show.
TASK_SCOPES_SKIPPED = "skipped task scopes inside expected artifact dirs"
# What String.prototype.trim removes from a path's ends.
_TRIMMED = frozenset(JS_WHITESPACE)

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
        task_roots: list[str] | None,
    ) -> None:
        self.relative_root = relative_root
        self.since_unix_ms = since_unix_ms
        self.warnings = warnings
        self.ignore_rules = ignore_rules
        self.task_roots = task_roots
        self.base = "workspace" if task_roots is not None else ""
        self.candidates: list[Candidate] = []
        self.stack: list[_Frame] = []

    def _skip_task_scopes(self) -> None:
        if TASK_SCOPES_SKIPPED not in self.warnings:
            self.warnings.append(TASK_SCOPES_SKIPPED)

    def enter(self, path: str, real: str) -> None:
        if self.task_roots is not None and in_task_tree(real, self.task_roots):
            self._skip_task_scopes()  # D-A4: the fallback never reaches a task scope
            return
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
            take, keep = files.append, rest.append
            for entry in entries:
                name = entry.name
                if entry.is_file(follow_symlinks=False) and (name.isascii() or _is_utf8(name)):
                    take(entry)
                else:
                    keep(entry)
            self._take_files(files, relative, real)
            entries = rest
        entries.sort(key=_sort_key)
        self.stack.append(_Frame(path, relative, real, iter(entries)))

    def _take_files(self, files: list[os.DirEntry[str]], relative: str, real: str) -> None:
        # The loop every file of a scope goes through: names bound once, no attribute
        # look-ups inside (bench/artifacts.py rows (a) and (f)).
        prefix = f"{relative}/" if relative else ""
        real_prefix = real if real.endswith("/") else real + "/"
        since = self.since_unix_ms
        matches = self.ignore_rules.matcher()
        append = self.candidates.append
        warn = self.warnings.append
        in_fallback = self.task_roots is not None
        base = self.base
        trimmed = _TRIMMED
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
            if in_fallback and _in_task_scopes(relative_path):
                self._skip_task_scopes()
                continue
            if matches(relative_path):
                continue
            if info.st_nlink > 1:
                warn(f"skipped hard-linked file {relative_path}")
                continue
            if "\\" in name or relative_path[0] in trimmed or name[-1] in trimmed:
                warn(f"skipped file whose name does not read back: {relative_path}")
                continue
            append(
                Candidate(
                    real_prefix + name,
                    relative_path,
                    info.st_size,
                    changed_at_ms,
                    info.st_dev,
                    info.st_ino,
                    base,
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
    raise InputError(message) from error


def _in_task_scopes(relative_path: str) -> bool:
    return any(part.lower() == TASK_SCOPE_ROOT for part in relative_path.split("/"))


def collect_candidates(
    *,
    scan_root: str,
    relative_root: str,
    since_unix_ms: float,
    warnings: list[str],
    ignore_rules: IgnoreRules,
    task_roots: list[str] | None = None,
) -> list[Candidate]:
    """Walk ``scan_root``; paths are made relative to ``relative_root``.

    ``task_roots`` (the configured workspace roots) is given for the expected-dir
    fallback, whose paths are workspace-relative: no directory of a ``tasks`` tree
    below any root is entered, whatever the path or symlink that leads there, and
    no file of one is named (D-A4); the walk says so once, as TASK_SCOPES_SKIPPED.
    Fallback candidates are marked with ``base="workspace"`` for their refs.

    The candidates come back in no particular order; export sorts them (§10 step 11).
    """
    walk = _Walk(
        relative_root=relative_root,
        since_unix_ms=since_unix_ms,
        warnings=warnings,
        ignore_rules=ignore_rules,
        task_roots=task_roots,
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
