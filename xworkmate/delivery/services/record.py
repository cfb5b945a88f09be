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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from xworkmate import sql
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
from xworkmate.delivery.services.breaker import (
    Active,
    breaker_hold_back,
    breakers_active,
    breakers_observe,
    breakers_of,
    breakers_statement,
)
from xworkmate.delivery.services.claim import Claimed, Started, claims_renew, envelope_of

# Named as when the write path was one module (its log lines keep their logger).
logger = logging.getLogger("xworkmate.delivery.services")

# A started send and the outcome its channel reported.
SendOutcome = tuple[Started, Result]


@dataclass(frozen=True)
class _Row:
    """What a step reads of a locked message: enough to judge an answer and a claim."""

    status: str
    attempt_count: int
    claimed_by: str
    claim_live: bool  # claimed, and the claim has not run out at the step's `now`
    resend_requested_by_id: int | None


@dataclass  # not frozen: the handlers' protocol declares plain attributes
class _Answered:
    """The message as an outcome handler sees it (outcomes.RecordedMessage), built from
    what the step knows: no second read of the row."""

    pk: int
    purpose: str
    target: str
    status: str
    idempotency_key: str
    body_hash: str
    last_error: str
    updated_at: datetime


# The hot statements of a step are written by hand (xworkmate.sql's reasons): a step
# runs for every few messages a worker sends, and through the ORM compiling its six
# statements cost ~3 ms of CPU, three times what the database spent on them
# (bench/delivery.py, D-K34). Identifiers come from the models; values are parameters.
_MESSAGE = sql.table(Message)
_ATTEMPT = sql.table(Attempt)


def _greatest() -> str:
    # updated_at never precedes created_at (a check constraint), even when `now` comes
    # from a clock a little behind the one that created the row: as _not_before_creation.
    return "GREATEST" if connection.vendor == "postgresql" else "MAX"


def _at(moment: datetime | None) -> Any:
    return connection.ops.adapt_datetimefield_value(moment)


def _locked(ids: Iterable[int], now: datetime) -> sql.Statement:
    """The read that locks the step's messages (answered by _rows)."""
    # Locked in id order, as every writer of a step locks them: two steps that share
    # messages (one whose claim ran out, and the batch that took it over) never
    # deadlock.
    wanted = sorted(set(ids))
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    where, values = sql.one_of("id", wanted)
    return (
        "SELECT id, status, attempt_count, claimed_by, "  # noqa: S608
        "claim_expires_at IS NOT NULL AND claim_expires_at > %s, resend_requested_by_id "
        f"FROM {_MESSAGE} WHERE {where} ORDER BY id{lock}",
        [_at(now), *values],
    )


def _rows(answer: list[tuple[Any, ...]] | None) -> dict[int, _Row]:
    return {
        pk: _Row(status, count, claimed_by, bool(live), resend_by)
        for pk, status, count, claimed_by, live, resend_by in answer or ()
    }


def _update(table: str, sets: str, params: list[Any], ids: list[int]) -> sql.Statement:
    where, values = sql.one_of("id", ids)
    return f"UPDATE {table} SET {sets} WHERE {where}", [*params, *values]  # noqa: S608


# What a recorded answer asks of the outcome handlers: the message as they see it, the
# outcome, and whether it is final.
_Handled = tuple[_Answered, Outcome, bool]


def _record(
    outcomes: list[SendOutcome], messages: dict[int, _Row], now: datetime
) -> tuple[list[sql.Statement], list[_Handled]]:
    """The writes that put the outcomes into the locked rows, and the handlers' calls.

    One UPDATE per distinct outcome rather than one per message: in a step most
    outcomes are alike ("HTTP 200"), so it costs a handful of statements.
    """
    rules = retry_rules()
    attempts_by_outcome: dict[tuple[str, str], list[int]] = {}
    messages_by_state: dict[tuple[str, datetime | None, str], list[int]] = {}
    changed: list[_Handled] = []
    for started, result in outcomes:
        envelope = started.envelope
        message = messages[envelope.message_id]
        attempts_by_outcome.setdefault((result.outcome.value, result.detail), []).append(
            started.attempt_id
        )
        if message.attempt_count != envelope.attempt or message.status == Message.SENT:
            # A later attempt (after this one was abandoned) or an ack owns the
            # status now; this outcome stays in the attempt's record only.
            continue
        state = after_send(
            result.outcome,
            attempt=envelope.attempt,
            deduplicates=_channel(started.channel).deduplicates,
            rules=rules,
            now=now,
        )
        last_error = "" if state.status == Message.SENT else result.detail
        key = (state.status, state.next_attempt_at, last_error)
        messages_by_state.setdefault(key, []).append(envelope.message_id)
        answered = _Answered(
            pk=envelope.message_id,
            purpose=envelope.purpose,
            target=envelope.target,
            status=state.status,
            idempotency_key=envelope.idempotency_key,
            body_hash=envelope.body_hash,
            last_error=last_error,
            updated_at=max(now, envelope.created_at),
        )
        changed.append((answered, result.outcome, state.final))
    # An attempt the dispatch job already closed as abandoned keeps the answer that
    # finally came: it is the truth about that send.
    writes = [
        _update(
            _ATTEMPT,
            "finished_at = %s, outcome = %s, detail = %s",
            [_at(now), outcome, detail],
            attempt_ids,
        )
        for (outcome, detail), attempt_ids in attempts_by_outcome.items()
    ]
    writes += [
        _update(
            _MESSAGE,
            f"status = %s, next_attempt_at = %s, sent_at = %s, last_error = %s, "
            f"updated_at = {_greatest()}(%s, created_at)",
            [
                status,
                _at(next_attempt_at),
                _at(now if status == Message.SENT else None),
                last_error,
                _at(now),
            ],
            message_ids,
        )
        for (status, next_attempt_at, last_error), message_ids in messages_by_state.items()
    ]
    return writes, changed


def _observe(outcomes: list[SendOutcome], now: datetime, active: Active) -> bool:
    """D-K33: every answer counts for (or against) the channel it was sent on; whether
    a breaker row was written (see breakers_observe)."""
    return breakers_observe(
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
        active,
    )


def _startable(
    claims: list[Claimed], messages: dict[int, _Row], active: Active
) -> list[tuple[Claimed, _Row]]:
    """The claims still this batch's, whose sends may begin."""
    # D-K33: a channel whose breaker opened since the claim takes no more sends.
    held_back = breaker_hold_back(((c.message_id, c.channel, c.token) for c in claims), active)
    startable: list[tuple[Claimed, _Row]] = []
    for claim in claims:
        message = messages.get(claim.message_id)
        if (
            message is None
            or message.claimed_by != claim.token
            or not message.claim_live
            or message.status == Message.SENT
            or claim.message_id in held_back
        ):
            # The claim ran out and another batch may hold it, or it was
            # acknowledged meanwhile: this batch must not send it.
            continue
        startable.append((claim, message))
    return startable


def _start(startable: list[tuple[Claimed, _Row]], now: datetime, by: str) -> list[sql.Statement]:
    """The writes that begin these sends: their attempt rows (the first statement,
    answering each attempt's id and message id), then `unknown`."""
    started_at = _at(now)
    text, params = sql.insert_rows(
        Attempt,
        ["message", "number", "channel", "started_at", "outcome", "detail", "by", "resent_by"],
        [
            [
                claim.message_id,
                message.attempt_count + 1,
                claim.channel,
                started_at,
                "",
                "",
                by,
                message.resend_requested_by_id,
            ]
            for claim, message in startable
        ],
    )
    writes: list[sql.Statement] = [(f"{text} RETURNING id, message_id", params)]
    # The lease of a started send: nobody sends it again before the cooldown, and
    # then only when its channel de-duplicates (after_send decides the rest).
    cooldown = unknown_cooldown(settings.XWORKMATE)
    leases: dict[datetime | None, list[int]] = {}
    for claim, _ in startable:
        lease = now + cooldown if _channel(claim.channel).deduplicates else None
        leases.setdefault(lease, []).append(claim.message_id)
    writes += [
        _update(
            _MESSAGE,
            "status = %s, attempt_count = attempt_count + 1, next_attempt_at = %s, "
            "resend_requested_by_id = NULL, claimed_by = '', claim_expires_at = NULL, "
            f"updated_at = {_greatest()}(%s, created_at)",
            [Message.UNKNOWN, _at(lease), _at(now)],
            ids,
        )
        for lease, ids in leases.items()
    ]
    return writes


def _record_and_start(
    finished: list[SendOutcome], start: list[Claimed], renew: list[Claimed], now: datetime, by: str
) -> list[Started]:
    """One step's writes, in the caller's transaction.

    A step reads in one exchange with the database and writes in one more (D-K35):
    the locked messages and the breakers, then every UPDATE and the attempts'
    INSERT together. The outcome handlers run after those writes, on rows that
    already say what they were told.
    """
    messages: dict[int, _Row] = {}
    active: Active = {}
    if finished or start:
        # The breakers are read once a step (usually no row), again only if an answer
        # just opened or closed one: a send begun after that must see it.
        ids = [s.envelope.message_id for s, _ in finished] + [c.message_id for c in start]
        locked, breakers = sql.together([_locked(ids, now), breakers_statement()])
        messages, active = _rows(locked), breakers_of(breakers)
    writes, handled = _record(finished, messages, now)
    if _observe(finished, now, active):
        active = breakers_active()
    startable = _startable(start, messages, active)
    first_start = len(writes)
    if startable:
        writes += _start(startable, now, by)
    answers = sql.together(writes)
    attempt_of = {
        message_id: pk for pk, message_id in (answers[first_start] if startable else None) or ()
    }
    for answered, outcome, final in handled:
        run_outcome_handlers(answered, outcome, final)
    claims_renew(renew, now)
    return [
        Started(
            envelope=envelope_of(claim, message.attempt_count + 1),
            channel=claim.channel,
            attempt_id=attempt_of[claim.message_id],
        )
        for claim, message in startable
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
    try:
        with transaction.atomic():
            return _record_and_start(finished, start, renew, now, by)
    except Exception:
        if not finished:
            raise
    first_error: Exception | None = None
    for one in finished:
        try:
            with transaction.atomic():
                _record_and_start([one], [], [], now, by)
        except Exception as exc:
            # The log line keeps the words it always had.
            logger.exception(
                "recording the answer for message %s failed", one[0].envelope.message_id
            )
            first_error = first_error or exc
    if first_error is not None:
        raise first_error
    with transaction.atomic():
        return _record_and_start([], start, renew, now, by)


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
