"""The plans app's files in the agent workspace, touched on the host whose disk holds it.

PLAN.md under archives/<ARCHIVE_ID>/ (read, written atomically and read back),
the list of archives that have one, and a run's output folder
archives/<ARCHIVE_ID>/<TIMESTAMP>/. The workspace is `plans.workspace` (else the
first root); when [workspace.hosts] puts it on another host's disk, each of
these runs in that host's files worker and the answer comes back (D-K31). With
one host they run here, as they always did.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import asdict
from pathlib import Path
from typing import Any

from plans.conf import plans_workspace
from plans.planfile import PlanFileBlocked, PlanFileError, is_archive_id
from plans.planfile import read_plan_file as _read_here
from plans.planfile import write_plan_file as _write_here
from plans.review import Output, RunOutputs, run_outputs
from xworkmate.hostfiles import host_of, register_file_operation, run_on_host

logger = logging.getLogger(__name__)


def _on_host(operation: str, **arguments: Any) -> Any:
    return run_on_host(host_of(str(plans_workspace())), operation, **arguments)


def plan_file_read(archive_id: str) -> str | None:
    """PLAN.md's text, None when there is none; PlanFileError when it cannot be read."""
    text = _on_host("plans.read", archive_id=archive_id)
    return None if text is None else str(text)


def plan_file_write(archive_id: str, text: str) -> None:
    """Write PLAN.md (validated, atomic, read back); PlanFileBlocked / PlanFileError."""
    _on_host("plans.write", archive_id=archive_id, text=text)


def plan_archive_ids() -> list[str]:
    """The ARCHIVE_IDs that have a PLAN.md."""
    return [str(name) for name in _on_host("plans.archives")]


def plan_run_outputs(archive_id: str, timestamps: list[str]) -> dict[str, RunOutputs]:
    """Each run's output folder, by its archive timestamp: one trip to the host for a page."""
    listed = _on_host("plans.outputs", archive_id=archive_id, timestamps=timestamps)
    return {
        stamp: RunOutputs([Output(**o) for o in found["files"]], found["more"], found["problem"])
        for stamp, found in listed.items()
    }


# --- the operations, as the workspace's host runs them ----------------------------------


def _read(archive_id: str) -> str | None:
    return _read_here(plans_workspace(), archive_id)


def _write(archive_id: str, text: str) -> None:
    _write_here(plans_workspace(), archive_id, text)


def _archives() -> list[str]:
    """The ARCHIVE_IDs that have a PLAN.md; symlinks and odd names are not followed."""
    root = plans_workspace() / "archives"
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return []
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    found = []
    for name in sorted(names):
        if not is_archive_id(name):
            continue
        try:
            if stat.S_ISDIR(os.lstat(root / name).st_mode) and os.path.lexists(
                root / name / "PLAN.md"
            ):
                found.append(name)
        except OSError:
            logger.warning("plans: cannot look at archives/%s", name, exc_info=True)
    return found


def _outputs(archive_id: str, timestamps: list[str]) -> dict[str, Any]:
    workspace: Path = plans_workspace()
    return {stamp: asdict(run_outputs(workspace, archive_id, stamp)) for stamp in timestamps}


def register() -> None:
    """The plans file operations, callable on the workspace's host (AppConfig.ready)."""
    refusals = (PlanFileError, PlanFileBlocked)
    register_file_operation("plans.read", _read, refusals=refusals)
    register_file_operation("plans.write", _write, refusals=refusals)
    register_file_operation("plans.archives", _archives)
    register_file_operation("plans.outputs", _outputs)
