"""A run's record: start it (its agentTurn into the outbox), and close it with its result.

Shared by the scheduler's tick, `job_run_now` and the outbox's answer hook. What a fire
time that comes while a run is out gets follows the job's overlap policy (D-C20,
D-C24); the fire times waiting to run (run-all's catch-up, D-C23, and an overlap
buffer) start as soon as no run is out.
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
from plans.runpolicy import (
    MAX_CONCURRENT_RUNS,
    MISSED_LATE,
    OVERLAP_ALLOW,
    SKIPPED_RUNNING,
    next_waiting,
    overlap_decision,
)
from plans.services._common import _from_ms, _host_tz, _ms, record_fire_times
from plans.services._tasks import run_task_record
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.lib.errors import HostUnavailableError
from xworkmate.lib.timezones import get_zone

RUN_PURPOSE = "plans.run"


def _run_session(job: Job) -> str:
    # An isolated run is a new session of the job's cron session (§8.5).
    return f"agent:{job.agent_id or 'main'}:cron:{job.job_id}"


def _start_run(
    job: Job, *, fire_at_ms: int, forced: bool, now: datetime, advance: bool = True
) -> Run:
    """Put the run's agentTurn into the outbox, record the run, mark the job running.

    `advance`: the fire time is the job's newest, so the job moves on to the one after
    it; a waiting fire time (D-C23, D-C24) is older than the job's next run, which stays.

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
    # With overlap allow, runs may be out side by side (D-C24): the marker is the oldest's
    # start, which the stuck-marker rule judges.
    job.running_at_ms = min(job.running_at_ms, now_ms) if job.running_at_ms else now_ms
    if not forced and advance:
        # While this fire time's run is out the job waits for the next one, which the
        # tick records as skipped if the run is still out then (D-C20). A forced run
        # leaves the job's due time alone: a fire time due meanwhile is skipped too.
        following = fires_after(
            job.schedule, fire_at_ms=fire_at_ms, host_tz=_host_tz(), job_id=job.job_id
        )
        job.next_run_at = _from_ms(following) if following is not None else None
    # waiting_fire_ms: the tick's catch-up may have queued fire times behind it (D-C23).
    job.save(update_fields=["running_at_ms", "next_run_at", "waiting_fire_ms"])
    run_task_record(run, job, now=now)  # every execution has a task record (§8.8)
    return run


SKIPPED_BACKOFF = (
    "skipped: the job was in error backoff at this fire time ({errors} consecutive errors)"
)


def runs_out(job: Job) -> int:
    """How many runs of the job are out now."""
    return Run.objects.filter(job=job, status=Run.RUNNING).count()


def overlapping_fire_times(job: Job, *, up_to: datetime, now: datetime) -> int:
    """The job's fire times due by `up_to` while its run is out, by its overlap policy
    (D-C20, D-C24): skipped with the reason, or the first one kept in the buffer to run
    when the run ends; the job moves to its first fire time after. How many rows were
    written. Under `allow` a due fire time starts a run of its own (the tick starts it),
    unless MAX_CONCURRENT_RUNS are out: only then is it handled here.
    """
    if job.next_run_at is None or job.next_run_at > up_to or job.schedule.get("kind") == "at":
        return 0
    at_capacity = job.overlap == OVERLAP_ALLOW and runs_out(job) >= MAX_CONCURRENT_RUNS
    if job.overlap == OVERLAP_ALLOW and not at_capacity:
        return 0
    span = fire_times(
        job.schedule,
        due_ms=_ms(job.next_run_at),
        to_ms=_ms(up_to),
        host_tz=_host_tz(),
        job_id=job.job_id,
    )
    decision = overlap_decision(
        job.overlap, arriving_ms=span.times, buffered_ms=job.buffered_fire_ms,
        at_capacity=at_capacity,
    )
    recorded = record_fire_times(
        job, decision.skipped_ms, span.more, status=Run.SKIPPED, note=decision.note, now=now
    )
    fields = ["next_run_at"]
    if decision.buffer_ms is not None:
        job.buffered_fire_ms = decision.buffer_ms
        fields.append("buffered_fire_ms")
    job.next_run_at = _from_ms(span.next_ms) if span.next_ms is not None else None
    job.save(update_fields=fields)
    return recorded


def start_waiting(job: Job, *, now: datetime) -> int:
    """Start the oldest fire time waiting to run, once no run of the job is out: run-all's
    catch-up first (each within the maximum lateness when it starts, the later ones
    missed, D-C23), then the buffered one (D-C24). How many missed rows it wrote."""
    if not job.enabled or job.removed_at is not None or job.running_at_ms is not None:
        return 0
    pick = next_waiting(
        job.waiting_fire_ms or (), now_ms=_ms(now), max_lateness_seconds=job.max_lateness_seconds
    )
    missed = record_fire_times(
        job, pick.late_ms, 0, status=Run.MISSED,
        note=MISSED_LATE.format(seconds=job.max_lateness_seconds), now=now,
    )
    job.waiting_fire_ms = list(pick.waiting_ms)
    fire_at_ms = pick.run_ms
    if fire_at_ms is None and job.buffered_fire_ms is not None:
        fire_at_ms, job.buffered_fire_ms = job.buffered_fire_ms, None
    job.save(update_fields=["waiting_fire_ms", "buffered_fire_ms"])
    if fire_at_ms is not None:
        _start_run(job, fire_at_ms=fire_at_ms, forced=False, now=now, advance=False)
    return missed


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
    passed while it was out and no tick saw are handled by the overlap policy first
    (D-C20, D-C24), and before them those the job's error backoff passed by (D-C21: the
    run that ends may be a forced one, inside the backoff of the failed run before it).
    Then, if no run is out any more, a fire time waiting to run starts (D-C23, D-C24)."""
    skip_in_backoff(job, up_to=now, now=now)
    frontier = job.next_run_at
    unseen = frontier is not None and frontier <= now and job.overlap == OVERLAP_ALLOW
    if unseen and frontier is not None and status == Run.ERROR:
        # Under allow a fire time no tick saw during the run would start beside it; the
        # run failed, so the backoff holds and it is skipped, as under skip (D-C24).
        span = fire_times(job.schedule, due_ms=_ms(frontier), to_ms=_ms(now),
                          host_tz=_host_tz(), job_id=job.job_id)
        record_fire_times(job, span.times, span.more, status=Run.SKIPPED,
                          note=SKIPPED_RUNNING, now=now)
        unseen = False
    overlapping_fire_times(job, up_to=now, now=now)
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
    # Another run may still be out (overlap allow, D-C24): the marker is then its start.
    others = Run.objects.filter(job=job, status=Run.RUNNING).exclude(pk=run.pk)
    starts = [ms for ms in others.values_list("run_at_ms", flat=True) if ms is not None]
    job.running_at_ms = min(starts, default=None)
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
    if unseen and job.next_run_at is not None and frontier is not None:
        # A fire time no tick saw while this run was out is still due: the next tick
        # starts it by the missed-run policy (D-C24), it is not passed over.
        job.next_run_at = min(job.next_run_at, frontier)
    job.updated_at_ms = ended_ms
    job.save()
    run.next_run_at_ms = _ms(job.next_run_at) if job.next_run_at else None
    run.save()
    run_task_record(run, job, now=now)  # its task record ends with it (§8.9)
    start_waiting(job, now=now)
