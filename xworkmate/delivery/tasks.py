"""Celery tasks of the outbox (adapters: claim, send, record)."""

from __future__ import annotations

import time

from celery import shared_task
from django.utils import timezone

from xworkmate.delivery.services import (
    DELIVER_TASK,
    message_claim,
    message_record_outcome,
    message_send,
)

# How long one dispatch run goes on claiming and sending overdue messages; the
# next run (every 10 s by default) continues, so no run outlives its time limit.
DISPATCH_BUDGET_SECONDS = 20.0


def _deliver(message_id: int | None, by: str) -> bool:
    claimed = message_claim(message_id=message_id, now=timezone.now(), by=by)
    if claimed is None:
        return False
    result = message_send(claimed)
    message_record_outcome(claimed=claimed, result=result, now=timezone.now())
    return True


# Safe to run twice: a second run finds the message claimed (no longer pending)
# and sends nothing, so acks_late costs no duplicate.
@shared_task(name=DELIVER_TASK, time_limit=120, soft_time_limit=110, acks_late=True)
def deliver(message_id: int) -> bool:
    """Send one new message, as soon as the transaction that wrote it has committed."""
    return _deliver(message_id, "worker")


@shared_task(
    name="xworkmate.delivery.dispatch", time_limit=120, soft_time_limit=110, acks_late=True
)
def dispatch() -> int:
    """Send what is due: retries, and messages no worker started within the grace.

    Claims one message at a time (SKIP LOCKED), so several dispatchers and the
    workers never send one message twice at once; stops after a time budget.
    """
    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < DISPATCH_BUDGET_SECONDS:
        if not _deliver(None, "dispatch job"):
            break
        sent += 1
    return sent
