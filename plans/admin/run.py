"""The runs' read-only page: each run of a plan's job (the run log of §8.5)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from plans.admin._common import _host_tz, _review_url, _zone
from plans.admin.review_page import _duration
from plans.models import Run
from plans.review import local_time, schedule_zone
from xworkmate.admin import ReadOnlyMixin


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "fire_time",
        "entry_link",
        "status",
        "forced",
        "delivery",
        "duration",
        "archive_timestamp",
    )
    list_filter = ("status", "forced")
    search_fields = (
        "run_id",
        "job__job_id",
        "job__entry__task_name",
        "job__entry__plan__archive_id",
    )
    list_select_related = ("job__entry",)
    fields = (
        "entry_link",
        "run_id",
        "fire_time",
        "revision",
        "forced",
        "status",
        "error",
        "summary",
        "run_at_ms",
        "duration_ms",
        "next_run_at_ms",
        "session_id",
        "session_key",
        "delivered",
        "delivery_status",
        "delivery_error",
        "archive_timestamp",
        "created_at",
        "finished_at",
    )
    readonly_fields = fields

    @admin.display(description=_("fire time"), ordering="fire_at_ms")
    def fire_time(self, obj: Run) -> str:
        return local_time(obj.fire_at_ms, _zone(schedule_zone(obj.job.schedule, _host_tz())))

    # The model's own labels are the run log's field names (deliveryStatus,
    # durationMs); the list says them in words.
    @admin.display(description=_("delivery"), ordering="delivery_status")
    def delivery(self, obj: Run) -> str:
        return obj.delivery_status or "—"

    @admin.display(description=_("duration"), ordering="duration_ms")
    def duration(self, obj: Run) -> str:
        return _duration(obj.duration_ms) or "—"

    @admin.display(description=_("plan entry"))
    def entry_link(self, obj: Run) -> SafeString:
        entry = obj.job.entry
        return format_html('<a href="{}">{}</a>', _review_url(entry), entry.task_name)
