"""Record the outcome of each claimed send, and run the purpose's outcome handlers."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import F

from xworkmate.delivery.channels.base import Outcome, Result
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.outcomes import run_outcome_handlers
from xworkmate.delivery.policies import after_send
from xworkmate.delivery.services._common import (
    _channel,
    _not_before_creation,
    retry_rules,
)
from xworkmate.delivery.services.claim import Claimed

# Named as when the write path was one module (its log lines keep their logger).
logger = logging.getLogger("xworkmate.delivery.services")


# A claimed send and the outcome its channel reported; None for a claimed message
# whose send never started (its batch ran out of time): it is released as if it
# had not been claimed.
SendOutcome = tuple[Claimed, Result | None]


def _record(outcomes: list[SendOutcome], now: datetime) -> list[Message]:
    """Write the outcomes (one transaction, opened by the caller) and run the handlers.

    One UPDATE per distinct outcome rather than one per message: in a batch most
    outcomes are alike ("HTTP 200"), so a batch costs a handful of statements.
    """
    ids = {claimed.envelope.message_id for claimed, _ in outcomes}
    # Locked in id order, as every recorder locks them: two recorders that share
    # messages (one whose lease ran out, and the next attempt's) never deadlock.
    messages = {
        message.pk: message
        for message in Message.objects.select_for_update().filter(pk__in=ids).order_by("pk")
    }
    rules = retry_rules()
    attempts_by_outcome: dict[tuple[str, str], list[int]] = {}
    messages_by_state: dict[tuple[str, datetime | None, str], list[int]] = {}
    changed: list[tuple[Message, Outcome, bool]] = []
    released: list[Claimed] = []
    for claimed, result in outcomes:
        message = messages[claimed.envelope.message_id]
        number = claimed.envelope.attempt
        owned = message.attempt_count == number and message.status != Message.SENT
        if result is None:
            if owned:
                released.append(claimed)
            continue
        attempts_by_outcome.setdefault((result.outcome.value, result.detail), []).append(
            claimed.attempt_id
        )
        if not owned:
            # A later attempt (after this one outlived its lease) or an ack owns
            # the status now; this outcome stays in the attempt's record only.
            continue
        state = after_send(
            result.outcome,
            attempt=number,
            deduplicates=_channel(message.channel).deduplicates,
            rules=rules,
            now=now,
        )
        message.status = state.status
        message.next_attempt_at = state.next_attempt_at
        message.sent_at = now if state.status == Message.SENT else None
        message.last_error = "" if state.status == Message.SENT else result.detail
        message.updated_at = max(now, message.created_at)
        key = (message.status, message.next_attempt_at, message.last_error)
        messages_by_state.setdefault(key, []).append(message.pk)
        changed.append((message, result.outcome, state.final))
    for (outcome, detail), attempt_ids in attempts_by_outcome.items():
        Attempt.objects.filter(pk__in=attempt_ids).update(
            finished_at=now, outcome=outcome, detail=detail
        )
    for (status, next_attempt_at, last_error), message_ids in messages_by_state.items():
        Message.objects.filter(pk__in=message_ids).update(
            status=status,
            next_attempt_at=next_attempt_at,
            sent_at=now if status == Message.SENT else None,
            last_error=last_error,
            updated_at=_not_before_creation(now),
        )
    if released:
        _release(released, [messages[one.envelope.message_id] for one in released], now)
    for message, outcome, final in changed:
        run_outcome_handlers(message, outcome, final)
    return [messages[claimed.envelope.message_id] for claimed, _ in outcomes]


def _release(released: list[Claimed], messages: list[Message], now: datetime) -> None:
    """Undo the claim of messages whose send never started: nothing left the
    service, so no attempt is counted and they are due again at once (pending).

    `messages` are the locked rows of `released`, still owned by these attempts;
    they are brought up to date in memory as the UPDATE writes them.
    """
    Attempt.objects.filter(pk__in=[claimed.attempt_id for claimed in released]).delete()
    Message.objects.filter(pk__in=[message.pk for message in messages]).update(
        status=Message.PENDING,
        attempt_count=F("attempt_count") - 1,
        next_attempt_at=now,
        updated_at=_not_before_creation(now),
    )
    for message in messages:
        message.status = Message.PENDING
        message.attempt_count -= 1
        message.next_attempt_at = now
        message.updated_at = max(now, message.created_at)


def messages_record_outcomes(*, outcomes: list[SendOutcome], now: datetime) -> list[Message]:
    """Write the outcome the channel reported for each claimed attempt, and run the handlers.

    All in one transaction. If an outcome handler raises, that rolls back the
    batch; each outcome is then written in a transaction of its own, so only the
    message whose handler failed stays unrecorded (`unknown`, as after a worker
    that died), and the first error is raised again once the others are written.
    """
    if not outcomes:
        return []
    try:
        with transaction.atomic():
            return _record(outcomes, now)
    except Exception:
        if len(outcomes) == 1:
            raise
    recorded: list[Message] = []
    first_error: Exception | None = None
    for one in outcomes:
        try:
            with transaction.atomic():
                recorded.extend(_record([one], now))
        except Exception as exc:
            # The log line keeps the words it always had.
            logger.exception(
                "recording the answer for message %s failed", one[0].envelope.message_id
            )
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    return recorded
