"""Drafts and revisions of PLAN.md: propose a new entry, revise an existing one.

Neither makes or changes a job: a proposal or a revision is written into
PLAN.md, read back, recorded, and awaits its confirmation (F1, F4, F5, D-C3).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from plans.models import ID_MAX_LENGTH, Entry, Plan, Turn
from plans.planfile import Entry as FileEntry
from plans.planfile import (
    PlanFileBlocked,
    PlanFileError,
    append_entry,
    archive_id_from_session,
    new_entry,
    parse_plan_file,
    replace_entry,
)
from plans.planfile.entry import ROLE_SUFFIX
from plans.policies import first_instruction, job_shape_problems, message_problem, timeout_seconds
from plans.runpolicy import MISSED_RUN_ALL, MISSED_RUN_LATEST, OVERLAP_SKIP, run_policy_problems
from plans.schedule import ScheduleError, validate_schedule
from plans.selectors import PreviewRequestError, schedule_preview
from plans.services._common import (
    _host_tz,
    _locked_plan,
    _locked_plan_and_entry,
    _min_every_ms,
    _ms,
)
from plans.services._revisions import _sync_from_disk, _write
from plans.services.errors import PlanBlockedError, PlanError, PlanGateError

# A proposal's message names its own, not yet known, Task_ID with the template's token.
TASK_PLACEHOLDER = "{{TASK_UUID}}"


@dataclass(frozen=True)
class Proposal:
    """An entry's ORA and schedule as an agent proposes them (§2.3 step 4)."""

    task_name: str
    persona: str
    objective: str
    result: str
    schedule: Mapping[str, Any]
    steps: tuple[str, ...] = ()  # the plan's own steps, after the template's 1-4
    message: str = ""  # empty: the first instruction alone
    # The run policies (D-C23, D-C24): part of what the person confirms.
    missed: str = MISSED_RUN_LATEST
    max_lateness_seconds: int | None = None  # with missed run-all only
    overlap: str = OVERLAP_SKIP
    # The job as an agent would send OpenClaw's cron.add (sessionTarget, payload,
    # delivery...): checked against D-C7; its payload.message is the message.
    job: Mapping[str, Any] | None = None
    # The stored entry's timeoutSeconds, for a revision that sends no job (§8.5).
    timeout_seconds: int | None = None


_ORA = (
    ("task_name", "taskName", "the plan's name"),
    ("persona", "persona", "Role_Context: who runs it"),
    ("objective", "objective", "O: the pain point and how it reflects SOUL.md"),
    ("result", "result", "R: success criteria, deliverables, visible outcome"),
)


def _check_proposal(proposal: Proposal, *, new: bool, now: datetime) -> None:
    """Every problem of a proposal before anything is written (missing ORA, bad schedule)."""
    problems = [
        f"{wire}: required ({rule})"
        for name, wire, rule in _ORA
        if not str(getattr(proposal, name) or "").strip()
    ]
    if not proposal.steps:
        problems.append("steps: required (A: frequency, logic, failure handling, archiving)")
    if any(not isinstance(step, str) or not step.strip() for step in proposal.steps):
        problems.append("steps: every step must be non-empty text")
    if problems:
        raise PlanError("; ".join(problems))
    policies = run_policy_problems(
        missed=proposal.missed,
        max_lateness_seconds=proposal.max_lateness_seconds,
        overlap=proposal.overlap,
    )
    if policies:
        raise PlanError("; ".join(policies))
    if proposal.job is not None:
        shape = (
            job_shape_problems(proposal.job)
            if isinstance(proposal.job, Mapping)
            else ["job: must be an object"]
        )
        if shape:
            raise PlanError("; ".join(shape))
    _check_schedule(proposal.schedule, now=now, new=new)


def _check_schedule(schedule: Mapping[str, Any], *, now: datetime, new: bool) -> None:
    if not isinstance(schedule, Mapping):
        raise PlanError("schedule: required, an object with a kind (cron, every or at)")
    try:
        # The preview's bounds on numbers (D-C12), then the job's own checks.
        schedule_preview(
            schedule=schedule,
            after_ms=_ms(now),
            count=1,
            host_tz=_host_tz(),
            min_every_ms=_min_every_ms(),
        )
        if new or str(schedule.get("kind", "")).strip().lower() != "at":
            validate_schedule(
                schedule, now_ms=_ms(now), min_every_ms=_min_every_ms(), host_tz=_host_tz()
            )
    except PreviewRequestError as exc:
        raise PlanError(str(exc)) from exc
    except ScheduleError as exc:
        raise PlanError(f"schedule: {exc}") from exc


def _proposed_message(proposal: Proposal) -> str:
    """The message a proposal asks for: its own, else its job's payload.message."""
    if proposal.message.strip() or proposal.job is None:
        return proposal.message
    payload = proposal.job.get("payload")
    message = payload.get("message") if isinstance(payload, Mapping) else None
    return message if isinstance(message, str) else ""


def _proposed_timeout(proposal: Proposal) -> int | None:
    """The run timeout a proposal asks for: its job's payload.timeoutSeconds (checked by
    job_shape_problems), else what the entry had; None is the 60-minute default."""
    if proposal.job is None:
        return proposal.timeout_seconds
    payload = proposal.job.get("payload")
    if isinstance(payload, Mapping) and "timeoutSeconds" in payload:
        return timeout_seconds(payload)
    return None


def _message(proposal_message: str, *, archive_id: str, task_id: str) -> str:
    """The job message: the first instruction, or the agent's text that starts with it."""
    if not proposal_message.strip():
        return first_instruction(archive_id, task_id)
    problem = message_problem(proposal_message, archive_id=archive_id, task_id=task_id)
    if problem:
        raise PlanError(problem)
    return proposal_message.strip()


def _file_entry(proposal: Proposal, *, archive_id: str, task_id: str) -> FileEntry:
    return new_entry(
        archive_id=archive_id,
        task_name=proposal.task_name.strip(),
        persona=proposal.persona.strip(),
        objective=proposal.objective.strip(),
        result=proposal.result.strip(),
        extra_steps=tuple(step.strip() for step in proposal.steps),
        task_id=task_id,
    )


def _agent_of(session_key: str) -> str:
    # OpenClaw's session keys are agent:<agentId>:…; its default agent is "main".
    parts = session_key.split(":")
    return parts[1] if len(parts) > 2 and parts[0] == "agent" and parts[1] else "main"


def plan_propose(
    *, session_key: str, proposal: Proposal, turn_id: str, written_by: str, now: datetime
) -> Entry:
    """Write a new entry into the session's PLAN.md (Gate A passed): AWAITING its confirmation.

    The ARCHIVE_ID comes from the session key (§5.2); the entry gets a fresh
    Task_ID, the template and the mandatory first step; no job is made (F1, F2).
    """
    if not turn_id.strip():
        raise PlanError("turnId: required, the conversation turn the write comes from")
    try:
        archive_id = archive_id_from_session(session_key)
    except PlanFileError as exc:
        # The receipt's reason in the archive protocol's own words (§11 case 16).
        raise PlanBlockedError(str(PlanFileBlocked("invalid Session"))) from exc
    if len(archive_id) > ID_MAX_LENGTH or len(_agent_of(session_key)) > ID_MAX_LENGTH:
        # No archive can be named after it (a directory name has a limit too): the
        # archive protocol's BLOCKED, as for any session it cannot use.
        reason = (
            f"invalid Session (its agent id and its last segment, the ARCHIVE_ID, must be at "
            f"most {ID_MAX_LENGTH} characters)"
        )
        raise PlanBlockedError(str(PlanFileBlocked(reason)))
    _check_proposal(proposal, new=True, now=now)
    task_id = str(uuid.uuid4())
    # The caller cannot know the Task_ID yet: its message names it as the template does.
    message = _message(
        _proposed_message(proposal).replace(TASK_PLACEHOLDER, task_id),
        archive_id=archive_id,
        task_id=task_id,
    )
    file_entry = _file_entry(proposal, archive_id=archive_id, task_id=task_id)
    with transaction.atomic():
        plan = _locked_plan(archive_id)
        if plan is None:
            try:
                with transaction.atomic():
                    plan = Plan.objects.create(
                        archive_id=archive_id,
                        agent_id=_agent_of(session_key),
                        session_key=session_key,
                        created_at=now,
                        updated_at=now,
                    )
            except IntegrityError:
                plan = _locked_plan(archive_id)
        if plan is None:  # made by a racing request and gone again: retry the call
            raise PlanError("plan: changed concurrently, try again")
        if plan.session_key and plan.session_key != session_key:
            raise PlanGateError("sessionKey: this ARCHIVE_ID's PLAN.md belongs to another session")
        current = _sync_from_disk(plan, now=now, turn_id=turn_id)
        try:
            text = append_entry(current, file_entry, archive_id=archive_id)
        except PlanFileError as exc:
            raise PlanError(str(exc)) from exc
        revision, _ = _write(
            plan, text, turn_id=turn_id, written_by=written_by, now=now, role=Turn.PROPOSER
        )
        return Entry.objects.create(
            task_id=task_id,
            plan=plan,
            task_name=proposal.task_name.strip()[:500],
            state=Entry.AWAITING,
            revision=revision,
            schedule=dict(proposal.schedule),
            message=message,
            missed=proposal.missed,
            max_lateness_seconds=proposal.max_lateness_seconds,
            overlap=proposal.overlap,
            timeout_seconds=_proposed_timeout(proposal),
            created_at=now,
            updated_at=now,
        )


_REVISABLE = (
    "job",
    "task_name",
    "persona",
    "objective",
    "result",
    "steps",
    "schedule",
    "message",
    "missed",
    "max_lateness_seconds",
    "overlap",
)


def entry_revise(
    *,
    task_id: str,
    changes: Mapping[str, Any],
    turn_id: str,
    written_by: str,
    now: datetime,
) -> Entry:
    """Write the entry's new text as revision k+1, then await its confirmation (§2.3 5, 8).

    Changing a landed plan changes PLAN.md first (F4, F5); the job keeps the
    confirmed revision until the new one is confirmed (D-C3). A change that
    leaves the entry's PLAN.md block as it was is refused: the agreement must
    be written down; only an expired revision may be proposed again unchanged
    (D-C25).
    """
    if not turn_id.strip():
        raise PlanError("turnId: required, the conversation turn the write comes from")
    unknown = sorted(set(changes) - set(_REVISABLE))
    if unknown:
        raise PlanError(f"{unknown[0]}: not a field of a plan ({', '.join(_REVISABLE)})")
    with transaction.atomic():
        plan, entry = _locked_plan_and_entry(task_id)
        if entry.state == Entry.REMOVED:
            raise PlanGateError("state: the plan is cancelled; propose a new one")
        current = _sync_from_disk(plan, now=now, turn_id=turn_id)
        entry.refresh_from_db()
        parsed = {item.entry.task_id: item.entry for item in parse_plan_file(current)}
        old = parsed.get(str(entry.task_id))
        if old is None:
            raise PlanError(f"Task_ID: {entry.task_id} is no longer in PLAN.md")
        base = _proposal_of(entry, old)
        if "job" in changes and "message" not in changes:
            base = replace(base, message="")  # the job's payload.message, if it has one
        if changes.get("missed", MISSED_RUN_ALL) != MISSED_RUN_ALL:
            # A lateness belongs to run-all; leaving run-all drops it unless restated.
            base = replace(base, max_lateness_seconds=None)
        proposal = replace(base, **dict(changes))
        _check_proposal(proposal, new=False, now=now)
        message = _message(
            _proposed_message(proposal), archive_id=plan.archive_id, task_id=str(entry.task_id)
        )
        file_entry = _file_entry(proposal, archive_id=plan.archive_id, task_id=str(entry.task_id))
        try:
            text = replace_entry(current, file_entry, archive_id=plan.archive_id)
        except PlanFileError as exc:
            raise PlanError(str(exc)) from exc
        # D-C25: an expired revision is proposed again as it is, if need be: its text
        # is written anew as the next revision, with a wait of its own.
        if text == current and entry.state != Entry.EXPIRED:
            raise PlanGateError(
                "F4/F5: the change must be written into the entry's PLAN.md text "
                "(its ORA or steps); nothing in PLAN.md would change"
            )
        revision, _ = _write(plan, text, turn_id=turn_id, written_by=written_by, now=now)
        entry.revision = revision
        entry.task_name = proposal.task_name.strip()[:500]
        entry.schedule = dict(proposal.schedule)
        entry.message = message
        entry.missed = proposal.missed
        entry.max_lateness_seconds = proposal.max_lateness_seconds
        entry.overlap = proposal.overlap
        entry.timeout_seconds = _proposed_timeout(proposal)
        entry.state = Entry.AWAITING
        entry.blocked_reason = ""
        entry.expired_at = None
        entry.updated_at = now
        entry.save()
        return entry


def _proposal_of(entry: Entry, file_entry: FileEntry) -> Proposal:
    """The entry's current proposal: its PLAN.md text and its stored schedule and message."""
    persona = (file_entry.role_context or "").removesuffix(ROLE_SUFFIX)
    return Proposal(
        task_name=file_entry.task_name or "",
        persona=persona,
        objective=file_entry.objective or "",
        result=file_entry.result or "",
        steps=tuple((file_entry.action_steps or ())[4:]),
        schedule=entry.schedule or {},
        message=entry.message,
        missed=entry.missed,
        max_lateness_seconds=entry.max_lateness_seconds,
        overlap=entry.overlap,
        timeout_seconds=entry.timeout_seconds,
    )
