"""A task goes through real Redis to a real worker process and writes to PostgreSQL;
beat fires a configured periodic job within two intervals."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection

from tests.integration.conftest import wait_for
from xworkmate.models import PeriodicJobState
from xworkmate.tasks import run_periodic_job


def test_it_runs_an_enqueued_task_in_a_real_worker_that_writes_postgres(celery_processes):
    assert connection.vendor == "postgresql"
    worker = celery_processes.start("worker")
    # Enqueued from this process through Redis; nothing runs it here.
    run_periodic_job.delay("liveness")
    state = wait_for(
        lambda: PeriodicJobState.objects.filter(name="liveness", runs__gte=1).first(),
        timeout=60, what="the worker to record the liveness tick",
    )
    assert worker.poll() is None, celery_processes.logs()
    assert state.last_status == "ok" and state.beat_seen_at is None  # no beat involved
    assert "Task xworkmate.run_periodic_job" in celery_processes.logs()


def test_beat_fires_a_configured_job_within_two_intervals(celery_processes):
    interval = timedelta(seconds=2)
    config = '[[periodic_jobs]]\nname = "liveness"\nevery = "2s"\n'
    celery_processes.start("worker", config)
    celery_processes.start("beat", config)
    state = wait_for(
        lambda: PeriodicJobState.objects.filter(
            name="liveness", beat_seen_at__isnull=False, last_tick_at__isnull=False
        ).first(),
        timeout=60, what="beat to start and the first liveness tick",
    )
    # The first tick is measured from the moment this beat started, as both
    # processes recorded them in PostgreSQL.
    assert state.last_tick_at - state.beat_seen_at <= 2 * interval, celery_processes.logs()
    first_runs = state.runs
    wait_for(
        lambda: PeriodicJobState.objects.get(name="liveness").runs >= first_runs + 2,
        timeout=30, what="two more ticks",
    )
