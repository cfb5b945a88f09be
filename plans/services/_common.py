"""What several plans operations share: settings, time in ms, and the row locks.

Locks: every write of a plan holds its Plan row first (one writer per file),
then the entry's row (the package's docstring says why). A locking query never
joins another table.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime

from plans.conf import plans_conf
from plans.models import Entry, Job, Plan
from plans.policies import job_next_run_ms
from plans.schedule import ScheduleError
from plans.services.errors import PlanNotFoundError

# --- configuration ------------------------------------------------------------------------


def _host_tz() -> str:
    zone: str = plans_conf().time_zone
    return zone


def _min_every_ms() -> int:
    return int(plans_conf().min_every.total_seconds() * 1000)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- the rows a write holds ---------------------------------------------------------------------


def _locked_plan(archive_id: str) -> Plan | None:
    return Plan.objects.select_for_update().filter(archive_id=archive_id).first()


def _locked_plan_and_entry(task_id: str, found: Entry | None = None) -> tuple[Plan, Entry]:
    """Lock the entry's Plan row (the PLAN.md writer's lock), then the entry.

    `found` is the entry when the caller has already looked it up.
    """
    entry = found or _entry(task_id)
    plan = Plan.objects.select_for_update().get(pk=entry.plan_id)
    return plan, Entry.objects.select_for_update().get(pk=entry.pk)


def _entry(task_id: str) -> Entry:
    try:
        parsed = uuid.UUID(str(task_id))
    except ValueError as exc:
        raise PlanNotFoundError("Plan not found") from exc
    entry = Entry.objects.select_related("plan").filter(task_id=parsed).first()
    if entry is None:
        raise PlanNotFoundError("Plan not found")
    return entry


def _next_run_at(job: Job, *, now_ms: int) -> datetime | None:
    try:
        next_ms = job_next_run_ms(
            job.schedule,
            now_ms=now_ms,
            host_tz=_host_tz(),
            job_id=job.job_id,
            last_run_at_ms=job.last_run_at_ms,
            last_status=job.last_run_status,
        )
    except ScheduleError as exc:
        job.last_error = f"schedule error: {exc}"
        return None
    return _from_ms(next_ms) if next_ms is not None else None


def _remove_job(entry: Entry, *, now: datetime) -> None:
    # Off the schedule, not deleted: its runs are the plan's history (D-C15).
    job = Job.objects.select_for_update().filter(entry=entry).first()
    if job is not None and job.removed_at is None:
        job.enabled = False
        job.next_run_at = None
        job.removed_at = now
        job.updated_at_ms = _ms(now)
        job.save()
