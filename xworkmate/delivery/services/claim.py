"""Claim a batch of messages, mark each send when it begins, and send it (D-K30).

Three steps, each its own short transaction except the send:

1. `messages_claim` takes up to `limit` sendable messages for one batch: each
   gets the batch's token and a claim that expires (`CLAIM_LEASE`), nothing
   else. Its status, attempt count and due time stay as they were, because
   nothing of it has left the service: if the batch dies, the claim runs out
   and the message is claimable again, exactly as it was.
2. `deliveries_step` (services.record) commits, for each message about to be
   sent, its attempt row and its turn to `unknown`, re-checking inside the
   transaction that the claim is still this batch's and has not expired; the
   send starts right after that commit. So `unknown` means exactly "a send
   began and no answer was recorded", and an attempt row is always a send
   that began.
3. `message_send` sends it, outside any transaction; the answer is recorded by
   the next step as soon as it arrives.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from xworkmate import sql
from xworkmate.delivery.breaker_rules import CLOSED
from xworkmate.delivery.channels.base import Envelope, Outcome, Result
from xworkmate.delivery.models import Breaker, Message
from xworkmate.delivery.services._common import _channel

# Named as when the write path was one module (its log lines keep their logger).
logger = logging.getLogger("xworkmate.delivery.services")

# How long a batch holds the messages it claimed and has not started yet. The batch
# renews the claims of the messages still waiting in it while it runs; a batch that
# died stops renewing, and its messages are claimable again at most this long after.
CLAIM_LEASE = timedelta(seconds=20)


@dataclass(frozen=True)
class Claimed:
    """A message taken for a batch, not started: what its send will carry but the number."""

    channel: str
    token: str  # the batch's claim
    unnumbered: Envelope  # attempt 0: the number is known only when the send begins

    @property
    def message_id(self) -> int:
        return self.unnumbered.message_id

    @property
    def target(self) -> str:
        return self.unnumbered.target


@dataclass(frozen=True)
class Started:
    """A send that began: its attempt row is committed, the message is `unknown`."""

    envelope: Envelope
    channel: str
    attempt_id: int  # the Attempt row this send is recorded in


# The claim is written by hand (xworkmate.sql's reasons): through the ORM it read the
# breakers, then the messages, then updated them, ~4 ms of a worker's CPU and four
# round trips a batch while no send of the worker was under way (D-K37). Identifiers
# come from the models; values are parameters.
_MESSAGE = sql.table(Message)
_BREAKER = sql.table(Breaker)
# What the claim's UPDATE answers, read back by _CLAIMED.build: what a send and the
# batch's order need, no more (reading back every column, four of them timestamps,
# cost about as much of the worker's CPU as the statement cost the server, D-K43).
_CLAIMED = sql.columns(
    Message,
    "m",
    only=(
        "id",
        "channel",
        "purpose",
        "target",
        "body",
        "body_hash",
        "idempotency_key",
        "created_at",
        "next_attempt_at",
    ),
)
_RETURNING = ", ".join(connection.ops.quote_name(f.column) for f in _CLAIMED.fields)


def _claim(new: bool, now: datetime, limit: int, token: str) -> sql.Statement:
    """One statement that picks up to `limit` sendable messages not held by a live
    batch, skipping rows another claim has locked, and marks them `token`'s until
    `now + CLAIM_LEASE`; it answers their rows (in no particular order)."""
    at = connection.ops.adapt_datetimefield_value
    if new:
        # A worker asked at enqueue: the oldest new messages waiting, whatever their
        # grace, that one or not. Each task sends whatever is waiting when it runs,
        # so a busy outbox goes out in batches long before the tasks of the
        # messages in them come up (they then find nothing to send). The condition
        # is NEW_FOR_A_WORKER's, word for word, so its partial index
        # (delivery_message_new) keeps this a short index scan; a PostgreSQL test
        # (test_statements_together_postgres) fails if the two drift apart.
        which = "m.status = %s AND m.next_attempt_at IS NOT NULL"
        which_params: list[Any] = [Message.PENDING]
        order = "m.id"
    else:
        # The dispatch job: pending or failed and due, or unknown and due (only
        # messages on channels that de-duplicate get a due time after an unknown).
        which = "m.next_attempt_at <= %s AND m.status IN (%s, %s, %s)"
        which_params = [at(now), Message.PENDING, Message.FAILED, Message.UNKNOWN]
        order = "m.next_attempt_at, m.id"
    skip = (
        " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    )
    return (
        f"WITH picked AS MATERIALIZED (SELECT m.id FROM {_MESSAGE} m "  # noqa: S608
        f"WHERE {which} "
        # Not held by a live batch: never claimed, or its batch's claim ran out.
        "AND (m.claim_expires_at IS NULL OR m.claim_expires_at <= %s) "
        # D-K33: nothing of a channel whose circuit breaker is open, but its probe.
        # Asked of the breakers once per claim, not per message (subqueries that do
        # not refer to the message): as a join, the planner read every sendable
        # message and sorted them before taking the first `limit`, so a claim cost
        # as much as the backlog was long; this way it reads the index in order
        # and stops at `limit` (D-K43).
        f"AND (m.channel NOT IN (SELECT b.channel FROM {_BREAKER} b WHERE b.state <> %s) "
        f"OR (m.channel, m.id) IN (SELECT b.channel, b.probe_message_id FROM {_BREAKER} b "
        "WHERE b.state <> %s)) "
        f"ORDER BY {order} LIMIT %s{skip}) "
        f"UPDATE {_MESSAGE} SET claimed_by = %s, claim_expires_at = %s "
        f"WHERE id IN (SELECT id FROM picked) RETURNING {_RETURNING}",
        [*which_params, at(now), CLOSED, CLOSED, limit, token, at(now + CLAIM_LEASE)],
    )


# A claim asks for up to `limit` messages in order, so the index read in that order,
# stopping at `limit`, is the plan that costs what it takes whatever the backlog.
# PostgreSQL chooses it only if its statistics say many messages are sendable: with
# statistics gathered while the outbox was empty (autovacuum analyses a table minutes
# after it changed, and a backlog comes all at once, after an outage) it read every
# sendable message through a bitmap and sorted them all for each claim (5 ms a claim
# of 100 from a backlog of 10,000, the worker sending nothing meanwhile). Without
# bitmap scans, for this transaction only, the ordered read is the cheapest left
# (D-K46).
_ORDERED_READ: sql.Statement = ("SET LOCAL enable_bitmapscan = off", [])


def _claim_statements(new: bool, now: datetime, limit: int, token: str) -> list[sql.Statement]:
    """The claim, after what steers its plan: one exchange with the server."""
    claim = _claim(new, now, limit, token)
    return [_ORDERED_READ, claim] if connection.vendor == "postgresql" else [claim]


def messages_claim(*, new: bool, now: datetime, limit: int) -> list[Claimed]:
    """Take up to `limit` messages for one batch, in one transaction; [] when there is none.

    `new` (a worker asked at enqueue): the oldest new messages, whatever their
    grace; otherwise (the dispatch job): the most overdue. Each is only marked
    as this batch's until `now + CLAIM_LEASE` (see the module docstring).
    """
    token = secrets.token_hex(8)
    with transaction.atomic():
        *_, rows = sql.together(_claim_statements(new, now, limit, token))
    messages = [m for m in (_CLAIMED.build(row) for row in rows or ()) if m is not None]
    if new:
        messages.sort(key=lambda m: m.pk)
    else:
        messages.sort(key=lambda m: (m.next_attempt_at, m.pk))
    return [
        Claimed(
            channel=message.channel,
            token=token,
            unnumbered=Envelope(
                message_id=message.pk,
                purpose=message.purpose,
                target=message.target,
                body=message.body,
                body_hash=message.body_hash,
                idempotency_key=message.idempotency_key,
                attempt=0,
                created_at=message.created_at,
            ),
        )
        for message in messages
    ]


def _still_held(claims: list[Claimed]) -> QuerySet[Message]:
    """The claimed messages still held by the batch that claimed them: a claim another
    batch took over after it ran out is that batch's, and left alone."""
    held = Q(pk__in=[])
    for token in {claim.token for claim in claims}:
        held |= Q(pk__in=[c.message_id for c in claims if c.token == token], claimed_by=token)
    return Message.objects.filter(held)


def claims_renew(claims: list[Claimed], now: datetime) -> None:
    """Hold the batch's messages still waiting for another CLAIM_LEASE (in the caller's
    transaction)."""
    if claims:
        _still_held(claims).update(claim_expires_at=now + CLAIM_LEASE)


def messages_release(claims: list[Claimed], now: datetime) -> None:
    """Drop the claims of messages whose send never started (the batch ran out of time):
    they are as they were, with no attempt counted, and due at once (the dispatch job
    need not wait for a new message's grace: a worker already tried)."""
    if claims:
        _still_held(claims).update(claimed_by="", claim_expires_at=None, next_attempt_at=now)


def envelope_of(claim: Claimed, attempt: int) -> Envelope:
    return dataclasses.replace(claim.unnumbered, attempt=attempt)


def message_send(started: Started) -> Result:
    """Send a started message through its channel (outside any transaction)."""
    channel = _channel(started.channel)
    try:
        return channel.send(started.envelope)
    # A channel bug must not leave the attempt open: it is an unknown outcome.
    except Exception as exc:
        logger.exception(
            "channel %s raised while sending message %s",
            started.channel,
            started.envelope.message_id,
        )
        return Result(Outcome.UNKNOWN, f"the channel raised {type(exc).__name__}: {exc}")
