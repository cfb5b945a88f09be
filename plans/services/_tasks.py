"""A task record for every cron run (§8.8, §8.9, issue 23 A1).

OpenClaw's task registry gets a `cron` task, notify policy `silent`, for each
execution; here it is one of the gateway's native task records, keyed by the
run's session (`agent:<agent>:cron:<jobId>`) and the run id, so
`xworkmate.tasks.get` answers it for that session and the native-task admin
lists it. Missed and skipped fire times never executed: they get no task.
"""

from __future__ import annotations

from datetime import datetime

from gateway.services import native_task_upsert
from plans.models import Job, Run
from plans.policies import RUN_TIMED_OUT
from xworkmate.lib.jstime import wire_time

# §8.9: a run's outcome as the task's status.
_STUCK = "cron: clearing stuck running marker"


def task_status_of(run: Run) -> str:
    """§8.9: ok → succeeded, error → failed, a timeout → timed_out, a run whose worker
    vanished (its marker cleared as stuck, past the 5-minute grace) → lost."""
    if run.status == Run.RUNNING:
        return "running"
    if run.status == Run.OK:
        return "succeeded"
    if run.error == RUN_TIMED_OUT:
        return "timed_out"
    if run.error == _STUCK:
        return "lost"
    return "failed"


def run_task_record(run: Run, job: Job, *, now: datetime) -> None:
    """Write the run's task record as it is now (terminal statuses stay as they are)."""
    status = task_status_of(run)
    record: dict[str, object] = {
        "taskId": run.run_id,
        "runtime": "cron",
        "sourceId": job.job_id,
        "requesterSessionKey": job.session_key,
        "childSessionKey": f"{run.session_key}:run:{run.run_id}",
        "agentId": job.agent_id or "main",
        "runId": run.run_id,
        "label": job.name,
        "task": job.payload.get("message", "") if isinstance(job.payload, dict) else "",
        "status": status,
        "deliveryStatus": "not_applicable",
        "notifyPolicy": "silent",
        "createdAt": wire_time(run.created_at),
        "startedAt": wire_time(run.created_at),
    }
    if run.finished_at is not None:
        record["endedAt"] = wire_time(run.finished_at)
        record["terminalSummary"] = run.summary or run.status
    if run.error:
        record["error"] = run.error
    native_task_upsert(
        session_key=run.session_key,
        task_id=run.run_id,
        run_id=run.run_id,
        status=status,
        record=record,
        now=now,
    )
