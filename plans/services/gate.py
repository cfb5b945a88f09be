"""The confirmation gate (D-C18): confirm a revision, or ask for changes to it.

No function creates or changes a job except `entry_confirm`, and that one only
for the current revision of an entry, confirmed by a person (the admin action)
or by the user's own message from a later turn (D-C5).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction

from plans.conf import plans_conf
from plans.models import ChangeRequest, Confirmation, Entry, Job, Revision, Turn
from plans.planfile import PlanFileError, entry_text_sha256
from plans.policies import SeenTurn, confirmation_verdict, later_turn_problem
from plans.services._common import (
    _drop_waiting,
    _entry,
    _locked_plan_and_entry,
    _ms,
    _next_run_at,
    _record_paused,
)
from plans.services._revisions import _saw_answerer, _sync_plan
from plans.services.errors import PlanError, PlanGateError
from plans.services.expiry import entry_expire_if_due, expired_rule
from plans.services.jobs import stored_schedule

# --- the gate: confirm, or ask for changes --------------------------------------------------------


def _person(user: User | AnonymousUser | None) -> User | None:
    if user is None or not user.is_authenticated or not user.has_perm("plans.add_confirmation"):
        return None
    return user


def entry_confirm(
    *,
    task_id: str,
    revision: int,
    now: datetime,
    user: User | AnonymousUser | None = None,
    message: str = "",
    turn_id: str = "",
    relayed_by: str = "",
    agent_key_issued_at: datetime | None = None,
) -> Job:
    """Confirm revision `revision` of an entry, then create or move its job (§2.3 6-7).

    Either a signed-in person with the plans permission (`user`, the admin's
    "Confirm revision k") or the user's own `message` from turn `turn_id`,
    relayed over the API and judged by the whitelist and the rules of §2.4;
    `agent_key_issued_at` is set when an agent key relays it (its run's start).
    PLAN.md on disk is looked at first: an edit there is recorded as a revision
    of unknown author before anything is judged, so what is confirmed is what
    the file says. Refused, naming the rule: a revision that is not the entry's
    current one (D-C3), the writing turn (F1), a turn the plan saw before the
    revision, or an agent key for a revision found on disk (D-C18), anything but
    an explicit confirmation (F2, F3), an entry that is blocked or cancelled, a
    second confirmation, a revision whose wait for a confirmation ran out (D-C25).
    The confirmation keeps what it binds (D-C25): the SHA-256 of the entry's text in
    the confirmed PLAN.md and the schedule exactly as the job then runs it.
    """
    person = _person(user)
    if user is not None and person is None:
        raise PlanGateError("D-C5: only a signed-in person with the plans permission confirms")
    by_agent = person is None and agent_key_issued_at is not None
    found = _entry(task_id)
    _sync_plan(found.plan.archive_id, now=now, turn_id="" if person else turn_id)
    _expire_if_due(task_id, now=now)
    with transaction.atomic():
        plan, entry = _locked_plan_and_entry(task_id, found)
        current = entry.revision
        if revision != current.number:
            raise PlanGateError(
                f"D-C3: revision {revision} is not the one awaiting confirmation; "
                f"revision {current.number} is"
            )
        if entry.state == Entry.REMOVED:
            raise PlanGateError("state: the plan is cancelled")
        if entry.state == Entry.BLOCKED:
            raise PlanGateError(f"state: the plan is BLOCKED ({entry.blocked_reason})")
        if entry.state == Entry.EXPIRED:
            raise PlanGateError(expired_rule(entry))
        if entry.confirmed_revision_id == current.pk:
            raise PlanGateError(f"revision {current.number} is already confirmed")
        if entry.schedule is None:
            raise PlanGateError(
                "schedule: this entry was found on disk without a schedule; "
                "revise it with one over the API first"
            )
        author_known = current.source == Revision.API and bool(current.turn_id)
        seen: Turn | None = None
        if person is None:
            verdict = confirmation_verdict(
                message=message,
                phrases=plans_conf().confirmation_phrases,
                message_turn=turn_id,
                revision_turn=current.turn_id,
                revision_number=current.number,
                current_revision_number=current.number,
            )
            if not verdict.confirmed:
                raise PlanGateError(verdict.rule)
            seen = Turn.objects.filter(plan_id=entry.plan_id, turn_id=turn_id).first()
            problem = later_turn_problem(
                turn=turn_id,
                seen=SeenTurn(seen.role, seen.revision_number, seen.seen_after) if seen else None,
                revision_number=current.number,
                author_known=author_known,
                by_agent=by_agent,
                agent_key_issued_before_revision=(
                    agent_key_issued_at is not None and agent_key_issued_at <= current.written_at
                ),
            )
            if problem:
                raise PlanGateError(problem)
        try:
            with transaction.atomic():
                confirmation = Confirmation.objects.create(
                    entry=entry,
                    revision=current,
                    revision_sha256=current.sha256,
                    entry_sha256=_entry_sha256(current, entry),
                    revision_turn_id=current.turn_id,
                    revision_number=current.number,
                    revision_author_known=author_known,
                    turn_seen_after=seen.seen_after if seen else None,
                    by_agent=by_agent,
                    how=Confirmation.ADMIN if person else Confirmation.API,
                    turn_id="" if person else turn_id,
                    message="" if person else message,
                    confirmed_by=person,
                    relayed_by=relayed_by[:200],
                    confirmed_at=now,
                )
        except IntegrityError as exc:
            raise PlanGateError(f"revision {current.number} is already confirmed") from exc
        if person is None:
            _saw_answerer(plan, turn_id, current, role=Turn.CONFIRMER, now=now)
        job = _job_for(entry, confirmation, now=now)
        # D-C25: the schedule as the job runs it (an every anchored, a stagger resolved).
        confirmation.schedule = job.schedule
        confirmation.save(update_fields=["schedule"])
        entry.confirmed_revision = current
        entry.state = Entry.SCHEDULED if job.enabled else Entry.PAUSED
        entry.updated_at = now
        entry.save(update_fields=["confirmed_revision", "state", "updated_at"])
        return job


SKIPPED_POLICY_CHANGED = (
    "skipped: a newer confirmed revision changed the schedule or the missed-run policy "
    "while this fire time waited to run"
)


def _expire_if_due(task_id: str, *, now: datetime) -> None:
    # D-C25, in a transaction of its own: the mark stays when the call is then refused.
    with transaction.atomic():
        entry_expire_if_due(_entry(task_id), now=now)


def _entry_sha256(revision: Revision, entry: Entry) -> str:
    """The SHA-256 of the entry's own text in the revision being confirmed (D-C25)."""
    try:
        found = entry_text_sha256(revision.content, str(entry.task_id))
    except PlanFileError as exc:  # recorded revisions verified when written
        raise PlanError(f"PLAN.md r{revision.number}: {exc}") from exc
    if found is None:
        raise PlanGateError(
            f"Task_ID: {entry.task_id} is not in PLAN.md revision {revision.number}; "
            "nothing of it can be confirmed"
        )
    return found


def _job_for(entry: Entry, confirmation: Confirmation, *, now: datetime) -> Job:
    """Create the entry's job, or move it to the confirmed revision's schedule and message."""
    now_ms = _ms(now)
    plan = entry.plan
    job = Job.objects.select_for_update().filter(entry=entry).first()
    payload: dict[str, Any] = {"kind": "agentTurn", "message": entry.message}
    if entry.timeout_seconds is not None:
        payload["timeoutSeconds"] = entry.timeout_seconds  # §8.5; absent: 60 minutes
    if job is None:
        job = Job(
            job_id=str(uuid.uuid4()),
            entry=entry,
            agent_id=plan.agent_id,
            session_key=plan.session_key,
            created_at_ms=now_ms,
            delivery={"mode": "none", "bestEffort": True},
        )
        schedule_changed = True
    else:
        schedule_changed = job.schedule != stored_schedule(entry.schedule or {}, now_ms=now_ms)
    if schedule_changed or job.missed != entry.missed:
        # Fire times waiting under the old schedule or policy do not run under the new
        # one; each gets its row (D-C23).
        _drop_waiting(job, note=SKIPPED_POLICY_CHANGED, now=now)
    if schedule_changed and job.paused_at is not None:
        # A paused job's old schedule ends here: the fire times its pause passed by get
        # their rows on that schedule, and the pause goes on from now on the new one (D-C26).
        _record_paused(job, until_ms=now_ms + 1, now=now, for_good=True)
        job.paused_at = now
    job.confirmation = confirmation
    job.name = entry.task_name
    job.payload = payload
    # The run policies are part of what the person confirmed (D-C23, D-C24).
    job.missed = entry.missed
    job.max_lateness_seconds = entry.max_lateness_seconds
    job.overlap = entry.overlap
    job.updated_at_ms = now_ms
    if schedule_changed:
        # An every patch re-anchors at now (§8.3), so it is stored afresh.
        job.schedule = stored_schedule(entry.schedule or {}, now_ms=now_ms)
        job.delete_after_run = job.schedule["kind"] == "at"
        if job.enabled:
            job.next_run_at = _next_run_at(job, now_ms=now_ms)
    job.save()
    return job


def entry_request_changes(
    *,
    task_id: str,
    revision: int,
    comment: str,
    now: datetime,
    user: User | AnonymousUser | None = None,
    turn_id: str = "",
    relayed_by: str = "",
) -> ChangeRequest:
    """Record a request to change revision `revision` (§2.3 step 5): the entry is REVISING
    until the agent writes the change into PLAN.md; nothing is scheduled."""
    if not isinstance(comment, str) or not comment.strip():
        raise PlanError("comment: required, what should change")
    person = _person(user)
    if user is not None and person is None:
        raise PlanGateError("only a signed-in person with the plans permission reviews plans")
    if person is None and not turn_id.strip():
        raise PlanError("turnId: required, the conversation turn the user's message comes from")
    _expire_if_due(task_id, now=now)
    with transaction.atomic():
        plan, entry = _locked_plan_and_entry(task_id)
        if revision != entry.revision.number:
            raise PlanGateError(
                f"D-C3: revision {revision} is not the current one; "
                f"revision {entry.revision.number} is"
            )
        if entry.state == Entry.REMOVED:
            raise PlanGateError("state: the plan is cancelled")
        if entry.state == Entry.EXPIRED:
            # Its answer is a new revision: the agent writes the change and asks again.
            raise PlanGateError(expired_rule(entry))
        change = ChangeRequest.objects.create(
            entry=entry,
            revision=entry.revision,
            how=Confirmation.ADMIN if person else Confirmation.API,
            turn_id="" if person else turn_id,
            comment=comment.strip(),
            requested_by=person,
            relayed_by=relayed_by[:200],
            requested_at=now,
        )
        if person is None:
            _saw_answerer(plan, turn_id, entry.revision, role=Turn.CHANGE_REQUESTER, now=now)
        entry.state = Entry.REVISING
        entry.updated_at = now
        entry.save(update_fields=["state", "updated_at"])
        return change
