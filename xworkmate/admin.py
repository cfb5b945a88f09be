"""Admin pages of the kernel: API keys and periodic jobs, and the admin site itself.

API keys are immutable once created (to change scopes, create a new key and
revoke the old one): the token is shown once, right after creation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from xworkmate.models import ApiKey, PeriodicJobState

if TYPE_CHECKING:
    from django.utils.functional import _StrPromise as StrPromise
from xworkmate.policies import SCOPES
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

    def has_change_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        # A key's page has nothing to edit (keys are immutable): without change
        # permission on it, the admin shows it read-only, without a Save button.
        # The list keeps its revoke action.
        if obj is not None:
            return False
        return super().has_change_permission(request, obj)

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


class ReadOnlyMixin:
    """People look; the services write. For the read-only pages and inlines of any app."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _column(field: str, label: StrPromise) -> Callable[[Any, Any], Any]:
    """A model field shown under a translated label.

    PeriodicJobState's fields carry no verbose names (its table is written by
    beat and the worker, not edited); the admin names its columns instead.
    """

    def show(model_admin: Any, obj: Any) -> Any:
        return getattr(obj, field)

    show.__name__ = field
    return admin.display(show, description=label, ordering=field)


@admin.register(PeriodicJobState)
class PeriodicJobStateAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    # Rows come from beat and the worker, jobs from the config file: read-only.
    job_name = _column("name", _("name"))
    job_task = _column("task", _("task"))
    job_last_tick_at = _column("last_tick_at", _("last tick at"))
    job_last_finished_at = _column("last_finished_at", _("last finished at"))
    job_last_status = _column("last_status", _("last status"))
    job_last_error = _column("last_error", _("last error"))
    job_runs = _column("runs", _("runs"))
    job_failures = _column("failures", _("failures"))
    job_beat_seen_at = _column("beat_seen_at", _("scheduled by beat at"))

    list_display = (
        "job_name",
        "job_task",
        "job_last_tick_at",
        "job_last_status",
        "job_runs",
        "job_failures",
        "job_beat_seen_at",
    )
    list_display_links = ("job_name",)
    readonly_fields = (
        "job_name",
        "job_task",
        "job_beat_seen_at",
        "job_last_tick_at",
        "job_last_finished_at",
        "job_last_status",
        "job_last_error",
        "job_runs",
        "job_failures",
    )
    fields = readonly_fields
