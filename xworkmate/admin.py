"""Admin pages of the project package: API keys, periodic jobs, and the gateway's
sessions, mappings, task runs and native tasks.

API keys are immutable once created (to change scopes, create a new key and
revoke the old one): the token is shown once, right after creation. The
gateway pages are read-only: that state belongs to the platform and the bridge,
and changes only through the gateway (the services), never by hand.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from xworkmate.models import (
    SCOPES,
    ApiKey,
    NativeTask,
    PeriodicJobState,
    SessionEntry,
    SessionMapping,
    TaskRun,
)
from xworkmate.services import (
    ApiKeyError,
    KeyBinding,
    api_key_create,
    api_key_revoke,
    validate_api_key_input,
    validate_key_binding,
)

admin.site.site_header = _("xworkmate administration")
admin.site.site_title = _("xworkmate")
admin.site.index_title = _("Overview")
admin.site.index_template = "admin/xworkmate_index.html"


class ApiKeyCreateForm(forms.ModelForm):  # type: ignore[type-arg]
    scopes = forms.MultipleChoiceField(
        label=_("scopes"),
        choices=[(s, s) for s in SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text=_("write implies read within the same area"),
    )

    class Meta:
        model = ApiKey
        fields = (
            "name",
            "scopes",
            "bound_session_key",
            "bound_run_id",
            "bound_workspace_dir",
            "bound_artifact_scope",
        )
        help_texts = {
            "bound_session_key": _(
                "Agent keys only: bind the key to one task run (session and run); its "
                "gateway calls then always act on that run. Leave empty for the bridge."
            ),
        }

    def binding(self) -> KeyBinding:
        data = self.cleaned_data
        return KeyBinding(
            session_key=data.get("bound_session_key") or "",
            run_id=data.get("bound_run_id") or "",
            workspace_dir=data.get("bound_workspace_dir") or "",
            artifact_scope=data.get("bound_artifact_scope") or "",
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "name" in data and "scopes" in data:
            try:
                validate_api_key_input(data["name"], data["scopes"])
                validate_key_binding(self.binding())
            except ApiKeyError as exc:
                raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "name",
        "prefix",
        "scope_list",
        "bound_session_key",
        "bound_run_id",
        "created_at",
        "last_used_at",
        "is_active",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    actions = ("revoke_keys",)
    readonly_fields = (
        "name",
        "prefix",
        "scopes",
        "created_at",
        "created_by",
        "last_used_at",
        "revoked_at",
        "bound_session_key",
        "bound_run_id",
        "bound_workspace_dir",
        "bound_artifact_scope",
    )

    @admin.display(description=_("scopes"))
    def scope_list(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes)

    @admin.display(boolean=True, description=_("active"))
    def is_active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def get_form(
        self, request: HttpRequest, obj: Any | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyCreateForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        return () if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            return  # keys are immutable; the change page is read-only
        user = request.user if isinstance(request.user, User) else None
        key, token = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            created_by=user,
            binding=form.binding(),
        )
        obj.pk = key.pk
        obj.prefix = key.prefix
        messages.warning(
            request,
            _("Copy the new API key now; it is not shown again: %(token)s") % {"token": token},
        )

    @admin.action(description=_("Revoke selected API keys"))
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        now = timezone.now()
        revoked = sum(api_key_revoke(key=key, now=now) for key in queryset)
        self.message_user(request, _("%(count)d key(s) revoked.") % {"count": revoked})

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # revoke instead: the record of who had access stays


@admin.register(PeriodicJobState)
class PeriodicJobStateAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "name",
        "task",
        "last_tick_at",
        "last_status",
        "runs",
        "failures",
        "beat_seen_at",
    )
    readonly_fields = (
        "name",
        "task",
        "beat_seen_at",
        "last_tick_at",
        "last_finished_at",
        "last_status",
        "last_error",
        "runs",
        "failures",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # rows come from beat and the worker, jobs from the config file

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class _NoWrites:
    """People look; the gateway writes (through the services). For admins and inlines."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class _ReadOnlyAdmin(_NoWrites, admin.ModelAdmin):  # type: ignore[type-arg]
    """The gateway's state: read-only pages."""


class SessionMappingInline(_NoWrites, admin.StackedInline):  # type: ignore[type-arg]
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


class TaskRunInline(_NoWrites, admin.TabularInline):  # type: ignore[type-arg]
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
        from artifacts.conf import artifact_settings
        from artifacts.engine import GatewayError, list_artifacts

        ids = {"openclawSessionKey": obj.session.session_key, "runId": obj.run_id}
        try:
            listed = list_artifacts(ids, artifact_settings())
        except GatewayError as exc:
            return str(exc)
        found = listed.get("artifacts")
        rows = [row for row in found if isinstance(row, dict)] if isinstance(found, list) else []
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
