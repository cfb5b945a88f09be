"""Celery tasks of the plans app (adapters: they only call a service)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from plans.scheduler import scheduler_tick
from plans.services import plans_reconcile


# Early ack and a short limit: a lost tick is harmless (the next one claims the
# same due jobs), a tick run twice is harmless (row locks, one run per fire time).
@shared_task(name="plans.tick", time_limit=60, soft_time_limit=50)
def tick() -> dict[str, int]:
    """Start the runs of the jobs that are due (D-C1)."""
    report = scheduler_tick(now=timezone.now())
    return {
        "started": report.started,
        "missed": report.missed,
        "cleared": report.cleared,
        "expired": report.expired,
    }


@shared_task(name="plans.reconcile", time_limit=600, soft_time_limit=540)
def reconcile() -> dict[str, object]:
    """Record PLAN.md files changed on disk as revisions awaiting confirmation."""
    report = plans_reconcile(now=timezone.now())
    return {"checked": report.checked, "revised": report.revised, "problems": report.problems}
