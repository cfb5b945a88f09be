"""Fire times passed while a job is paused (D-C26, issue 23 C1), driven through the API.

Each plan is proposed and confirmed over the REST API, paused and resumed (or
cancelled) at chosen moments, the scheduler is ticked in between
(`manage.py plans tick --now`), and what happened to every fire time is read back
from the plan's timeline (`GET /api/plans/<id>/timeline`).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from plans.models import Entry, Job, Run
from plans.services import entry_confirm, job_pause, job_resume
from plans.services._common import SKIPPED_WAITING_STOPPED
from plans.timeline import PAUSED_NOW
from tests.conftest import ApiClient
from tests.plans.conftest import later
from tests.plans.test_missed_and_overlap_policies import (
    FIRST_FIRE,
    MINUTE,
    WRITTEN,
    _end,
    _every_minute,
    _propose_and_confirm,
    _tick,
)
from tests.plans.test_plans_api import BODY, _agent, _error

pytestmark = pytest.mark.django_db

PAUSED = "skipped: the job was paused at this fire time"
HOUR, DAY = timedelta(hours=1), timedelta(days=1)


@pytest.fixture
def allowed(settings: Any) -> None:
    settings.PLANS_TIME_CONTROL = True


def _at(step: int, seconds: int = 0) -> datetime:
    """Step `step` of the every-minute grid (FIRST_FIRE + step minutes), plus seconds."""
    return FIRST_FIRE + step * MINUTE + timedelta(seconds=seconds)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _act(owner: ApiClient, task: str, action: str, at: datetime) -> Any:
    with time_machine.travel(at, tick=False):
        answer = owner.post(f"/api/plans/{task}/{action}", {})
    assert answer.status_code == 200, answer.json()
    return answer.json()["plan"]


def _timeline(owner: ApiClient, task: str, at: datetime, query: str = "") -> dict[str, Any]:
    # Read at a moment of the test's own: the fire times of a pause going on are
    # computed up to now.
    with time_machine.travel(at, tick=False):
        answer = owner.get(f"/api/plans/{task}/timeline{query}")
    assert answer.status_code == 200, answer.json()
    body: dict[str, Any] = answer.json()
    return body


def _fires(body: dict[str, Any]) -> list[tuple[int, str, str]]:
    """The timeline's fire times as (step, outcome, reason), oldest first."""
    return [
        (round((datetime.fromisoformat(e["at"]) - FIRST_FIRE) / MINUTE), e["outcome"],
         e.get("reason", ""))
        for e in body["events"]
        if e["kind"] == "fire"
    ]


def _ran_step_0(owner: ApiClient) -> str:
    """An every-minute plan whose first fire time ran (started on time) and ended."""
    task = _every_minute(owner)
    # On time: a resume within the minute continues from the run's start (§8.4), which
    # is then the grid's next step.
    assert _tick(_at(0)).startswith("started 1 run(s)")
    _end(FIRST_FIRE, _at(0, 20))
    return task


# --- pause, fire times pass, resume -------------------------------------------------------------


def test_a_resume_records_each_paused_fire_time_and_the_job_runs_at_its_next(
    owner, workspace, allowed
):
    task = _ran_step_0(owner)
    plan = _act(owner, task, "pause", _at(0, 30))
    assert plan["state"] == "PAUSED"
    for step in (1, 2, 3):
        assert _tick(_at(step, 5)).startswith("started 0 run(s), recorded 0 missed")
    # Paused now: the fire times passed so far show as paused; nothing is stored yet.
    body = _timeline(owner, task, _at(3, 20))
    assert body["pausedSince"] == _iso(_at(0, 30))
    assert _fires(body) == [(0, "ran", ""), *((step, "paused", PAUSED_NOW) for step in (1, 2, 3))]
    assert [e["status"] for e in body["events"][-3:]] == ["paused"] * 3
    assert Run.objects.count() == 1

    plan = _act(owner, task, "resume", _at(3, 30))
    assert plan["state"] == "SCHEDULED"
    body = _timeline(owner, task, _at(3, 40))
    assert "pausedSince" not in body
    assert _fires(body) == [(0, "ran", ""), *((step, "skipped", PAUSED) for step in (1, 2, 3))]
    job = Job.objects.get(entry__task_id=task)
    assert (job.paused_at, job.next_run_at, job.enabled) == (None, _at(4), True)
    paused_rows = Run.objects.filter(status=Run.SKIPPED)
    assert {row.revision_id for row in paused_rows} == {job.confirmation.revision_id}
    assert all(row.finished_at == _at(3, 30) for row in paused_rows)
    # Its next fire time runs; the paused ones are not caught up.
    assert _tick(_at(4, 5)).startswith("started 1 run(s), recorded 0 missed fire time(s)")
    assert Run.objects.get(status=Run.RUNNING).fire_at_ms == _ms(_at(4))
    assert _fires(_timeline(owner, task, _at(4, 10)))[-1][:2] == (4, "ran")
    assert Run.objects.count() == 5  # one row per fire time, each once


def test_studios_enabled_flag_pauses_and_resumes_the_same_way(owner, workspace, allowed):
    task = _ran_step_0(owner)
    with time_machine.travel(_at(0, 30), tick=False):
        assert owner.put(f"/api/plans/{task}", {"enabled": False}).status_code == 200
    _tick(_at(1, 5))
    with time_machine.travel(_at(2, 30), tick=False):
        assert owner.put(f"/api/plans/{task}", {"enabled": True}).status_code == 200
    assert _fires(_timeline(owner, task, _at(2, 40))) == [
        (0, "ran", ""), (1, "skipped", PAUSED), (2, "skipped", PAUSED),
    ]


def test_a_pause_and_resume_between_two_fire_times_writes_nothing(owner, workspace, allowed):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 25))
    _act(owner, task, "resume", _at(0, 50))
    assert Run.objects.count() == 1
    assert Job.objects.get(entry__task_id=task).next_run_at == _at(1)
    assert _tick(_at(1, 5)).startswith("started 1 run(s)")
    assert [row[:2] for row in _fires(_timeline(owner, task, _at(1, 10)))] == [
        (0, "ran"), (1, "ran")]


def test_two_pauses_each_record_their_own_fire_times(owner, workspace, allowed):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    _tick(_at(1, 5))
    _act(owner, task, "resume", _at(2, 30))
    assert _tick(_at(3, 5)).startswith("started 1 run(s)")
    _end(_at(3), _at(3, 20))
    _act(owner, task, "pause", _at(3, 30))
    _tick(_at(4, 5))
    _tick(_at(5, 5))
    _act(owner, task, "resume", _at(5, 30))
    assert _tick(_at(6, 5)).startswith("started 1 run(s), recorded 0 missed")
    assert _fires(_timeline(owner, task, _at(6, 10))) == [
        (0, "ran", ""), (1, "skipped", PAUSED), (2, "skipped", PAUSED), (3, "ran", ""),
        (4, "skipped", PAUSED), (5, "skipped", PAUSED), (6, "ran", ""),
    ]


def test_a_resume_on_a_fire_time_runs_it_and_records_the_ones_before(owner, workspace, allowed):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    _act(owner, task, "resume", _at(3))  # an every's boundary: step 3 is its next run
    assert Job.objects.get(entry__task_id=task).next_run_at == _at(3)
    assert _tick(_at(3, 5)).startswith("started 1 run(s)")
    assert _fires(_timeline(owner, task, _at(3, 10))) == [
        (0, "ran", ""), (1, "skipped", PAUSED), (2, "skipped", PAUSED), (3, "ran", ""),
    ]


def test_fire_times_due_and_unstarted_at_the_pause_are_recorded_as_stopped(
    owner, workspace, allowed
):
    # No tick since the confirmation: steps 0 and 1 are due when the pause comes.
    task = _every_minute(owner)
    _act(owner, task, "pause", _at(1, 10))
    # Pausing again keeps when the pause began (step 2 stays the pause's).
    _act(owner, task, "pause", _at(2))
    assert Job.objects.get(entry__task_id=task).paused_at == _at(1, 10)
    _act(owner, task, "resume", _at(3, 30))
    assert _fires(_timeline(owner, task, _at(3, 40))) == [
        (0, "skipped", SKIPPED_WAITING_STOPPED), (1, "skipped", SKIPPED_WAITING_STOPPED),
        (2, "skipped", PAUSED), (3, "skipped", PAUSED),
    ]
    assert _tick(_at(4, 5)).startswith("started 1 run(s), recorded 0 missed")


def test_a_run_forced_on_a_paused_fire_time_keeps_its_own_row(owner, workspace, allowed):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    with time_machine.travel(_at(1), tick=False):  # run now, exactly at step 1
        assert owner.post(f"/api/plans/{task}/run", {}).json() == {"ok": True, "ran": True}
    _end(_at(1), _at(1, 20))
    assert [row[:2] for row in _fires(_timeline(owner, task, _at(2, 10)))] == [
        (0, "ran"), (1, "ran"), (2, "paused")]
    _act(owner, task, "resume", _at(2, 30))
    assert [row[:2] for row in _fires(_timeline(owner, task, _at(2, 40)))] == [
        (0, "ran"), (1, "ran"), (2, "skipped")]


# --- the bound -----------------------------------------------------------------------------------


def test_a_long_pause_lists_its_newest_100_fire_times_and_counts_the_others(
    owner, workspace, allowed
):
    task = _every_minute(owner)
    _act(owner, task, "pause", WRITTEN + MINUTE)  # before the first fire time
    last = 3 * 1440  # three days of minutes: steps 0..4320 pass while paused
    older = last + 1 - 100
    more = f" ({older} earlier fire times of this pause were skipped too, not listed one by one)"
    live = _timeline(owner, task, _at(last, 20), "?limit=1000")
    assert live["more"] is False
    assert _fires(live) == [
        *((step, "paused", PAUSED_NOW) for step in range(older, last)),
        (last, "paused", PAUSED_NOW + f" ({older} earlier fire times of this pause are not "
                                      "listed one by one)"),
    ]
    _act(owner, task, "resume", _at(last, 30))
    assert Run.objects.count() == 100
    assert _fires(_timeline(owner, task, _at(last, 40), "?limit=1000")) == [
        *((step, "skipped", PAUSED) for step in range(older, last)),
        (last, "skipped", PAUSED + more),
    ]
    assert _tick(_at(last + 1, 5)).startswith("started 1 run(s), recorded 0 missed")


def test_a_year_long_pause_of_an_every_second_cron_counts_exactly_without_walking_it(
    owner, workspace, allowed
):
    # 31,536,000 fire times (Shanghai keeps one offset): walked one by one, the resume
    # would take minutes; counted, it takes a moment and writes 100 rows.
    task = _propose_and_confirm(
        owner, schedule={"kind": "cron", "expr": "* * * * * *", "tz": "Asia/Shanghai"})
    _act(owner, task, "pause", WRITTEN)  # as it was confirmed: nothing was due yet
    resumed_at = WRITTEN + timedelta(days=365)
    started = time.monotonic()
    _act(owner, task, "resume", resumed_at)
    assert time.monotonic() - started < 60
    rows = list(Run.objects.order_by("fire_at_ms"))
    assert len(rows) == 100
    assert rows[0].fire_at_ms == _ms(resumed_at) - 99_000
    assert rows[-1].fire_at_ms == _ms(resumed_at)
    assert rows[-1].error == PAUSED + (
        " (31535900 earlier fire times of this pause were skipped too, not listed one by one)")


# --- cancel, and a new schedule, while paused ------------------------------------------------------


def test_a_cancel_while_paused_records_the_pauses_fire_times(owner, workspace, allowed):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    _tick(_at(1, 5))
    with time_machine.travel(_at(2, 30), tick=False):
        answer = owner.post(f"/api/plans/{task}/cancel", {"turnId": "run-3"})
    assert answer.status_code == 200, answer.json()
    body = _timeline(owner, task, _at(3, 40))
    assert "pausedSince" not in body
    assert _fires(body) == [(0, "ran", ""), (1, "skipped", PAUSED), (2, "skipped", PAUSED)]
    job = Job.objects.get(entry__task_id=task)
    assert job.paused_at is None and job.removed_at == _at(2, 30)
    assert Entry.objects.get(task_id=task).state == Entry.REMOVED
    assert _tick(_at(3, 5)).startswith("started 0 run(s)") and Run.objects.count() == 3


def test_a_one_shot_paused_past_its_time_runs_when_resumed_and_is_recorded_when_cancelled(
    owner, workspace, allowed
):
    at = {"kind": "at", "at": _iso(_at(2))}
    task = _propose_and_confirm(owner, schedule=at)
    _act(owner, task, "pause", _at(0, 30))
    _tick(_at(2, 5))
    # A one-shot stays due until it runs (D-C10): not a paused slot, it runs once resumed.
    body = _timeline(owner, task, _at(3))
    assert body["pausedSince"] == _iso(_at(0, 30)) and _fires(body) == []
    _act(owner, task, "pause", _at(3, 10))
    with time_machine.travel(_at(3, 30), tick=False):
        assert owner.post(f"/api/plans/{task}/cancel", {"turnId": "run-3"}).status_code == 200
    assert _fires(_timeline(owner, task, _at(3, 40))) == [(2, "skipped", PAUSED)]


def test_a_one_shot_resumed_after_its_time_runs_once(owner, workspace, allowed):
    task = _propose_and_confirm(owner, schedule={"kind": "at", "at": _iso(_at(2))})
    _act(owner, task, "pause", _at(0, 30))
    _act(owner, task, "resume", _at(3, 30))
    assert not Run.objects.exists()
    assert _tick(_at(3, 35)).startswith("started 1 run(s)")
    assert Run.objects.get().fire_at_ms == _ms(_at(2))


def test_a_new_schedule_confirmed_while_paused_splits_the_pause_at_the_confirmation(
    owner, workspace, allowed
):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    # Every two minutes from 01:00:30Z, confirmed at step 2 + 40 s.
    new = {"kind": "every", "everyMs": 120_000, "anchorMs": _ms(_at(0, 30))}
    with time_machine.travel(_at(2, 35), tick=False):
        revised = owner.post(f"/api/plans/{task}/revise", {
            "turnId": "run-3", "schedule": new, "steps": ["每两分钟读取库存表并生成日报"]})
        assert revised.status_code == 200, revised.json()
    with time_machine.travel(_at(2, 40), tick=False):
        confirmed = owner.post(f"/api/plans/{task}/confirm",
                               {"revision": 2, "message": "确认", "turnId": "run-4"})
        assert confirmed.status_code == 200, confirmed.json()
    job = Job.objects.get(entry__task_id=task)
    assert (job.enabled, job.paused_at) == (False, _at(2, 40))
    # The old schedule's paused fire times are rows; the new one's so far are computed.
    body = _timeline(owner, task, _at(5))
    fires = [(e["at"], e["outcome"]) for e in body["events"] if e["kind"] == "fire"]
    assert fires == [(_iso(_at(0)), "ran"), (_iso(_at(1)), "skipped"), (_iso(_at(2)), "skipped"),
                     (_iso(_at(4, 30)), "paused")]
    _act(owner, task, "resume", _at(6, 50))
    skipped = Run.objects.filter(status=Run.SKIPPED).order_by("fire_at_ms")
    assert [row.fire_at_ms for row in skipped] == [
        _ms(_at(1)), _ms(_at(2)), _ms(_at(4, 30)), _ms(_at(6, 30))]
    assert {row.error for row in skipped} == {PAUSED}
    # Steps 1 and 2 belong to the revision the old schedule ran, the others to the new one.
    assert [row.revision.number for row in skipped] == [1, 1, 2, 2]
    assert Job.objects.get(entry__task_id=task).next_run_at == _at(8, 30)


# --- refusals change nothing -----------------------------------------------------------------------


def test_bad_input_leaves_the_pause_and_its_fire_times_as_they_were(
    owner, make_client, workspace, allowed
):
    task = _ran_step_0(owner)
    _act(owner, task, "pause", _at(0, 30))
    job = Job.objects.get(entry__task_id=task)
    with time_machine.travel(_at(2, 30), tick=False):
        assert _error(owner.put(f"/api/plans/{task}", {"enabled": "yes"}), 400,
                      "INVALID_REQUEST") == "enabled must be a boolean when provided"
        assert _error(owner.put(f"/api/plans/{task}", {"enabled": True, "paused": False}), 400,
                      "INVALID_REQUEST") == (
            "Request body must contain only `name` and/or `enabled`")
        stranger = _agent(session="agent:ops:user:u-2:direct:chat-9", name="stranger")
        assert stranger.post(f"/api/plans/{task}/resume", {}).status_code == 404
        assert make_client("plans:read").post(f"/api/plans/{task}/resume", {}).status_code == 403
        assert owner.post("/api/plans/00000000-0000-0000-0000-000000000000/resume",
                          {}).status_code == 404
    unchanged = Job.objects.get(pk=job.pk)
    assert (unchanged.enabled, unchanged.paused_at, unchanged.next_run_at) == (
        False, _at(0, 30), None)
    assert Run.objects.count() == 1
    # The pause goes on: its fire times are still the pause's when it is resumed.
    _act(owner, task, "resume", _at(2, 40))
    assert [row[:2] for row in _fires(_timeline(owner, task, _at(2, 50)))] == [
        (0, "ran"), (1, "skipped"), (2, "skipped")]


def test_a_plan_without_a_job_cannot_be_resumed_and_nothing_is_written(owner, workspace):
    with time_machine.travel(WRITTEN, tick=False):
        task = owner.post("/api/plans/propose", BODY).json()["plan"]["taskId"]
        assert _error(owner.post(f"/api/plans/{task}/resume", {}), 409, "REFUSED").startswith(
            "job: this plan has no schedule")
    assert not Job.objects.exists() and not Run.objects.exists()


# --- jobs paused before this rule ----------------------------------------------------------------

BEFORE_PAUSED_AT = [("plans", "0007_confirmation_content_and_expiry")]


def _migrate(targets: list[tuple[str, str | None]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_a_job_paused_before_the_migration_counts_its_pause_from_its_last_update(
    propose, reviewer
):
    paused, running = propose(), propose(turn="turn-2", task_name="另一个计划")
    for entry in (paused, running):
        entry_confirm(task_id=str(entry.task_id), revision=entry.revision.number,
                      user=reviewer, now=later(5))
    job_pause(task_id=str(paused.task_id), now=later(10))
    # Its last update (a run ending, say) came a day later, in the pause.
    Job.objects.filter(entry=paused).update(updated_at_ms=_ms(FIRST_FIRE + DAY - HOUR))
    try:
        _migrate(BEFORE_PAUSED_AT)  # the column goes, the rows stay
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert Job.objects.get(entry=paused).paused_at == FIRST_FIRE + DAY - HOUR
    assert Job.objects.get(entry=running).paused_at is None
    # The fixtures' plans fire daily at 09:00 Shanghai (01:00Z): the first day's fire time
    # came before the moment known to be in the pause and stays without a row.
    job_resume(task_id=str(paused.task_id), now=FIRST_FIRE + DAY + MINUTE)
    assert [(row.fire_at_ms, row.error) for row in Run.objects.all()] == [
        (_ms(FIRST_FIRE + DAY), PAUSED)]
