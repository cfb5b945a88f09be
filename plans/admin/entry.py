"""The entries' list with its display statuses; an entry's change page is its review page.

What a person confirms is the PLAN.md revision shown there, by its number
(D-C5), so a page left open while the agent wrote a newer revision cannot
confirm that one (D-C3).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from plans.admin._common import _next_run, _status
from plans.admin.review_actions import _ACTIONS
from plans.admin.review_page import _review_context
from plans.admin.timeline_page import timeline_context, timeline_download
from plans.models import Entry, Job
from xworkmate.admin import ActionAnswer, ActionPageMixin
from xworkmate.lib.errors import InputError

# The plans permission: the services ask it of a person who confirms (D-C5);
# the admin asks it for every action of the review page.
REVIEW_PERMISSION = "plans.add_confirmation"


@admin.register(Entry)
class EntryAdmin(ActionPageMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "task_name",
        "archive_id",
        "state",
        "job_status",
        "next_run",
        "revision_number",
    )
    list_filter = ("state",)
    search_fields = ("task_name", "task_id", "plan__archive_id", "plan__session_key")
    list_select_related = ("plan", "revision", "job")
    ordering = ("-updated_at", "-id")
    fields = (
        "task_name",
        "task_id",
        "plan",
        "state",
        "revision",
        "confirmed_revision",
        "schedule",
        "message",
        "missed",
        "max_lateness_seconds",
        "overlap",
        "blocked_reason",
        "created_at",
        "updated_at",
    )

    @admin.display(description=_("ARCHIVE_ID"), ordering="plan__archive_id")
    def archive_id(self, obj: Entry) -> str:
        return obj.plan.archive_id

    @admin.display(description=_("job status"))
    def job_status(self, obj: Entry) -> SafeString:
        return _status(_job(obj), obj)

    @admin.display(description=_("next run"), ordering="job__next_run_at")
    def next_run(self, obj: Entry) -> str:
        return _next_run(_job(obj))

    @admin.display(description=_("revision"), ordering="revision__number")
    def revision_number(self, obj: Entry) -> int:
        return obj.revision.number

    # --- the review page (xworkmate.admin.ActionPageMixin) ---------------------------------------

    page_template = "admin/plans/entry_review.html"
    page_actions = ("confirm", "request-changes", "pause", "resume", "run-now", "cancel")
    action_permission = REVIEW_PERMISSION
    not_found_text = _("Plan not found")

    def page_context(self, request: HttpRequest, obj: Entry) -> dict[str, Any]:
        return {
            **_review_context(request, obj),
            "can_review": request.user.has_perm(REVIEW_PERMISSION),
        }

    def action_get_page(self, request: HttpRequest, obj: Entry, action: str) -> HttpResponse | None:
        if action != "cancel":
            return None
        # Cancelling edits PLAN.md and ends the schedule (D-C4): one more step.
        context = {
            **self.admin_site.each_context(request),
            "title": _("Cancel this plan?"),
            "entry": obj,
            "opts": self.opts,
            "review_url": self.page_url(obj),
        }
        return TemplateResponse(request, "admin/plans/entry_cancel.html", context)

    # --- the timeline (issue 23 C1): a page and its JSON, for whoever may view the plan ----

    def get_urls(self) -> list[URLPattern]:
        pages = [
            path(
                "<path:object_id>/timeline/",
                self.admin_site.admin_view(self._timeline_view),
                name="plans_entry_timeline",
            ),
            path(
                "<path:object_id>/timeline.json",
                self.admin_site.admin_view(self._timeline_json_view),
                name="plans_entry_timeline_json",
            ),
        ]
        return pages + super().get_urls()

    def _timeline_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        entry = self._viewable(request, object_id)
        context = {
            **self.admin_site.each_context(request),
            **timeline_context(request, entry),
            "opts": self.opts,
        }
        return TemplateResponse(request, "admin/plans/entry_timeline.html", context)

    def _timeline_json_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        return timeline_download(self._viewable(request, object_id))

    def perform_action(self, request: HttpRequest, obj: Entry, action: str) -> ActionAnswer:
        try:
            return _ACTIONS[action](request, obj)
        except InputError as exc:
            return messages.ERROR, exc.message


def _job(entry: Entry) -> Job | None:
    # The list selects the job with the entry; a missing one raises instead of being None.
    try:
        return entry.job
    except Job.DoesNotExist:
        return None
