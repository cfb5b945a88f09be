"""The scheduler's beat tick (D-C1): start the runs of the jobs that are due.

The kernel's claim-and-handle loop (D-K17): the due jobs are read without a
lock, then each is claimed in a transaction of its own, through the "due"
queryset, so the decision is taken again on the locked row and a job another
tick holds is skipped. A job whose run marker is older than 2 h is freed
(§8.5); fire times passed while the service was down are caught up by the
job's missed-run policy (D-C10, D-C23), those passed in an error backoff are skipped
(D-C21), and those that come while a run is out follow its overlap policy (D-C20,
D-C24); one bad job does not stop the others. Each tick also expires the revisions
that waited for a confirmation too long (D-C25), so the mark shows within a tick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet

from plans.models import Job, Run
from plans.policies import RUN_TIMED_OUT, STUCK_RUNNING_MS, catch_up, run_timed_out
from plans.runpolicy import MAX_CONCURRENT_RUNS, OVERLAP_ALLOW
from plans.schedule import ScheduleError
from plans.services._common import _from_ms, _host_tz, _ms, record_fire_times
from plans.services._runs import (
    _finish,
    _start_run,
    overlapping_fire_times,
    runs_out,
    skip_in_backoff,
)
from plans.services.expiry import entries_expire
from xworkmate.claims import claim_and_handle, claim_row

logger = logging.getLogger(__name__)

# Fire times one tick starts at most; the rest wait for the next tick.
TICK_BATCH = 200
# Ticks in a row that cannot compute a job's schedule before it is disabled (§8.5).
SCHEDULE_ERRORS_DISABLE = 3


@dataclass(frozen=True)
class TickReport:
    started: int = 0
    missed: int = 0
    cleared: int = 0
    skipped: int = 0
    schedule_errors: int = 0
    timed_out: int = 0
    expired: int = 0


def _due(now: datetime) -> QuerySet[Job]:
    # Only due rows are read (the partial index on next_run_at).
    return Job.objects.filter(enabled=True, next_run_at__lte=now)


def scheduler_tick(*, now: datetime, limit: int = TICK_BATCH) -> TickReport:
    """One beat tick (D-C1): claim the due jobs, skip those another tick holds, start runs.

    Each job is claimed and handled in its own transaction (the module's
    docstring); a job that fails is logged and rolled back alone.
    """
    now_ms = _ms(now)
    counts = {"started": 0, "missed": 0, "cleared": 0, "skipped": 0, "schedule_errors": 0}
    # Runs past their execution timeout end first (§8.5), so their jobs may run again.
    counts["timed_out"] = _time_out_runs(now)
    counts["expired"] = entries_expire(now=now)
    candidates = list(_due(now).order_by("next_run_at").values_list("pk", "job_id")[:limit])

    def handle(job: Job) -> None:
        if job.running_at_ms is not None and now_ms - job.running_at_ms > STUCK_RUNNING_MS:
            _clear_stuck(job, now=now)  # which may start a fire time waiting to run
            counts["cleared"] += 1
            if job.next_run_at is None or job.next_run_at > now:
                # The run's end gave the fire times it held up their rows and moved the
                # job to its next one, which is not due yet: starting it now would run
                # a fire time hours early.
                return
        if job.running_at_ms is not None and (
            job.overlap != OVERLAP_ALLOW or runs_out(job) >= MAX_CONCURRENT_RUNS
        ):
            # Its previous run is still out: these fire times are skipped or one is
            # buffered, each with a row that says so (D-C20, D-C24), and the job waits
            # for the next; under allow a run starts beside it (below).
            counts["skipped"] += overlapping_fire_times(job, up_to=now, now=now)
            return
        tally = dict.fromkeys(counts, 0)  # this job's part, kept only if it is done
        try:
            # A savepoint: a schedule that cannot be computed leaves no row of this
            # tick behind, only its count (§8.5: disabled after 3 in a row).
            with transaction.atomic():
                start(job, tally)
        except ScheduleError as exc:
            job.refresh_from_db()
            _schedule_failed(job, exc, now=now)
            counts["schedule_errors"] += 1
            return
        for name, added in tally.items():
            counts[name] += added

    def start(job: Job, tally: dict[str, int]) -> None:
        # Due again after an error: the fire times its backoff passed by get their
        # skipped rows first (D-C21), then those since, by the catch-up policy.
        tally["skipped"] += skip_in_backoff(job, up_to=now, now=now)
        plan = catch_up(
            job.schedule,
            due_ms=_ms(job.next_run_at or now),
            now_ms=now_ms,
            host_tz=_host_tz(),
            job_id=job.job_id,
            policy=job.missed,
            max_lateness_seconds=job.max_lateness_seconds,
        )
        tally["missed"] += record_fire_times(job, plan.missed_ms, plan.missed_more,
                                             status=Run.MISSED, note=plan.missed_note, now=now)
        tally["missed"] += record_fire_times(job, plan.late_ms, 0, status=Run.MISSED,
                                             note=plan.late_note, now=now)
        # The job moves on to its first fire time after now; run-all's older ones within
        # the lateness wait their turn, each run when the one before it ends (D-C23).
        job.next_run_at = _from_ms(plan.next_ms) if plan.next_ms else None
        if plan.waiting_ms:
            job.waiting_fire_ms = sorted({*(job.waiting_fire_ms or ()), *plan.waiting_ms})
        if plan.run_ms is not None:
            # One UPDATE of the job either way: the run's start saves what changed here.
            _start_run(job, fire_at_ms=plan.run_ms, forced=False, now=now, advance=False)
            tally["started"] += 1
        else:
            job.save(update_fields=["next_run_at", "waiting_fire_ms"])
        if job.schedule_error_count:  # computed again: the errors were not in a row
            Job.objects.filter(pk=job.pk).update(schedule_error_count=0)

    def failed(candidate: tuple[int, str], exc: Exception) -> None:
        logger.error("plans: job %s could not be started", candidate[1], exc_info=exc)

    claim_and_handle(
        candidates,
        claim=lambda candidate: claim_row(_due(now), candidate[0]),
        handle=handle,
        failed=failed,
    )
    return TickReport(**counts)


def _schedule_failed(job: Job, exc: ScheduleError, *, now: datetime) -> None:
    """A tick that could not compute the job's schedule (§8.5): counted, the job left due
    so the next tick tries again, and disabled at the third in a row, saying why (D-C22)."""
    job.schedule_error_count += 1
    job.last_error = f"schedule error: {exc}"
    fields = ["schedule_error_count", "last_error", "updated_at_ms"]
    if job.schedule_error_count >= SCHEDULE_ERRORS_DISABLE:
        job.last_error += (
            f" (disabled: {job.schedule_error_count} ticks in a row could not compute "
            "its schedule)"
        )
        job.enabled = False
        job.next_run_at = None
        fields += ["enabled", "next_run_at"]
    job.updated_at_ms = _ms(now)
    job.save(update_fields=fields)
    logger.warning("plans: job %s: %s", job.job_id, job.last_error)


def _clear_stuck(job: Job, *, now: datetime) -> None:
    logger.warning("cron: clearing stuck running marker of job %s", job.job_id)
    now_ms = _ms(now)
    _end_running(
        job, error="cron: clearing stuck running marker", now=now,
        ends=lambda started_ms: now_ms - started_ms > STUCK_RUNNING_MS,
    )


def _end_running(
    job: Job, *, error: str, now: datetime, ends: Callable[[int], bool]
) -> int:
    """End the job's runs still out whose start `ends` judges over, as errors with
    `error`; each end moves the job's marker to the runs left (overlap allow, D-C24).
    The run's message, if still queued, may yet be delivered: its answer no longer
    changes the run (a finished run stays as it ended)."""
    ended = 0
    for run in Run.objects.select_for_update().filter(job=job, status=Run.RUNNING):
        if run.run_at_ms is None or ends(run.run_at_ms):
            _finish(run, job, status=Run.ERROR, error=error, now=now)
            ended += 1
    if not Run.objects.filter(job=job, status=Run.RUNNING).exists() and job.running_at_ms:
        job.running_at_ms = None  # a marker without a run: nothing is out
        job.save(update_fields=["running_at_ms"])
    return ended


def _running() -> QuerySet[Job]:
    return Job.objects.filter(running_at_ms__isnull=False)


def _time_out_runs(now: datetime) -> int:
    """End the runs past their execution timeout (§8.5, D-C22) as `cron: job execution timed
    out`; how many. Each job's own payload says its timeout, so the few running jobs
    are judged here and each is claimed and judged again on its locked row."""
    now_ms = _ms(now)

    def timed_out(payload: object, running_at_ms: int | None) -> bool:
        return running_at_ms is not None and run_timed_out(
            payload if isinstance(payload, dict) else {}, running_at_ms=running_at_ms,
            now_ms=now_ms,
        )

    candidates = [
        (pk, job_id)
        for pk, job_id, payload, running_at_ms in _running().values_list(
            "pk", "job_id", "payload", "running_at_ms"
        )
        if timed_out(payload, running_at_ms)
    ]
    ended = 0

    def handle(job: Job) -> None:
        nonlocal ended
        if timed_out(job.payload, job.running_at_ms):
            logger.warning("plans: job %s: %s", job.job_id, RUN_TIMED_OUT)
            ended += _end_running(job, error=RUN_TIMED_OUT, now=now,
                                  ends=lambda started_ms: timed_out(job.payload, started_ms))

    def failed(candidate: tuple[int, str], exc: Exception) -> None:
        logger.error("plans: job %s: its timed-out run could not be ended", candidate[1],
                     exc_info=exc)

    claim_and_handle(
        candidates, claim=lambda candidate: claim_row(_running(), candidate[0]),
        handle=handle, failed=failed,
    )
    return ended
