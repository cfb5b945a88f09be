"""Celery tasks of the project package (adapters: look up, call, record)."""

from __future__ import annotations

import logging

from celery import current_app, shared_task
from django.conf import settings
from django.utils import timezone

from xworkmate.periodic import RUNNER_TASK
from xworkmate.services import periodic_job_record_tick, task_run_history_purge

logger = logging.getLogger(__name__)


@shared_task(name=RUNNER_TASK)
def run_periodic_job(name: str) -> str:
    """Run one configured periodic job in this worker and record its tick."""
    job = next((j for j in settings.XWORKMATE.periodic_jobs if j.name == name), None)
    if job is None or not job.enabled:
        logger.warning("periodic job %r is not enabled in the config; skipped", name)
        return "skipped"
    started = timezone.now()
    error = ""
    try:
        current_app.tasks[job.task].run()
    # One failing job must never stop beat or the worker; the failure is
    # logged with its traceback and recorded for /healthz and the admin.
    except Exception as exc:
        logger.exception("periodic job %r (task %s) failed", name, job.task)
        error = f"{type(exc).__name__}: {exc}"
    periodic_job_record_tick(job=job, started_at=started, finished_at=timezone.now(), error=error)
    return "error" if error else "ok"


@shared_task(name="xworkmate.liveness")
def liveness() -> str:
    """The built-in periodic job: its recorded tick proves beat → broker → worker → database.

    It has nothing else to do; run_periodic_job writes the tick.
    """
    return "alive"


@shared_task(name="xworkmate.purge_task_run_history")
def purge_task_run_history() -> int:
    """Delete task runs that have been in the history longer than the retention.

    Safe to run twice: a second run finds nothing left to delete.
    """
    return task_run_history_purge(now=timezone.now())
