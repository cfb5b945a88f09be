"""URLs of the plans app (included by the root URLconf)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, path

from plans.api import SchedulePreviewApi
from plans.views import schedule_preview_view

urlpatterns: list[URLPattern] = [
    path(
        "admin/plans/schedule-preview/",
        admin.site.admin_view(schedule_preview_view),
        name="plans-schedule-preview",
    ),
    path(
        "api/plans/schedule-preview",
        SchedulePreviewApi.as_view(),
        name="plans-schedule-preview-api",
    ),
]
