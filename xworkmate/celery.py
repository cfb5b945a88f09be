"""The Celery application: the broker comes from the config, beat's schedule from the
configured periodic jobs (xworkmate.periodic.ConfiguredScheduler).

Workers and beat start it with `celery -A xworkmate.celery`; inside Django
the kernel's AppConfig.ready() imports it, so every app's `@shared_task`
binds to this app. Importing the `xworkmate` package itself builds nothing,
which keeps `xworkmate.lib` importable without Celery (D-K2).

Nothing here imports the periodic jobs: what beat does when it starts lives
with its scheduler (xworkmate.periodic), so the two never import each other.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup, task_postrun, task_prerun

from xworkmate import logs

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xworkmate.settings")

app = Celery("xworkmate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _recycle_database_connections(task: Any = None, **_: Any) -> None:
    """Close connections that are too old or broken, keep the rest (see settings).

    Not for a task run eagerly, inside its caller's process and transaction.
    """
    if task is not None and task.request.is_eager:
        return
    from django.db import close_old_connections

    close_old_connections()



_BOUND: dict[str, list[Any]] = {}


@task_prerun.connect
def _bind_task(task_id: str = "", task: Any = None, **_: Any) -> None:
    """The task's name and id on each line it logs (D-K27)."""
    if task is not None and not task.request.is_eager:
        _BOUND[task_id] = logs.bind(task_name=task.name, task_id=task_id)


@task_postrun.connect
def _unbind_task(task_id: str = "", **_: Any) -> None:
    tokens = _BOUND.pop(task_id, None)
    if tokens is not None:
        logs.unbind(tokens)


@celeryd_after_setup.connect
def _serve_this_hosts_files(instance: Any = None, **_: Any) -> None:
    """A worker on a workspace's host also serves that host's file operations (D-K31)."""
    from xworkmate.hostfiles import queue_of, this_host

    host = this_host()
    if host and instance is not None:
        instance.app.amqp.queues.select_add(queue_of(host))
