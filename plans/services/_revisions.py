"""PLAN.md on disk and its revisions: write, read back, record, and notice hand edits.

Every write of a plan and every look at its file happens with the Plan row held
(one writer per file); a hand edit found on disk is recorded as a revision of
unknown author before anything is judged (D-C3, D-C18).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Max

from plans.files import plan_file_read, plan_file_write
from plans.models import Entry, Plan, Revision, Turn
from plans.planfile import (
    PlanFileBlocked,
    PlanFileError,
    parse_plan_file,
    validate_plan_file,
)
from plans.services._common import _locked_plan, _remove_job, _sha256
from plans.services.errors import PlanBlockedError, PlanError


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
        plan_file_write(plan.archive_id, text)
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
        return plan_file_read(plan.archive_id)
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
            entry.expired_at = None  # a new revision, with a wait of its own (D-C25)
        entry.blocked_reason = ""
        entry.save()
