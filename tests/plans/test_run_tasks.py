"""A task record for every cron run (§8.8, §8.9, issue 23 A1)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gateway.models import NativeTask
from plans.models import Run
from plans.scheduler import scheduler_tick
from plans.services import entry_confirm
from tests.plans.conftest import NOW
from tests.plans.test_scheduler import FIRST_FIRE, _answer, job  # noqa: F401 (the fixture)
from xworkmate.delivery.channels.base import Outcome

pytestmark = pytest.mark.django_db

STARTED = FIRST_FIRE + timedelta(seconds=3)


def _run() -> Run:
    assert scheduler_tick(now=STARTED).started == 1
    return Run.objects.get()


def _task(run: Run) -> NativeTask:
    return NativeTask.objects.get(session_key=run.session_key, task_id=run.run_id)


def test_a_run_gets_a_silent_cron_task_that_tasks_get_answers_for_its_session(job, reader):  # noqa: F811
    run = _run()
    task = _task(run)
    assert task.status == "running" and task.run_id == run.run_id
    record = task.record
    assert (record["runtime"], record["notifyPolicy"], record["status"]) == ("cron", "silent", "running")
    assert (record["sourceId"], record["taskId"], record["label"]) == (job.job_id, run.run_id, job.name)
    assert record["childSessionKey"] == f"{run.session_key}:run:{run.run_id}"
    answer = reader.post("/gateway/xworkmate.tasks.get", {
        "openclawSessionKey": run.session_key, "runId": run.run_id, "includeArtifacts": False})
    payload = answer.json()["payload"]
    assert payload["success"] is True and payload["taskStatus"] == "running"
    assert payload["task"]["runtime"] == "cron"


def test_the_runs_outcome_becomes_the_tasks_status(job):  # noqa: F811
    run = _run()
    _answer(run, Outcome.SENT, at=STARTED + timedelta(seconds=5))
    task = _task(run)
    assert task.status == "succeeded" and task.record["endedAt"] and task.terminal_at is not None


def test_a_failed_delivery_is_a_failed_task(job):  # noqa: F811
    run = _run()
    _answer(run, Outcome.FAILED, at=STARTED + timedelta(seconds=5), error="HTTP 500")
    task = _task(run)
    assert task.status == "failed" and "delivery failed" in task.record["error"]


def test_a_timed_out_run_is_a_timed_out_task(job):  # noqa: F811
    run = _run()
    scheduler_tick(now=STARTED + timedelta(hours=1))
    assert _task(run).status == "timed_out"
    # Terminal statuses are sticky: the answer that comes after changes nothing.
    _answer(Run.objects.get(pk=run.pk), Outcome.SENT, at=STARTED + timedelta(hours=2))
    assert _task(run).status == "timed_out"


def test_a_run_whose_worker_vanished_is_a_lost_task(propose):
    entry = propose(job={"payload": {"kind": "agentTurn", "timeoutSeconds": 0}})
    entry_confirm(task_id=str(entry.task_id), revision=1, message="确认", turn_id="turn-2", now=NOW)
    run = _run()
    scheduler_tick(now=STARTED + timedelta(days=1))  # due again, its marker past 2 h
    assert _task(run).status == "lost"


def test_missed_and_skipped_fire_times_get_no_task(job):  # noqa: F811
    scheduler_tick(now=FIRST_FIRE + timedelta(days=3, hours=2))  # three missed, one run
    assert Run.objects.filter(status=Run.MISSED).count() == 3
    assert NativeTask.objects.count() == 1
