"""Reconciliation: PLAN.md files are the declaration; the tables follow them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime

from plans.files import plan_archive_ids
from plans.services._revisions import _DiskProblem, _sync_plan
from plans.services.errors import PlanError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReconcileReport:
    checked: int = 0
    revised: list[str] = field(default_factory=list)  # archive ids with a new revision
    problems: dict[str, str] = field(default_factory=dict)  # archive id -> line and rule


def plans_reconcile(*, now: datetime) -> ReconcileReport:
    """Compare every PLAN.md with its last recorded revision (the periodic job and
    `manage.py plans reconcile`). A changed file becomes a new revision awaiting
    confirmation, of unknown author (D-C18); a file that does not verify is
    reported, never half-applied."""
    report = ReconcileReport()
    checked = 0
    for archive_id in plan_archive_ids():
        checked += 1
        try:
            if _sync_plan(archive_id, now=now):
                report.revised.append(archive_id)
        except _DiskProblem as exc:
            report.problems[archive_id] = exc.problem
        except PlanError as exc:
            report.problems[archive_id] = str(exc)
    return replace(report, checked=checked)
