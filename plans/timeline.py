"""One plan's timeline (issue 23 C1): "why didn't it run?" answered in one list.

Everything the service recorded about a plan, oldest first: each PLAN.md
revision written, each change request, each confirmation (with the revision's
SHA-256 it confirmed, its entry's text hash and the schedule it bound, D-C25),
the expiry of a revision nobody confirmed in time (D-C25), and every fire time's
row: ran (with its delivery and outcome), missed while the service was down,
skipped while the previous run was out or in an error backoff (each with its
reason). Read from the rows as
they are; nothing is inferred. A long-lived job has many fire times, so the
list is the newest `limit` events, with `more` saying older ones exist.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from plans.models import ChangeRequest, Confirmation, Entry, Expiry, Job, Revision, Run
from xworkmate.lib.jstime import ms_to_iso, wire_time

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


def plan_timeline(entry: Entry, job: Job | None, *, limit: int = DEFAULT_EVENTS) -> dict[str, Any]:
    """The plan's events, oldest first: the newest `limit` of them, and whether more exist."""
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
    if job is not None:
        runs = Run.objects.filter(job=job).select_related("revision")
        events += [_fire(r) for r in runs.order_by("-fire_at_ms", "-id")[: limit + 1]]
    # Each source gave its newest limit + 1: together they hold the newest limit + 1
    # events overall, which is enough to cut at `limit` and know whether more exist.
    # At one instant, each kind in the order of its revisions (several revisions, or a
    # revision and its confirmation, recorded within one millisecond).
    events.sort(key=lambda event: (event["at"], _ORDER[event["kind"]], event.get("revision", 0)))
    return {
        "taskId": str(entry.task_id),
        "events": events[-limit:],
        "more": len(events) > limit,
    }


# At one instant: the revision, then what a person did about it, then the fire time.
_ORDER = {"revision": 0, "change-request": 1, "confirmation": 2, "expiry": 3, "fire": 4}
