"""PLAN.md files are the declaration: hand edits become revisions to confirm (D-C3, D-C4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plans.models import Entry, Job, Plan, Revision
from plans.services import PlanError, entry_confirm, entry_revise, plans_reconcile
from tests.conftest import manage
from tests.plans.conftest import ARCHIVE_ID, NOW, later

pytestmark = pytest.mark.django_db


def _path(workspace: Path, archive_id: str = ARCHIVE_ID) -> Path:
    return workspace / "archives" / archive_id / "PLAN.md"


@pytest.fixture
def landed(propose) -> Entry:
    entry = propose()
    entry_confirm(task_id=str(entry.task_id), revision=1, message="确认", turn_id="t2", now=NOW)
    entry.refresh_from_db()
    landed: Entry = entry
    return landed


def test_an_unchanged_file_records_nothing(landed, workspace):
    report = plans_reconcile(now=later(1))
    assert (report.checked, report.revised, report.problems) == (1, [], {})
    assert Revision.objects.count() == 1


def test_a_hand_edit_becomes_a_revision_awaiting_confirmation_and_the_job_keeps_running(
    landed, workspace
):
    path = _path(workspace)
    path.write_text(path.read_text().replace("每天发现库存异常", "每天两次发现库存异常"))
    report = plans_reconcile(now=later(1))
    assert report.revised == [ARCHIVE_ID]
    revision = Revision.objects.get(number=2)
    assert (revision.source, revision.turn_id) == (Revision.FILE, "")
    landed.refresh_from_db()
    assert landed.state == Entry.AWAITING and landed.revision == revision
    job = Job.objects.get()
    assert job.enabled and job.confirmation.revision.number == 1  # D-C3
    # A found revision has no writing turn: any later turn may confirm it.
    entry_confirm(
        task_id=str(landed.task_id), revision=2, message="确认", turn_id="t3", now=later(2)
    )
    assert Job.objects.get().confirmation.revision.number == 2


def test_a_file_that_does_not_parse_is_reported_with_its_line_and_never_applied(landed, workspace):
    path = _path(workspace)
    path.write_text(path.read_text().replace("- **Status**: Active", "- **Status**: Sometimes"))
    report = plans_reconcile(now=later(1))
    problem = report.problems[ARCHIVE_ID]
    assert "(line 1)" in problem and "Status: must be one of Active, Cancelled" in problem
    assert Plan.objects.get().problem == problem
    assert Revision.objects.count() == 1
    landed.refresh_from_db()
    assert landed.state == Entry.SCHEDULED
    # Writes through the API are refused too until the file is fixed.
    with pytest.raises(PlanError, match="PLAN.md on disk does not verify"):
        entry_revise(
            task_id=str(landed.task_id),
            changes={"objective": "x"},
            turn_id="t9",
            written_by="t",
            now=later(2),
        )


def test_status_cancelled_written_by_hand_takes_the_job_off_the_schedule(landed, workspace):
    path = _path(workspace)
    path.write_text(path.read_text().replace("- **Status**: Active", "- **Status**: Cancelled"))
    plans_reconcile(now=later(1))
    job = Job.objects.get()
    assert not job.enabled and job.removed_at is not None
    assert Entry.objects.get().state == Entry.REMOVED


def test_a_plan_md_nobody_proposed_is_recorded_without_a_schedule(db, workspace, landed):
    other = _path(workspace, "chat-2")
    other.parent.mkdir()
    text = _path(workspace).read_text().replace(ARCHIVE_ID, "chat-2")
    text = text.replace(str(landed.task_id), "0b8c2c43-5c0b-4a7e-9b0e-0a5d2f0e4c11")
    other.write_text(text)
    plans_reconcile(now=later(1))
    entry = Entry.objects.get(plan__archive_id="chat-2")
    assert entry.schedule is None and entry.state == Entry.AWAITING
    assert Plan.objects.get(archive_id="chat-2").session_key == ""


def test_symlinked_archives_are_not_followed(db, workspace, tmp_path):
    outside = tmp_path / "outside" / "chat-9"
    outside.mkdir(parents=True)
    (outside / "PLAN.md").write_text("x")
    (workspace / "archives").mkdir()
    os.symlink(outside, workspace / "archives" / "chat-9")
    assert plans_reconcile(now=later(1)).checked == 0
    assert not Plan.objects.exists()


def _command(workspace: Path, tmp_path: Path):
    config = tmp_path / "xworkmate.toml"
    config.write_text(f'[plans]\nworkspace = "{workspace}"\n', encoding="utf-8")
    return manage("plans", "reconcile", env={"XWORKMATE_CONFIG": str(config)})


@pytest.mark.django_db(transaction=True)
def test_the_reconcile_command_prints_what_it_did(landed, workspace, tmp_path):
    path = _path(workspace)
    path.write_text(path.read_text().replace("每天发现库存异常", "每天三次"))
    result = _command(workspace, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"{ARCHIVE_ID}: new revision awaiting confirmation" in result.stdout
    path.write_text(path.read_text().replace("- **Status**: Active", "- **Status**: Maybe"))
    result = _command(workspace, tmp_path)
    assert result.returncode == 1
    assert f"{ARCHIVE_ID}: not applied: Task_ID" in result.stdout
    assert "1 PLAN.md file(s) do not verify" in result.stderr


def test_a_task_id_of_another_plan_refuses_the_whole_file(db, workspace, landed):
    other = _path(workspace, "chat-2")
    other.parent.mkdir()
    other.write_text(_path(workspace).read_text().replace(ARCHIVE_ID, "chat-2"))
    report = plans_reconcile(now=later(1))
    assert report.problems["chat-2"] == (
        f"Task_ID {landed.task_id} (line 1) belongs to another plan's PLAN.md"
    )
    assert not Entry.objects.filter(plan__archive_id="chat-2").exists()
    assert not Revision.objects.filter(plan__archive_id="chat-2").exists()
