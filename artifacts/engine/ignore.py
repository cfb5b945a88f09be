"""The ``artifact-ignore.md`` grammar of §9."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from xworkmate.lib.jstext import js_trim

from .errors import node_fs_error_message
from .paths import is_within_root, open_file_beneath, relative_parts

__all__ = [
    "ARTIFACT_IGNORE_FILE",
    "MAX_IGNORE_RULES",
    "IgnoreRules",
    "load_artifact_ignore_rules",
    "parse_rules",
]

ARTIFACT_IGNORE_FILE = "artifact-ignore.md"
# An ignore file is a short list of rules; a bigger one is refused rather than read
# into memory whole (an agent controls this file).
_MAX_IGNORE_FILE_BYTES = 1024 * 1024
# Rules beyond this many are not applied (said once); matching stays linear anyway.
MAX_IGNORE_RULES = 1000
_LINE_BREAK = re.compile(r"\r?\n")
_SEPARATORS = re.compile(r"[\\/]")
_TRAILING_SEPARATOR = re.compile(r"[\\/]$")


def _ends_with_any(text: str, suffixes: dict[int, set[str]]) -> bool:
    return any(text[-length:] in group for length, group in suffixes.items() if length <= len(text))


@dataclass
class IgnoreRules:
    """Compiled rules; matching costs set look-ups, independent of how many rules there are.

    Directory rules are looked up by each ancestor of the path, and suffix rules
    by each distinct suffix length, so a file costs its depth plus the number of
    different suffix lengths, never the number of rules.
    """

    exact: set[str] = field(default_factory=lambda: {ARTIFACT_IGNORE_FILE})
    directories: set[str] = field(default_factory=set)
    root_suffixes: dict[int, set[str]] = field(default_factory=dict)
    any_suffixes: dict[int, set[str]] = field(default_factory=dict)
    count: int = 0

    def matcher(self) -> Callable[[str], bool]:
        """``matches``, or the plain set look-up when only exact names are ignored."""
        if self.directories or self.any_suffixes or self.root_suffixes:
            return self.matches
        return self.exact.__contains__

    def matches(self, relative_path: str) -> bool:
        if relative_path in self.exact:
            return True
        if self.directories:
            end = relative_path.find("/")
            while end != -1:
                if relative_path[:end] in self.directories:
                    return True
                end = relative_path.find("/", end + 1)
            if relative_path in self.directories:
                return True
        if self.any_suffixes and _ends_with_any(relative_path, self.any_suffixes):
            return True
        return bool(
            self.root_suffixes
            and "/" not in relative_path
            and _ends_with_any(relative_path, self.root_suffixes)
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
        rules.directories.add(normalized)
    elif normalized.startswith("**/*") and len(normalized) > 4:
        suffix = normalized[4:]
        rules.any_suffixes.setdefault(len(suffix), set()).add(suffix)
    elif "/" not in normalized and normalized.startswith("*") and len(normalized) > 1:
        suffix = normalized[1:]
        rules.root_suffixes.setdefault(len(suffix), set()).add(suffix)
    elif "*" in normalized:
        warnings.append(f"ignored unsupported artifact ignore rule: {trimmed}")
    else:
        rules.exact.add(normalized)


def parse_rules(content: str, warnings: list[str]) -> IgnoreRules:
    rules = IgnoreRules()
    for line in _rule_lines(content):
        trimmed = js_trim(line)
        if not trimmed or trimmed.startswith("#"):
            continue
        if rules.count == MAX_IGNORE_RULES:
            warnings.append(
                f"{ARTIFACT_IGNORE_FILE} has more than {MAX_IGNORE_RULES} rules; "
                "the rest are not applied"
            )
            break
        rules.count += 1
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
