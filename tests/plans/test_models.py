"""The gate of the schedule-plan protocol in the tables themselves (D-C3, D-C5, D-C7).

Services will be the only write path; these tests show that even a write that
bypasses them cannot create a job without a confirmation of the revision it
runs, a confirmation from the turn that wrote the revision, or a second run of
one fire time.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from plans.models import Confirmation, Entry, Job, Plan, Revision, Run

pytestmark = pytest.mark.django_db

PAYLOAD = {"kind": "agentTurn", "message": "1. [读取本文件指令]：…"}


@pytest.fixture
def revision() -> Revision:
    plan = Plan.objects.create(archive_id="chat-1", agent_id="main", session_key="agent:main:main")
    return Revision.objects.create(
        plan=plan, number=1, content="…", sha256="0" * 64, source=Revision.API, turn_id="turn-1"
    )


@pytest.fixture
def entry(revision: Revision) -> Entry:
    return Entry.objects.create(
        task_id=uuid.uuid4(), plan=revision.plan, task_name="日报", revision=revision
    )


def _confirmation(entry: Entry, revision: Revision, **fields) -> Confirmation:
    values = {
        "how": Confirmation.API, "turn_id": "turn-2", "message": "确认",
        "revision_sha256": revision.sha256, "revision_turn_id": revision.turn_id,
        "revision_number": revision.number, "revision_author_known": True,
    } | fields
    return Confirmation.objects.create(entry=entry, revision=revision, **values)


def _job(entry: Entry, confirmation: Confirmation | None, **fields) -> Job:
    # None is passed on purpose by the test that shows the column refuses it.
    values: dict[str, Any] = {
        "job_id": str(uuid.uuid4()), "name": "日报", "created_at_ms": 0, "updated_at_ms": 0,
        "schedule": {"kind": "cron", "expr": "0 9 * * *"}, "payload": PAYLOAD,
        "confirmation": confirmation,
    } | fields
    return Job.objects.create(entry=entry, **values)


def _refused(create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_a_confirmed_revision_can_have_its_job(entry, revision):
    job = _job(entry, _confirmation(entry, revision))
    assert job.confirmation.revision == revision


def test_no_job_without_a_confirmation(entry):
    _refused(lambda: _job(entry, None))
    assert not Job.objects.exists()


def test_no_confirmation_in_the_turn_that_wrote_the_revision(entry, revision):
    _refused(lambda: _confirmation(entry, revision, turn_id="turn-1"))
    assert not Confirmation.objects.exists()


def test_it_refuses_a_confirmation_from_a_turn_seen_before_its_revision(entry, revision):
    # D-C18: the turn was first seen when revision 0 (none) was the newest.
    _refused(lambda: _confirmation(entry, revision, turn_seen_after=0))
    assert not Confirmation.objects.exists()
    assert _confirmation(entry, revision, turn_seen_after=1).turn_seen_after == 1


def test_it_refuses_an_agent_keys_confirmation_of_a_revision_found_on_disk(entry, revision):
    # D-C18: an edit on disk is presumed to be the agent's own.
    _refused(lambda: _confirmation(entry, revision, revision_author_known=False, by_agent=True))
    assert not Confirmation.objects.exists()
    assert _confirmation(entry, revision, revision_author_known=False, by_agent=False).pk


def test_a_confirmation_says_who(entry, revision):
    _refused(lambda: _confirmation(entry, revision, message=""))  # API: the user's message
    _refused(lambda: _confirmation(entry, revision, turn_id=""))  # API: its turn
    _refused(lambda: _confirmation(entry, revision, how=Confirmation.ADMIN))  # admin: the person
    person = User.objects.create_user("reviewer")
    assert _confirmation(entry, revision, how=Confirmation.ADMIN, turn_id="", message="",
                         confirmed_by=person)


def test_one_revision_is_confirmed_once(entry, revision):
    _confirmation(entry, revision)
    _refused(lambda: _confirmation(entry, revision, turn_id="turn-3"))
    assert Confirmation.objects.count() == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"session_target": "main"},
        {"payload": {"kind": "systemEvent", "text": "x"}},
    ],
)
def test_a_job_is_an_isolated_agent_turn(entry, revision, fields):
    confirmation = _confirmation(entry, revision)
    _refused(lambda: _job(entry, confirmation, **fields))
    assert not Job.objects.exists()


def test_one_fire_time_runs_once(entry, revision):
    job = _job(entry, _confirmation(entry, revision))
    Run.objects.create(job=job, fire_at_ms=1000, run_id="run-1", revision=revision)
    _refused(lambda: Run.objects.create(job=job, fire_at_ms=1000, run_id="run-2", revision=revision))
    assert job.runs.count() == 1


def test_a_finished_run_has_its_end_and_a_running_one_none(entry, revision):
    from django.utils import timezone

    job = _job(entry, _confirmation(entry, revision))
    _refused(lambda: Run.objects.create(job=job, fire_at_ms=1, run_id="r1", revision=revision,
                                        status=Run.OK))
    _refused(lambda: Run.objects.create(job=job, fire_at_ms=2, run_id="r2", revision=revision,
                                        finished_at=timezone.now()))


def test_a_blocked_entry_says_why(entry):
    entry.state = Entry.BLOCKED
    _refused(lambda: entry.save())
    entry.blocked_reason = "invalid Session"
    entry.save()
