"""The Celery tasks of long-run mode: adapters that run one monitor each, on beat (D-B20).

Run here as a worker would run them (eagerly, with their periodic job's
header); tests/integration/test_longrun_real.py runs them in real workers.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from longrun import tasks
from longrun.models import LongTask, TaskEvent
from tests.conftest import configure
from tests.longrun.conftest import K2, K, at, task_set
from xworkmate.celery import app
from xworkmate.delivery.models import Message
from xworkmate.periodic import default_jobs

pytestmark = pytest.mark.django_db

JOBS = {
    "longrun-foreground": ("longrun.foreground_due", timedelta(seconds=60)),
    "longrun-keepalive": ("longrun.keepalive", timedelta(seconds=60)),
    "longrun-watchdog": ("longrun.watchdog", timedelta(minutes=5)),
    "longrun-cleanup": ("longrun.cleanup", timedelta(days=1)),
}


def test_the_monitors_are_default_periodic_jobs_with_a_limit_and_late_acks():
    registered = {job.name: (job.task, job.every) for job in default_jobs() if job.enabled}
    assert {name: registered.get(name) for name in JOBS} == JOBS
    for name, _every in JOBS.values():
        task = app.tasks[name]
        # D-K6: each has a time limit; a second run does no harm, so it acks late.
        assert task.time_limit and task.soft_time_limit < task.time_limit
        assert task.acks_late is True


def test_the_foreground_job_queues_the_heartbeat_of_a_due_task():
    task_set()
    with time_machine.travel(at(minutes=3), tick=False):
        assert tasks.foreground_due.apply().get() == {
            "queued": 1, "skipped_unknown": 0, "errors": 0,
        }  # fmt: skip
        # A second tick in the same slot queues nothing more (D-B20).
        assert tasks.foreground_due.apply().get()["queued"] == 0
    message = Message.objects.get()
    assert (message.purpose, message.target) == ("longrun.progress", K)


def test_the_keepalive_job_plans_the_resume_of_an_idle_task(settings):
    task_set()
    with time_machine.travel(at(seconds=61), tick=False):
        assert tasks.keepalive.apply().get() == {"dispatches": 1, "errors": 0}
    assert not Message.objects.exists()  # planned only: longrun.auto_resume is off
    configure(settings, "longrun", auto_resume=True)
    with time_machine.travel(at(minutes=2), tick=False):
        assert tasks.keepalive.apply().get() == {"dispatches": 1, "errors": 0}
    assert Message.objects.get().purpose == "longrun.resume"


def test_the_watchdog_job_sends_recovery_and_reports_a_task_it_cannot_handle():
    task_set(state="analyzing", next_check="等CI")
    task_set("B", key=K2, next_check="等CI")
    LongTask.objects.filter(name="B").update(origin_session_key="")
    with time_machine.travel(at(minutes=11), tick=False):
        assert tasks.watchdog.apply().get() == {"payloads": 1, "errors": 1}
    message = Message.objects.get()
    assert (message.purpose, message.target) == ("longrun.recovery", K)
    assert TaskEvent.objects.get(kind="queued").task.name == "A"


def test_the_cleanup_job_applies_cleanup_state():
    task_set("回归-1")
    task_set("旧", state="done", key=K2)
    with time_machine.travel(at(days=8), tick=False):
        assert tasks.cleanup.apply().get() == {
            "dropped": 1, "archived": 1, "lock_repairs": 1, "errors": 0,
        }  # fmt: skip  (the dropped task's lock is an orphan)
    assert not LongTask.objects.filter(archived_at__isnull=True).exists()
    assert LongTask.objects.get().name == "旧"  # archived, not deleted (D-B16)
