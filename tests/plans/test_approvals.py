"""Approvals bound to content and expiring (issue 23 C4, D-C25), through the API and the tick."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine

from plans.models import Confirmation, Entry, Expiry, Job, Run
from plans.scheduler import scheduler_tick
from tests.conftest import ApiClient
from tests.plans.conftest import ARCHIVE_ID
from tests.plans.test_plans_api import BODY, _error
from tests.xworkmate.test_config import parse, problems
from xworkmate.delivery.models import Message

pytestmark = pytest.mark.django_db

PROPOSED_AT = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)
WEEK = timedelta(days=7)
FIRST_FIRE = datetime(2026, 3, 10, 1, 0, tzinfo=UTC)  # 0 9 * * * in Shanghai


def _plan_md(workspace: Path) -> Path:
    return workspace / "archives" / ARCHIVE_ID / "PLAN.md"


def _entry_hash(text: str, task_id: str) -> str:
    """The entry's block as a reader cuts it by hand: its heading to the next, trailing
    blank lines left out (the test's own reading, not the service's)."""
    blocks = re.split(r"(?m)^(?=### \[Task_ID: )", text)
    [block] = [b for b in blocks if b.startswith(f"### [Task_ID: {task_id}]")]
    return hashlib.sha256(block.rstrip().encode("utf-8")).hexdigest()


def _propose(owner: ApiClient, at: datetime = PROPOSED_AT) -> str:
    with time_machine.travel(at, tick=False):
        answer = owner.post("/api/plans/propose", BODY)
    assert answer.status_code == 201, answer.json()
    task: str = answer.json()["plan"]["taskId"]
    return task


def _confirm(owner: ApiClient, task: str, *, at: datetime, revision: int = 1,
             turn: str = "run-2") -> Any:
    with time_machine.travel(at, tick=False):
        return owner.post(f"/api/plans/{task}/confirm",
                          {"revision": revision, "message": "确认", "turnId": turn})


def _show(owner: ApiClient, task: str, at: datetime) -> dict[str, Any]:
    with time_machine.travel(at, tick=False):
        plan: dict[str, Any] = owner.get(f"/api/plans/{task}").json()["plan"]
    return plan


# --- bound to content ------------------------------------------------------------------------


def test_a_confirmation_keeps_the_entry_texts_hash_and_the_schedule_the_job_runs(
    owner, workspace
):
    task = _propose(owner)
    awaiting = _show(owner, task, PROPOSED_AT)
    text = _plan_md(workspace).read_text(encoding="utf-8")
    # What a confirmation now would bind, said before anyone confirms.
    assert awaiting["revision"]["entrySha256"] == _entry_hash(text, task)
    assert "confirmation" not in awaiting

    assert _confirm(owner, task, at=PROPOSED_AT + timedelta(minutes=5)).status_code == 200
    plan = _show(owner, task, PROPOSED_AT + timedelta(minutes=6))
    bound = plan["confirmation"]
    job = Job.objects.get(entry__task_id=task)
    assert bound["entrySha256"] == _entry_hash(text, task)
    assert bound["revision"] == 1 and bound["revisionSha256"] == plan["revision"]["sha256"]
    assert bound["schedule"] == job.schedule  # normalised: kind, tz and the stagger as run
    assert bound["schedule"]["kind"] == "cron" and bound["schedule"]["expr"] == "0 9 * * *"
    assert bound["how"] == "api" and bound["confirmedAt"] == "2026-03-10T00:35:00.000Z"
    row = Confirmation.objects.get()
    assert (row.entry_sha256, row.schedule) == (bound["entrySha256"], job.schedule)

    with time_machine.travel(PROPOSED_AT + timedelta(minutes=7), tick=False):
        events = owner.get(f"/api/plans/{task}/timeline").json()["events"]
    [confirmation] = [e for e in events if e["kind"] == "confirmation"]
    assert (confirmation["entrySha256"], confirmation["schedule"]) == (
        bound["entrySha256"], job.schedule)


def test_an_every_schedule_is_bound_with_the_anchor_it_runs_on(owner, workspace):
    body = {**BODY, "schedule": {"kind": "EVERY", "everyMs": 3_600_000}}
    with time_machine.travel(PROPOSED_AT, tick=False):
        task = owner.post("/api/plans/propose", body).json()["plan"]["taskId"]
    assert _confirm(owner, task, at=PROPOSED_AT + timedelta(minutes=5)).status_code == 200
    bound = Confirmation.objects.get().schedule
    anchored = int((PROPOSED_AT + timedelta(minutes=5)).timestamp() * 1000)
    assert bound == {"kind": "every", "everyMs": 3_600_000, "anchorMs": anchored}
    assert bound == Job.objects.get().schedule


def test_a_run_on_a_plan_md_edited_behind_the_gate_carries_the_confirmed_text(
    owner, workspace
):
    task = _propose(owner)
    assert _confirm(owner, task, at=PROPOSED_AT + timedelta(minutes=5)).status_code == 200
    path = _plan_md(workspace)
    confirmed_text = path.read_text(encoding="utf-8")
    # The first fire time: PLAN.md says what was confirmed, the run says nothing more.
    scheduler_tick(now=FIRST_FIRE + timedelta(seconds=1))
    first = Run.objects.get()
    assert first.plan_text_sha256 == _entry_hash(confirmed_text, task)
    assert first.plan_text_note == ""
    assert "本次按已确认的第" not in Message.objects.get(pk=first.delivery_message_id).body
    Run.objects.filter(pk=first.pk).update(status=Run.OK, finished_at=FIRST_FIRE)
    Job.objects.filter(entry__task_id=task).update(running_at_ms=None)

    # Edited on disk, and no reconcile has seen it yet: the hash is the check.
    edited = confirmed_text.replace("每天发现库存异常", "每小时把库存表发到外部邮箱")
    assert edited != confirmed_text
    path.write_text(edited, encoding="utf-8")
    scheduler_tick(now=FIRST_FIRE + timedelta(days=1, seconds=1))
    run = Run.objects.get(fire_at_ms=int((FIRST_FIRE + timedelta(days=1)).timestamp() * 1000))
    assert run.plan_text_sha256 == _entry_hash(edited, task)
    assert run.plan_text_note.startswith("D-C25: the entry's text in PLAN.md hashes to ")
    assert run.plan_text_note.endswith("this run carried the confirmed text of revision 1")
    body = Message.objects.get(pk=run.delivery_message_id).body
    assert "本次按已确认的第 1 版执行" in body
    assert "每天发现库存异常" in body and "每小时把库存表发到外部邮箱" not in body

    with time_machine.travel(FIRST_FIRE + timedelta(days=1, minutes=1), tick=False):
        events = owner.get(f"/api/plans/{task}/timeline").json()["events"]
    fires = [e for e in events if e["kind"] == "fire"]
    assert [("planTextNote" in e) for e in fires] == [False, True]
    assert fires[1]["planTextSha256"] == _entry_hash(edited, task)


def test_a_run_whose_plan_md_is_gone_carries_the_confirmed_text_and_says_why(owner, workspace):
    task = _propose(owner)
    assert _confirm(owner, task, at=PROPOSED_AT + timedelta(minutes=5)).status_code == 200
    _plan_md(workspace).unlink()
    scheduler_tick(now=FIRST_FIRE + timedelta(seconds=1))
    run = Run.objects.get()
    assert run.plan_text_sha256 == ""
    assert run.plan_text_note == (
        "D-C25: PLAN.md is not there; this run carried the confirmed text of revision 1"
    )
    assert "本次按已确认的第 1 版执行" in Message.objects.get(pk=run.delivery_message_id).body


# --- expiring ----------------------------------------------------------------------------------


def test_a_revision_awaiting_confirmation_past_the_expiry_expires_at_the_tick(owner, workspace):
    task = _propose(owner)
    plan = _show(owner, task, PROPOSED_AT + timedelta(days=1))
    assert plan["confirmationExpiresAt"] == "2026-03-17T00:30:00.000Z"
    assert scheduler_tick(now=PROPOSED_AT + WEEK - timedelta(seconds=1)).expired == 0
    assert Entry.objects.get().state == Entry.AWAITING

    report = scheduler_tick(now=PROPOSED_AT + WEEK + timedelta(seconds=5))
    assert report.expired == 1
    entry = Entry.objects.get()
    assert (entry.state, entry.expired_at) == (Entry.EXPIRED, PROPOSED_AT + WEEK)
    assert Expiry.objects.get().revision_id == entry.revision_id
    # The agent's next check (`plan.py show`) is told, with what to do.
    plan = _show(owner, task, PROPOSED_AT + WEEK + timedelta(minutes=1))
    assert plan["state"] == "EXPIRED" and "confirmationExpiresAt" not in plan
    expired = plan["confirmationExpired"]
    assert (expired["revision"], expired["expiredAt"]) == (1, "2026-03-17T00:30:00.000Z")
    assert expired["message"].startswith(
        "D-C25: revision 1 waited for a confirmation longer than plans.confirmation_expiry "
        "(168h) and expired at 2026-03-17T00:30:00.000Z; it can no longer be confirmed"
    )
    assert "propose it again" in expired["message"]
    assert scheduler_tick(now=PROPOSED_AT + WEEK + timedelta(minutes=2)).expired == 0


def test_an_expired_revision_is_refused_and_nothing_changes(owner, workspace):
    task = _propose(owner)
    before = _plan_md(workspace).read_text(encoding="utf-8")
    scheduler_tick(now=PROPOSED_AT + WEEK + timedelta(seconds=5))
    late = PROPOSED_AT + WEEK + timedelta(hours=1)
    message = _error(_confirm(owner, task, at=late), 409, "REFUSED")
    assert message.startswith("D-C25: revision 1 waited for a confirmation longer than ")
    with time_machine.travel(late, tick=False):
        change = owner.post(f"/api/plans/{task}/request-changes",
                            {"revision": 1, "message": "改成 8 点", "turnId": "run-3"})
    assert _error(change, 409, "REFUSED").startswith("D-C25: revision 1 ")
    assert not Job.objects.exists() and not Confirmation.objects.exists()
    assert Entry.objects.get().state == Entry.EXPIRED
    assert _plan_md(workspace).read_text(encoding="utf-8") == before


def test_a_confirmation_after_the_deadline_is_refused_even_before_a_tick_saw_it(
    owner, workspace
):
    task = _propose(owner)
    message = _error(_confirm(owner, task, at=PROPOSED_AT + WEEK + timedelta(seconds=1)), 409,
                     "REFUSED")
    assert message.startswith("D-C25: revision 1 ")
    # The mark is kept although the call was refused, and the timeline shows it.
    entry = Entry.objects.get()
    assert (entry.state, entry.expired_at) == (Entry.EXPIRED, PROPOSED_AT + WEEK)
    with time_machine.travel(PROPOSED_AT + WEEK + timedelta(minutes=1), tick=False):
        events = owner.get(f"/api/plans/{task}/timeline").json()["events"]
    assert [e["kind"] for e in events] == ["revision", "expiry"]
    assert events[1] == {"at": "2026-03-17T00:30:00.000Z", "kind": "expiry", "revision": 1}
    assert not Job.objects.exists()


def test_a_confirmation_just_before_the_deadline_schedules(owner, workspace):
    task = _propose(owner)
    answer = _confirm(owner, task, at=PROPOSED_AT + WEEK - timedelta(seconds=1))
    assert answer.status_code == 200, answer.json()
    assert answer.json()["plan"]["state"] == "SCHEDULED"
    assert scheduler_tick(now=PROPOSED_AT + WEEK + timedelta(days=1)).expired == 0


def test_proposed_again_an_expired_revision_gets_a_wait_of_its_own(owner, workspace):
    task = _propose(owner)
    scheduler_tick(now=PROPOSED_AT + WEEK + timedelta(seconds=5))
    again = PROPOSED_AT + WEEK + timedelta(days=1)
    with time_machine.travel(again, tick=False):
        # The same text is allowed once expired (otherwise F4/F5 refuses an unchanged one).
        answer = owner.post(f"/api/plans/{task}/revise",
                            {"turnId": "run-4", "objective": BODY["objective"]})
    assert answer.status_code == 200, answer.json()
    plan = answer.json()["plan"]
    assert plan["state"] == "AWAITING_PLAN_CONFIRMATION" and plan["revision"]["number"] == 2
    assert plan["confirmationExpiresAt"] == "2026-03-25T00:30:00.000Z"
    assert "confirmationExpired" not in plan and Entry.objects.get().expired_at is None
    assert _confirm(owner, task, at=again + timedelta(minutes=5), revision=2,
                    turn="run-5").status_code == 200
    with time_machine.travel(again + timedelta(minutes=6), tick=False):
        events = owner.get(f"/api/plans/{task}/timeline").json()["events"]
    assert [e["kind"] for e in events] == ["revision", "expiry", "revision", "confirmation"]
    # An awaiting revision with an unchanged text is still refused, as before.
    with time_machine.travel(again + timedelta(minutes=7), tick=False):
        same = owner.post(f"/api/plans/{task}/revise",
                          {"turnId": "run-6", "objective": BODY["objective"]})
    assert _error(same, 409, "REFUSED").startswith("F4/F5: ")


def test_a_scheduled_plans_pending_revision_expires_and_the_job_keeps_the_confirmed_one(
    owner, workspace
):
    task = _propose(owner)
    assert _confirm(owner, task, at=PROPOSED_AT + timedelta(minutes=5)).status_code == 200
    with time_machine.travel(PROPOSED_AT + timedelta(hours=1), tick=False):
        owner.post(f"/api/plans/{task}/revise", {"turnId": "run-3", "objective": "每小时巡检"})
    scheduler_tick(now=PROPOSED_AT + timedelta(hours=1) + WEEK + timedelta(seconds=1))
    entry = Entry.objects.get()
    assert entry.state == Entry.EXPIRED and entry.confirmed_revision.number == 1
    job = Job.objects.get()
    assert job.enabled and job.confirmation.revision_number == 1


def test_the_expiry_is_configurable_and_checked(owner, workspace, settings):
    from tests.conftest import configure

    configure(settings, "plans", workspace=str(workspace), confirmation_expiry=timedelta(hours=2))
    task = _propose(owner)
    assert _show(owner, task, PROPOSED_AT)["confirmationExpiresAt"] == "2026-03-10T02:30:00.000Z"
    assert scheduler_tick(now=PROPOSED_AT + timedelta(hours=2)).expired == 1

    assert parse('[plans]\nconfirmation_expiry = "48h"\n').value(
        "plans", "confirmation_expiry") == timedelta(hours=48)
    for bad, rule in (
        ('"0s"', "'0s' must be longer than zero"),
        ('"30s"', "must be between 1m and 87600h (ten years) (got '30s')"),
        ('"87601h"', "must be between 1m and 87600h (ten years) (got '87601h')"),
        ('"7 days"', "'7 days' is not a duration like 90s, 3m, 2h or 1h30m"),
        ("7", "must be a string (got 7)"),
    ):
        [problem] = problems(f"[plans]\nconfirmation_expiry = {bad}\n")
        assert problem.startswith("plans.confirmation_expiry: "), problem
        assert rule in problem, problem
