"""Periodic jobs: beat's schedule from the config, and the runner that records ticks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import shared_task
from celery.schedules import crontab
from django.test import override_settings
from django.utils import timezone

from xworkmate.config import PeriodicJob, parse_config_text
from xworkmate.models import PeriodicJobState
from xworkmate.periodic import RUNNER_TASK, beat_schedule
from xworkmate.services import periodic_jobs_mark_seen
from xworkmate.tasks import run_periodic_job


@shared_task(name="tests.explode")
def explode() -> None:
    raise RuntimeError("disk on fire")


def _config(text: str, tmp_path):
    return parse_config_text(text, home=tmp_path)


def test_it_builds_beat_entries_that_go_through_the_runner(tmp_path):
    config = _config(
        '[[periodic_jobs]]\nname = "report"\ntask = "xworkmate.liveness"\ncron = "30 2 * * 1-5"\n'
        '[[periodic_jobs]]\nname = "off"\ntask = "xworkmate.liveness"\nevery = "1m"\nenabled = false\n',
        tmp_path,
    )
    schedule = beat_schedule(config.periodic_jobs)
    assert set(schedule) == {"liveness", "report"}  # disabled jobs are not scheduled
    assert schedule["liveness"] == {
        "task": RUNNER_TASK, "schedule": timedelta(seconds=30), "args": ("liveness",),
        "options": {"expires": 30.0},
    }
    report = schedule["report"]
    assert report["task"] == RUNNER_TASK and report["args"] == ("report",)
    assert report["schedule"] == crontab(minute="30", hour="2", day_of_week="1-5")


def test_it_records_a_tick_for_each_run(db):
    assert run_periodic_job("liveness") == "ok"
    assert run_periodic_job("liveness") == "ok"
    state = PeriodicJobState.objects.get(name="liveness")
    assert (state.runs, state.failures, state.last_status, state.task) == (
        2, 0, "ok", "xworkmate.liveness",
    )
    assert state.last_tick_at <= state.last_finished_at <= timezone.now()


def test_it_records_a_failure_without_raising(db, tmp_path, caplog):
    config = _config('[[periodic_jobs]]\nname = "boom"\ntask = "tests.explode"\nevery = "1m"\n', tmp_path)
    with override_settings(XWORKMATE=config):
        assert run_periodic_job("boom") == "error"
        assert run_periodic_job("liveness") == "ok"  # the next job still runs
    state = PeriodicJobState.objects.get(name="boom")
    assert (state.runs, state.failures, state.last_status) == (1, 1, "error")
    assert state.last_error == "RuntimeError: disk on fire"
    assert "periodic job 'boom' (task tests.explode) failed" in caplog.text


def test_it_skips_a_job_that_is_no_longer_configured(db, caplog):
    assert run_periodic_job("removed-job") == "skipped"
    assert not PeriodicJobState.objects.filter(name="removed-job").exists()
    assert "not enabled in the config" in caplog.text


def test_beat_start_marks_jobs_seen_and_keeps_their_history(db):
    now = timezone.now()
    run_periodic_job("liveness")
    periodic_jobs_mark_seen(
        jobs=[PeriodicJob("liveness", "xworkmate.liveness", timedelta(seconds=30), None, True)],
        now=now,
    )
    state = PeriodicJobState.objects.get(name="liveness")
    assert state.beat_seen_at == now and state.runs == 1


@pytest.mark.parametrize("name", ["liveness"])
def test_the_liveness_task_is_registered(name):
    from xworkmate.celery import app

    assert "xworkmate.liveness" in app.tasks and RUNNER_TASK in app.tasks
