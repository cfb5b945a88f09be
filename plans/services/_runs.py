"""A run's record: start it (its agentTurn into the outbox), and close it with its result.

Shared by the scheduler's tick, `job_run_now` and the outbox's answer hook.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from plans.files import plan_file_read
from plans.models import Entry, Job, Revision, Run
from plans.planfile import PlanFileError, archive_timestamp, entry_text, entry_text_sha256
from plans.policies import (
    backoff_until_ms,
    fire_times,
    fire_times_between,
    fires_after,
    job_outcome,
)
from plans.services._common import _from_ms, _host_tz, _ms
from plans.services._tasks import run_task_record
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.lib.errors import HostUnavailableError
from xworkmate.lib.timezones import get_zone

RUN_PURPOSE = "plans.run"


def _run_session(job: Job) -> str:
    # An isolated run is a new session of the job's cron session (§8.5).
    return f"agent:{job.agent_id or 'main'}:cron:{job.job_id}"


def _start_run(job: Job, *, fire_at_ms: int, forced: bool, now: datetime) -> Run:
    """Put the run's agentTurn into the outbox, record the run, mark the job running.

    The message is sent by a worker once this transaction commits; the run's
    status follows what the channel confirms (run_record_delivery), never the
    enqueue. One idempotency key per (job, fire time), as the run row: when the
    run's insert finds the fire time taken, the caller's savepoint (the tick's
    transaction for the job) takes the message back with it.
    """
    now_ms = _ms(now)
    run_id = str(uuid.uuid4())
    stamp = archive_timestamp(now.astimezone(get_zone(_host_tz())))
    session_key = _run_session(job)
    archive_id = job.entry.plan.archive_id
    on_disk, text_note = _plan_text_check(job)
    message = outbox_enqueue(
        purpose=RUN_PURPOSE,
        target=f"{session_key}:run:{run_id}",
        body=(
            f"[cron:{job.job_id} {job.name}] {job.payload['message']}\n"
            f"本轮输出归档到 archives/{archive_id}/{stamp}/ 并回读校验。"  # D-C17
            + (_confirmed_text(job) if text_note else "")
        ),
        idempotency_key=f"{job.job_id}:{fire_at_ms}",
        now=now,
    )
    run = Run.objects.create(
        job=job,
        fire_at_ms=fire_at_ms,
        run_id=run_id,
        revision_id=job.confirmation.revision_id,
        forced=forced,
        status=Run.RUNNING,
        run_at_ms=now_ms,
        session_id=run_id,
        session_key=session_key,
        archive_timestamp=stamp,
        delivery_message_id=message.pk,
        plan_text_sha256=on_disk,
        plan_text_note=text_note,
        created_at=now,
    )
    job.running_at_ms = now_ms
    if not forced:
        # While this fire time's run is out the job waits for the next one, which the
        # tick records as skipped if the run is still out then (D-C20). A forced run
        # leaves the job's due time alone: a fire time due meanwhile is skipped too.
        following = fires_after(
            job.schedule, fire_at_ms=fire_at_ms, host_tz=_host_tz(), job_id=job.job_id
        )
        job.next_run_at = _from_ms(following) if following is not None else None
    job.save(update_fields=["running_at_ms", "next_run_at"])
    run_task_record(run, job, now=now)  # every execution has a task record (§8.8)
    return run


SKIPPED_RUNNING = "skipped: the previous run was still running at this fire time"
SKIPPED_BACKOFF = (
    "skipped: the job was in error backoff at this fire time ({errors} consecutive errors)"
)


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


def skip_while_running(job: Job, *, up_to: datetime, now: datetime) -> int:
    """Record the job's fire times due by `up_to` as skipped (its run is still out) and
    move it to the first fire time after; how many were recorded (D-C20)."""
    if job.next_run_at is None or job.next_run_at > up_to or job.schedule.get("kind") == "at":
        return 0
    span = fire_times(
        job.schedule,
        due_ms=_ms(job.next_run_at),
        to_ms=_ms(up_to),
        host_tz=_host_tz(),
        job_id=job.job_id,
    )
    recorded = record_fire_times(
        job, span.times, span.more, status=Run.SKIPPED, note=SKIPPED_RUNNING, now=now
    )
    job.next_run_at = _from_ms(span.next_ms) if span.next_ms is not None else None
    job.save(update_fields=["next_run_at"])
    return recorded


def skip_in_backoff(job: Job, *, up_to: datetime, now: datetime) -> int:
    """Record the fire times the job passed by in its error backoff as skipped (D-C21):
    those after its failed run ended, before the backoff's end, and due by `up_to`.

    The job waits for its first fire time after the backoff (job_outcome), so no tick
    sees the ones in between: the tick that finds it due again writes their rows, or
    the end of a run forced meanwhile (its result replaces the failed one it followed).
    How many were recorded; 0 unless the job's last run failed.
    """
    if job.last_run_status != Run.ERROR or not job.consecutive_errors:
        return 0
    if job.last_run_at_ms is None or job.schedule.get("kind") == "at":
        return 0
    ended_ms = job.last_run_at_ms + (job.last_duration_ms or 0)
    until_ms = backoff_until_ms(ended_ms=ended_ms, consecutive_errors=job.consecutive_errors)
    span = fire_times_between(
        job.schedule,
        after_ms=ended_ms,
        before_ms=min(until_ms, _ms(up_to) + 1),
        host_tz=_host_tz(),
        job_id=job.job_id,
    )
    note = SKIPPED_BACKOFF.format(errors=job.consecutive_errors)
    return record_fire_times(job, span.times, span.more, status=Run.SKIPPED, note=note, now=now)


def _plan_text_check(job: Job) -> tuple[str, str]:
    """The SHA-256 of the entry's text in PLAN.md on disk now, and why the run must carry
    the confirmed text instead ("" when the file says what was confirmed; D-C25).

    The run's first instruction sends the agent to PLAN.md; the confirmation's hash says
    whether what it reads there is what a person confirmed. An edit no reconcile has
    recorded yet counts as much as a recorded revision awaiting confirmation (D-C3):
    either way the text on disk is not confirmed. A file that cannot be read, or has no
    such entry, confirms nothing either.
    """
    confirmation = job.confirmation
    task_id = str(job.entry.task_id)
    try:
        text = plan_file_read(job.entry.plan.archive_id)
        found = entry_text_sha256(text, task_id) if text is not None else None
        problem = (
            "PLAN.md is not there" if text is None
            else f"PLAN.md has no entry Task_ID {task_id}" if found is None else ""
        )
    except (PlanFileError, HostUnavailableError) as exc:
        found, problem = None, f"PLAN.md could not be read ({exc})"
    if found is not None and found == confirmation.entry_sha256:
        return found, ""
    if not problem:
        problem = (
            f"the entry's text in PLAN.md hashes to {(found or '')[:12]}…, not to the confirmed "
            f"{confirmation.entry_sha256[:12] or '(unknown)'}…"
        )
    return found or "", (
        f"D-C25: {problem}; this run carried the confirmed text of revision "
        f"{confirmation.revision_number}"
    )


def _confirmed_text(job: Job) -> str:
    """The confirmed entry's text, for a run whose PLAN.md says something else (D-C3,
    D-C25): the run is told to follow it, not the file."""
    confirmed = Revision.objects.get(pk=job.confirmation.revision_id)
    try:
        block = entry_text(confirmed.content, str(job.entry.task_id)) or ""
    except PlanFileError:  # validated when written: only reached for odd history
        block = confirmed.content
    return (
        "\n注意：PLAN.md 中该 Task_ID 的条目与已确认的内容不一致（有尚未确认的修改）。"
        f"本次按已确认的第 {confirmed.number} 版执行，其内容如下：\n\n{block}"
    )


def _finish(run: Run, job: Job, *, status: str, error: str, now: datetime) -> None:
    """Close a run and apply its result to the job (§8.5, D-C8); the fire times that
    passed while it was out and no tick saw get their skipped rows first (D-C20), and
    before them those the job's error backoff passed by (D-C21: the run that ends may
    be a forced one, inside the backoff of the failed run before it)."""
    skip_in_backoff(job, up_to=now, now=now)
    skip_while_running(job, up_to=now, now=now)
    ended_ms = _ms(now)
    run.status = status
    run.error = error
    run.finished_at = now
    run.duration_ms = max(0, ended_ms - (run.run_at_ms or ended_ms))
    outcome = job_outcome(
        job.schedule,
        status=status,
        ended_ms=ended_ms,
        consecutive_errors=job.consecutive_errors,
        host_tz=_host_tz(),
        job_id=job.job_id,
        # The fire time it stood for: an `every` continues on its grid (D-C20).
        run_at_ms=None if run.forced else run.fire_at_ms,
    )
    job.running_at_ms = None
    job.last_run_at_ms = run.run_at_ms
    job.last_run_status = status
    job.last_error = error or outcome.schedule_error
    job.last_duration_ms = run.duration_ms
    job.consecutive_errors = outcome.consecutive_errors
    job.last_delivered = run.delivered
    job.last_delivery_status = run.delivery_status or "not-requested"
    job.last_delivery_error = run.delivery_error
    job.schedule_error_count = job.schedule_error_count + 1 if outcome.schedule_error else 0
    # A pause or a cancel while the run was out wins: a result never re-enables.
    job.enabled = job.enabled and outcome.enabled and job.schedule_error_count < 3
    if outcome.removed and job.removed_at is None:
        job.removed_at = now
        Entry.objects.filter(pk=job.entry_id).update(state=Entry.REMOVED, updated_at=now)
    job.next_run_at = (
        _from_ms(outcome.next_run_ms)
        if job.enabled and job.removed_at is None and outcome.next_run_ms is not None
        else None
    )
    job.updated_at_ms = ended_ms
    job.save()
    run.next_run_at_ms = _ms(job.next_run_at) if job.next_run_at else None
    run.save()
    run_task_record(run, job, now=now)  # its task record ends with it (§8.9)
