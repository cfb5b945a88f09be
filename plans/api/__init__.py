"""REST endpoints of the plans app, one module per resource.

preview (what a schedule means), reading (the plans, one plan, its PLAN.md,
its runs, its export), proposals (propose, revise), gate (confirm, request
changes), jobs (pause, resume, cancel, run now), clarification (the §2.2
check). Their shared fields and view parts are the private modules (_fields,
_common); the URLconf names the views through this package.
"""

from __future__ import annotations

from plans.api.clarification import ClarificationCheckApi
from plans.api.gate import ConfirmPlanApi, RequestChangesApi
from plans.api.jobs import CancelPlanApi, PausePlanApi, ResumePlanApi, RunPlanApi
from plans.api.preview import SchedulePreviewApi
from plans.api.proposals import ProposePlanApi, RevisePlanApi
from plans.api.reading import (
    PlanContentApi,
    PlanDetailApi,
    PlanExportApi,
    PlanRunsApi,
    PlansListApi,
    PlanTimelineApi,
)

__all__ = [
    "CancelPlanApi",
    "ClarificationCheckApi",
    "ConfirmPlanApi",
    "PausePlanApi",
    "PlanContentApi",
    "PlanDetailApi",
    "PlanExportApi",
    "PlanRunsApi",
    "PlanTimelineApi",
    "PlansListApi",
    "ProposePlanApi",
    "RequestChangesApi",
    "ResumePlanApi",
    "RevisePlanApi",
    "RunPlanApi",
    "SchedulePreviewApi",
]
