"""Admin pages of the gateway: sessions, mappings, task runs and native tasks.

They are read-only: that state belongs to the platform and the bridge, and
changes only through the gateway (the services), never by hand.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from artifacts.selectors import run_artifacts
from xworkmate.admin import ReadOnlyMixin
from xworkmate.gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun


class _ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    """The gateway's state: read-only pages."""


class SessionMappingInline(ReadOnlyMixin, admin.StackedInline):  # type: ignore[type-arg]
    model = SessionMapping
    extra = 0
    readonly_fields = (
        "app_thread_key",
        "expected_artifact_dirs",
        "source",
        "created_at_text",
        "created_at",
        "updated_at",
    )


class TaskRunInline(ReadOnlyMixin, admin.TabularInline):  # type: ignore[type-arg]
    model = TaskRun
    extra = 0
    show_change_link = True
    fields = (
        "run_id",
        "status",
        "success",
        "started_at",
        "updated_at",
        "completed_at",
        "evicted_at",
    )
    readonly_fields = fields
    ordering = ("-updated_at", "-id")


@admin.register(SessionEntry)
class SessionEntryAdmin(_ReadOnlyAdmin):
    list_display = ("session_key", "app_thread", "run_count", "created_at")
    search_fields = ("session_key", "mapping__app_thread_key")
    readonly_fields = ("session_key", "session_id", "created_at")
    inlines = (SessionMappingInline, TaskRunInline)

    def get_queryset(self, request: HttpRequest) -> QuerySet[SessionEntry]:
        return super().get_queryset(request).select_related("mapping")

    @admin.display(description=_("app thread"))
    def app_thread(self, obj: SessionEntry) -> str:
        mapping = getattr(obj, "mapping", None)
        return mapping.app_thread_key if mapping is not None else "—"

    @admin.display(description=_("runs"))
    def run_count(self, obj: SessionEntry) -> int:
        return obj.runs.count()


@admin.register(SessionMapping)
class SessionMappingAdmin(_ReadOnlyAdmin):
    list_display = ("app_thread_key", "session", "source", "expected_artifact_dirs", "updated_at")
    list_filter = ("source",)
    search_fields = ("app_thread_key", "session__session_key")
    list_select_related = ("session",)
    readonly_fields = (
        "session",
        "app_thread_key",
        "expected_artifact_dirs",
        "source",
        "created_at_text",
        "created_at",
        "updated_at",
    )


@admin.register(TaskRun)
class TaskRunAdmin(_ReadOnlyAdmin):
    list_display = (
        "run_id",
        "session",
        "status",
        "success",
        "started_at",
        "updated_at",
        "completed_at",
        "in_history",
    )
    list_filter = ("status", "success", ("evicted_at", admin.EmptyFieldListFilter))
    search_fields = ("run_id", "session__session_key")
    list_select_related = ("session",)
    readonly_fields = (
        "session",
        "run_id",
        "status",
        "success",
        "started_at",
        "updated_at",
        "completed_at",
        "output",
        "error",
        "evicted_at",
        "artifacts",
    )

    @admin.display(boolean=True, description=_("in history"))
    def in_history(self, obj: TaskRun) -> bool:
        return obj.evicted_at is not None

    @admin.display(description=_("artifacts"))
    def artifacts(self, obj: TaskRun) -> str:
        """The run's current manifest, as tasks.get would list it, each file a download link."""
        ids = {"openclawSessionKey": obj.session.session_key, "runId": obj.run_id}
        rows = run_artifacts(session_key=obj.session.session_key, run_id=obj.run_id)
        if isinstance(rows, str):
            return rows  # the engine's error, e.g. the workspace is gone
        if not rows:
            return str(_("No artifacts found for this task run."))
        download = reverse("artifacts-download")
        return format_html(
            "<ul class=\"xworkmate-artifacts\">{}</ul>",
            format_html_join(
                "",
                '<li><a href="{}?{}">{}</a> ({} B, {}, sha256 <code>{}</code>)</li>',
                (
                    (
                        download,
                        urlencode({**ids, "artifactRef": row.get("artifactRef", "")}),
                        row.get("relativePath"),
                        row.get("sizeBytes"),
                        row.get("contentType"),
                        str(row.get("sha256"))[:12],
                    )
                    for row in rows
                ),
            ),
        )


@admin.register(NativeTask)
class NativeTaskAdmin(_ReadOnlyAdmin):
    list_display = ("task_id", "session_key", "run_id", "status", "updated_at", "terminal_at")
    list_filter = ("status",)
    search_fields = ("task_id", "run_id", "session_key")
    readonly_fields = (
        "session_key",
        "task_id",
        "run_id",
        "status",
        "record",
        "created_at",
        "updated_at",
        "terminal_at",
    )
