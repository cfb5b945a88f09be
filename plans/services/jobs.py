"""A plan's job: its stored schedule, pause, resume, cancel (D-C4) and run now (§8.2).

A job is created or moved only by a confirmation (plans.services.gate); these
change whether and when it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from plans.models import Entry, Job
from plans.planfile import parse_plan_file, replace_entry
from plans.policies import STUCK_RUNNING_MS
from plans.schedule import resolve_stagger_ms
from plans.services._common import (
    SKIPPED_WAITING_STOPPED,
    _drop_waiting,
    _entry,
    _locked_plan_and_entry,
    _ms,
    _next_run_at,
    _record_paused,
    _record_stopped,
    _remove_job,
)
from plans.services._revisions import _sync_from_disk, _write
from plans.services._runs import _start_run
from plans.services.errors import PlanError, PlanGateError


def stored_schedule(schedule: Mapping[str, Any], *, now_ms: int) -> dict[str, Any]:
    """The schedule as OpenClaw's createJob stores it (§8.3): an every is anchored at
    creation, a top-of-hour cron keeps its default stagger explicitly."""
    stored = dict(schedule)
    kind = str(stored.get("kind", "")).strip().lower()
    stored["kind"] = kind
    if kind == "every" and stored.get("anchorMs") is None:
        stored["anchorMs"] = now_ms
    if kind == "cron" and "staggerMs" not in stored:
        stagger = resolve_stagger_ms(stored)
        if stagger:
            stored["staggerMs"] = stagger
    return stored


# --- pause, resume, cancel (D-C4) -----------------------------------------------------------------


def _locked_job(task_id: str) -> Job:
    entry = _entry(task_id)
    job = Job.objects.select_for_update().filter(entry=entry).first()
    if job is None or job.removed_at is not None:
        raise PlanGateError("job: this plan has no schedule (it is not confirmed, or cancelled)")
    return job


def _pause(job: Job, now: datetime) -> None:
    # What waited to run (D-C23, D-C24) does not outlive the pause; each gets its row, and
    # so does a fire time already due that no tick had started (D-C26).
    _drop_waiting(job, note=SKIPPED_WAITING_STOPPED, now=now)
    _record_stopped(job, now=now, for_good=False)
    if job.paused_at is None:
        # D-C26: from now on its fire times are the pause's (a pause asked for again
        # keeps the first moment: the pause goes on).
        job.paused_at = now
    job.enabled = False
    job.next_run_at = None
    job.running_at_ms = None
    Entry.objects.filter(pk=job.entry_id, state=Entry.SCHEDULED).update(
        state=Entry.PAUSED, updated_at=now
    )


def _resume(job: Job, now: datetime) -> None:
    now_ms = _ms(now)
    next_run_at = _next_run_at(job, now_ms=now_ms)
    if job.paused_at is not None:
        # D-C26: the fire times the pause passed by get their skipped rows, up to the job's
        # next run: that one runs (an every on a boundary may run now), none before it does.
        until_ms = now_ms + 1 if next_run_at is None else min(now_ms + 1, _ms(next_run_at))
        _record_paused(job, until_ms=until_ms, now=now, for_good=False)
        job.paused_at = None
    job.enabled = True
    job.next_run_at = next_run_at
    Entry.objects.filter(pk=job.entry_id, state=Entry.PAUSED).update(
        state=Entry.SCHEDULED, updated_at=now
    )


def job_pause(*, task_id: str, now: datetime) -> Job:
    """Disable the job; PLAN.md stays as it is (D-C4). Its next run and marker are cleared;
    when it began is kept, for its fire times' rows (D-C26)."""
    return job_update(task_id=task_id, enabled=False, now=now)


def job_resume(*, task_id: str, now: datetime) -> Job:
    """Enable the job again; its next run is computed from now (§11 case 73), and each fire
    time the pause passed by gets a skipped row (D-C26), not a catch-up run."""
    return job_update(task_id=task_id, enabled=True, now=now)


def job_update(
    *, task_id: str, name: str | None = None, enabled: bool | None = None, now: datetime
) -> Job:
    """Studio's plan update (§6): the job's name and whether it runs, nothing else.

    The schedule, the delivery and PLAN.md stay as they are: neither change is a
    plan change, so neither needs a confirmation (D-C4). `enabled` pauses or
    resumes as the pause and resume actions do (asking for what already is still
    clears or recomputes the next run, as they always did).
    """
    with transaction.atomic():
        job = _locked_job(task_id)
        if name is not None:
            job.name = name
        if enabled is False:
            _pause(job, now)
        elif enabled is True:
            _resume(job, now)
        job.updated_at_ms = _ms(now)
        job.save()
        return job


def entry_cancel(*, task_id: str, turn_id: str, written_by: str, now: datetime) -> Entry:
    """Set the entry's Status to Cancelled in PLAN.md, then take its job off the schedule (D-C4).

    If the write fails, nothing else changes: plan and job stay consistent.
    """
    with transaction.atomic():
        plan, entry = _locked_plan_and_entry(task_id)
        if entry.state == Entry.REMOVED:
            return entry
        current = _sync_from_disk(plan, now=now, turn_id=turn_id)
        entry.refresh_from_db()
        parsed = {item.entry.task_id: item.entry for item in parse_plan_file(current)}
        old = parsed.get(str(entry.task_id))
        if old is not None and old.status != "Cancelled":
            text = replace_entry(
                current, replace(old, status="Cancelled"), archive_id=plan.archive_id
            )
            revision, _ = _write(plan, text, turn_id=turn_id, written_by=written_by, now=now)
            entry.revision = revision
        _remove_job(entry, now=now)
        entry.state = Entry.REMOVED
        entry.updated_at = now
        entry.save()
        return entry


def job_run_now(*, task_id: str, mode: str, now: datetime) -> dict[str, Any]:
    """`cron.run` (§8.2): force runs now; due runs only a due job. Answers {ok, ran, reason}."""
    if mode not in ("force", "due"):
        raise PlanError('mode: must be "force" or "due"')
    now_ms = _ms(now)
    with transaction.atomic():
        job = _locked_job(task_id)
        if job.running_at_ms is not None and now_ms - job.running_at_ms <= STUCK_RUNNING_MS:
            return {"ok": True, "ran": False, "reason": "already-running"}
        if mode == "due":
            if not job.enabled or job.next_run_at is None or job.next_run_at > now:
                return {"ok": True, "ran": False, "reason": "not-due"}
            fire_at_ms = _ms(job.next_run_at)
        else:
            fire_at_ms = now_ms
        try:
            with transaction.atomic():
                _start_run(job, fire_at_ms=fire_at_ms, forced=mode == "force", now=now)
        except IntegrityError:
            return {"ok": True, "ran": False, "reason": "already-running"}
        return {"ok": True, "ran": True}
