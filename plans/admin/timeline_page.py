"""The admin's timeline page of a plan (issue 23 C1): "why didn't it run?" for people.

The same events as `GET /api/plans/<taskId>/timeline` (plans.timeline, one
reader for both), oldest first, each in words: revisions, change requests,
confirmations with what they bound (D-C25), expiries, and every fire time with
its outcome and reason, its run's delivery and the files it archived; while the
job is paused, the fire times passed so far in the pause (D-C26). The
download is the same JSON, served to the signed-in person.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _g
from django.utils.translation import pgettext

from plans.admin._common import _host_tz, _live, _ms, _status, _zone
from plans.admin.review_approval import SHORT_HASH, canonical
from plans.files import plan_run_outputs
from plans.models import Entry, Job
from plans.review import RunOutputs, local_time, schedule_zone
from plans.selectors import job_of
from plans.timeline import DEFAULT_EVENTS, MAX_EVENTS, plan_timeline
from xworkmate.lib.errors import HostUnavailableError


def _when(iso: str, zone: tzinfo) -> str:
    moment = datetime.fromisoformat(iso)
    return local_time(_ms(moment), zone) or iso


def _outcome(event: dict[str, Any]) -> str:
    labels = {
        "ran": pgettext("timeline outcome", "ran"),
        "missed": pgettext("timeline outcome", "missed"),
        "skipped": pgettext("timeline outcome", "skipped"),
        # D-C26: a fire time of the pause going on now, not yet a row.
        "paused": pgettext("timeline outcome", "paused"),
    }
    return labels.get(event.get("outcome", ""), str(event.get("outcome", "")))


def _title(event: dict[str, Any]) -> str:
    kind = event["kind"]
    number = event.get("revision")
    if kind == "revision":
        return _g("Revision %(number)s recorded") % {"number": number}
    if kind == "change-request":
        return _g("Changes requested for revision %(number)s") % {"number": number}
    if kind == "confirmation":
        return _g("Revision %(number)s confirmed") % {"number": number}
    if kind == "expiry":
        return _g("Revision %(number)s expired unconfirmed") % {"number": number}
    return _g("Fire time: %(outcome)s") % {"outcome": _outcome(event)}


def _row(event: dict[str, Any], zone: tzinfo) -> dict[str, Any]:
    sha = event.get("entrySha256") or event.get("sha256") or ""
    return {
        "event": event,
        "when": _when(event["at"], zone),
        "title": _title(event),
        "sha": {"full": sha, "short": sha[:SHORT_HASH]} if sha else None,
        "schedule": canonical(event["schedule"]) if event.get("schedule") else "",
    }


def timeline_context(request: HttpRequest, entry: Entry) -> dict[str, Any]:
    """The page's rows (the plan's zone), the job's status, whether older events exist."""
    job: Job | None = job_of(entry)
    timeline = plan_timeline(entry, job, now=timezone.now(), limit=DEFAULT_EVENTS)
    zone = _zone(schedule_zone(job.schedule if job else entry.schedule, _host_tz()))
    rows = [_row(event, zone) for event in timeline["events"]]
    stamps = [
        row["event"]["archiveTimestamp"]
        for row in rows
        if row["event"].get("archiveTimestamp")
    ]
    try:
        outputs = plan_run_outputs(entry.plan.archive_id, stamps) if stamps else {}
    except HostUnavailableError as exc:
        # The page still shows every event; each run says why its files are not listed.
        outputs = {stamp: RunOutputs([], False, str(exc)) for stamp in stamps}
    for row in rows:
        row["outputs"] = outputs.get(row["event"].get("archiveTimestamp", ""))
    live = _live(job)
    return {
        "title": _g("Timeline: %(name)s") % {"name": entry.task_name},
        "entry": entry,
        "rows": rows,
        "more": timeline["more"],
        "shown": DEFAULT_EVENTS,
        "download_max": MAX_EVENTS,
        "zone": str(getattr(zone, "key", zone)),
        "status": _status(job, entry),
        "paused": live is not None and not live.enabled,
        # D-C26: since when, for a job a person paused (not one the scheduler disabled).
        "paused_since": _when(timeline["pausedSince"], zone) if "pausedSince" in timeline else "",
        "review_url": reverse("admin:plans_entry_change", args=[entry.pk]),
        "download_url": reverse("admin:plans_entry_timeline_json", args=[entry.pk]),
    }


def timeline_download(entry: Entry) -> JsonResponse:
    """The API's timeline JSON (`download=1`), its newest MAX_EVENTS, as a file."""
    body = plan_timeline(entry, job_of(entry), now=timezone.now(), limit=MAX_EVENTS)
    response = JsonResponse(body, json_dumps_params={"ensure_ascii": False, "indent": 2})
    response["Content-Disposition"] = f'attachment; filename="plan-{entry.task_id}-timeline.json"'
    return response


__all__ = ["timeline_context", "timeline_download"]
