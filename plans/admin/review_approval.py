"""The review page's block on what a confirmation binds, and until when it may be given.

D-C25: a confirmation keeps the SHA-256 of the entry's text and the schedule as
the job runs it, so the page shows both before the person confirms (for the
revision awaiting it) and after (for the confirmation the job runs), and says
when the revision stops being confirmable or that it has. Its own module and
template, so the review page gains one include and one line of context.
"""

from __future__ import annotations

import json
from datetime import tzinfo
from typing import Any

from django.urls import reverse

from plans.admin._common import _ms
from plans.conf import plans_conf
from plans.models import Entry, Job
from plans.review import local_time
from plans.services.expiry import confirmation_expires_at
from plans.wire import entry_sha256_of, proposed_job
from xworkmate.lib.durations import format_duration

# How much of a SHA-256 the page prints; the whole hash is in the element's title.
SHORT_HASH = 12


def canonical(schedule: object) -> str:
    """A schedule as one canonical line: sorted keys, no spaces (D-C25)."""
    return json.dumps(schedule, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _hash(full: str) -> dict[str, str]:
    return {"full": full, "short": full[:SHORT_HASH]}


def approval_context(
    entry: Entry, job: Job | None, *, now_ms: int, reviewer_zone: tzinfo
) -> dict[str, Any]:
    """The `approval` of the review page: pending (what a confirmation now would bind and
    until when), confirmed (what the job's confirmation bound), and the timeline's link."""
    current = entry_sha256_of(entry)
    pending: dict[str, Any] | None = None
    if entry.confirmed_revision_id != entry.revision_id and entry.state != Entry.REMOVED:
        deadline = confirmation_expires_at(entry)
        pending = {
            "revision": entry.revision.number,
            "hash": _hash(current) if current else None,
            "schedule": (
                canonical(proposed_job(entry, now_ms=now_ms)["schedule"])
                if entry.schedule is not None
                else ""
            ),
            "anchored_at_confirmation": bool(
                entry.schedule
                and str(entry.schedule.get("kind", "")).strip().lower() == "every"
                and entry.schedule.get("anchorMs") is None
            ),
            "expires_at": local_time(_ms(deadline), reviewer_zone) if deadline else "",
            "expired_at": (
                local_time(_ms(entry.expired_at), reviewer_zone) if entry.expired_at else ""
            ),
            "expired": entry.state == Entry.EXPIRED,
        }
    confirmed: dict[str, Any] | None = None
    if job is not None and job.removed_at is None:
        confirmation = job.confirmation
        confirmed = {
            "revision": confirmation.revision_number,
            "hash": _hash(confirmation.entry_sha256) if confirmation.entry_sha256 else None,
            "schedule": canonical(confirmation.schedule) if confirmation.schedule else "",
            "confirmed_at": local_time(_ms(confirmation.confirmed_at), reviewer_zone),
            # The text of the newest revision, against the one confirmed: a difference
            # means the runs carry the confirmed text until a newer one is confirmed.
            "matches": bool(current) and current == confirmation.entry_sha256,
        }
    return {
        "approval": {
            "pending": pending,
            "confirmed": confirmed,
            "expiry": format_duration(plans_conf().confirmation_expiry),
            "timeline_url": reverse("admin:plans_entry_timeline", args=[entry.pk]),
        }
    }
