"""Plans, jobs and runs in OpenClaw's JSON names (§8.1, §8.5): what the API and exports say.

Absent values are left out rather than sent as null, as OpenClaw's own store
and run log do.
"""

from __future__ import annotations

from typing import Any

from plans.models import Confirmation, Entry, Job, Run
from plans.planfile import PlanFileError, entry_text_sha256, plan_path
from plans.policies import DELIVERY, display_status, first_instruction
from plans.runpolicy import MISSED_RUN_LATEST, OVERLAP_SKIP
from plans.services import stored_schedule
from plans.services.expiry import confirmation_expires_at, expired_rule
from xworkmate.lib.jstime import ms_to_iso, wire_time

__all__ = [
    "confirmation_json",
    "cron_add_request",
    "entry_json",
    "entry_sha256_of",
    "job_json",
    "proposed_job",
    "run_json",
]


def _present(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None and value != ""}


def _ms(moment: Any) -> int | None:
    return int(moment.timestamp() * 1000) if moment is not None else None


def job_json(job: Job) -> dict[str, Any]:
    """The CronJob of §8.1, state included."""
    state = _present(
        {
            "nextRunAtMs": _ms(job.next_run_at),
            "runningAtMs": job.running_at_ms,
            "lastRunAtMs": job.last_run_at_ms,
            "lastRunStatus": job.last_run_status,
            "lastStatus": job.last_run_status,
            "lastError": job.last_error,
            "lastDurationMs": job.last_duration_ms,
            "consecutiveErrors": job.consecutive_errors,
            "scheduleErrorCount": job.schedule_error_count,
            "lastDeliveryStatus": job.last_delivery_status,
            "lastDeliveryError": job.last_delivery_error,
            "lastDelivered": job.last_delivered,
        }
    )
    return _present(
        {
            "id": job.job_id,
            "agentId": job.agent_id,
            "sessionKey": job.session_key,
            "name": job.name,
            "description": job.description,
            "enabled": job.enabled,
            "deleteAfterRun": job.delete_after_run,
            "createdAtMs": job.created_at_ms,
            "updatedAtMs": job.updated_at_ms,
            "schedule": job.schedule,
            "sessionTarget": job.session_target,
            "wakeMode": job.wake_mode,
            "payload": job.payload,
            "delivery": job.delivery,
            **_run_policies(job),
            "state": state,
        }
    )


def _run_policies(job: Job) -> dict[str, Any]:
    """The confirmed run policies (D-C23, D-C24), only where they are not the defaults:
    OpenClaw's CronJob has no such fields, so a job on the defaults reads as before."""
    policies: dict[str, Any] = {}
    if job.missed != MISSED_RUN_LATEST:
        policies["missed"] = job.missed
        policies["maxLatenessSeconds"] = job.max_lateness_seconds
    if job.overlap != OVERLAP_SKIP:
        policies["overlap"] = job.overlap
    return policies


def proposed_job(entry: Entry, *, now_ms: int) -> dict[str, Any]:
    """The `cron.add` request a confirmation of the entry's current revision would make."""
    schedule = stored_schedule(entry.schedule or {}, now_ms=now_ms)
    plan = entry.plan
    return _present(
        {
            "name": entry.task_name,
            "agentId": plan.agent_id,
            "sessionKey": plan.session_key,
            "schedule": schedule,
            "sessionTarget": "isolated",
            "wakeMode": "now",
            "deleteAfterRun": True if schedule.get("kind") == "at" else None,
            "payload": {
                "kind": "agentTurn",
                "message": entry.message
                or first_instruction(plan.archive_id, str(entry.task_id)),
            },
            "delivery": dict(DELIVERY),
        }
    )


def cron_add_request(job: Job) -> dict[str, Any]:
    """The exact OpenClaw `cron.add` request of a confirmed job (D-C9)."""
    return _present(
        {
            "name": job.name,
            "agentId": job.agent_id,
            "sessionKey": job.session_key,
            "schedule": job.schedule,
            "sessionTarget": job.session_target,
            "wakeMode": job.wake_mode,
            "deleteAfterRun": True if job.delete_after_run else None,
            "payload": job.payload,
            "delivery": job.delivery,
        }
    )


def run_json(run: Run, *, job_id: str) -> dict[str, Any]:
    """One run-log line (§8.5), with this service's run id, fire time and revision."""
    finished = run.finished_at is not None
    return _present(
        {
            "ts": _ms(run.finished_at or run.created_at),
            "jobId": job_id,
            "action": "finished" if finished else "started",
            "status": run.status,
            "error": run.error,
            "summary": run.summary,
            "delivered": run.delivered,
            "deliveryStatus": run.delivery_status,
            "deliveryError": run.delivery_error,
            "sessionId": run.session_id,
            "sessionKey": run.session_key,
            "runAtMs": run.run_at_ms,
            "durationMs": run.duration_ms,
            "nextRunAtMs": run.next_run_at_ms,
            "runId": run.run_id,
            "fireAtMs": run.fire_at_ms,
            "fireAt": ms_to_iso(run.fire_at_ms),
            "revision": run.revision.number,
            "forced": run.forced or None,
            "archiveTimestamp": run.archive_timestamp,
        }
    )


def entry_sha256_of(entry: Entry) -> str | None:
    """The SHA-256 of the entry's text in its current revision: what a confirmation now
    would bind (D-C25); None when the revision does not parse or lacks the entry."""
    try:
        return entry_text_sha256(entry.revision.content, str(entry.task_id))
    except PlanFileError:
        return None


def confirmation_json(confirmation: Confirmation) -> dict[str, Any]:
    """What a confirmation bound (D-C25): the revision, its entry's text hash, the schedule."""
    return _present(
        {
            "revision": confirmation.revision_number,
            "revisionSha256": confirmation.revision_sha256,
            "entrySha256": confirmation.entry_sha256,
            "schedule": confirmation.schedule,
            "how": confirmation.how,
            "confirmedAt": wire_time(confirmation.confirmed_at),
        }
    )


def _expiry(entry: Entry) -> dict[str, Any]:
    """When the current revision stops being confirmable, or that it has (D-C25)."""
    if entry.state == Entry.EXPIRED:
        return {
            "confirmationExpired": {
                "revision": entry.revision.number,
                "expiredAt": wire_time(entry.expired_at) if entry.expired_at else None,
                "message": expired_rule(entry),
            }
        }
    deadline = confirmation_expires_at(entry)
    return {"confirmationExpiresAt": wire_time(deadline) if deadline else None}


def entry_json(entry: Entry, job: Job | None, *, review_url: str) -> dict[str, Any]:
    """A plan as the API answers it: the entry, its revisions' state and its job."""
    plan = entry.plan
    revision = entry.revision
    confirmed = entry.confirmed_revision
    if job is not None and job.removed_at is None:
        code, label = display_status(
            enabled=job.enabled,
            running_at_ms=job.running_at_ms,
            last_run_status=job.last_run_status,
        )
    else:
        code, label = ("none", "")
    return _present(
        {
            "taskId": str(entry.task_id),
            "taskName": entry.task_name,
            "archiveId": plan.archive_id,
            "planPath": plan_path(plan.archive_id),
            "sessionKey": plan.session_key,
            "agentId": plan.agent_id,
            "state": entry.state,
            "blockedReason": entry.blocked_reason,
            "revision": _present(
                {
                    "number": revision.number,
                    "sha256": revision.sha256,
                    "entrySha256": entry_sha256_of(entry),
                    "source": revision.source,
                    "turnId": revision.turn_id,
                    "writtenAt": wire_time(revision.written_at),
                }
            ),
            "confirmedRevision": confirmed.number if confirmed else None,
            "awaitingConfirmation": entry.state == Entry.AWAITING,
            **_expiry(entry),
            "confirmation": confirmation_json(job.confirmation) if job is not None else None,
            "schedule": entry.schedule,
            "message": entry.message,
            # The run policies of this revision (D-C23, D-C24): what a confirmation sets.
            "missed": entry.missed,
            "maxLatenessSeconds": entry.max_lateness_seconds,
            "overlap": entry.overlap,
            "reviewUrl": review_url,
            "displayStatus": {"code": code, "label": label} if label else None,
            "job": job_json(job) if job is not None else None,
            "problem": plan.problem,
            "updatedAt": wire_time(entry.updated_at),
        }
    )
