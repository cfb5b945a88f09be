"""Admin pages of the gateway: sessions, mappings, task runs and native tasks.

They are read-only: that state belongs to the platform and the bridge, and
changes only through the gateway (the services), never by hand.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from artifacts import hosted
from gateway.models import NativeTask, SessionEntry, SessionMapping, TaskRun
from xworkmate.admin import ReadOnlyMixin
from xworkmate.lib.errors import InputError


def run_artifacts_in_roots(
    session_key: str, run_id: str
) -> tuple[str, list[dict[str, object]]] | str:
    """The run's manifest from the first configured workspace root that holds its files.

    A run may have been prepared with any configured root as its workspaceDir,
    and no table records which: each root is asked in the configured order
    (the default one first). Returns the root and its rows, else the engine's
    error when no root could be read (e.g. every workspace is gone), else "".
    """
    ids = {"openclawSessionKey": session_key, "runId": run_id}
    roots: tuple[str, ...] = settings.XWORKMATE.workspace_roots
    problems: list[str] = []
    for root in roots:
        try:
            listed = hosted.list_artifacts({**ids, "workspaceDir": root})
        except InputError as exc:
            problems.append(exc.message)
            continue
        found = listed.get("artifacts")
        rows = [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []
        if rows:
            return root, rows
    # The default root's error, but only when no root could be read at all.
    return problems[0] if len(problems) == len(roots) else ""


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


class _InHistoryColumn:
    @admin.display(boolean=True, description=_("in history"))
    def in_history(self, obj: TaskRun) -> bool:
        return obj.evicted_at is not None


class TaskRunInline(_InHistoryColumn, ReadOnlyMixin, admin.TabularInline):  # type: ignore[type-arg]
    model = TaskRun
    extra = 0
    show_change_link = True
    # `in_history`, not `evicted_at`: the field's help text would head the
    # column and seem to describe every run, also the visible ones.
    fields = (
        "run_id",
        "status",
        "success",
        "started_at",
        "updated_at",
        "completed_at",
        "in_history",
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
class TaskRunAdmin(_InHistoryColumn, _ReadOnlyAdmin):
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
        "history",
        "artifacts",
    )
    # Only these: the page would otherwise also list the model's `evicted_at`,
    # whose help text reads as if every run had left the newest runs.
    fields = readonly_fields

    @admin.display(description=_("moved to history at"), ordering="evicted_at")
    def history(self, obj: TaskRun) -> str:
        """When the run left the newest runs, with the meaning only for runs that did."""
        if obj.evicted_at is None:
            return str(_("Not in the history: among the session's newest runs the gateway shows."))
        moved = formats.localize(timezone.localtime(obj.evicted_at))
        note = _("No longer among the session's newest runs the gateway shows.")
        return f"{moved} ({note})"

    @admin.display(description=_("artifacts"))
    def artifacts(self, obj: TaskRun) -> str:
        """The run's current manifest, as tasks.get would list it, each file a download link."""
        found = run_artifacts_in_roots(obj.session.session_key, obj.run_id)
        if isinstance(found, str):
            return found or str(_("No artifacts found for this task run."))
        root, rows = found
        ids = {"openclawSessionKey": obj.session.session_key, "runId": obj.run_id}
        if root != settings.XWORKMATE.workspace_roots[0]:
            ids["workspaceDir"] = root
        download = reverse("artifacts-download")

        def name(row: dict[str, object]) -> str:
            # A file listed without a ref (not hashed in time) has nothing to download yet.
            if not row.get("artifactRef"):
                return format_html("{}", row.get("relativePath"))
            query = urlencode({**ids, "artifactRef": str(row["artifactRef"])})
            return format_html('<a href="{}?{}">{}</a>', download, query, row.get("relativePath"))

        items: SafeString = format_html_join(
            "",
            "<li>{} ({} B, {}{})</li>",
            (
                (
                    name(row),
                    row.get("sizeBytes"),
                    row.get("contentType"),
                    format_html(", sha256 <code>{}</code>", str(row["sha256"])[:12])
                    if row.get("sha256")
                    else "",
                )
                for row in rows
            ),
        )
        where = format_html("<p>{}</p>", root) if "workspaceDir" in ids else ""
        return format_html('{}<ul class="xworkmate-artifacts">{}</ul>', where, items)


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
