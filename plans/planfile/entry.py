"""One PLAN.md entry: its fields, the template's rendering, and the rules it must keep.

The template and the required first step are the schedule-plan protocol's
(docs/decisions/plans.md, D-C3); the rendering rules R1-R7 make round trips
exact: render(parse(render(e))) == render(e), byte for byte.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from .archive import is_archive_timestamp, plan_path
from .errors import PlanFileError

__all__ = [
    "FIELDS",
    "STATUSES",
    "Entry",
    "entry_problems",
    "first_step",
    "new_entry",
    "render_entry",
    "standard_steps",
]

# The seven required fields, in the protocol's words (Task_ID is the heading).
FIELDS = (
    "Task_ID", "Role_Context", "Archive_Path", "Status", "Objective", "Result", "Action_Steps",
)
# Active (the template's only value) and Cancelled (set before a job is removed, D-C4).
STATUSES = ("Active", "Cancelled")
ROLE_SUFFIX = " (Aligned with `SOUL.md` & `IDENTITY.md`)"
STEP_LABELS = ("[读取本文件指令]", "[上下文校验]", "[执行动作]", "[归档校验]")
TIMESTAMP_TOKEN = "{TIMESTAMP}"  # noqa: S105 (a placeholder, not a secret)


@dataclass(frozen=True)
class Entry:
    """The raw values of one entry, as written in PLAN.md (None: the field is missing)."""

    task_id: str | None = None
    task_name: str | None = None
    role_context: str | None = None
    archive_path: str | None = None
    status: str | None = None
    objective: str | None = None
    result: str | None = None
    action_steps: tuple[str, ...] | None = None


def first_step(archive_id: str, task_id: str) -> str:
    return (
        f"**[读取本文件指令]**：从路径 `archives/{archive_id}/PLAN.md` 中读取 "
        f"`Task_ID: {task_id}` 的详细计划并按步骤执行。"
    )


def standard_steps(archive_id: str, task_id: str) -> tuple[str, ...]:
    """Steps 1-4 of the template, with the per-run TIMESTAMP left as a token (R3)."""
    return (
        first_step(archive_id, task_id),
        "**[上下文校验]**：确认当前上下文已对齐 `SOUL.md` 与 `IDENTITY.md`。",
        "**[执行动作]**：根据读取到的详细步骤执行业务逻辑。",
        f"**[归档校验]**：验证输出物已存入 `archives/{archive_id}/{TIMESTAMP_TOKEN}/` 目录。",
    )


def new_entry(
    *,
    archive_id: str,
    task_name: str,
    persona: str,
    objective: str,
    result: str,
    extra_steps: tuple[str, ...] = (),
    task_id: str | None = None,
) -> Entry:
    """A new entry from the template: a fresh UUIDv4 (R1), steps 1-4, then the extra steps (R4)."""
    task_id = task_id or str(uuid.uuid4())
    return Entry(
        task_id=task_id,
        task_name=task_name,
        role_context=f"{persona}{ROLE_SUFFIX}",
        archive_path=plan_path(archive_id),
        status="Active",
        objective=objective,
        result=result,
        action_steps=standard_steps(archive_id, task_id) + tuple(extra_steps),
    )


def render_entry(entry: Entry, *, archive_id: str) -> str:
    """The entry's block (ends with one newline); refused when it breaks a rule."""
    problems = entry_problems(entry, archive_id=archive_id)
    if problems:
        raise PlanFileError("; ".join(problems))
    steps = entry.action_steps or ()
    lines = [
        f"### [Task_ID: {entry.task_id}] {entry.task_name}",
        "",
        f"- **Role_Context**: {entry.role_context}",
        f"- **Archive_Path**: {entry.archive_path}",
        f"- **Status**: {entry.status}",
        "",
        "#### ORA Detail",
        "",
        f"- **Objective**: {entry.objective}",
        f"- **Result**: {entry.result}",
        "- **Action_Steps**:",
        *(f"  {number}. {text}" for number, text in enumerate(steps, start=1)),
    ]
    return "\n".join(lines) + "\n"


# --- rules -------------------------------------------------------------------------------

_MARKUP = re.compile(r"\*\*|`")
# Any {{…}}, and the template's own names in single braces (the rule's spelling,
# `{ARCHIVE_ID}`); other single-brace text is the plan's own words.
_PLACEHOLDER = re.compile(
    r"\{\{[^{}]*\}\}|\{(?:ARCHIVE_ID|TASK_UUID|Task_Name|Current_Persona|O_content|R_content)\}"
)


def _plain(step: str) -> str:
    """A step without Markdown markup and a trailing 。 (both spellings of step 1 agree)."""
    return _MARKUP.sub("", step).strip().removesuffix("。").strip()


def _continuation_problem(name: str, value: str) -> str | None:
    # A value may run over several lines only as indented continuation lines, which
    # is how the parser reads them back (R6); anything else would change the file.
    lines = value.split("\n")
    if any(not line[:1].isspace() or not line.strip() for line in lines[1:]):
        return f"{name}: a line after the first must be indented and not blank"
    if "\r" in value:
        return f"{name}: must not contain a carriage return (PLAN.md uses \\n line endings)"
    return None


def entry_problems(entry: Entry, *, archive_id: str) -> list[str]:
    """Every rule the entry breaks, each naming its field or rule; [] when it keeps them all."""
    values = {
        "Task_ID": entry.task_id,
        "Role_Context": entry.role_context,
        "Archive_Path": entry.archive_path,
        "Status": entry.status,
        "Objective": entry.objective,
        "Result": entry.result,
    }
    missing = [name for name, value in values.items() if value is None or not value.strip()]
    if not entry.action_steps:
        missing.append("Action_Steps")
    if missing:
        return [f"missing required field(s): {', '.join(missing)}"]
    problems: list[str] = []
    task_id = entry.task_id or ""
    try:
        canonical = str(uuid.UUID(task_id))
    except ValueError:
        canonical = ""
    if canonical != task_id:
        problems.append("Task_ID: must be a lowercase canonical UUID (R1)")
    if not entry.task_name or not entry.task_name.strip() or "\n" in entry.task_name:
        problems.append("Task_Name: required, one line (the heading after the Task_ID)")
    for name, value in [*values.items(), ("Task_Name", entry.task_name or "")]:
        problem = _continuation_problem(name, value or "")
        if problem:
            problems.append(problem)
    if entry.archive_path != plan_path(archive_id):
        problems.append(
            f"Archive_Path: must be {plan_path(archive_id)}, the file the entry is in (R2)"
        )
    if entry.status not in STATUSES:
        problems.append(f"Status: must be one of {', '.join(STATUSES)}")
    problems.extend(_step_problems(entry.action_steps or (), archive_id, task_id))
    rendered_values = [*(v or "" for v in values.values()), entry.task_name or ""]
    steps = entry.action_steps or ()
    if any(_PLACEHOLDER.search(value) for value in [*rendered_values, *steps]):
        problems.append(
            "placeholder: a {{…}} placeholder is left (only step 4's {TIMESTAMP} token may stay)"
        )
    return problems


def _step_problems(steps: tuple[str, ...], archive_id: str, task_id: str) -> list[str]:
    problems: list[str] = []
    if len(steps) < len(STEP_LABELS):
        problems.append("Action_Steps: steps 1-4 of the template are required (R4)")
    expected = _plain(first_step(archive_id, task_id))
    if not steps or _plain(steps[0]) != expected:
        problems.append(
            "Action_Steps: first Action_Step must be the read-this-file instruction "
            "for this Task_ID"
        )
    for number, (label, step) in enumerate(zip(STEP_LABELS, steps, strict=False), start=1):
        if number > 1 and not _plain(step).startswith(label):
            problems.append(f"Action_Steps: step {number} must keep its label {label} (R4)")
    if len(steps) >= 4:
        match = re.search(rf"archives/{re.escape(archive_id)}/([^/`\s]+)/", _plain(steps[3]))
        bucket = match.group(1) if match else ""
        if bucket != TIMESTAMP_TOKEN and not is_archive_timestamp(bucket):
            problems.append(
                f"Action_Steps: step 4 must name archives/{archive_id}/{TIMESTAMP_TOKEN}/ "
                "(or a YYYY-MM-DD-HH-MM-SS bucket) (R3)"
            )
    for number, step in enumerate(steps, start=1):
        problem = _continuation_problem(f"Action_Steps step {number}", step)
        if problem:
            problems.append(problem)
    return problems
