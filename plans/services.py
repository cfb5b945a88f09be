"""The plans app's only write path: propose, revise, confirm, change, pause, cancel, run.

The gate of the schedule-plan protocol lives here and in the tables under it:
no function creates or changes a job except `entry_confirm`, and that one only
for the current revision of an entry, confirmed by a person (the admin action)
or by the user's own message from a later turn (D-C5). Every other change to a
plan goes through PLAN.md first (F4, F5, D-C3): a new revision is written,
read back and recorded, and waits for its confirmation while the job keeps
running the last confirmed one.

Locks: every write of a plan, a confirmation and a change request included,
holds its Plan row first (one writer per file), then the entry's row. One order
for all: a confirmation records its turn in a table that points at the Plan row
(D-C18), and that insert waits for a writer holding the Plan row, so holding
the entry before the plan would deadlock against a revise. A confirmation
racing a revision of the same entry therefore ends one way or the other, never
both.
A locking query never joins another table: PostgreSQL re-checks a join against
the row's new version after waiting for its lock, and a row whose foreign key
moved meanwhile (an entry's revision) would vanish from the answer.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import Max

from plans.conf import plans_conf, plans_workspace
from plans.models import (
    ID_MAX_LENGTH,
    MISSED_POLICIES,
    MISSED_RUN_LATEST,
    ChangeRequest,
    Confirmation,
    Entry,
    Job,
    Plan,
    Revision,
    Run,
    Turn,
)
from plans.planfile import Entry as FileEntry
from plans.planfile import (
    PlanFileBlocked,
    PlanFileError,
    append_entry,
    archive_id_from_session,
    archive_timestamp,
    is_archive_id,
    new_entry,
    parse_plan_file,
    read_plan_file,
    replace_entry,
    validate_plan_file,
    write_plan_file,
)
from plans.planfile.entry import ROLE_SUFFIX
from plans.policies import (
    STUCK_RUNNING_MS,
    SeenTurn,
    catch_up,
    confirmation_verdict,
    first_instruction,
    job_next_run_ms,
    job_outcome,
    job_shape_problems,
    later_turn_problem,
    message_problem,
)
from plans.schedule import ScheduleError, resolve_stagger_ms, validate_schedule
from plans.selectors import PreviewRequestError, schedule_preview
from xworkmate.delivery.services import outbox_enqueue
from xworkmate.lib.errors import ConflictError, GatewayError
from xworkmate.lib.timezones import get_zone

logger = logging.getLogger(__name__)

__all__ = [
    "PlanBlockedError",
    "PlanError",
    "PlanGateError",
    "PlanNotFoundError",
    "Proposal",
    "ReconcileReport",
    "TickReport",
    "entry_cancel",
    "entry_confirm",
    "entry_request_changes",
    "entry_revise",
    "job_pause",
    "job_resume",
    "job_run_now",
    "plan_propose",
    "plans_reconcile",
    "run_record_delivery",
    "scheduler_tick",
    "stored_schedule",
]

RUN_PURPOSE = "plans.run"
# A proposal's message names its own, not yet known, Task_ID with the template's token.
TASK_PLACEHOLDER = "{{TASK_UUID}}"
# Fire times one tick starts at most; the rest wait for the next tick.
TICK_BATCH = 200


class PlanError(GatewayError):
    """Bad input: names the field and the rule; nothing was written."""


class PlanNotFoundError(GatewayError):
    code = "NOT_FOUND"
    http_status = 404


class PlanGateError(ConflictError):
    """Refused by the protocol's gate (F1-F5, D-C3, D-C5); names the rule."""

    code = "REFUSED"


class PlanBlockedError(GatewayError):
    """The PLAN.md write did not verify: archive-protocol's BLOCKED receipt."""

    code = "BLOCKED"
    http_status = 409


# --- configuration ------------------------------------------------------------------------


def _workspace() -> Path:
    path: Path = plans_workspace()
    return path


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


# --- what a proposal says -------------------------------------------------------------------


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
    missed: str = MISSED_RUN_LATEST
    # The job as an agent would send OpenClaw's cron.add (sessionTarget, payload,
    # delivery...): checked against D-C7; its payload.message is the message.
    job: Mapping[str, Any] | None = None


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
    if proposal.missed not in dict(MISSED_POLICIES):
        raise PlanError(f"missed: must be one of {', '.join(dict(MISSED_POLICIES))}")
    if proposal.job is not None:
        shape = job_shape_problems(proposal.job) if isinstance(proposal.job, Mapping) else [
            "job: must be an object"
        ]
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


# --- PLAN.md on disk and its revisions --------------------------------------------------------


def _agent_of(session_key: str) -> str:
    # OpenClaw's session keys are agent:<agentId>:…; its default agent is "main".
    parts = session_key.split(":")
    return parts[1] if len(parts) > 2 and parts[0] == "agent" and parts[1] else "main"


def _last_revision(plan: Plan) -> Revision | None:
    return plan.revisions.order_by("-number").first()


def _blocks(text: str) -> dict[str, str]:
    """Each entry's block of a PLAN.md text, by Task_ID."""
    return {item.entry.task_id or "": text[item.start : item.end] for item in parse_plan_file(text)}


def _record_revision(
    plan: Plan,
    text: str,
    *,
    source: str,
    turn_id: str,
    written_by: str,
    now: datetime,
) -> tuple[Revision, list[str]]:
    """Record `text` as the plan's next revision; the Task_IDs whose block changed."""
    previous = _last_revision(plan)
    before = _blocks(previous.content) if previous else {}
    revision = Revision.objects.create(
        plan=plan,
        number=(previous.number + 1) if previous else 1,
        content=text,
        sha256=_sha256(text),
        source=source,
        turn_id=turn_id,
        written_by=written_by[:200],
        written_at=now,
    )
    plan.problem = ""
    plan.updated_at = now
    plan.save(update_fields=["problem", "updated_at"])
    changed = [task_id for task_id, block in _blocks(text).items() if before.get(task_id) != block]
    return revision, changed


def _write(
    plan: Plan, text: str, *, turn_id: str, written_by: str, now: datetime, role: str = Turn.WRITER
) -> tuple[Revision, list[str]]:
    """Write PLAN.md (validated, atomic, read back), then record it as a revision."""
    try:
        write_plan_file(_workspace(), plan.archive_id, text)
    except PlanFileBlocked as exc:
        raise PlanBlockedError(str(exc)) from exc
    except PlanFileError as exc:
        raise PlanError(str(exc)) from exc
    revision, changed = _record_revision(
        plan, text, source=Revision.API, turn_id=turn_id, written_by=written_by, now=now
    )
    _saw_writer(plan, turn_id, revision, role=role, now=now)
    return revision, changed


def _saw(
    plan: Plan, turn_id: str, *, role: str, revision_number: int, seen_after: int, now: datetime
) -> None:
    """Remember that this plan has seen `turn_id`, unless it had already (D-C18).

    Only the first sighting counts: it is the earliest revision the turn can
    have known, so a later role never makes the turn "later" than it was.
    """
    if not turn_id:
        return
    Turn.objects.bulk_create(
        [
            Turn(
                plan=plan,
                turn_id=turn_id,
                role=role,
                revision_number=revision_number,
                seen_after=seen_after,
                seen_at=now,
            )
        ],
        ignore_conflicts=True,
    )


def _saw_writer(plan: Plan, turn_id: str, revision: Revision, *, role: str, now: datetime) -> None:
    # The writer of revision n knew n-1 at most: it never counts as later than n.
    _saw(
        plan,
        turn_id,
        role=role,
        revision_number=revision.number,
        seen_after=revision.number - 1,
        now=now,
    )


def _saw_answerer(
    plan: Plan, turn_id: str, revision: Revision, *, role: str, now: datetime
) -> None:
    # A turn that answers revision n (confirms it, asks to change it) has seen
    # every revision recorded so far, n and any newer one.
    _saw(
        plan,
        turn_id,
        role=role,
        revision_number=revision.number,
        seen_after=_newest_number(plan),
        now=now,
    )


def _newest_number(plan: Plan) -> int:
    number: int | None = plan.revisions.aggregate(last=Max("number"))["last"]
    return number or 0


def _disk_text(plan: Plan) -> str | None:
    try:
        return read_plan_file(_workspace(), plan.archive_id)
    except PlanFileError as exc:
        raise PlanError(f"PLAN.md on disk: {exc}") from exc


class _DiskProblem(PlanError):
    """The PLAN.md on disk does not verify; `problem` is its line and rule."""

    def __init__(self, problem: str) -> None:
        super().__init__(
            f"PLAN.md on disk does not verify ({problem}); fix the file, then try again"
        )
        self.problem = problem


def _sync_from_disk(plan: Plan, *, now: datetime, turn_id: str = "") -> str:
    """The plan's current text; a hand edit not yet recorded becomes a revision first.

    Called with the Plan row locked. A file that does not verify is reported on
    the plan (line and rule) and refused: nothing is applied from it. The edit's
    author is unknown; the call's turn (`turn_id`), which noticed it, is presumed
    to have made it, since an agent can write its workspace (D-C18).
    """
    last = _last_revision(plan)
    text = _disk_text(plan)
    if text is None or (last is not None and text == last.content):
        return last.content if last else ""
    try:
        parsed = validate_plan_file(text, archive_id=plan.archive_id)
    except PlanFileError as exc:
        raise _DiskProblem(str(exc)) from exc
    lines = {item.entry.task_id: item.line for item in parsed}
    taken = Entry.objects.filter(task_id__in=list(lines)).exclude(plan=plan)
    for task_id in taken.values_list("task_id", flat=True)[:1]:
        raise _DiskProblem(
            f"Task_ID {task_id} (line {lines[str(task_id)]}) belongs to another plan's PLAN.md"
        )
    revision, changed = _record_revision(
        plan, text, source=Revision.FILE, turn_id="", written_by="PLAN.md on disk", now=now
    )
    _saw_writer(plan, turn_id, revision, role=Turn.DISK_WRITER, now=now)
    _apply_file_revision(plan, revision, changed, now=now)
    return text


def _sync_plan(archive_id: str, *, now: datetime, turn_id: str = "") -> bool:
    """Record an edit of this PLAN.md on disk in a transaction of its own; whether one was.

    Committed on its own, so a call that is refused afterwards (a confirmation
    of the revision the edit replaced) still leaves the edit recorded. A file
    that does not verify is noted on the plan and refused (`_DiskProblem`).
    """
    try:
        with transaction.atomic():
            plan = _locked_plan(archive_id)
            if plan is None:
                plan = Plan.objects.create(archive_id=archive_id, agent_id="", created_at=now)
            before = _newest_number(plan)
            _sync_from_disk(plan, now=now, turn_id=turn_id)
            return _newest_number(plan) != before
    except _DiskProblem as exc:
        # Recorded after the rollback: the plan shows why its file is not applied.
        Plan.objects.filter(archive_id=archive_id).update(problem=exc.problem)
        raise


def _apply_file_revision(
    plan: Plan, revision: Revision, changed: list[str], *, now: datetime
) -> None:
    """Entries whose block changed on disk await a confirmation (D-C3); the job keeps
    the confirmed revision. A block set to `Status: Cancelled` by hand cancels (D-C4)."""
    parsed = {item.entry.task_id: item.entry for item in parse_plan_file(revision.content)}
    for task_id in changed:
        file_entry = parsed[task_id]
        entry = Entry.objects.select_for_update().filter(task_id=task_id).first()
        if entry is None:
            entry = Entry.objects.create(
                task_id=task_id,
                plan=plan,
                task_name=(file_entry.task_name or "")[:500],
                revision=revision,
                state=Entry.AWAITING,
                created_at=now,
                updated_at=now,
            )
        entry.revision = revision
        entry.task_name = (file_entry.task_name or "")[:500]
        entry.updated_at = now
        if file_entry.status == "Cancelled":
            entry.state = Entry.REMOVED
            _remove_job(entry, now=now)
        elif entry.state != Entry.REMOVED:
            entry.state = Entry.AWAITING
        entry.blocked_reason = ""
        entry.save()


# --- propose and revise ---------------------------------------------------------------------------


def _locked_plan(archive_id: str) -> Plan | None:
    return Plan.objects.select_for_update().filter(archive_id=archive_id).first()


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
    be written down.
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
        if text == current:
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
        entry.state = Entry.AWAITING
        entry.blocked_reason = ""
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
    )


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
    second confirmation.
    """
    person = _person(user)
    if user is not None and person is None:
        raise PlanGateError("D-C5: only a signed-in person with the plans permission confirms")
    by_agent = person is None and agent_key_issued_at is not None
    found = _entry(task_id)
    _sync_plan(found.plan.archive_id, now=now, turn_id="" if person else turn_id)
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
        entry.confirmed_revision = current
        entry.state = Entry.SCHEDULED if job.enabled else Entry.PAUSED
        entry.updated_at = now
        entry.save(update_fields=["confirmed_revision", "state", "updated_at"])
        return job


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


def _job_for(entry: Entry, confirmation: Confirmation, *, now: datetime) -> Job:
    """Create the entry's job, or move it to the confirmed revision's schedule and message."""
    now_ms = _ms(now)
    plan = entry.plan
    job = Job.objects.select_for_update().filter(entry=entry).first()
    payload = {"kind": "agentTurn", "message": entry.message}
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
    job.confirmation = confirmation
    job.name = entry.task_name
    job.payload = payload
    job.missed = entry.missed
    job.updated_at_ms = now_ms
    if schedule_changed:
        # An every patch re-anchors at now (§8.3), so it is stored afresh.
        job.schedule = stored_schedule(entry.schedule or {}, now_ms=now_ms)
        job.delete_after_run = job.schedule["kind"] == "at"
        if job.enabled:
            job.next_run_at = _next_run_at(job, now_ms=now_ms)
    job.save()
    return job


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
    with transaction.atomic():
        plan, entry = _locked_plan_and_entry(task_id)
        if revision != entry.revision.number:
            raise PlanGateError(
                f"D-C3: revision {revision} is not the current one; "
                f"revision {entry.revision.number} is"
            )
        if entry.state == Entry.REMOVED:
            raise PlanGateError("state: the plan is cancelled")
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


# --- pause, resume, cancel (D-C4) -----------------------------------------------------------------


def _locked_job(task_id: str) -> Job:
    entry = _entry(task_id)
    job = Job.objects.select_for_update().filter(entry=entry).first()
    if job is None or job.removed_at is not None:
        raise PlanGateError("job: this plan has no schedule (it is not confirmed, or cancelled)")
    return job


def job_pause(*, task_id: str, now: datetime) -> Job:
    """Disable the job; PLAN.md stays as it is (D-C4). Its next run and marker are cleared."""
    with transaction.atomic():
        job = _locked_job(task_id)
        job.enabled = False
        job.next_run_at = None
        job.running_at_ms = None
        job.updated_at_ms = _ms(now)
        job.save()
        Entry.objects.filter(pk=job.entry_id, state=Entry.SCHEDULED).update(
            state=Entry.PAUSED, updated_at=now
        )
        return job


def job_resume(*, task_id: str, now: datetime) -> Job:
    """Enable the job again; its next run is computed from now (§11 case 73)."""
    with transaction.atomic():
        job = _locked_job(task_id)
        job.enabled = True
        job.next_run_at = _next_run_at(job, now_ms=_ms(now))
        job.updated_at_ms = _ms(now)
        job.save()
        Entry.objects.filter(pk=job.entry_id, state=Entry.PAUSED).update(
            state=Entry.SCHEDULED, updated_at=now
        )
        return job


def _remove_job(entry: Entry, *, now: datetime) -> None:
    # Off the schedule, not deleted: its runs are the plan's history (D-C15).
    job = Job.objects.select_for_update().filter(entry=entry).first()
    if job is not None and job.removed_at is None:
        job.enabled = False
        job.next_run_at = None
        job.removed_at = now
        job.updated_at_ms = _ms(now)
        job.save()


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


# --- runs: the tick, run now, and what the channel answered ---------------------------------------


@dataclass(frozen=True)
class TickReport:
    started: int = 0
    missed: int = 0
    cleared: int = 0


def _run_session(job: Job) -> str:
    # An isolated run is a new session of the job's cron session (§8.5).
    return f"agent:{job.agent_id or 'main'}:cron:{job.job_id}"


def _start_run(job: Job, *, fire_at_ms: int, forced: bool, now: datetime) -> Run:
    """Put the run's agentTurn into the outbox, record the run, mark the job running.

    The message is sent by a worker once this transaction commits; the run's
    status follows what the channel confirms (run_record_delivery), never the
    enqueue. One idempotency key per (job, fire time), as the run row: when the
    run's insert finds the fire time taken, the caller's savepoint takes the
    message back with it.
    """
    now_ms = _ms(now)
    run_id = str(uuid.uuid4())
    stamp = archive_timestamp(now.astimezone(get_zone(_host_tz())))
    session_key = _run_session(job)
    archive_id = job.entry.plan.archive_id
    message = outbox_enqueue(
        purpose=RUN_PURPOSE,
        target=f"{session_key}:run:{run_id}",
        body=(
            f"[cron:{job.job_id} {job.name}] {job.payload['message']}\n"
            f"本轮输出归档到 archives/{archive_id}/{stamp}/ 并回读校验。"  # D-C17
            + _confirmed_text_note(job)
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
        created_at=now,
    )
    job.running_at_ms = now_ms
    job.save(update_fields=["running_at_ms"])
    return run


def _confirmed_text_note(job: Job) -> str:
    """While a newer revision of the entry awaits confirmation, PLAN.md on disk holds
    text nobody confirmed; the run carries the confirmed entry's text (D-C3)."""
    entry = job.entry
    if entry.revision_id == job.confirmation.revision_id:
        return ""
    confirmed = Revision.objects.get(pk=job.confirmation.revision_id)
    block = _blocks(confirmed.content).get(str(entry.task_id), "")
    if not block or _blocks(entry.revision.content).get(str(entry.task_id)) == block:
        return ""
    return (
        f"\n注意：PLAN.md 中该 Task_ID 的条目有尚未确认的修订（第 {entry.revision.number} 版）。"
        f"本次按已确认的第 {confirmed.number} 版执行，其内容如下：\n\n{block.rstrip()}"
    )


def _record_missed(job: Job, fire_times: tuple[int, ...], more: int, *, now: datetime) -> int:
    if not fire_times:
        return 0
    rows = []
    for index, fire_at_ms in enumerate(fire_times):
        note = "missed: the scheduler was not running at this fire time"
        if more and index == len(fire_times) - 1:
            note += f" ({more} earlier fire times were missed too)"
        rows.append(
            Run(
                job=job,
                fire_at_ms=fire_at_ms,
                run_id=str(uuid.uuid4()),
                revision_id=job.confirmation.revision_id,
                status=Run.MISSED,
                error=note,
                created_at=now,
                finished_at=now,
            )
        )
    Run.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def scheduler_tick(*, now: datetime, limit: int = TICK_BATCH) -> TickReport:
    """One beat tick (D-C1): claim the due jobs, skip those another tick holds, start runs.

    Only due rows are read (the partial index on next_run_at); a job whose run
    marker is older than 2 h is freed (§8.5); fire times passed while the
    service was down are caught up by the job's policy (D-C10). Each job is
    its own savepoint, so one bad job does not stop the others.
    """
    now_ms = _ms(now)
    started = missed = cleared = 0
    with transaction.atomic():
        claimed = list(
            Job.objects.select_for_update(skip_locked=True)
            .filter(enabled=True, next_run_at__lte=now)
            .order_by("next_run_at")
            .values_list("pk", flat=True)[:limit]
        )
        jobs = list(
            Job.objects.filter(pk__in=claimed)
            .select_related("entry__plan", "confirmation")
            .order_by("next_run_at")
        )
        for job in jobs:
            try:
                with transaction.atomic():
                    if job.running_at_ms is not None:
                        if now_ms - job.running_at_ms <= STUCK_RUNNING_MS:
                            continue
                        _clear_stuck(job, now=now)
                        cleared += 1
                    plan = catch_up(
                        job.schedule,
                        due_ms=_ms(job.next_run_at or now),
                        now_ms=now_ms,
                        host_tz=_host_tz(),
                        job_id=job.job_id,
                        policy=job.missed,
                    )
                    missed += _record_missed(job, plan.missed_ms, plan.missed_more, now=now)
                    if plan.run_ms is not None:
                        _start_run(job, fire_at_ms=plan.run_ms, forced=False, now=now)
                        started += 1
                    else:
                        job.next_run_at = _from_ms(plan.next_ms) if plan.next_ms else None
                        job.save(update_fields=["next_run_at"])
            except (ScheduleError, IntegrityError, GatewayError):
                logger.exception("plans: job %s could not be started", job.job_id)
    return TickReport(started=started, missed=missed, cleared=cleared)


def _clear_stuck(job: Job, *, now: datetime) -> None:
    logger.warning("cron: clearing stuck running marker of job %s", job.job_id)
    for run in Run.objects.select_for_update().filter(job=job, status=Run.RUNNING):
        _finish(run, job, status=Run.ERROR, error="cron: clearing stuck running marker", now=now)
    job.running_at_ms = None
    job.save(update_fields=["running_at_ms"])


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


class _Answered(Protocol):
    pk: int
    last_error: str
    updated_at: datetime  # when the outbox recorded this answer


_DELIVERY = {"sent": "delivered", "failed": "not-delivered", "unknown": "unknown"}


def run_record_delivery(message: _Answered, outcome: str, final: bool) -> None:
    """The outbox's answer for a run's agentTurn (runs in the outbox's transaction).

    Sent: the run is ok. Failed or unknown for good: error, with the reason.
    An answer that will be retried only updates the delivery status shown.
    """
    run = Run.objects.select_for_update().filter(delivery_message_id=message.pk).first()
    if run is None or run.status != Run.RUNNING:
        return
    run.delivery_status = _DELIVERY[str(outcome)]
    run.delivery_error = "" if outcome == "sent" else message.last_error
    if outcome == "sent":
        run.delivered = True
    elif final:
        run.delivered = False
    else:
        run.save(update_fields=["delivery_status", "delivery_error"])
        return
    job = Job.objects.select_for_update().get(pk=run.job_id)
    status = Run.OK if outcome == "sent" else Run.ERROR
    error = "" if status == Run.OK else f"delivery {outcome}: {message.last_error}".strip()
    _finish(run, job, status=status, error=error, now=message.updated_at)


def _finish(run: Run, job: Job, *, status: str, error: str, now: datetime) -> None:
    """Close a run and apply its result to the job (§8.5, D-C8)."""
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
        run_at_ms=run.run_at_ms or ended_ms,
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


# --- reconciliation: PLAN.md files are the declaration --------------------------------------------


@dataclass(frozen=True)
class ReconcileReport:
    checked: int = 0
    revised: list[str] = field(default_factory=list)  # archive ids with a new revision
    problems: dict[str, str] = field(default_factory=dict)  # archive id -> line and rule


def _archive_dirs(workspace: Path) -> list[str]:
    """The ARCHIVE_IDs that have a PLAN.md; symlinks and odd names are not followed."""
    root = workspace / "archives"
    try:
        if not stat.S_ISDIR(os.lstat(root).st_mode):
            return []
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    found = []
    for name in sorted(names):
        if not is_archive_id(name):
            continue
        try:
            if stat.S_ISDIR(os.lstat(root / name).st_mode) and os.path.lexists(
                root / name / "PLAN.md"
            ):
                found.append(name)
        except OSError:
            logger.warning("plans: cannot look at archives/%s", name, exc_info=True)
    return found


def plans_reconcile(*, now: datetime) -> ReconcileReport:
    """Compare every PLAN.md with its last recorded revision (the periodic job and
    `manage.py plans reconcile`). A changed file becomes a new revision awaiting
    confirmation, of unknown author (D-C18); a file that does not verify is
    reported, never half-applied."""
    report = ReconcileReport()
    checked = 0
    for archive_id in _archive_dirs(_workspace()):
        checked += 1
        try:
            if _sync_plan(archive_id, now=now):
                report.revised.append(archive_id)
        except _DiskProblem as exc:
            report.problems[archive_id] = exc.problem
        except PlanError as exc:
            report.problems[archive_id] = str(exc)
    return replace(report, checked=checked)
