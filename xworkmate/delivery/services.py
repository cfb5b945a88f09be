"""The outbox's write path: enqueue, claim, record what the channel answered, acknowledge.

Every message goes through one life: `outbox_enqueue` writes it in the
caller's transaction; a worker (on commit) or the dispatch job claims it, in a
batch (`messages_claim`), and sends it through its channel;
`messages_record_outcomes` writes what the channel answered and runs the
purpose's outcome handlers in that same transaction.
The `record` channel is not pushed: the bridge fetches and acknowledges.

Claiming marks the message `unknown` before anything is sent, and commits:
a worker that dies mid-send leaves it unknown, never sent, and no second
dispatcher takes it meanwhile (row locks with SKIP LOCKED decide who claims).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Q, QuerySet, Value
from django.db.models.functions import Greatest

from xworkmate.config import DELIVERY_PURPOSES, DeliveryChannel
from xworkmate.config.kernel import DELIVERY, unknown_cooldown
from xworkmate.delivery.channels.base import Channel, Envelope, Outcome, Result
from xworkmate.delivery.channels.registry import build_channel
from xworkmate.delivery.models import NEW_FOR_A_WORKER, Attempt, Message
from xworkmate.delivery.outcomes import (
    OutcomeHandler,
    register_outcome_handler,
    run_outcome_handlers,
    unregister_outcome_handler,
)
from xworkmate.delivery.policies import RetryRules, after_send, body_hash
from xworkmate.lib.errors import InputError
from xworkmate.lib.wire import check_max_length, js_trim

logger = logging.getLogger(__name__)

DELIVER_TASK = "xworkmate.delivery.deliver"

__all__ = [
    "DELIVER_TASK",
    "Answered",
    "Claimed",
    "DeliveryError",
    "OutcomeHandler",
    "channel_config",
    "message_acknowledge",
    "message_request_resend",
    "message_send",
    "messages_claim",
    "messages_record_outcomes",
    "outbox_enqueue",
    "register_outcome_handler",
    "retry_rules",
    "unregister_outcome_handler",
]


class DeliveryError(InputError):
    """Bad input to the outbox; the message names the field and the rule."""


# --- configuration ---------------------------------------------------------------------


def channel_config(name: str) -> DeliveryChannel:
    for channel in settings.XWORKMATE.delivery_channels:
        if channel.name == name:
            return channel
    raise DeliveryError(f"channel: no channel named {name!r} in the config")


def _channel(name: str) -> Channel:
    return build_channel(channel_config(name))


def retry_rules() -> RetryRules:
    config = settings.XWORKMATE
    return RetryRules(
        first=DELIVERY.of(config).retry_first,
        maximum=DELIVERY.of(config).retry_max,
        max_attempts=DELIVERY.of(config).max_attempts,
        unknown_cooldown=unknown_cooldown(config),
    )


def _is_pushed(channel_name: str) -> bool:
    return channel_config(channel_name).kind != "record"


# --- enqueue -------------------------------------------------------------------------


def _checked(purpose: str, target: str, body: str, idempotency_key: str) -> tuple[str, str, str]:
    if purpose not in DELIVERY_PURPOSES:
        known = ", ".join(DELIVERY_PURPOSES)
        raise DeliveryError(f"purpose: must be one of {known} (got {purpose!r})")
    target = js_trim(target) if isinstance(target, str) else ""
    if not target:
        raise DeliveryError("target: required, the session key the message is for")
    check_max_length("target", target, error=DeliveryError)
    key = js_trim(idempotency_key) if isinstance(idempotency_key, str) else ""
    if not key:
        raise DeliveryError("idempotency_key: required, the same for every enqueue of one message")
    check_max_length("idempotency_key", key, error=DeliveryError)
    if not isinstance(body, str) or not body.strip():
        raise DeliveryError("body: required, the message text")
    limit = DELIVERY.of(settings.XWORKMATE).max_body_bytes
    if len(body.encode("utf-8", "surrogatepass")) > limit:
        raise DeliveryError(
            f"body: must be at most {limit} bytes of UTF-8 (delivery.max_body_bytes)"
        )
    if "\0" in body or any(0xD800 <= ord(c) <= 0xDFFF for c in body):
        raise DeliveryError("body: must not contain a NUL character or a lone surrogate")
    return target, body, key


def outbox_enqueue(
    *, purpose: str, target: str, body: str, idempotency_key: str, now: datetime
) -> Message:
    """Write one message in the caller's transaction; the same key again returns the first.

    Nothing is sent before the transaction commits: if it rolls back, the message
    never existed; if it commits, a worker is asked to send it at once, and the
    dispatch job sends it after `delivery.dispatch_grace` if no worker did.
    """
    target, body, key = _checked(purpose, target, body, idempotency_key)
    channel_name = settings.XWORKMATE.delivery_routes[purpose]
    pushed = _is_pushed(channel_name)
    grace = DELIVERY.of(settings.XWORKMATE).dispatch_grace
    try:
        # A savepoint: a concurrent enqueue of the same message must not break
        # the caller's transaction; the unique key decides, and both get one row.
        with transaction.atomic():
            message = Message.objects.create(
                purpose=purpose,
                channel=channel_name,
                target=target,
                body=body,
                body_hash=body_hash(body),
                idempotency_key=key,
                next_attempt_at=now + grace if pushed else None,
                created_at=now,
                updated_at=now,
            )
    except IntegrityError:
        return Message.objects.get(purpose=purpose, target=target, idempotency_key=key)
    if pushed:
        message_id = message.pk
        transaction.on_commit(lambda: _ask_a_worker(message_id))
    return message


def _ask_a_worker(message_id: int) -> None:
    from celery import current_app

    # By name: the task module imports this one. A lost message is no loss:
    # the dispatch job sends what no worker started within the grace.
    try:
        current_app.send_task(DELIVER_TASK, args=[message_id])
    except Exception:  # the broker is down: the dispatch job will send it
        logger.warning(
            "could not queue message %s; the dispatch job will send it", message_id, exc_info=True
        )


# --- claim, send, record --------------------------------------------------------------


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


def _not_before_creation(now: datetime) -> Greatest:
    # A row's updated_at never precedes its created_at (a check constraint), even
    # when `now` comes from a clock a little behind the one that created it.
    return Greatest(Value(now, output_field=DateTimeField()), F("created_at"))


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


# What the channel answered; None for a claimed message whose send never started
# (its batch ran out of time): it is released as if it had not been claimed.
Answered = tuple[Claimed, Result | None]


def _record(answered: list[Answered], now: datetime) -> list[Message]:
    """Write the answers (one transaction, opened by the caller) and run the handlers.

    One UPDATE per distinct answer rather than one per message: in a batch most
    answers are alike ("HTTP 200"), so a batch costs a handful of statements.
    """
    ids = {claimed.envelope.message_id for claimed, _ in answered}
    # Locked in id order, as every recorder locks them: two recorders that share
    # messages (one whose lease ran out, and the next attempt's) never deadlock.
    messages = {
        message.pk: message
        for message in Message.objects.select_for_update().filter(pk__in=ids).order_by("pk")
    }
    rules = retry_rules()
    attempts_by_answer: dict[tuple[str, str], list[int]] = {}
    messages_by_state: dict[tuple[str, datetime | None, str], list[int]] = {}
    changed: list[tuple[Message, Outcome, bool]] = []
    released: list[Claimed] = []
    for claimed, result in answered:
        message = messages[claimed.envelope.message_id]
        number = claimed.envelope.attempt
        owned = message.attempt_count == number and message.status != Message.SENT
        if result is None:
            if owned:
                released.append(claimed)
            continue
        attempts_by_answer.setdefault((result.outcome.value, result.detail), []).append(
            claimed.attempt_id
        )
        if not owned:
            # A later attempt (after this one outlived its lease) or an ack owns
            # the status now; this answer stays in the attempt's record only.
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
    for (outcome, detail), attempt_ids in attempts_by_answer.items():
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
    return [messages[claimed.envelope.message_id] for claimed, _ in answered]


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


def messages_record_outcomes(*, answered: list[Answered], now: datetime) -> list[Message]:
    """Write what the channel answered for each claimed attempt, and run the handlers.

    All in one transaction. If an outcome handler raises, that rolls back the
    batch; each answer is then written in a transaction of its own, so only the
    message whose handler failed stays unanswered (`unknown`, as after a worker
    that died), and the first error is raised again once the others are written.
    """
    if not answered:
        return []
    try:
        with transaction.atomic():
            return _record(answered, now)
    except Exception:
        if len(answered) == 1:
            raise
    recorded: list[Message] = []
    first_error: Exception | None = None
    for one in answered:
        try:
            with transaction.atomic():
                recorded.extend(_record([one], now))
        except Exception as exc:
            logger.exception(
                "recording the answer for message %s failed", one[0].envelope.message_id
            )
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    return recorded


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


