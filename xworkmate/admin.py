"""Admin pages of the kernel: API keys and periodic jobs, and the admin site itself;
and the shapes the apps' pages share (read-only pages, pages with actions).

API keys are immutable once created (to change scopes, create a new key and
revoke the old one): the token is shown once, right after creation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from xworkmate.auth import Caller
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
# Django's navigation sidebar repeats the landing page's list of pages and takes a
# quarter of a 1280 px screen, which the lists' tables need (issue 22); the
# breadcrumbs lead back to the landing page.
admin.site.enable_nav_sidebar = False


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
        "bound_session",
        "bound_run",
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

    @admin.display(description=_("bound session key"), ordering="bound_session_key")
    def bound_session(self, obj: ApiKey) -> SafeString | str:
        return clipped(obj.bound_session_key)

    @admin.display(description=_("bound run id"), ordering="bound_run_id")
    def bound_run(self, obj: ApiKey) -> SafeString | str:
        return clipped(obj.bound_run_id)

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
        user = Caller.for_person(request.user).person
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


def clipped(text: str) -> SafeString | str:
    """A long key or id cut to one line in a list (.xw-clip); its title gives all of it."""
    if not text:
        return "—"
    return format_html('<span class="xw-clip" title="{}">{}</span>', text, text)


class ReadOnlyMixin:
    """People look; the services write. For the read-only pages and inlines of any app."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# What an action did, as a message for the person: (messages level, text).
ActionAnswer = tuple[int, str]


class ActionPageMixin(ReadOnlyMixin):
    """A read-only page per object, with actions that are POSTs calling one service each.

    For any app whose rows change only through its services: the change view
    is the app's own page (GET and HEAD only, no form), and each name of
    `page_actions` is a URL below it, `<object_id>/<action>/`, named
    `admin:<app>_<model>_<action>` (dashes as underscores). An action needs
    the admin's login and CSRF check, the object's view permission and
    `action_permission`, and answers POST only, unless `action_get_page`
    offers a page for it (a confirmation step); it then reports what
    `perform_action` answered and goes back to the object's page.
    """

    opts: Any
    admin_site: admin.AdminSite
    page_template: str
    page_actions: tuple[str, ...]
    action_permission: str
    not_found_text: StrPromise  # the 404's message

    def page_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:
        raise NotImplementedError  # each page says what it shows

    def perform_action(self, request: HttpRequest, obj: Any, action: str) -> ActionAnswer:
        raise NotImplementedError  # each page says what its actions call

    def action_get_page(self, request: HttpRequest, obj: Any, action: str) -> HttpResponse | None:
        """A page an action answers to GET (e.g. "are you sure?"); None: POST only."""
        return None

    def get_urls(self) -> list[URLPattern]:
        meta = self.opts
        actions = [
            path(
                f"<path:object_id>/{action}/",
                self.admin_site.admin_view(self._action_view),
                {"action": action},
                name=f"{meta.app_label}_{meta.model_name}_{action.replace('-', '_')}",
            )
            for action in self.page_actions
        ]
        # The ModelAdmin this mixes into has get_urls (a mixin's super() is untyped here).
        own: list[URLPattern] = super().get_urls()  # type: ignore[misc]
        return actions + own

    def page_url(self, obj: Any) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk])

    def _viewable(self, request: HttpRequest, object_id: str) -> Any:
        obj = self.get_object(request, object_id)  # type: ignore[attr-defined]
        if obj is None:
            raise Http404(str(self.not_found_text))
        if not self.has_view_permission(request, obj):  # type: ignore[attr-defined]
            raise PermissionDenied
        return obj

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        obj = self._viewable(request, object_id)
        context = {
            **self.admin_site.each_context(request),
            **self.page_context(request, obj),
            "opts": self.opts,
        }
        return TemplateResponse(request, self.page_template, context)

    def _action_view(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        obj = self._viewable(request, object_id)
        if not request.user.has_perm(self.action_permission):
            raise PermissionDenied
        if request.method in ("GET", "HEAD"):
            page = self.action_get_page(request, obj, action)
            if page is not None:
                return page
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        level, text = self.perform_action(request, obj, action)
        messages.add_message(request, level, text)
        return redirect(self.page_url(obj))


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
