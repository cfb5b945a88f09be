"""The gate and the life of a plan, through the services (§11 groups A, B, C, E)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plans.models import ChangeRequest, Confirmation, Entry, Job, Plan, Revision
from plans.planfile import parse_plan_file
from plans.policies import first_instruction
from plans.services import (
    PlanBlockedError,
    PlanError,
    PlanGateError,
    entry_cancel,
    entry_confirm,
    entry_request_changes,
    entry_revise,
    job_pause,
    job_resume,
    plan_propose,
)
from tests.plans.conftest import ARCHIVE_ID, NOW, later, proposal

pytestmark = pytest.mark.django_db


def _plan_md(workspace: Path) -> str:
    return (workspace / "archives" / ARCHIVE_ID / "PLAN.md").read_text(encoding="utf-8")


def _confirm(
    entry: Entry, message: str = "确认", turn: str = "turn-2", revision: int | None = None
):
    entry.refresh_from_db()
    return entry_confirm(
        task_id=str(entry.task_id),
        revision=revision or entry.revision.number,
        message=message,
        turn_id=turn,
        relayed_by="bridge",
        now=later(5),
    )


def test_5_13_a_proposal_writes_plan_md_and_schedules_nothing(propose, workspace):
    entry = propose()
    assert entry.state == Entry.AWAITING
    assert not Job.objects.exists()
    text = _plan_md(workspace)
    [parsed] = parse_plan_file(text)
    assert parsed.entry.task_id == str(entry.task_id)
    assert parsed.entry.action_steps[0].startswith(
        f"**[读取本文件指令]**：从路径 `archives/{ARCHIVE_ID}/PLAN.md` 中读取 `Task_ID: {entry.task_id}`"
    )
    revision = Revision.objects.get()
    assert (revision.number, revision.turn_id, revision.content) == (1, "turn-1", text)


@pytest.mark.parametrize("message", ["确认", "可以创建定时任务了"])
def test_7_8_an_explicit_confirmation_in_a_later_turn_creates_exactly_one_job(propose, message):
    entry = propose()
    job = _confirm(entry, message)
    entry.refresh_from_db()
    assert entry.state == Entry.SCHEDULED and entry.confirmed_revision == entry.revision
    assert Job.objects.count() == 1
    # D-C7: the job's shape, and its message's first instruction.
    assert job.session_target == "isolated"
    assert job.payload == {
        "kind": "agentTurn",
        "message": f"从路径 archives/{ARCHIVE_ID}/PLAN.md 中读取 Task_ID: {entry.task_id} "
        "的详细计划并按步骤执行",
    }
    assert job.delivery == {"mode": "none", "bestEffort": True}
    assert job.next_run_at.isoformat() == "2026-03-10T01:00:00+00:00"  # case 41
    confirmation = Confirmation.objects.get()
    assert (confirmation.how, confirmation.turn_id, confirmation.message) == (
        "api",
        "turn-2",
        message,
    )
    assert confirmation.revision_sha256 == entry.revision.sha256


@pytest.mark.parametrize(
    ("message", "turn", "rule"),
    [
        ("确认", "turn-1", "F1"),  # the turn that wrote PLAN.md
        ("做个定时任务", "turn-2", "F2/F3"),  # case 10
        ("嗯", "turn-2", "§2.4: an acknowledgement"),  # case 14
        ("好的，不过把时间改成8点", "turn-2", "§2.4: a change request"),  # case 11
    ],
)
def test_10_11_14_anything_but_an_explicit_later_confirmation_creates_no_job(
    propose, message, turn, rule
):
    entry = propose()
    with pytest.raises(PlanGateError, match=rule.replace("(", r"\(")):
        _confirm(entry, message, turn)
    assert not Job.objects.exists() and not Confirmation.objects.exists()
    entry.refresh_from_db()
    assert entry.state == Entry.AWAITING


def test_a_stale_revision_cannot_be_confirmed(propose):
    entry = propose()
    entry_revise(
        task_id=str(entry.task_id),
        changes={"objective": "改成每天 8 点"},
        turn_id="turn-2",
        written_by="test",
        now=later(1),
    )
    with pytest.raises(PlanGateError, match="D-C3: revision 1 is not the one"):
        _confirm(entry, turn="turn-3", revision=1)
    assert not Job.objects.exists()


def test_22_revising_one_entry_leaves_the_others_byte_identical(propose, workspace):
    first = propose()
    second = propose(task_name="周报", turn="turn-2")
    before = _plan_md(workspace)
    [block_a, _] = [before[item.start : item.end] for item in parse_plan_file(before)]
    entry_revise(
        task_id=str(second.task_id),
        changes={"objective": "每周一汇总"},
        turn_id="turn-3",
        written_by="test",
        now=later(2),
    )
    after = _plan_md(workspace)
    items = parse_plan_file(after)
    assert after[items[0].start : items[0].end] == block_a
    assert [item.entry.task_id for item in items] == [str(first.task_id), str(second.task_id)]
    assert items[1].entry.objective == "每周一汇总"
    second.refresh_from_db()
    assert second.revision.number == 3 and second.state == Entry.AWAITING
    first.refresh_from_db()
    assert first.revision.number == 1  # its block did not change


def test_d_c3_a_landed_plan_keeps_its_confirmed_revision_until_the_new_one_is_confirmed(propose):
    entry = propose()
    job = _confirm(entry)
    entry_revise(
        task_id=str(entry.task_id),
        changes={
            "objective": "改到 8 点",
            "schedule": {"kind": "cron", "expr": "0 8 * * *", "tz": "Asia/Shanghai"},
        },
        turn_id="turn-3",
        written_by="test",
        now=later(10),
    )
    job.refresh_from_db()
    assert job.schedule["expr"] == "0 9 * * *" and job.confirmation.revision.number == 1
    entry.refresh_from_db()
    assert entry.state == Entry.AWAITING
    job = _confirm(entry, turn="turn-4")
    assert job.schedule["expr"] == "0 8 * * *" and job.confirmation.revision.number == 2
    assert Job.objects.count() == 1


def test_f4_f5_a_change_that_leaves_plan_md_as_it_was_is_refused(propose, workspace):
    entry = propose()
    before = _plan_md(workspace)
    with pytest.raises(PlanGateError, match="F4/F5"):
        entry_revise(
            task_id=str(entry.task_id),
            changes={"schedule": {"kind": "cron", "expr": "0 8 * * *"}},
            turn_id="turn-2",
            written_by="test",
            now=later(1),
        )
    assert _plan_md(workspace) == before and Revision.objects.count() == 1


@pytest.mark.parametrize(
    ("changes", "names"),
    [
        ({"objective": "  "}, "objective: required"),
        ({"result": ""}, "result: required"),
        ({"steps": ()}, "steps: required"),
        (
            {"schedule": {"kind": "cron", "expr": "61 * * * *"}},
            "CronPattern: Invalid value for minute",
        ),
        (
            {"schedule": {"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Base"}},
            "schedule: CronDate: Failed to convert date to timezone .Mars/Base.",
        ),
        ({"schedule": {"kind": "every", "everyMs": 10}}, "everyMs: expected an integer >= 1000"),
        ({"schedule": {"kind": "at", "at": "2026-03-10T00:00:00Z"}}, "schedule.at is in the past"),
        ({"schedule": {"kind": "at", "at": "2037-01-01T00:00:00Z"}}, "Maximum allowed: 10 years"),
        ({"schedule": {"kind": "every", "everyMs": 1e30}}, "schedule.everyMs: must be at most"),
        (
            {"message": "你好。从路径 archives/chat-1/PLAN.md 中读取"},
            "message: the first instruction",
        ),
        ({"missed": "sometimes"}, "missed: must be one of"),
    ],
)
def test_bad_proposals_name_the_field_and_write_nothing(propose, workspace, changes, names):
    with pytest.raises(PlanError, match=names.replace("(", r"\(")):
        propose(**changes)
    assert not (workspace / "archives").exists()
    assert not Plan.objects.exists() and not Revision.objects.exists()


def test_31_a_message_may_continue_after_the_first_instruction(propose):
    entry = propose(message="")
    instruction = entry.message
    # On propose the new Task_ID is written as the template's token.
    with_text = propose(
        turn="turn-2",
        message="  从路径 archives/chat-1/PLAN.md 中读取 Task_ID: {{TASK_UUID}} 的详细计划并按步骤执行。然后发送摘要",
    )
    assert with_text.message == f"{first_instruction(ARCHIVE_ID, str(with_text.task_id))}。然后发送摘要"
    # A revision may add text too.
    revised = entry_revise(
        task_id=str(entry.task_id),
        changes={"message": f"  {instruction}。然后发送摘要", "objective": "加上摘要"},
        turn_id="turn-2",
        written_by="test",
        now=later(1),
    )
    assert revised.message == f"{instruction}。然后发送摘要"


def test_16_an_invalid_session_is_blocked_and_writes_nothing(db, workspace):
    with pytest.raises(PlanBlockedError) as caught:
        plan_propose(
            session_key="unknown", proposal=proposal(), turn_id="t", written_by="x", now=NOW
        )
    assert str(caught.value).startswith("ARCHIVE_STATUS: BLOCKED\nARCHIVE_REASON: ")
    assert str(caught.value).endswith("ARCHIVE_REASON: invalid Session")
    assert not Plan.objects.exists() and not (workspace / "archives").exists()


def test_a_session_cannot_write_into_another_sessions_plan(propose):
    propose()
    with pytest.raises(PlanGateError, match="belongs to another session"):
        propose(session="agent:other:user:u-2:direct:chat-1")


def test_a_change_request_puts_the_entry_back_to_revising(propose):
    entry = propose()
    entry_request_changes(
        task_id=str(entry.task_id),
        revision=1,
        comment="改成 8 点",
        turn_id="turn-2",
        relayed_by="bridge",
        now=later(1),
    )
    entry.refresh_from_db()
    assert entry.state == Entry.REVISING
    assert ChangeRequest.objects.get().comment == "改成 8 点"
    with pytest.raises(PlanError, match="comment: required"):
        entry_request_changes(
            task_id=str(entry.task_id), revision=1, comment=" ", turn_id="t", now=later(1)
        )


def test_73_pause_clears_the_next_run_and_resume_computes_it_from_now(propose):
    entry = propose()
    _confirm(entry)
    job = job_pause(task_id=str(entry.task_id), now=later(6))
    assert (job.enabled, job.next_run_at, job.running_at_ms) == (False, None, None)
    entry.refresh_from_db()
    assert entry.state == Entry.PAUSED
    job = job_resume(task_id=str(entry.task_id), now=later(24 * 60))
    assert job.enabled and job.next_run_at.isoformat() == "2026-03-11T01:00:00+00:00"


def test_d_c4_cancel_writes_cancelled_into_plan_md_then_removes_the_job(propose, workspace):
    entry = propose()
    _confirm(entry)
    entry_cancel(task_id=str(entry.task_id), turn_id="turn-3", written_by="test", now=later(9))
    [item] = parse_plan_file(_plan_md(workspace))
    assert item.entry.status == "Cancelled"
    job = Job.objects.get()
    assert not job.enabled and job.removed_at is not None and job.next_run_at is None
    entry.refresh_from_db()
    assert entry.state == Entry.REMOVED and entry.revision.number == 2
    with pytest.raises(PlanGateError, match="cancelled"):
        _confirm(entry, turn="turn-4")


def test_admin_confirmation_needs_the_plans_permission(propose, django_user_model):
    entry = propose()
    nobody = django_user_model.objects.create_user("viewer", password="x")
    with pytest.raises(PlanGateError, match="plans permission"):
        entry_confirm(task_id=str(entry.task_id), revision=1, user=nobody, now=later(1))
    reviewer = django_user_model.objects.create_superuser("reviewer", password="x")
    job = entry_confirm(task_id=str(entry.task_id), revision=1, user=reviewer, now=later(1))
    confirmation = job.confirmation
    assert (confirmation.how, confirmation.confirmed_by) == ("admin", reviewer)
