"""The archive protocol's names: ARCHIVE_ID from a session, TIMESTAMP, the plan's path."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import PurePosixPath

from .errors import PlanFileError

__all__ = [
    "PLAN_FILE_NAME",
    "archive_id_from_session",
    "archive_timestamp",
    "is_archive_id",
    "is_archive_timestamp",
    "plan_path",
    "plan_path_problem",
]

PLAN_FILE_NAME = "PLAN.md"
# [0-9], not \d: \d also matches digits of other scripts (١٢٣), which `date` never prints.
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}")
_UNSAFE = re.compile(r"[^a-zA-Z0-9\-_]")
_SAFE_ID = re.compile(r"[a-zA-Z0-9\-_]+")


def archive_id_from_session(session: str) -> str:
    """ARCHIVE_ID: the last `:` segment of the session key (§5.2).

    Accepts the bare key or the status line (`🧵 Session: <key> • updated 2m ago`):
    the value is cut at the first ` • `; empty segments are dropped; characters
    outside [a-zA-Z0-9-_] become `_`. A missing, empty or `unknown` session is
    refused: the protocol forbids inventing an id.
    """
    value = session.strip() if isinstance(session, str) else ""
    if "Session:" in value:
        value = value.split("Session:", 1)[1]
    value = value.split(" • ", 1)[0].strip()
    segments = [segment for segment in value.split(":") if segment.strip()]
    if not segments or value == "unknown":
        raise PlanFileError("session: invalid Session (empty, missing or unknown)")
    return _UNSAFE.sub("_", segments[-1].strip())


def is_archive_id(value: str) -> bool:
    """An ARCHIVE_ID as archive_id_from_session makes them: one safe path segment."""
    return isinstance(value, str) and _SAFE_ID.fullmatch(value) is not None


def archive_timestamp(moment: datetime) -> str:
    """TIMESTAMP `YYYY-MM-DD-HH-MM-SS` of a (local) time, truncated to the second (§5.3)."""
    return moment.strftime("%Y-%m-%d-%H-%M-%S")


def is_archive_timestamp(value: str) -> bool:
    return isinstance(value, str) and _TIMESTAMP.fullmatch(value) is not None


def plan_path(archive_id: str) -> str:
    """The one place a plan lives, relative to the workspace: archives/<ARCHIVE_ID>/PLAN.md."""
    return f"archives/{archive_id}/{PLAN_FILE_NAME}"


def plan_path_problem(relative_path: str, archive_id: str) -> str | None:
    """Why `relative_path` is not where this archive's plan must be; None if it is (§5.4)."""
    expected = plan_path(archive_id)
    parts = PurePosixPath(relative_path).parts
    if list(parts) != ["archives", archive_id, PLAN_FILE_NAME]:
        return (
            f"path: a plan must be written to {expected} (the archive root `archives/`, "
            f"no TIMESTAMP directory, the name PLAN.md exactly); got {relative_path}"
        )
    return None
