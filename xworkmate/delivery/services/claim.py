"""Claim a batch of messages (each turns `unknown` before it is sent), and send one."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet

from xworkmate.config.kernel import unknown_cooldown
from xworkmate.delivery.channels.base import Envelope, Outcome, Result
from xworkmate.delivery.models import NEW_FOR_A_WORKER, Attempt, Message
from xworkmate.delivery.services._common import _channel, _not_before_creation

# Named as when the write path was one module (its log lines keep their logger).
logger = logging.getLogger("xworkmate.delivery.services")


@dataclass(frozen=True)
class Claimed:
    envelope: Envelope
    channel: str
    attempt_id: int  # the Attempt row this send is recorded in


def _due(now: datetime) -> Q:
    """What a dispatcher may send now: pending or failed and due, or unknown and due
    (only messages on channels that de-duplicate get a due time after an unknown)."""
    return Q(next_attempt_at__lte=now) & Q(
        status__in=(Message.PENDING, Message.FAILED, Message.UNKNOWN)
    )


def _claimable(new: bool, now: datetime, limit: int) -> QuerySet[Message]:
    locked = Message.objects.select_for_update(skip_locked=True)
    if new:
        # A worker asked at enqueue: the oldest new messages waiting, whatever their
        # grace, that one or not. Each task sends whatever is waiting when it runs,
        # so a busy outbox goes out in batches long before the tasks of the
        # messages in them come up (they then find nothing to send). The partial
        # index delivery_message_new keeps this a short index scan.
        return locked.filter(NEW_FOR_A_WORKER).order_by("id")[:limit]
    return locked.filter(_due(now)).order_by("next_attempt_at", "id")[:limit]


def _envelope(message: Message, attempt: int) -> Envelope:
    return Envelope(
        message_id=message.pk,
        purpose=message.purpose,
        target=message.target,
        body=message.body,
        body_hash=message.body_hash,
        idempotency_key=message.idempotency_key,
        attempt=attempt,
        created_at=message.created_at,
    )


def messages_claim(*, new: bool, now: datetime, by: str, limit: int) -> list[Claimed]:
    """Take up to `limit` messages to send, in one transaction; [] when there is none.

    `new` (a worker asked at enqueue): the oldest new messages, whatever their
    grace; otherwise (the dispatch job): the most overdue. Each message turns
    `unknown` with its attempt recorded before anything is sent, and the claim
    commits: see the module docstring. One transaction for the whole batch, not
    one per message (D-K11).
    """
    cooldown = unknown_cooldown(settings.XWORKMATE)
    with transaction.atomic():
        messages = list(_claimable(new, now, limit))
        if not messages:
            return []
        attempts = Attempt.objects.bulk_create(
            Attempt(
                message=message,
                number=message.attempt_count + 1,
                channel=message.channel,
                started_at=now,
                by=by,
                resent_by_id=message.resend_requested_by_id,
            )
            for message in messages
        )
        if any(attempt.pk is None for attempt in attempts):
            # SQLite before 3.35 returns no ids from a bulk INSERT: read them back.
            read_back = {
                (message_id, number): pk
                for message_id, number, pk in Attempt.objects.filter(
                    message__in=messages
                ).values_list("message_id", "number", "pk")
            }
            for attempt in attempts:
                attempt.pk = read_back[(attempt.message_id, attempt.number)]
        # The lease: nobody claims them again before the cooldown, and then only
        # when their channel de-duplicates (after_send decides the rest). One
        # UPDATE per lease; every message's attempt count goes up by one.
        leases: dict[datetime | None, list[int]] = {}
        for message in messages:
            lease = now + cooldown if _channel(message.channel).deduplicates else None
            leases.setdefault(lease, []).append(message.pk)
        for lease, ids in leases.items():
            Message.objects.filter(pk__in=ids).update(
                status=Message.UNKNOWN,
                attempt_count=F("attempt_count") + 1,
                next_attempt_at=lease,
                resend_requested_by=None,
                updated_at=_not_before_creation(now),
            )
    return [
        Claimed(
            envelope=_envelope(message, attempt.number),
            channel=message.channel,
            attempt_id=attempt.pk,
        )
        for message, attempt in zip(messages, attempts, strict=True)
    ]


def message_send(claimed: Claimed) -> Result:
    """Send a claimed message through its channel (outside any transaction)."""
    channel = _channel(claimed.channel)
    try:
        return channel.send(claimed.envelope)
    # A channel bug must not leave the attempt open: it is an unknown outcome.
    except Exception as exc:
        logger.exception(
            "channel %s raised while sending message %s",
            claimed.channel,
            claimed.envelope.message_id,
        )
        return Result(Outcome.UNKNOWN, f"the channel raised {type(exc).__name__}: {exc}")
