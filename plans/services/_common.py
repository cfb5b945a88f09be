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
from plans.models import Entry, Job, Plan, Run
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


SKIPPED_WAITING_STOPPED = (
    "skipped: the job was paused or cancelled while this fire time waited to run"
)


def _drop_waiting(job: Job, *, note: str, now: datetime) -> int:
    """The fire times waiting to run (run-all's catch-up, D-C23; the overlap buffer, D-C24)
    get a skipped row with `note` and wait no more; the caller saves the job."""
    waiting = tuple(job.waiting_fire_ms or ())
    if job.buffered_fire_ms is not None:
        waiting += (job.buffered_fire_ms,)
    job.waiting_fire_ms = []
    job.buffered_fire_ms = None
    return record_fire_times(job, waiting, 0, status=Run.SKIPPED, note=note, now=now)


def _remove_job(entry: Entry, *, now: datetime) -> None:
    # Off the schedule, not deleted: its runs are the plan's history (D-C15).
    job = Job.objects.select_for_update().filter(entry=entry).first()
    if job is not None and job.removed_at is None:
        _drop_waiting(job, note=SKIPPED_WAITING_STOPPED, now=now)
        job.enabled = False
        job.next_run_at = None
        job.removed_at = now
        job.updated_at_ms = _ms(now)
        job.save()


def record_fire_times(
    job: Job, times: tuple[int, ...], more: int, *, status: str, note: str, now: datetime
) -> int:
    """A closed row for each fire time that did not run (missed, skipped), with why;
    `more` older ones beyond them are counted in the newest row's note."""
    if not times:
        return 0
    rows = []
    for index, fire_at_ms in enumerate(times):
        text = note
        if more and index == len(times) - 1:
            text += f" ({more} earlier fire times were {status} too)"
        rows.append(
            Run(
                job=job,
                fire_at_ms=fire_at_ms,
                run_id=str(uuid.uuid4()),
                revision_id=job.confirmation.revision_id,
                status=status,
                error=text,
                created_at=now,
                finished_at=now,
            )
        )
    # A fire time that already has a row (its run) keeps it.
    Run.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)
