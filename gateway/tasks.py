"""Celery tasks of the gateway app (adapters: they only call a service)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from gateway.services import task_run_history_purge


# The task keeps the name it had in the kernel, so configs that name it still work.
@shared_task(
    name="xworkmate.purge_task_run_history", time_limit=600, soft_time_limit=540, acks_late=True
)
def purge_task_run_history() -> int:
    """Delete task runs that have been in the history longer than the retention.

    Safe to run twice: a second run finds nothing left to delete.
    """
    return task_run_history_purge(now=timezone.now())
