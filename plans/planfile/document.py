"""A whole PLAN.md: entries found by byte range, so one can change alone (R6, R7)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .entry import Entry, entry_problems, render_entry
from .errors import PlanFileError

__all__ = [
    "ParsedEntry",
    "append_entry",
    "entry_text",
    "entry_text_sha256",
    "parse_plan_file",
    "replace_entry",
    "validate_plan_file",
]

_HEADING = re.compile(r"### \[Task_ID: ([0-9a-f-]{36})\] (.+)")
_ANY_HEADING = re.compile(r"### \[Task_ID:")
# "- " or the rendered seed's "•" before a field (R6).
_HEAD_FIELD = re.compile(r"(?:- |• ?)\*\*(Role_Context|Archive_Path|Status)\*\*: ?(.*)")
_ORA_FIELD = re.compile(r"(?:- |• ?)\*\*(Objective|Result)\*\*: ?(.*)")
_STEPS = re.compile(r"(?:- |• ?)\*\*Action_Steps\*\*:\s*")
_STEP = re.compile(r"  ([0-9]+)\. (.*)")
_ORA = "#### ORA Detail"
_ATTRIBUTES = {
    "Role_Context": "role_context",
    "Archive_Path": "archive_path",
    "Status": "status",
    "Objective": "objective",
    "Result": "result",
}


@dataclass(frozen=True)
class ParsedEntry:
    entry: Entry
    start: int  # offset of the heading in the text
    end: int  # offset just past the block (the next heading, or the end of the text)
    line: int  # 1-based line number of the heading


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, offset, line) for each line; only \\n ends a line (R5)."""
    result, offset = [], 0
    for number, line in enumerate(text.split("\n"), start=1):
        result.append((number, offset, line))
        offset += len(line) + 1
    return result


def parse_plan_file(text: str) -> list[ParsedEntry]:
    """The entries of a PLAN.md, in file order; a line that fits no rule is an error
    naming the line and the rule. Text before the first entry is kept, not read."""
    if text.startswith("\ufeff"):
        raise PlanFileError("line 1: PLAN.md must be UTF-8 without a BOM (R5)")
    lines = _lines(text)
    starts = [(n, off, line) for n, off, line in lines if _HEADING.fullmatch(line)]
    for number, _, line in lines:
        if _ANY_HEADING.match(line) and not _HEADING.fullmatch(line):
            raise PlanFileError(
                f"line {number}: an entry heading must be `### [Task_ID: <uuid>] <name>` (R6)"
            )
    preamble_end = starts[0][0] if starts else len(lines) + 1
    for number, _, line in lines[: preamble_end - 1]:
        if _HEAD_FIELD.fullmatch(line) or _ORA_FIELD.fullmatch(line) or _STEPS.fullmatch(line):
            raise PlanFileError(
                f"line {number}: a field outside any entry: missing required field(s): Task_ID "
                "(an entry starts with `### [Task_ID: <uuid>] <name>`)"
            )
    parsed = []
    for index, (number, offset, _) in enumerate(starts):
        end_line = starts[index + 1][0] if index + 1 < len(starts) else len(lines) + 1
        end = starts[index + 1][1] if index + 1 < len(starts) else len(text)
        block = lines[number - 1 : end_line - 1]
        parsed.append(ParsedEntry(_parse_entry(block), offset, end, number))
    seen: set[str] = set()
    for item in parsed:
        if item.entry.task_id in seen:
            raise PlanFileError(f"line {item.line}: duplicate Task_ID {item.entry.task_id} (R7)")
        seen.add(item.entry.task_id or "")
    return parsed


def _parse_entry(block: list[tuple[int, int, str]]) -> Entry:
    heading = _HEADING.fullmatch(block[0][2])
    if heading is None:  # parse_plan_file starts every block at a heading
        raise PlanFileError(f"line {block[0][0]}: an entry must start with its heading")
    values: dict[str, str] = {}
    steps: list[str] | None = None
    state, last = "head", ""
    for number, _, line in block[1:]:
        if not line.strip():
            continue
        field = (_HEAD_FIELD if state == "head" else _ORA_FIELD).fullmatch(line)
        step = _STEP.fullmatch(line) if state == "steps" else None
        if line == _ORA and state == "head":
            state, last = "ora", ""
        elif field and state in ("head", "ora"):
            name = field.group(1)
            if name in values:
                raise PlanFileError(f"line {number}: {name} appears twice in one entry")
            values[name], last = field.group(2), name
        elif state == "ora" and _STEPS.fullmatch(line):
            state, steps, last = "steps", [], ""
        elif step and steps is not None:
            if int(step.group(1)) != len(steps) + 1:
                raise PlanFileError(
                    f"line {number}: Action_Steps must be numbered 1, 2, 3, … in order"
                )
            steps.append(step.group(2))
        elif line[:1].isspace() and (last or (steps and state == "steps")):
            # An indented continuation line belongs to the previous field or step (R6).
            if state == "steps" and steps:
                steps[-1] += "\n" + line
            else:
                values[last] += "\n" + line
        else:
            raise PlanFileError(
                f"line {number}: not a field of an entry here ({line[:60]!r}); fields are "
                "Role_Context, Archive_Path, Status, then `#### ORA Detail`, Objective, "
                "Result and Action_Steps (R6)"
            )
    return Entry(
        task_id=heading.group(1),
        task_name=heading.group(2),
        action_steps=tuple(steps) if steps is not None else None,
        **{_ATTRIBUTES[name]: value for name, value in values.items()},
    )


def validate_plan_file(text: str, *, archive_id: str) -> list[ParsedEntry]:
    """Parse and check every entry against the rules; the first problem raises."""
    parsed = parse_plan_file(text)
    for item in parsed:
        problems = entry_problems(item.entry, archive_id=archive_id)
        if problems:
            raise PlanFileError(f"Task_ID {item.entry.task_id} (line {item.line}): {problems[0]}")
    return parsed


def replace_entry(text: str, entry: Entry, *, archive_id: str) -> str:
    """The file with exactly the block of `entry.task_id` replaced; every other byte kept (R7)."""
    block = render_entry(entry, archive_id=archive_id)
    for item in parse_plan_file(text):
        if item.entry.task_id == entry.task_id:
            old = text[item.start : item.end]
            # The blank lines that separated it from the next entry stay as they were.
            trailing = old[len(old.rstrip("\n")) :]
            return text[: item.start] + block.rstrip("\n") + trailing + text[item.end :]
    raise PlanFileError(f"Task_ID: no entry {entry.task_id} in this PLAN.md")


def append_entry(text: str, entry: Entry, *, archive_id: str) -> str:
    """The file with `entry` added after the others, one blank line between (R5)."""
    if any(item.entry.task_id == entry.task_id for item in parse_plan_file(text)):
        raise PlanFileError(f"Task_ID: {entry.task_id} is already in this PLAN.md (R7)")
    block = render_entry(entry, archive_id=archive_id)
    if not text.strip():
        return block
    return text.rstrip("\n") + "\n\n" + block


def entry_text(text: str, task_id: str) -> str | None:
    """The entry's text as it stands in the PLAN.md `text`: its block from its heading to
    the next entry's (or the end), without the line breaks and spaces that end it; None
    when the file has no such entry. PlanFileError when the file does not parse.

    The trailing blank lines are left out because they belong to the file's layout, not
    to the entry: appending another entry after it adds one (R5) and changes no word a
    person confirmed (D-C25).
    """
    for item in parse_plan_file(text):
        if item.entry.task_id == task_id:
            return text[item.start : item.end].rstrip()
    return None


def entry_text_sha256(text: str, task_id: str) -> str | None:
    """The SHA-256 (hex) of `entry_text` in UTF-8, or None as it (D-C25)."""
    block = entry_text(text, task_id)
    return None if block is None else hashlib.sha256(block.encode("utf-8")).hexdigest()
