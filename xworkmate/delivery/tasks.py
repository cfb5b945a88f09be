"""Celery tasks of the outbox (adapters: claim, send, record)."""

from __future__ import annotations

import time
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from xworkmate.config.kernel import DELIVERY, unknown_cooldown
from xworkmate.delivery.services import (
    DELIVER_TASK,
    attempts_close_abandoned,
    breakers_tick,
    deliveries_run,
    messages_claim,
)

# The hard time limit of every task that sends (deliver, dispatch): Celery kills a
# child that runs past it, so a send begun longer ago than that (and a margin for
# clocks and the kill) has no worker left that could record its answer.
SEND_TIME_LIMIT_SECONDS = 120
ABANDONED_AFTER = timedelta(seconds=SEND_TIME_LIMIT_SECONDS + 30)

# How long one dispatch run goes on claiming and sending overdue messages; the
# next run (every 10 s by default) continues, so no run outlives its time limit.
DISPATCH_BUDGET_SECONDS = 20.0


# How long one batch may go on starting sends. A slow receiver must not hold a
# batch past the task's time limit (which would kill the worker mid-batch and
# leave every message in it unknown), nor past the lease of its messages
# (half of longrun.unknown_cooldown), after which a dispatcher may claim them.
BATCH_SEND_BUDGET_SECONDS = 60.0


def _deliver(*, new: bool, by: str) -> int:
    """Claim a batch and send it, each send marked when it begins and each answer
    recorded as it arrives; how many messages were claimed (D-K30)."""
    config = settings.XWORKMATE
    budget = min(
        BATCH_SEND_BUDGET_SECONDS, unknown_cooldown(config).total_seconds() / 2
    )
    claimed = messages_claim(new=new, now=timezone.now(), limit=DELIVERY.of(config).batch_size)
    if claimed:
        deliveries_run(
            claimed,
            window=DELIVERY.of(config).sends_in_flight,
            budget_seconds=budget,
            by=by,
        )
    return len(claimed)


# Safe to run twice: a second run finds the message claimed (no longer pending)
# and sends nothing, so acks_late costs no duplicate.
@shared_task(
    name=DELIVER_TASK,
    time_limit=SEND_TIME_LIMIT_SECONDS,
    soft_time_limit=SEND_TIME_LIMIT_SECONDS - 10,
    acks_late=True,
)
def deliver(message_id: int) -> bool:
    """Send new messages; queued when the transaction that wrote `message_id` commits.

    It sends the oldest new messages waiting, up to `delivery.batch_size`, that one
    among them or not: a message's own task may find it already sent by an earlier
    batch and send the next ones (the id stays in the task's log line). False when
    this run sent nothing.
    """
    return _deliver(new=True, by="worker") > 0


@shared_task(
    name="xworkmate.delivery.dispatch",
    time_limit=SEND_TIME_LIMIT_SECONDS,
    soft_time_limit=SEND_TIME_LIMIT_SECONDS - 10,
    acks_late=True,
)
def dispatch() -> int:
    """Send what is due: retries, and messages no worker started within the grace.

    Claims in batches (SKIP LOCKED), so several dispatchers and the workers never
    send one message twice at once; stops when a batch is not full or after a
    time budget.
    """
    # No task that started a send before this can still be sending: Celery has
    # killed it at its time limit. Its attempt is closed, and says so.
    attempts_close_abandoned(timezone.now(), older_than=ABANDONED_AFTER)
    # D-K33: probe the channels whose breaker cooled down; move or hold the messages
    # of the open ones before this run claims what is due.
    breakers_tick(timezone.now())
    sent = 0
    limit = DELIVERY.of(settings.XWORKMATE).batch_size
    started = time.monotonic()
    while time.monotonic() - started < DISPATCH_BUDGET_SECONDS:
        claimed = _deliver(new=False, by="dispatch job")
        sent += claimed
        if claimed < limit:
            break
    return sent
