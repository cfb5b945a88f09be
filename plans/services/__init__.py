"""The plans app's only write path: propose, revise, confirm, change, pause, cancel, run.

The gate of the schedule-plan protocol lives here and in the tables under it:
no function creates or changes a job except `entry_confirm`, and that one only
for the current revision of an entry, confirmed by a person (the admin action)
or by the user's own message from a later turn (D-C5). Every other change to a
plan goes through PLAN.md first (F4, F5, D-C3): a new revision is written,
read back and recorded, and waits for its confirmation while the job keeps
running the last confirmed one.

Locks: every write of a plan, a confirmation and a change request included,
holds its Plan row first (one writer per file), then the entry's row. One order
for all: a confirmation records its turn in a table that points at the Plan row
(D-C18), and that insert waits for a writer holding the Plan row, so holding
the entry before the plan would deadlock against a revise. A confirmation
racing a revision of the same entry therefore ends one way or the other, never
both.
A locking query never joins another table: PostgreSQL re-checks a join against
the row's new version after waiting for its lock, and a row whose foreign key
moved meanwhile (an entry's revision) would vanish from the answer.

One module per operation: proposals (drafts and revisions of PLAN.md), gate
(confirm, request changes), jobs (pause, resume, cancel, run now), outcomes
(what the outbox answered for a run), reconcile (PLAN.md on disk); the
scheduler's tick is plans.scheduler. Their shared helpers are the private
modules (_common, _revisions, _runs).
"""

from __future__ import annotations

from plans.services._runs import RUN_PURPOSE as RUN_PURPOSE
from plans.services.errors import PlanBlockedError, PlanError, PlanGateError, PlanNotFoundError
from plans.services.gate import entry_confirm, entry_request_changes
from plans.services.jobs import (
    entry_cancel,
    job_pause,
    job_resume,
    job_run_now,
    job_update,
    stored_schedule,
)
from plans.services.outcomes import run_record_delivery
from plans.services.proposals import TASK_PLACEHOLDER as TASK_PLACEHOLDER
from plans.services.proposals import Proposal, entry_revise, plan_propose
from plans.services.reconcile import ReconcileReport, plans_reconcile

__all__ = [
    "PlanBlockedError",
    "PlanError",
    "PlanGateError",
    "PlanNotFoundError",
    "Proposal",
    "ReconcileReport",
    "entry_cancel",
    "entry_confirm",
    "entry_request_changes",
    "entry_revise",
    "job_pause",
    "job_resume",
    "job_run_now",
    "job_update",
    "plan_propose",
    "plans_reconcile",
    "run_record_delivery",
    "stored_schedule",
]
