"""Periodic jobs: the apps' defaults, beat's schedule, the runner and the tick recorder (D-K5)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import shared_task
from celery.schedules import crontab
from django.test import override_settings
from django.utils import timezone

from xworkmate.celery import app as celery_app
from xworkmate.config import ConfigError, PeriodicJob
from xworkmate.models import PeriodicJobState
from xworkmate.periodic import (
    RUNNER_TASK,
    beat_schedule,
    configured_jobs,
    default_jobs,
    register_default_job,
)
from xworkmate.services import periodic_jobs_mark_seen
from xworkmate.tasks import run_periodic_job
from xworkmate.wiring import parse_config_text

ran: list[str] = []


@shared_task(name="tests.explode", time_limit=5)
def explode() -> None:
    raise RuntimeError("disk on fire")


@shared_task(name="tests.options", time_limit=7, acks_late=True)
def with_options() -> None:
    ran.append("options")


def _config(text: str, tmp_path):
    return parse_config_text(text, home=tmp_path)


@pytest.fixture
def eager():
    """Run what the runner enqueues in this process, as a worker would run it."""
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


def test_it_builds_beat_entries_that_go_through_the_runner(tmp_path):
    config = _config(
        '[[periodic_jobs]]\nname = "report"\ntask = "xworkmate.liveness"\ncron = "30 2 * * 1-5"\n'
        '[[periodic_jobs]]\nname = "off"\ntask = "xworkmate.liveness"\nevery = "1m"\nenabled = false\n',
        tmp_path,
    )
    schedule = beat_schedule(configured_jobs(config))
    # Disabled jobs are not scheduled (task-run-history-purge and "off").
    assert set(schedule) == {
        "liveness", "delivery-dispatch", "plans-tick", "plans-reconcile", "longrun-foreground",
        "longrun-keepalive", "longrun-watchdog", "longrun-cleanup", "report",
    }
    assert schedule["liveness"] == {
        "task": RUNNER_TASK, "schedule": timedelta(seconds=30), "args": ("liveness",),
        "options": {"expires": 30.0},
    }
    report = schedule["report"]
    assert report["task"] == RUNNER_TASK and report["args"] == ("report",)
    assert report["schedule"] == crontab(minute="30", hour="2", day_of_week="1-5")


def test_the_apps_declare_their_default_jobs_and_the_file_overrides_them(tmp_path):
    assert [job.name for job in default_jobs()][:3] == [
        "liveness", "delivery-dispatch", "task-run-history-purge",
    ]
    config = _config('[[periodic_jobs]]\nname = "task-run-history-purge"\nenabled = true\n', tmp_path)
    purge = {job.name: job for job in configured_jobs(config)}["task-run-history-purge"]
    assert (purge.task, purge.every, purge.enabled) == (
        "xworkmate.purge_task_run_history", timedelta(hours=1), True,
    )


def test_a_second_app_cannot_take_a_registered_job_name():
    with pytest.raises(ValueError, match="already registered"):
        register_default_job(PeriodicJob("liveness", "tests.explode", timedelta(seconds=1), None, True))


def test_a_file_entry_that_leaves_a_job_without_a_task_is_refused(tmp_path):
    with pytest.raises(ConfigError) as info:
        configured_jobs(_config('[[periodic_jobs]]\nname = "new"\nevery = "1m"\n', tmp_path))
    assert info.value.problems == ["<text>: periodic_jobs[new].task: required"]


def test_it_records_a_tick_for_each_run(db, eager):
    assert run_periodic_job("liveness") == "enqueued"
    assert run_periodic_job("liveness") == "enqueued"
    state = PeriodicJobState.objects.get(name="liveness")
    assert (state.runs, state.failures, state.last_status, state.task) == (
        2, 0, "ok", "xworkmate.liveness",
    )
    assert state.last_tick_at <= state.last_finished_at <= timezone.now()


def test_a_task_run_outside_a_job_records_no_tick(db, eager):
    celery_app.tasks["xworkmate.liveness"].delay()
    assert not PeriodicJobState.objects.exists()


def test_the_runner_enqueues_the_jobs_own_task_with_its_options(db, tmp_path, monkeypatch):
    sent = []
    task = celery_app.tasks["tests.options"]
    monkeypatch.setattr(task, "apply_async", lambda **kw: sent.append((task.name, kw)))
    config = _config('[[periodic_jobs]]\nname = "opts"\ntask = "tests.options"\nevery = "1m"\n', tmp_path)
    with override_settings(XWORKMATE=config):
        assert run_periodic_job("opts") == "enqueued"
    assert sent == [("tests.options", {"headers": {"xworkmate_periodic_job": "opts"}})]
    assert task.time_limit == 7 and task.acks_late is True


def test_it_records_a_failure_without_raising(db, tmp_path, caplog, eager):
    config = _config('[[periodic_jobs]]\nname = "boom"\ntask = "tests.explode"\nevery = "1m"\n', tmp_path)
    with override_settings(XWORKMATE=config):
        assert run_periodic_job("boom") == "enqueued"
        assert run_periodic_job("liveness") == "enqueued"  # the next job still runs
    state = PeriodicJobState.objects.get(name="boom")
    assert (state.runs, state.failures, state.last_status) == (1, 1, "error")
    assert state.last_error == "RuntimeError: disk on fire"
    assert "periodic job 'boom' (task tests.explode) failed" in caplog.text
    assert PeriodicJobState.objects.get(name="liveness").last_status == "ok"


def test_it_skips_a_job_that_is_no_longer_configured(db, caplog):
    assert run_periodic_job("removed-job") == "skipped"
    assert not PeriodicJobState.objects.filter(name="removed-job").exists()
    assert "not enabled in the config" in caplog.text


def test_beat_start_marks_jobs_seen_and_keeps_their_history(db, eager):
    now = timezone.now()
    run_periodic_job("liveness")
    periodic_jobs_mark_seen(
        jobs=[PeriodicJob("liveness", "xworkmate.liveness", timedelta(seconds=30), None, True)],
        now=now,
    )
    state = PeriodicJobState.objects.get(name="liveness")
    assert state.beat_seen_at == now and state.runs == 1


def test_every_project_task_has_a_time_limit():
    """D-K6: a stuck task is killed, never holds a worker forever."""
    import gateway.tasks  # noqa: F401
    import xworkmate.tasks  # noqa: F401

    project = {name: task for name, task in celery_app.tasks.items() if name.startswith("xworkmate.")}
    assert {"xworkmate.liveness", RUNNER_TASK, "xworkmate.purge_task_run_history"} <= set(project)
    assert [name for name, task in project.items() if not task.time_limit] == []
    # Running the runner twice would start its job twice: it is acknowledged early.
    assert project[RUNNER_TASK].acks_late is False
