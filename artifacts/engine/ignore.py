"""The ``artifact-ignore.md`` grammar of §9."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from xworkmate.lib.wire import js_trim

from .errors import node_fs_error_message
from .paths import is_within_root, open_file_beneath, relative_parts

__all__ = ["ARTIFACT_IGNORE_FILE", "IgnoreRules", "load_artifact_ignore_rules", "parse_rules"]

ARTIFACT_IGNORE_FILE = "artifact-ignore.md"
# An ignore file is a short list of rules; a bigger one is refused rather than read
# into memory whole (an agent controls this file).
_MAX_IGNORE_FILE_BYTES = 1024 * 1024
_LINE_BREAK = re.compile(r"\r?\n")
_SEPARATORS = re.compile(r"[\\/]")
_TRAILING_SEPARATOR = re.compile(r"[\\/]$")


@dataclass
class IgnoreRules:
    """Compiled rules; matching is a few set look-ups and ``str.endswith`` calls."""

    exact: set[str] = field(default_factory=lambda: {ARTIFACT_IGNORE_FILE})
    directories: list[str] = field(default_factory=list)
    root_suffixes: list[str] = field(default_factory=list)
    any_suffixes: list[str] = field(default_factory=list)

    def matches(self, relative_path: str) -> bool:
        if relative_path in self.exact:
            return True
        for directory in self.directories:
            if relative_path == directory or relative_path.startswith(directory + "/"):
                return True
        if self.any_suffixes and relative_path.endswith(tuple(self.any_suffixes)):
            return True
        return bool(
            self.root_suffixes
            and "/" not in relative_path
            and relative_path.endswith(tuple(self.root_suffixes))
        )


def _rule_lines(content: str) -> list[str]:
    lines = _LINE_BREAK.split(content)
    fenced: list[str] = []
    inside = False
    saw_block = False
    for line in lines:
        trimmed = js_trim(line)
        if not inside and trimmed == "```artifact-ignore":
            inside = True
            saw_block = True
            continue
        if inside and trimmed == "```":
            inside = False
            continue
        if inside:
            fenced.append(line)
    return fenced if saw_block else lines


def _add_rule(rules: IgnoreRules, line: str, warnings: list[str]) -> None:
    trimmed = js_trim(line)
    if not trimmed or trimmed.startswith("#"):
        return
    if (
        "\0" in trimmed
        or trimmed.startswith("/")
        or any(part in ("..", ".") for part in _SEPARATORS.split(trimmed))
    ):
        warnings.append(f"ignored unsafe artifact ignore rule: {trimmed}")
        return
    directory_rule = bool(_TRAILING_SEPARATOR.search(trimmed))
    normalized = "/".join(part for part in _SEPARATORS.split(trimmed) if part)
    if not normalized:
        return
    if directory_rule:
        if "*" in normalized:
            warnings.append(f"ignored unsupported artifact ignore rule: {trimmed}")
            return
        rules.directories.append(normalized)
    elif normalized.startswith("**/*") and len(normalized) > 4:
        rules.any_suffixes.append(normalized[4:])
    elif "/" not in normalized and normalized.startswith("*") and len(normalized) > 1:
        rules.root_suffixes.append(normalized[1:])
    elif "*" in normalized:
        warnings.append(f"ignored unsupported artifact ignore rule: {trimmed}")
    else:
        rules.exact.add(normalized)


def parse_rules(content: str, warnings: list[str]) -> IgnoreRules:
    rules = IgnoreRules()
    for line in _rule_lines(content):
        _add_rule(rules, line, warnings)
    return rules


def _read_ignore_file(workspace_root: str, real_path: str, path: str) -> str:
    relative = relative_parts(workspace_root, real_path)
    if relative is None:
        raise PermissionError(1, "Operation not permitted", path)
    fd = open_file_beneath(workspace_root, relative)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", path)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(22, "Invalid argument", path)
        if info.st_size > _MAX_IGNORE_FILE_BYTES:
            raise OSError(27, "File too large", path)
        chunks: list[bytes] = []
        remaining = _MAX_IGNORE_FILE_BYTES + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 65536))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        if remaining <= 0:
            raise OSError(27, "File too large", path)
    finally:
        os.close(fd)
    # Node decodes with U+FFFD replacement and keeps a BOM (js_trim removes it).
    return b"".join(chunks).decode("utf-8", errors="replace")


def load_artifact_ignore_rules(
    scan_root: str, relative_root: str, workspace_root: str, warnings: list[str]
) -> IgnoreRules:
    """Rules from ``<scan_root>/artifact-ignore.md``; missing file → default rule only.

    The file is read only when its realpath lies inside ``relative_root`` (like any
    candidate), and through descriptors that follow no symlink, so a scope that is a
    symlink cannot make the engine echo an outside file's lines back as warnings.
    """
    path = os.path.join(scan_root, ARTIFACT_IGNORE_FILE)
    try:
        real_path = os.path.realpath(path, strict=True)
    except FileNotFoundError:
        return IgnoreRules()
    except OSError as error:
        warnings.append(
            f"cannot read {ARTIFACT_IGNORE_FILE}: Error: "
            f"{node_fs_error_message(error, 'open', path)}"
        )
        return IgnoreRules()
    if not is_within_root(relative_root, real_path):
        warnings.append(f"skipped path outside workspace {ARTIFACT_IGNORE_FILE}")
        return IgnoreRules()
    try:
        content = _read_ignore_file(workspace_root, real_path, path)
    except FileNotFoundError:
        return IgnoreRules()
    except OSError as error:
        syscall = "read" if error.errno in (21, 22, 27) else "open"
        warnings.append(
            f"cannot read {ARTIFACT_IGNORE_FILE}: Error: "
            f"{node_fs_error_message(error, syscall, path)}"
        )
        return IgnoreRules()
    return parse_rules(content, warnings)
