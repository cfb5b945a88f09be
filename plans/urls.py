"""URLs of the plans app (included by the root URLconf)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, path

from plans import api
from plans.views import schedule_preview_view

# One plan = one Task_ID; the converter keeps other shapes out (a 404 from the URLconf).
_PLAN = "api/plans/<uuid:task_id>"

urlpatterns: list[URLPattern] = [
    path(
        "admin/plans/schedule-preview/",
        admin.site.admin_view(schedule_preview_view),
        name="plans-schedule-preview",
    ),
    path(
        "api/plans/schedule-preview",
        api.SchedulePreviewApi.as_view(),
        name="plans-schedule-preview-api",
    ),
    path("api/plans", api.PlansListApi.as_view(), name="plans-list"),
    path("api/plans/propose", api.ProposePlanApi.as_view(), name="plans-propose"),
    path(
        "api/plans/clarification-check",
        api.ClarificationCheckApi.as_view(),
        name="plans-clarification-check",
    ),
    path(_PLAN, api.PlanDetailApi.as_view(), name="plans-detail"),
    path(f"{_PLAN}/content", api.PlanContentApi.as_view(), name="plans-content"),
    path(f"{_PLAN}/runs", api.PlanRunsApi.as_view(), name="plans-runs"),
    path(f"{_PLAN}/timeline", api.PlanTimelineApi.as_view(), name="plans-timeline"),
    path(f"{_PLAN}/export", api.PlanExportApi.as_view(), name="plans-export"),
    path(f"{_PLAN}/revise", api.RevisePlanApi.as_view(), name="plans-revise"),
    path(f"{_PLAN}/confirm", api.ConfirmPlanApi.as_view(), name="plans-confirm"),
    path(
        f"{_PLAN}/request-changes", api.RequestChangesApi.as_view(), name="plans-request-changes"
    ),
    path(f"{_PLAN}/pause", api.PausePlanApi.as_view(), name="plans-pause"),
    path(f"{_PLAN}/resume", api.ResumePlanApi.as_view(), name="plans-resume"),
    path(f"{_PLAN}/cancel", api.CancelPlanApi.as_view(), name="plans-cancel"),
    path(f"{_PLAN}/run", api.RunPlanApi.as_view(), name="plans-run"),
]
