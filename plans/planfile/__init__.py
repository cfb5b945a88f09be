"""Framework-free PLAN.md: the schedule-plan template, parse and render, the archive
protocol's names, and the atomic, read-back-verified write. No Django here."""

from .archive import (
    PLAN_FILE_NAME,
    archive_id_from_session,
    archive_timestamp,
    is_archive_id,
    is_archive_timestamp,
    plan_path,
    plan_path_problem,
)
from .document import (
    ParsedEntry,
    append_entry,
    entry_text,
    entry_text_sha256,
    parse_plan_file,
    replace_entry,
    validate_plan_file,
)
from .entry import FIELDS, STATUSES, Entry, entry_problems, first_step, new_entry, render_entry
from .errors import PlanFileBlocked, PlanFileError
from .write import read_plan_file, write_plan_file

__all__ = [
    "FIELDS",
    "PLAN_FILE_NAME",
    "STATUSES",
    "Entry",
    "ParsedEntry",
    "PlanFileBlocked",
    "PlanFileError",
    "append_entry",
    "archive_id_from_session",
    "archive_timestamp",
    "entry_problems",
    "entry_text",
    "entry_text_sha256",
    "first_step",
    "is_archive_id",
    "is_archive_timestamp",
    "new_entry",
    "parse_plan_file",
    "plan_path",
    "plan_path_problem",
    "read_plan_file",
    "render_entry",
    "replace_entry",
    "validate_plan_file",
    "write_plan_file",
]
