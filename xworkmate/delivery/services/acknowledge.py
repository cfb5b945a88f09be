"""Acknowledge a `record` message (the bridge put it into its session), or ask for a resend."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from xworkmate.config.kernel import unknown_cooldown
from xworkmate.delivery.channels.base import Outcome
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.outcomes import run_outcome_handlers
from xworkmate.delivery.services._common import _is_pushed
from xworkmate.delivery.services.enqueue import _ask_a_worker


def message_acknowledge(*, message: Message, by: str, now: datetime) -> bool:
    """The bridge put a `record` message into its session: it is sent. False if it was already."""
    with transaction.atomic():
        locked = Message.objects.select_for_update().get(pk=message.pk)
        if locked.status == Message.SENT:
            return False
        number = locked.attempt_count + 1
        Attempt.objects.create(
            message=locked,
            number=number,
            channel=locked.channel,
            started_at=now,
            finished_at=now,
            outcome="acknowledged",
            by=by,
        )
        locked.status = Message.SENT
        locked.attempt_count = number
        locked.sent_at = now
        locked.next_attempt_at = None
        locked.last_error = ""
        locked.updated_at = max(now, locked.created_at)
        locked.save(
            update_fields=[
                "status", "attempt_count", "sent_at", "next_attempt_at", "last_error", "updated_at",
            ]
        )
        run_outcome_handlers(locked, Outcome.SENT, True)
    return True


def message_request_resend(
    *, message: Message, user: AbstractBaseUser | None, now: datetime
) -> bool:
    """A person asks for another send of an unknown or failed message; records who.

    Refused (False) while the last attempt may still be under way (started less
    than `longrun.unknown_cooldown` ago and not finished): a second send beside it
    could deliver the message twice on a channel that does not de-duplicate.
    """
    if message.status not in (Message.UNKNOWN, Message.FAILED):
        return False
    cooldown = unknown_cooldown(settings.XWORKMATE)
    if message.attempts.filter(finished_at__isnull=True, started_at__gt=now - cooldown).exists():
        return False
    pushed = _is_pushed(message.channel)
    changed = Message.objects.filter(
        pk=message.pk, status__in=(Message.UNKNOWN, Message.FAILED)
    ).update(
        status=Message.PENDING,
        next_attempt_at=now if pushed else None,
        resend_requested_by=user,
        updated_at=max(now, message.created_at),
    )
    if changed and pushed:
        message_id = message.pk
        transaction.on_commit(lambda: _ask_a_worker(message_id))
    return bool(changed)
