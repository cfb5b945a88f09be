"""The plans' read-only page: one PLAN.md each, its entries and any problem on disk."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from plans.admin._common import _review_url
from plans.models import Plan
from xworkmate.admin import ReadOnlyMixin


@admin.register(Plan)
class PlanAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "archive_id",
        "agent_id",
        "session_key",
        "entry_count",
        "has_problem",
        "updated_at",
    )
    search_fields = ("archive_id", "session_key", "agent_id")
    fields = (
        "archive_id",
        "agent_id",
        "session_key",
        "problem",
        "entry_links",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Plan]:
        plans: QuerySet[Plan] = super().get_queryset(request)
        return plans.annotate(entry_total=Count("entries"))

    @admin.display(description=_("plan entries"), ordering="entry_total")
    def entry_count(self, obj: Plan) -> int:
        return int(getattr(obj, "entry_total", 0))

    @admin.display(description=_("problem on disk"))
    def has_problem(self, obj: Plan) -> SafeString | str:
        # Not a boolean column: its red ✗ for "no problem" read as a problem.
        if not obj.problem:
            return "—"
        return format_html('<span class="xw-error" title="{}">{}</span>', obj.problem, _("yes"))

    @admin.display(description=_("plan entries"))
    def entry_links(self, obj: Plan) -> SafeString:
        return format_html_join(
            "",
            '<div><a href="{}">{}</a> ({}) · <a href="{}">{}</a></div>',
            (
                (
                    _review_url(entry),
                    entry.task_name,
                    entry.get_state_display(),
                    reverse("admin:plans_entry_timeline", args=[entry.pk]),
                    _("timeline"),
                )
                for entry in obj.entries.order_by("created_at", "id")
            ),
        )
