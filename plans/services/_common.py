"""What several plans operations share: settings, time in ms, and the row locks.

Locks: every write of a plan holds its Plan row first (one writer per file),
then the entry's row (the package's docstring says why). A locking query never
joins another table.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from datetime import UTC, datetime

from plans.conf import plans_conf
from plans.firetimes import MAX_MISSED_RECORDED, fire_times, newest_fire_times, schedule_kind
from plans.models import Entry, Job, Plan, Run
from plans.policies import job_next_run_ms
from plans.schedule import ScheduleError, parse_at_ms
from plans.services.errors import PlanNotFoundError

logger = logging.getLogger(__name__)

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
        # It never runs again: what was due and its pause's fire times get their rows now.
        _record_stopped(job, now=now, for_good=True)
        _record_paused(job, until_ms=_ms(now) + 1, now=now, for_good=True)
        job.paused_at = None
        job.enabled = False
        job.next_run_at = None
        job.removed_at = now
        job.updated_at_ms = _ms(now)
        job.save()


SKIPPED_PAUSED = "skipped: the job was paused at this fire time"
PAUSED_MORE = " ({more} earlier fire times of this pause were skipped too, not listed one by one)"


def _record_stopped(job: Job, *, now: datetime, for_good: bool) -> int:
    """The fire times already due that no run will have, when the job is paused or, for
    good, cancelled (D-C26): a skipped row each, saying they waited to run.

    A recurring job's are those from its due time through now that no tick had started
    yet (a tick comes every 15 s; the pause came first). A one-shot stays due until it
    runs (D-C10), so a resume still runs it, late; only a cancel passes its fire time by,
    and only one that came before a pause (a later one is the pause's, below).
    """
    now_ms = _ms(now)
    try:
        if schedule_kind(job.schedule) == "at":
            at_ms = parse_at_ms(job.schedule.get("at"))
            in_pause = job.paused_at is not None and at_ms > _ms(job.paused_at)
            if not for_good or at_ms > now_ms or in_pause:
                return 0
            times: tuple[int, ...] = (at_ms,)
            more = 0
        else:
            if not job.enabled or job.next_run_at is None or job.next_run_at > now:
                return 0
            # Walked as the tick's catch-up would have (its due time is the first).
            span = fire_times(job.schedule, due_ms=_ms(job.next_run_at), to_ms=now_ms,
                              host_tz=_host_tz(), job_id=job.job_id)
            times = span.times[-MAX_MISSED_RECORDED:]
            more = span.more + len(span.times) - len(times)
    except ScheduleError as exc:
        logger.warning("plans: job %s: its due fire times cannot be listed: %s", job.job_id, exc)
        return 0
    return record_fire_times(job, times, more, status=Run.SKIPPED,
                             note=SKIPPED_WAITING_STOPPED, now=now)


def _record_paused(job: Job, *, until_ms: int, now: datetime, for_good: bool) -> int:
    """The fire times of the job's current pause before `until_ms` get their skipped rows
    (D-C26): the newest MAX_MISSED_RECORDED one by one, the newest of them counting the
    older ones exactly, so a year-long pause of a frequent job writes a bounded number.

    Written when the pause ends: on resume (`until_ms` is the job's next run or just after
    now, whichever is first, so no fire time gets both a row and a run), or for good, on
    a cancel or a confirmation that replaces the schedule. A one-shot's fire time is the
    pause's only for good: resumed, it still runs (D-C10). The caller clears or moves
    `paused_at`.
    """
    if job.paused_at is None or (not for_good and schedule_kind(job.schedule) == "at"):
        return 0
    try:
        span = newest_fire_times(job.schedule, after_ms=_ms(job.paused_at), before_ms=until_ms,
                                 host_tz=_host_tz(), job_id=job.job_id)
    except ScheduleError as exc:
        # The schedule error is the job's lastError already; nothing can list its times.
        logger.warning("plans: job %s: the fire times of its pause since %s cannot be listed: %s",
                       job.job_id, job.paused_at.isoformat(), exc)
        return 0
    return record_fire_times(job, span.times, span.more, status=Run.SKIPPED,
                             note=SKIPPED_PAUSED, now=now, counted=PAUSED_MORE)


def record_fire_times(
    job: Job,
    times: tuple[int, ...],
    more: int,
    *,
    status: str,
    note: str,
    now: datetime,
    counted: str = " ({more} earlier fire times were {status} too)",
) -> int:
    """A closed row for each fire time that did not run (missed, skipped), with why;
    `more` older ones beyond them are counted in the newest row's note (`counted`)."""
    if not times:
        return 0
    rows = []
    for index, fire_at_ms in enumerate(times):
        text = note
        if more and index == len(times) - 1:
            text += counted.format(more=more, status=status)
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
