"""The plans app's tables: plans, PLAN.md revisions, entries, confirmations, jobs, runs.

The gate of the schedule-plan protocol is in the tables too, not only in the
services (D-C3, D-C5): a job cannot exist without the confirmation of the exact
PLAN.md revision it runs (a required foreign key), and a confirmation cannot
come from the turn that wrote its revision (a check constraint on the turn ids
it copies; D-C13). Job fields keep OpenClaw's cron model (§8.1) in snake
case; the API speaks the JSON names.

One module per part: plan (Plan, Revision, Entry, Turn), gate (Confirmation,
ChangeRequest, Expiry), job (Job, Run); the shared bounds and choices are _common.
"""

from __future__ import annotations

from plans.models._common import (
    ID_MAX_LENGTH,
    MISSED_POLICIES,
    OVERLAP_POLICIES,
    SHA256_LENGTH,
)
from plans.models.gate import ChangeRequest, Confirmation, Expiry
from plans.models.job import Job, Run
from plans.models.plan import Entry, Plan, Revision, Turn

__all__ = [
    "ID_MAX_LENGTH",
    "MISSED_POLICIES",
    "OVERLAP_POLICIES",
    "SHA256_LENGTH",
    "ChangeRequest",
    "Confirmation",
    "Entry",
    "Expiry",
    "Job",
    "Plan",
    "Revision",
    "Run",
    "Turn",
]
