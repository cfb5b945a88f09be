"""People's pages for plans: the list with its display statuses, and the review page."""

from __future__ import annotations

from django.contrib import admin

from plans.models import Entry


@admin.register(Entry)
class EntryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("task_name", "task_id", "state", "updated_at")
    list_filter = ("state",)
    search_fields = ("task_name", "task_id", "plan__archive_id")
