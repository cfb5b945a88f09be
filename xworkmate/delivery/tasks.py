"""Celery tasks of the outbox (adapters: claim, send, record)."""

from __future__ import annotations

import time

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from xworkmate.config.kernel import DELIVERY, unknown_cooldown
from xworkmate.delivery.services import (
    DELIVER_TASK,
    message_send,
    messages_claim,
    messages_record_outcomes,
)

# How long one dispatch run goes on claiming and sending overdue messages; the
# next run (every 10 s by default) continues, so no run outlives its time limit.
DISPATCH_BUDGET_SECONDS = 20.0


# How long one batch may go on starting sends. A slow receiver must not hold a
# batch past the task's time limit (which would kill the worker mid-batch and
# leave every message in it unknown), nor past the lease of its messages
# (half of longrun.unknown_cooldown), after which a dispatcher may claim them.
BATCH_SEND_BUDGET_SECONDS = 60.0


def _deliver(*, new: bool, by: str) -> int:
    """Claim a batch, send it, record the outcomes; how many messages were claimed (D-K11)."""
    config = settings.XWORKMATE
    limit = DELIVERY.of(config).batch_size
    budget = min(
        BATCH_SEND_BUDGET_SECONDS, unknown_cooldown(config).total_seconds() / 2
    )
    claimed = messages_claim(new=new, now=timezone.now(), by=by, limit=limit)
    deadline = time.monotonic() + budget
    # A send not started in time (None) is released: pending again and due at once,
    # its attempt not counted, since nothing left the service.
    outcomes = [
        (one, message_send(one) if time.monotonic() < deadline else None) for one in claimed
    ]
    messages_record_outcomes(outcomes=outcomes, now=timezone.now())
    return len(claimed)


# Safe to run twice: a second run finds the message claimed (no longer pending)
# and sends nothing, so acks_late costs no duplicate.
@shared_task(name=DELIVER_TASK, time_limit=120, soft_time_limit=110, acks_late=True)
def deliver(message_id: int) -> bool:
    """Send new messages; queued when the transaction that wrote `message_id` commits.

    It sends the oldest new messages waiting, up to `delivery.batch_size`, that one
    among them or not: a message's own task may find it already sent by an earlier
    batch and send the next ones (the id stays in the task's log line). False when
    this run sent nothing.
    """
    return _deliver(new=True, by="worker") > 0


@shared_task(
    name="xworkmate.delivery.dispatch", time_limit=120, soft_time_limit=110, acks_late=True
)
def dispatch() -> int:
    """Send what is due: retries, and messages no worker started within the grace.

    Claims in batches (SKIP LOCKED), so several dispatchers and the workers never
    send one message twice at once; stops when a batch is not full or after a
    time budget.
    """
    sent = 0
    limit = DELIVERY.of(settings.XWORKMATE).batch_size
    started = time.monotonic()
    while time.monotonic() - started < DISPATCH_BUDGET_SECONDS:
        claimed = _deliver(new=False, by="dispatch job")
        sent += claimed
        if claimed < limit:
            break
    return sent
