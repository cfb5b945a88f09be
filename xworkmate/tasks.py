"""Celery tasks of the kernel (adapters: look up, call, record) and the tick recorder.

Every task names its time limit; `acks_late` only where running twice is
harmless (D-K6).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from celery import Task, current_app, shared_task
from celery.signals import task_postrun, task_prerun
from celery.states import FAILURE
from django.utils import timezone

from xworkmate import hostfiles
from xworkmate.hostfiles import TASK_NAME as FILES_TASK
from xworkmate.periodic import JOB_HEADER, RUNNER_TASK, find_job
from xworkmate.services import periodic_job_record_tick

logger = logging.getLogger(__name__)


# At most once: a runner delivered twice would start the job twice.
@shared_task(name=RUNNER_TASK, time_limit=30, soft_time_limit=25, acks_late=False)
def run_periodic_job(name: str) -> str:
    """Enqueue one configured periodic job's own task, tagged with the job's name."""
    job = find_job(name)
    if job is None or not job.enabled:
        logger.warning("periodic job %r is not enabled in the config; skipped", name)
        return "skipped"
    task = current_app.tasks.get(job.task)
    headers = {JOB_HEADER: name}
    if task is not None:
        task.apply_async(headers=headers)  # the task's own options apply
    else:  # defined only in another worker's code
        current_app.send_task(job.task, headers=headers)
    return "enqueued"


@shared_task(name="xworkmate.liveness", time_limit=30, soft_time_limit=25, acks_late=True)
def liveness() -> str:
    """The built-in periodic job: its recorded tick proves beat → broker → worker → database.

    It has nothing else to do; the tick recorder below writes the tick.
    """
    return "alive"


# --- ticks of periodic jobs ------------------------------------------------------------

_started: dict[str, datetime] = {}


def _job_name(task: Task[Any, Any]) -> str | None:
    request = task.request
    # A worker exposes message headers as request attributes; an eager call
    # (tests, `task.apply`) keeps them in request.headers.
    name = request.get(JOB_HEADER) or (getattr(request, "headers", None) or {}).get(JOB_HEADER)
    return name if isinstance(name, str) else None


@task_prerun.connect
def _tick_started(task_id: str, task: Task[Any, Any], **_: Any) -> None:
    if _job_name(task) is not None:
        _started[task_id] = timezone.now()


@task_postrun.connect
def _tick_finished(task_id: str, task: Task[Any, Any], state: str, retval: Any, **_: Any) -> None:
    name = _job_name(task)
    started = _started.pop(task_id, None)
    if name is None or started is None:
        return
    # A failing job never stops beat or the worker: Celery has logged the
    # traceback; the failure is recorded for /healthz and the admin.
    error = f"{type(retval).__name__}: {retval}" if state == FAILURE else ""
    if error:
        logger.error("periodic job %r (task %s) failed: %s", name, task.name, error)
    periodic_job_record_tick(
        name=name, task=task.name, started_at=started, finished_at=timezone.now(), error=error
    )


# --- file operations on the host of a workspace (D-K31) ----------------------------------


# At most once, and only on the host named: the operation writes files (a scope
# directory, PLAN.md) and its caller is waiting for this one answer. Its result is
# stored (the caller reads it); track_started lets a caller that gave up say whether
# it had begun.
@shared_task(
    name=FILES_TASK,
    time_limit=120,
    soft_time_limit=110,
    acks_late=False,
    ignore_result=False,
    track_started=True,
)
def run_file_operation(operation: str, arguments: dict[str, Any], host: str) -> dict[str, Any]:
    if host != hostfiles.this_host():
        # A worker of another host subscribed to this queue: running it here would
        # touch the wrong disk. Fail loudly rather than answer for another host.
        raise RuntimeError(
            f"file operation for host {host!r} reached a worker on host {hostfiles.this_host()!r}"
        )
    logger.info("file operation %s on host %s", operation, host)
    return hostfiles.execute(operation, arguments)
