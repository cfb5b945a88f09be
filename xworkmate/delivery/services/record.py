"""One step of a batch: record the answers that arrived, start the next sends (D-K30).

Each step is one transaction. The answers of the sends that finished since the
last step are written with the purpose's outcome handlers, and the sends about
to begin get their attempt rows and turn `unknown`; they start once it commits.
A batch runs a step whenever an answer arrives or a send may start, so each
answer is in the database about one transaction after it came, and a worker
killed at any moment leaves every message exactly as far as it got: claimed
(and soon claimable again), started without an answer (`unknown`, its attempt
open), or answered.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F

from xworkmate.config.kernel import unknown_cooldown
from xworkmate.delivery.breaker_rules import Answer
from xworkmate.delivery.channels.base import Outcome, Result
from xworkmate.delivery.models import Attempt, Message
from xworkmate.delivery.outcomes import run_outcome_handlers
from xworkmate.delivery.policies import after_send
from xworkmate.delivery.services._common import (
    _channel,
    _not_before_creation,
    retry_rules,
)
from xworkmate.delivery.services.breaker import breaker_hold_back, breakers_observe
from xworkmate.delivery.services.claim import Claimed, Started, claims_renew, envelope_of

# Named as when the write path was one module (its log lines keep their logger).
logger = logging.getLogger("xworkmate.delivery.services")

# A started send and the outcome its channel reported.
SendOutcome = tuple[Started, Result]


def _locked(ids: Iterable[int]) -> dict[int, Message]:
    # Locked in id order, as every writer of a step locks them: two steps that share
    # messages (one whose claim ran out, and the batch that took it over) never
    # deadlock.
    return {
        message.pk: message
        for message in Message.objects.select_for_update().filter(pk__in=set(ids)).order_by("pk")
    }


def _record(outcomes: list[SendOutcome], messages: dict[int, Message], now: datetime) -> None:
    """Write the outcomes into the locked rows and run the handlers.

    One UPDATE per distinct outcome rather than one per message: in a step most
    outcomes are alike ("HTTP 200"), so it costs a handful of statements.
    """
    rules = retry_rules()
    attempts_by_outcome: dict[tuple[str, str], list[int]] = {}
    messages_by_state: dict[tuple[str, datetime | None, str], list[int]] = {}
    changed: list[tuple[Message, Outcome, bool]] = []
    for started, result in outcomes:
        message = messages[started.envelope.message_id]
        number = started.envelope.attempt
        attempts_by_outcome.setdefault((result.outcome.value, result.detail), []).append(
            started.attempt_id
        )
        if message.attempt_count != number or message.status == Message.SENT:
            # A later attempt (after this one was abandoned) or an ack owns the
            # status now; this outcome stays in the attempt's record only.
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
        # An attempt the dispatch job already closed as abandoned keeps the answer
        # that finally came: it is the truth about that send.
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
    for message, outcome, final in changed:
        run_outcome_handlers(message, outcome, final)
    # D-K33: every answer counts for (or against) the channel it was sent on.
    breakers_observe(
        (
            (
                started.channel,
                Answer(
                    message_id=started.envelope.message_id,
                    sent=result.outcome is Outcome.SENT,
                    detail=result.detail,
                    target=started.envelope.target,
                ),
            )
            for started, result in outcomes
        ),
        now,
    )


def _start(
    claims: list[Claimed], messages: dict[int, Message], now: datetime, by: str
) -> list[Started]:
    """Begin the sends of the claims still this batch's: attempt rows, `unknown`."""
    startable: list[tuple[Claimed, Message]] = []
    # D-K33: a channel whose breaker opened since the claim takes no more sends.
    held_back = breaker_hold_back((c.message_id, c.channel, c.token) for c in claims)
    for claim in claims:
        message = messages.get(claim.message_id)
        if (
            message is None
            or message.claimed_by != claim.token
            or message.claim_expires_at is None
            or message.claim_expires_at <= now
            or message.status == Message.SENT
            or claim.message_id in held_back
        ):
            # The claim ran out and another batch may hold it, or it was
            # acknowledged meanwhile: this batch must not send it.
            continue
        startable.append((claim, message))
    if not startable:
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
        for _, message in startable
    )
    if any(attempt.pk is None for attempt in attempts):
        # SQLite before 3.35 returns no ids from a bulk INSERT: read them back.
        read_back = {
            (message_id, number): pk
            for message_id, number, pk in Attempt.objects.filter(
                message__in=[message for _, message in startable]
            ).values_list("message_id", "number", "pk")
        }
        for attempt in attempts:
            attempt.pk = read_back[(attempt.message_id, attempt.number)]
    # The lease of a started send: nobody sends it again before the cooldown, and
    # then only when its channel de-duplicates (after_send decides the rest).
    cooldown = unknown_cooldown(settings.XWORKMATE)
    leases: dict[datetime | None, list[int]] = {}
    for _, message in startable:
        lease = now + cooldown if _channel(message.channel).deduplicates else None
        leases.setdefault(lease, []).append(message.pk)
        message.attempt_count += 1
    for lease, ids in leases.items():
        Message.objects.filter(pk__in=ids).update(
            status=Message.UNKNOWN,
            attempt_count=F("attempt_count") + 1,
            next_attempt_at=lease,
            resend_requested_by=None,
            claimed_by="",
            claim_expires_at=None,
            updated_at=_not_before_creation(now),
        )
    return [
        Started(
            envelope=envelope_of(claim, attempt.number),
            channel=claim.channel,
            attempt_id=attempt.pk,
        )
        for (claim, _), attempt in zip(startable, attempts, strict=True)
    ]


def deliveries_step(
    *,
    finished: list[SendOutcome],
    start: list[Claimed],
    renew: list[Claimed],
    now: datetime,
    by: str,
) -> list[Started]:
    """Record `finished`, begin the sends of `start`, renew the claims of `renew`: one
    transaction. Answers the sends that may begin now (a claim that ran out is left).

    If an outcome handler raises, that rolls the step back; each answer is then
    written in a transaction of its own, so only the message whose handler failed
    stays unrecorded (`unknown`, its attempt open, as after a worker that died).
    When one did, the first error is raised and nothing of `start` was begun (the
    caller may offer those claims again); otherwise the sends are begun in one more
    transaction, as if nothing had happened.
    """
    ids = [s.envelope.message_id for s, _ in finished] + [c.message_id for c in start]
    try:
        with transaction.atomic():
            messages = _locked(ids)
            _record(finished, messages, now)
            started = _start(start, messages, now, by)
            claims_renew(renew, now)
            return started
    except Exception:
        if not finished:
            raise
    first_error: Exception | None = None
    for one in finished:
        try:
            with transaction.atomic():
                _record([one], _locked([one[0].envelope.message_id]), now)
        except Exception as exc:
            # The log line keeps the words it always had.
            logger.exception(
                "recording the answer for message %s failed", one[0].envelope.message_id
            )
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    with transaction.atomic():
        started = _start(start, _locked(c.message_id for c in start), now, by)
        claims_renew(renew, now)
    return started


def attempts_close_abandoned(now: datetime, *, older_than: timedelta) -> int:
    """Close the attempts no worker can still be sending (started before `now -
    older_than`, no answer): outcome `unknown`, the detail saying why. A message whose
    latest attempt it is keeps `unknown` and says so in its last error, for the
    operator who decides whether to send it again. How many were closed."""
    cutoff = now - older_than
    with transaction.atomic():
        abandoned = list(
            Attempt.objects.select_for_update(skip_locked=True)
            .filter(finished_at__isnull=True, started_at__lt=cutoff)
            .values_list("pk", "message_id", "number", "started_at")
        )
        if not abandoned:
            return 0
        for pk, message_id, number, started_at in abandoned:
            detail = (
                f"abandoned: the send began at {started_at.isoformat()} and no answer was "
                "recorded; its worker stopped (killed, crashed or past its time limit), so it "
                "may or may not have arrived"
            )
            Attempt.objects.filter(pk=pk).update(
                finished_at=max(now, started_at), outcome=Outcome.UNKNOWN.value, detail=detail
            )
            Message.objects.filter(
                pk=message_id, attempt_count=number, status=Message.UNKNOWN
            ).update(last_error=detail, updated_at=_not_before_creation(now))
    return len(abandoned)
