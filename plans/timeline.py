"""One plan's timeline (issue 23 C1): "why didn't it run?" answered in one list.

Everything the service recorded about a plan, oldest first: each PLAN.md
revision written, each change request, each confirmation (with the revision's
SHA-256 it confirmed, its entry's text hash and the schedule it bound, D-C25),
the expiry of a revision nobody confirmed in time (D-C25), and every fire time's
row: ran (with its delivery and outcome), missed while the service was down,
skipped while the previous run was out, in an error backoff or while the job was
paused (each with its reason). Read from the rows as they are, with one exception:
a job paused now has no rows for its pause yet (they are written when it is resumed
or cancelled, D-C26), so the fire times passed so far in the pause are computed
here, marked `paused`, and `pausedSince` says when it began. A long-lived job has
many fire times, so the list is the newest `limit` events, with `more` saying older
ones exist.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from plans.conf import plans_conf
from plans.firetimes import newest_fire_times, schedule_kind
from plans.models import ChangeRequest, Confirmation, Entry, Expiry, Job, Revision, Run
from plans.schedule import ScheduleError
from xworkmate.lib.jstime import ms_to_iso, wire_time

logger = logging.getLogger(__name__)

DEFAULT_EVENTS = 200
MAX_EVENTS = 1000

# Which run rows are fire times that executed, and which only record one.
_RAN = {Run.RUNNING, Run.OK, Run.ERROR}


def _revision(revision: Revision) -> dict[str, Any]:
    return {
        "at": wire_time(revision.written_at),
        "kind": "revision",
        "revision": revision.number,
        "source": revision.source,
        "turnId": revision.turn_id,
        "writtenBy": revision.written_by,
        "sha256": revision.sha256,
    }


def _change_request(request: ChangeRequest) -> dict[str, Any]:
    return {
        "at": wire_time(request.requested_at),
        "kind": "change-request",
        "revision": request.revision.number,
        "how": request.how,
        "comment": request.comment,
    }


def _confirmation(confirmation: Confirmation) -> dict[str, Any]:
    by = confirmation.confirmed_by.get_username() if confirmation.confirmed_by else ""
    return {
        "at": wire_time(confirmation.confirmed_at),
        "kind": "confirmation",
        "revision": confirmation.revision_number,
        "revisionSha256": confirmation.revision_sha256,
        "entrySha256": confirmation.entry_sha256,
        "schedule": confirmation.schedule,
        "how": confirmation.how,
        "by": by or confirmation.relayed_by,
        "turnId": confirmation.turn_id,
    }


def _fire(run: Run) -> dict[str, Any]:
    event: dict[str, Any] = {
        "at": ms_to_iso(run.fire_at_ms),
        "kind": "fire",
        "outcome": "ran" if run.status in _RAN else run.status,
        "status": run.status,
    }
    if run.error:
        event["reason"] = run.error
    if run.status in _RAN:
        event |= {
            "runId": run.run_id,
            "forced": run.forced,
            "revision": run.revision.number,
            "startedAt": ms_to_iso(run.run_at_ms) if run.run_at_ms is not None else None,
            "durationMs": run.duration_ms,
            "delivery": {
                "status": run.delivery_status or "pending",
                "delivered": run.delivered,
                "error": run.delivery_error,
            },
            "archiveTimestamp": run.archive_timestamp,
        }
        if run.plan_text_sha256:
            event["planTextSha256"] = run.plan_text_sha256
        if run.plan_text_note:  # D-C25: PLAN.md said something else; the confirmed text ran
            event["planTextNote"] = run.plan_text_note
    return event


def _expiry(expiry: Expiry) -> dict[str, Any]:
    return {"at": wire_time(expiry.expired_at), "kind": "expiry",
            "revision": expiry.revision.number}


PAUSED_NOW = (
    "paused: the job is paused at this fire time; it gets a skipped row when the job is "
    "resumed or cancelled"
)
PAUSED_NOW_MORE = " ({more} earlier fire times of this pause are not listed one by one)"


def _paused_fire_times(
    job: Job, *, paused_at: datetime, now: datetime, recorded: set[int]
) -> list[dict[str, Any]]:
    """The fire times a job paused now has passed by so far, up to now (D-C26), listed as a
    resume's rows will be: the newest MAX_MISSED_RECORDED, the newest counting the older
    ones. Not stored, so each says `paused`; a fire time with a row (a run forced during
    the pause) keeps its row instead. None for a one-shot: resumed, it still runs."""
    if schedule_kind(job.schedule) == "at":
        return []
    try:
        span = newest_fire_times(
            job.schedule, after_ms=_ms(paused_at), before_ms=_ms(now) + 1,
            host_tz=plans_conf().time_zone, job_id=job.job_id,
        )
    except ScheduleError as exc:
        logger.warning("plans: job %s: its paused fire times cannot be listed: %s", job.job_id, exc)
        return []
    events = [
        {"at": ms_to_iso(ms), "kind": "fire", "outcome": "paused", "status": "paused",
         "reason": PAUSED_NOW}
        for ms in span.times
        if ms not in recorded
    ]
    if span.more and events:
        events[-1]["reason"] += PAUSED_NOW_MORE.format(more=span.more)
    return events


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def plan_timeline(
    entry: Entry, job: Job | None, *, now: datetime, limit: int = DEFAULT_EVENTS
) -> dict[str, Any]:
    """The plan's events, oldest first: the newest `limit` of them, and whether more exist;
    `pausedSince` when its job is paused now (D-C26)."""
    # The plan's PLAN.md revisions from the one that created this entry on (the file
    # may hold other entries; their earlier revisions are not this plan's story).
    since: datetime = entry.created_at - timedelta(seconds=1)
    revisions = Revision.objects.filter(plan_id=entry.plan_id, written_at__gte=since)
    events = [_revision(r) for r in revisions.order_by("-number")[: limit + 1]]
    requests = ChangeRequest.objects.filter(entry=entry).select_related("revision")
    events += [_change_request(r) for r in requests.order_by("-requested_at")[: limit + 1]]
    confirmations = Confirmation.objects.filter(entry=entry).select_related("confirmed_by")
    events += [_confirmation(c) for c in confirmations.order_by("-confirmed_at")[: limit + 1]]
    expiries = Expiry.objects.filter(entry=entry).select_related("revision")
    events += [_expiry(e) for e in expiries.order_by("-expired_at")[: limit + 1]]
    paused_since = None
    if job is not None:
        runs = list(
            Run.objects.filter(job=job).select_related("revision")
            .order_by("-fire_at_ms", "-id")[: limit + 1]
        )
        events += [_fire(r) for r in runs]
        paused_at = job.paused_at
        if paused_at is not None and not job.enabled and job.removed_at is None:
            paused_since = wire_time(paused_at)
            # Newer than every row but a run forced meanwhile (which keeps its own).
            events += _paused_fire_times(job, paused_at=paused_at, now=now,
                                         recorded={r.fire_at_ms for r in runs})
    # Each source gave its newest limit + 1: together they hold the newest limit + 1
    # events overall, which is enough to cut at `limit` and know whether more exist.
    # At one instant, each kind in the order of its revisions (several revisions, or a
    # revision and its confirmation, recorded within one millisecond).
    events.sort(key=lambda event: (event["at"], _ORDER[event["kind"]], event.get("revision", 0)))
    timeline: dict[str, Any] = {
        "taskId": str(entry.task_id),
        "events": events[-limit:],
        "more": len(events) > limit,
    }
    if paused_since is not None:
        timeline["pausedSince"] = paused_since
    return timeline


# At one instant: the revision, then what a person did about it, then the fire time.
_ORDER = {"revision": 0, "change-request": 1, "confirmation": 2, "expiry": 3, "fire": 4}
