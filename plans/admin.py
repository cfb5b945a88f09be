"""People's pages for plans: the list with its display statuses, and the review page.

Every model page is read-only: a plan changes only through the review page's
actions, each a POST that calls one service (confirm, request changes, pause,
resume, run now, cancel) and reports the service's answer, its refusal text
included. The entry's change page *is* the review page: what a person
confirms is the PLAN.md revision shown there, by its number (D-C5), so a page
left open while the agent wrote a newer revision cannot confirm that one (D-C3).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _g
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from plans.conf import plans_conf, plans_workspace
from plans.models import Entry, Job, Plan, Revision, Run
from plans.policies import display_status
from plans.review import (
    MAX_OUTPUTS,
    fire_times,
    local_time,
    plan_text,
    revision_diff,
    run_outputs,
    schedule_zone,
)
from plans.schedule import ScheduleError, describe_schedule
from plans.selectors import job_of, previous_revision, runs_page
from plans.services import (
    PlanError,
    entry_cancel,
    entry_confirm,
    entry_request_changes,
    job_pause,
    job_resume,
    job_run_now,
)
from plans.wire import job_json, proposed_job
from xworkmate.admin import ActionAnswer, ActionPageMixin, ReadOnlyMixin
from xworkmate.auth import Caller
from xworkmate.lib.errors import GatewayError
from xworkmate.lib.timezones import TimeZoneError, get_zone

# The plans permission: the services ask it of a person who confirms (D-C5);
# the admin asks it for every action of the review page.
REVIEW_PERMISSION = "plans.add_confirmation"
FIRE_TIMES_SHOWN = 10
RUNS_SHOWN = 20

# §6's display statuses; the Chinese catalogue says them as policies.display_status does.
_STATUS_LABELS = {
    "disabled": pgettext_lazy("job display status", "paused"),
    "running": pgettext_lazy("job display status", "running"),
    "done": pgettext_lazy("job display status", "done"),
    "failed": pgettext_lazy("job display status", "failed"),
    "skipped": pgettext_lazy("job display status", "skipped"),
    "pending": pgettext_lazy("job display status", "pending"),
}


def _host_tz() -> str:
    zone: str = plans_conf().time_zone
    return zone


def _zone(name: str) -> tzinfo:
    """The named zone, or the plans' zone for a name the zone database no longer has."""
    try:
        return get_zone(name)
    except TimeZoneError:
        return get_zone(_host_tz())


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _live(job: Job | None) -> Job | None:
    """The job while it is on the schedule; a cancelled job keeps its row and runs only."""
    return job if job is not None and job.removed_at is None else None


def _status(job: Job | None, entry: Entry) -> SafeString:
    """§6's display status of the entry's job; without a job, what the entry waits for."""
    live = _live(job)
    if live is None:
        if job is not None:
            return format_html('<span class="xw-status xw-status-removed">{}</span>', _("removed"))
        text = _("awaiting confirmation") if entry.state == Entry.AWAITING else "—"
        return format_html('<span class="xw-status xw-status-none">{}</span>', text)
    code, _chinese = display_status(
        enabled=live.enabled, running_at_ms=live.running_at_ms, last_run_status=live.last_run_status
    )
    return format_html('<span class="xw-status xw-status-{}">{}</span>', code, _STATUS_LABELS[code])


def _next_run(job: Job | None) -> str:
    """The job's next run in the zone its schedule fires in, or "—"."""
    live = _live(job)
    if live is None or live.next_run_at is None:
        return "—"
    zone = _zone(schedule_zone(live.schedule, _host_tz()))
    return local_time(_ms(live.next_run_at), zone) or "—"


def _review_url(entry: Entry) -> str:
    return reverse("admin:plans_entry_change", args=[entry.pk])


@admin.register(Entry)
class EntryAdmin(ActionPageMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "task_name",
        "archive_id",
        "state",
        "job_status",
        "next_run",
        "revision_number",
        "awaiting_confirmation",
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

    @admin.display(boolean=True, description=_("awaiting confirmation"))
    def awaiting_confirmation(self, obj: Entry) -> bool:
        return obj.state == Entry.AWAITING

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

    def perform_action(self, request: HttpRequest, obj: Entry, action: str) -> ActionAnswer:
        try:
            return _ACTIONS[action](request, obj)
        except GatewayError as exc:
            return messages.ERROR, exc.message


def _job(entry: Entry) -> Job | None:
    # The list selects the job with the entry; a missing one raises instead of being None.
    try:
        return entry.job
    except Job.DoesNotExist:
        return None


# --- the review page's actions: each calls one service -------------------------------------------

def _revision_posted(request: HttpRequest) -> int:
    raw = request.POST.get("revision", "")
    if not raw.isdigit() or len(raw) > 9:
        raise PlanError("revision: required, the number of the revision shown on the page")
    return int(raw)


def _confirm(request: HttpRequest, entry: Entry) -> ActionAnswer:
    number = _revision_posted(request)
    job = entry_confirm(
        task_id=str(entry.task_id),
        revision=number,
        user=Caller.for_person(request.user).person,
        now=timezone.now(),
    )
    text = _g("Revision %(number)s is confirmed; the job is on the schedule. Next run: %(next)s.")
    return messages.SUCCESS, text % {"number": number, "next": _next_run(job)}


def _request_changes(request: HttpRequest, entry: Entry) -> ActionAnswer:
    number = _revision_posted(request)
    entry_request_changes(
        task_id=str(entry.task_id),
        revision=number,
        comment=request.POST.get("comment", ""),
        user=Caller.for_person(request.user).person,
        now=timezone.now(),
    )
    text = _g("Your change request for revision %(number)s is recorded; nothing is scheduled.")
    return messages.SUCCESS, text % {"number": number}


def _pause(request: HttpRequest, entry: Entry) -> ActionAnswer:
    job_pause(task_id=str(entry.task_id), now=timezone.now())
    return messages.SUCCESS, _g("The job is paused; PLAN.md is unchanged.")


def _resume(request: HttpRequest, entry: Entry) -> ActionAnswer:
    job = job_resume(task_id=str(entry.task_id), now=timezone.now())
    return messages.SUCCESS, _g("The job is resumed. Next run: %(next)s.") % {
        "next": _next_run(job)
    }


def _run_now(request: HttpRequest, entry: Entry) -> ActionAnswer:
    answer = job_run_now(task_id=str(entry.task_id), mode="force", now=timezone.now())
    if answer.get("ran"):
        return messages.SUCCESS, _g("A run has started; its outcome shows under Runs.")
    return messages.WARNING, _g("Not run: %(reason)s.") % {"reason": answer.get("reason", "")}


def _cancel(request: HttpRequest, entry: Entry) -> ActionAnswer:
    entry_cancel(
        task_id=str(entry.task_id),
        turn_id="",
        written_by=Caller.for_person(request.user).name,
        now=timezone.now(),
    )
    return messages.SUCCESS, _g(
        "The plan is cancelled: PLAN.md says Status: Cancelled and the job is off the schedule."
    )


_ACTIONS: dict[str, Callable[[HttpRequest, Entry], ActionAnswer]] = {
    "confirm": _confirm,
    "request-changes": _request_changes,
    "pause": _pause,
    "resume": _resume,
    "run-now": _run_now,
    "cancel": _cancel,
}


# --- what the review page shows ------------------------------------------------------------------


def _reviewer_zone(request: HttpRequest) -> tuple[tzinfo, str]:
    """The reviewer's zone: `?tz=` when it names one, else the active zone; and any problem."""
    raw = request.GET.get("tz", "").strip()
    if raw:
        try:
            return get_zone(raw), ""
        except TimeZoneError as exc:
            return timezone.get_current_timezone(), str(exc)
    return timezone.get_current_timezone(), ""


def _zone_name(zone: tzinfo) -> str:
    return str(getattr(zone, "key", zone))


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _duration(ms: int | None) -> str:
    if ms is None:
        return ""
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _diffs(entry: Entry) -> list[dict[str, Any]]:
    """What changed: against the plan's previous revision, and against the revision the
    job runs now when that is an older one (D-C3: the job keeps it until this is confirmed)."""
    revision = entry.revision
    name = f"PLAN.md r{revision.number}"
    previous = previous_revision(revision)
    if previous is None:
        diffs = [
            {
                "title": _g("Revision %(number)s is the first: everything is new.")
                % {"number": revision.number},
                "lines": revision_diff(
                    "", revision.content, before_name="/dev/null", after_name=name
                ),
            }
        ]
    else:
        diffs = [
            {
                "title": _g("Changes since revision %(number)s") % {"number": previous.number},
                "lines": revision_diff(
                    previous.content,
                    revision.content,
                    before_name=f"PLAN.md r{previous.number}",
                    after_name=name,
                ),
            }
        ]
    confirmed: Revision | None = entry.confirmed_revision
    if confirmed is not None and confirmed.pk not in (revision.pk, getattr(previous, "pk", None)):
        diffs.append(
            {
                "title": _g("Changes since revision %(number)s, the one the job runs now")
                % {"number": confirmed.number},
                "lines": revision_diff(
                    confirmed.content,
                    revision.content,
                    before_name=f"PLAN.md r{confirmed.number}",
                    after_name=name,
                ),
            }
        )
    return diffs


def _schedule_context(
    entry: Entry, job: Job | None, *, now_ms: int, reviewer_zone: tzinfo
) -> dict[str, Any]:
    """The proposed schedule: its description and next fire times in both zones (D-C10)."""
    schedule = entry.schedule
    if schedule is None:
        return {}
    host_tz = _host_tz()
    zone_name = schedule_zone(schedule, host_tz)
    lang = "zh" if (translation.get_language() or "").startswith("zh") else "en"
    try:
        description = describe_schedule(schedule, lang=lang, host_tz=host_tz)
    except ScheduleError as exc:
        description = str(exc)
    min_every_ms = int(plans_conf().min_every.total_seconds() * 1000)
    times = fire_times(
        schedule,
        now_ms=now_ms,
        count=FIRE_TIMES_SHOWN,
        host_tz=host_tz,
        min_every_ms=min_every_ms,
        job_id=job.job_id if job is not None else None,
        plan_zone=_zone(zone_name),
        reviewer_zone=reviewer_zone,
    )
    return {
        "schedule_description": description,
        "schedule_json": _pretty(schedule),
        "fire_times": times,
        "plan_zone": zone_name,
    }


def _runs_context(job: Job | None, *, plan: Plan) -> dict[str, Any]:
    if job is None:
        return {}
    runs, total = runs_page(job, limit=RUNS_SHOWN, offset=0)
    zone = _zone(schedule_zone(job.schedule, _host_tz()))
    workspace = plans_workspace()
    rows = [
        {
            "run": run,
            "fire_time": local_time(run.fire_at_ms, zone),
            "duration": _duration(run.duration_ms),
            "outputs": run_outputs(workspace, plan.archive_id, run.archive_timestamp),
        }
        for run in runs
    ]
    return {"runs": rows, "runs_total": total, "runs_shown": len(rows)}


def _review_context(request: HttpRequest, entry: Entry) -> dict[str, Any]:
    now_ms = _ms(timezone.now())
    plan = entry.plan
    revision = entry.revision
    job = job_of(entry)
    live = _live(job)
    reviewer_zone, zone_problem = _reviewer_zone(request)
    # The current revision can be confirmed: not yet confirmed, with a schedule to run
    # (the service refuses anything else too, naming the rule).
    confirmable = (
        entry.state != Entry.REMOVED
        and entry.confirmed_revision_id != revision.pk
        and entry.schedule is not None
    )
    context: dict[str, Any] = {
        "title": entry.task_name,
        "entry": entry,
        "plan": plan,
        "revision": revision,
        "job": job,
        "live_job": live,
        "confirmable": confirmable,
        "status": _status(job, entry),
        "next_run": _next_run(job),
        "plan_text": plan_text(revision.content, str(entry.task_id)),
        "diffs": _diffs(entry),
        "reviewer_zone": _zone_name(reviewer_zone),
        "zone_problem": zone_problem,
        "max_outputs": MAX_OUTPUTS,
        "confirmations": entry.confirmations.select_related("revision", "confirmed_by"),
        "change_requests": entry.change_requests.select_related("revision", "requested_by"),
        **_schedule_context(entry, job, now_ms=now_ms, reviewer_zone=reviewer_zone),
        **_runs_context(job, plan=plan),
    }
    if confirmable:
        context["proposed_job"] = _pretty(proposed_job(entry, now_ms=now_ms))
    if job is not None:
        context["job_json"] = _pretty(job_json(job))
    return context


# --- the other read-only pages -------------------------------------------------------------------


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

    @admin.display(boolean=True, description=_("problem on disk"))
    def has_problem(self, obj: Plan) -> bool:
        return bool(obj.problem)

    @admin.display(description=_("plan entries"))
    def entry_links(self, obj: Plan) -> SafeString:
        return format_html_join(
            "",
            '<div><a href="{}">{}</a> ({})</div>',
            (
                (_review_url(entry), entry.task_name, entry.get_state_display())
                for entry in obj.entries.order_by("created_at", "id")
            ),
        )


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = (
        "fire_time",
        "entry_link",
        "status",
        "forced",
        "delivery_status",
        "duration_ms",
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

    @admin.display(description=_("plan entry"))
    def entry_link(self, obj: Run) -> SafeString:
        entry = obj.job.entry
        return format_html('<a href="{}">{}</a>', _review_url(entry), entry.task_name)
