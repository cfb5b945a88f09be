"""What the review page shows: the revision, its diffs, the schedule's fire times, the runs."""

from __future__ import annotations

import json
from datetime import tzinfo
from typing import Any

from django.http import HttpRequest
from django.utils import timezone, translation
from django.utils.translation import gettext as _g

from plans.admin._common import _host_tz, _live, _ms, _next_run, _status, _zone
from plans.admin.review_approval import approval_context
from plans.conf import plans_conf
from plans.files import plan_run_outputs
from plans.models import Entry, Job, Plan, Revision
from plans.review import (
    MAX_OUTPUTS,
    RunOutputs,
    fire_times,
    local_time,
    plan_text,
    revision_diff,
    schedule_zone,
)
from plans.schedule import ScheduleError, describe_schedule
from plans.selectors import job_of, previous_revision, runs_page
from plans.wire import job_json, proposed_job
from xworkmate.lib.errors import HostUnavailableError
from xworkmate.lib.timezones import TimeZoneError, get_zone

FIRE_TIMES_SHOWN = 10


RUNS_SHOWN = 20


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
        "policies_changed": _policies_changed(entry, job),
    }


def _policies_changed(entry: Entry, job: Job | None) -> str:
    """The job's run policies where this revision proposes others (D-C23, D-C24): the
    job keeps its own until the revision is confirmed (D-C3)."""
    if job is None or job.removed_at is not None:
        return ""
    job_policies = (job.missed, job.max_lateness_seconds, job.overlap)
    if job_policies == (entry.missed, entry.max_lateness_seconds, entry.overlap):
        return ""
    lateness = f" ({job.max_lateness_seconds} s)" if job.max_lateness_seconds else ""
    return f"missed {job.missed}{lateness}, overlap {job.overlap}"


def _runs_context(job: Job | None, *, plan: Plan) -> dict[str, Any]:
    if job is None:
        return {}
    runs, total = runs_page(job, limit=RUNS_SHOWN, offset=0)
    zone = _zone(schedule_zone(job.schedule, _host_tz()))
    stamps = [run.archive_timestamp for run in runs]
    try:
        outputs = plan_run_outputs(plan.archive_id, stamps)
    except HostUnavailableError as exc:
        # The page still shows the runs; each says why its files are not listed (D-K31).
        outputs = {stamp: RunOutputs([], False, str(exc)) for stamp in stamps}
    rows = [
        {
            "run": run,
            "fire_time": local_time(run.fire_at_ms, zone),
            "duration": _duration(run.duration_ms),
            "outputs": outputs[run.archive_timestamp],
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
        entry.state not in (Entry.REMOVED, Entry.EXPIRED)  # D-C25: an expired one is not
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
        # Every time on the page reads alike, zone and seconds included (issue 22).
        "written_at": local_time(_ms(revision.written_at), reviewer_zone),
        "confirmations": [
            (local_time(_ms(one.confirmed_at), reviewer_zone), one)
            for one in entry.confirmations.select_related("revision", "confirmed_by")
        ],
        "change_requests": [
            (local_time(_ms(one.requested_at), reviewer_zone), one)
            for one in entry.change_requests.select_related("revision", "requested_by")
        ],
        **_schedule_context(entry, job, now_ms=now_ms, reviewer_zone=reviewer_zone),
        **_runs_context(job, plan=plan),
        **approval_context(entry, job, now_ms=now_ms, reviewer_zone=reviewer_zone),
    }
    if confirmable:
        context["proposed_job"] = _pretty(proposed_job(entry, now_ms=now_ms))
    if job is not None:
        context["job_json"] = _pretty(job_json(job))
    return context
