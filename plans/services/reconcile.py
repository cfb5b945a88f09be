"""Reconciliation: PLAN.md files are the declaration; the tables follow them."""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from plans.planfile import is_archive_id
from plans.services._common import _workspace
from plans.services._revisions import _DiskProblem, _sync_plan
from plans.services.errors import PlanError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReconcileReport:
    checked: int = 0
    revised: list[str] = field(default_factory=list)  # archive ids with a new revision
    problems: dict[str, str] = field(default_factory=dict)  # archive id -> line and rule


def _archive_dirs(workspace: Path) -> list[str]:
    """The ARCHIVE_IDs that have a PLAN.md; symlinks and odd names are not followed."""
    root = workspace / "archives"
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


def plans_reconcile(*, now: datetime) -> ReconcileReport:
    """Compare every PLAN.md with its last recorded revision (the periodic job and
    `manage.py plans reconcile`). A changed file becomes a new revision awaiting
    confirmation, of unknown author (D-C18); a file that does not verify is
    reported, never half-applied."""
    report = ReconcileReport()
    checked = 0
    for archive_id in _archive_dirs(_workspace()):
        checked += 1
        try:
            if _sync_plan(archive_id, now=now):
                report.revised.append(archive_id)
        except _DiskProblem as exc:
            report.problems[archive_id] = exc.problem
        except PlanError as exc:
            report.problems[archive_id] = str(exc)
    return replace(report, checked=checked)
