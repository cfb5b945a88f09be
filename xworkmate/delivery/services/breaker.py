"""A channel's circuit breaker (D-K33): count failed sends, stop sending, fall back, probe.

The hooks the sending loop calls are small on purpose:

- `breakers_observe` (in a batch step's transaction, after its answers are
  written) counts each channel's answers and opens or closes its breaker;
- `breaker_blocked` says which channels take no send now and which messages
  are their probes (a step begins none of the others; a claim, written by hand
  in services.claim, asks the same of the breaker table in its statement);
- `breakers_tick` (the dispatch job, before it claims) turns an open breaker
  half-open after its cool-down and picks its probe, and moves the messages of
  open channels to their fallback, or holds them with the reason.

Lock order, as every writer of the outbox: messages first (in id order), then a
breaker row. `breakers_observe` runs after the step locked its messages and
touches no other message; the tick locks a message (SKIP LOCKED) before it
updates a breaker. So no two of them wait on each other in a circle.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from xworkmate import sql
from xworkmate.config.kernel import BREAKER_PURPOSE, DELIVERY
from xworkmate.delivery.breaker_rules import (
    CLOSED,
    HALF_OPEN,
    OPEN,
    Answer,
    Verdict,
    after_answers,
    fallback_route,
)
from xworkmate.delivery.models import Breaker, Message
from xworkmate.delivery.services._common import _is_pushed, _not_before_creation
from xworkmate.delivery.services.enqueue import _write_on

logger = logging.getLogger("xworkmate.delivery.services")

# Messages the tick moves or holds per open channel and run; the next run goes on.
REROUTE_BATCH = 500
# Still to be sent by a dispatcher: pending or failed, with a time to be sent by.
_SENDABLE = Q(status__in=(Message.PENDING, Message.FAILED), next_attempt_at__isnull=False)


def _iso(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "?"


def _fallbacks() -> dict[str, str]:
    return {c.name: c.fallback for c in settings.XWORKMATE.delivery_channels if c.fallback}


def _unclaimed(now: datetime) -> Q:
    return Q(claim_expires_at__isnull=True) | Q(claim_expires_at__lte=now)


# What a step needs of the breakers: (state, probe message id) of each channel whose
# breaker is not closed with no failure counted. Usually no row at all.
Active = dict[str, tuple[str, int | None]]


def breakers_statement() -> sql.Statement:
    """The read of the breakers a step must look at: open, half-open, or counting
    failures (answered by breakers_of). A batch takes it once per step, together with
    its other read (D-K35)."""
    return (
        f"SELECT channel, state, probe_message_id FROM {sql.table(Breaker)} "  # noqa: S608
        "WHERE NOT (state = %s AND failures = 0)",
        [CLOSED],
    )


def breakers_of(answer: list[tuple[Any, ...]] | None) -> Active:
    return {channel: (state, probe) for channel, state, probe in answer or ()}


def breakers_active() -> Active:
    """The breakers a step must look at: open, half-open, or counting failures.

    One hand-written read (xworkmate.sql's reasons): the ORM's compiling cost more
    than the answer (bench/delivery.py).
    """
    return breakers_of(sql.together([breakers_statement()])[0])


def _blocked_in(active: Active) -> tuple[set[str], set[int]]:
    channels: set[str] = set()
    probes: set[int] = set()
    for channel, (state, probe) in active.items():
        if state != CLOSED:
            channels.add(channel)
            if probe is not None:
                probes.add(probe)
    return channels, probes


def breaker_blocked() -> tuple[set[str], set[int]]:
    """The channels whose breaker is open or half-open, and the probes they allow."""
    return _blocked_in(breakers_active())


def breaker_hold_back(claims: Iterable[tuple[int, str, str]], active: Active) -> set[int]:
    """Of (message id, channel, claim token) about to begin, those a breaker opened on
    since they were claimed: released at once (nothing counted), so the tick can move
    them. Their ids; `active` is breakers_active() as the step last read it."""
    channels, probes = _blocked_in(active)
    if not channels:
        return set()
    back = [
        (mid, token) for mid, channel, token in claims if channel in channels and mid not in probes
    ]
    for mid, token in back:
        Message.objects.filter(pk=mid, claimed_by=token).update(
            claimed_by="", claim_expires_at=None
        )
    return {mid for mid, _ in back}


# --- counting answers (in a step's transaction) ----------------------------------------------


def breakers_observe(answers: Iterable[tuple[str, Answer]], now: datetime, active: Active) -> bool:
    """Count the answers a step just recorded, per channel, and open or close breakers;
    whether a breaker row was written (`active`, breakers_active(), is then stale)."""
    by_channel: dict[str, list[Answer]] = {}
    for channel, answer in answers:
        by_channel.setdefault(channel, []).append(answer)
    failing = {c for c, seen in by_channel.items() if any(not a.sent for a in seen)}
    # All confirmed on healthy channels (the usual step): nothing to count, no write.
    counting = set(by_channel) & set(active)
    if not (failing or counting):
        return False
    written = False
    threshold = DELIVERY.of(settings.XWORKMATE).breaker_failures
    for channel in sorted(failing | counting):
        if not _is_pushed(channel):
            continue  # a record channel is polled; nothing of it is sent here
        Breaker.objects.get_or_create(channel=channel, defaults={"changed_at": now})
        breaker = Breaker.objects.select_for_update().get(channel=channel)
        verdict = after_answers(
            breaker.state,
            breaker.failures,
            breaker.probe_message_id,
            by_channel[channel],
            threshold=threshold,
        )
        _apply(breaker, verdict, by_channel[channel], now)
        written = True
    return written


def _apply(breaker: Breaker, verdict: Verdict, answers: list[Answer], now: datetime) -> None:
    was = breaker.state
    breaker.failures = verdict.failures
    if verdict.last_failure is not None:
        breaker.last_error = verdict.last_failure.detail
        breaker.last_target = verdict.last_failure.target
    cooldown = DELIVERY.of(settings.XWORKMATE).breaker_cooldown
    if verdict.opened:
        breaker.state = OPEN
        breaker.probe_after = now + cooldown
        breaker.probe_message_id = None
        breaker.changed_at = now
        if was == CLOSED:
            breaker.opened_at = now
            breaker.times_opened += 1
            breaker.note = (
                f"opened at {now.isoformat()} after {verdict.failures} consecutive failed "
                f"sends (last: {breaker.last_error}); a probe after {_iso(breaker.probe_after)}"
            )
        else:
            breaker.note = (
                f"the probe failed at {now.isoformat()} ({breaker.last_error}); open again, "
                f"the next probe after {_iso(breaker.probe_after)}"
            )
    elif verdict.closed:
        probe = next(a for a in answers if a.message_id == breaker.probe_message_id)
        breaker.state = CLOSED
        breaker.changed_at = now
        breaker.note = (
            f"closed at {now.isoformat()}: the probe (message {probe.message_id}) was confirmed; "
            f"it had been open since {_iso(breaker.opened_at)}"
        )
        breaker.opened_at = breaker.probe_after = breaker.probe_message_id = None
    breaker.save()
    if verdict.opened and was == CLOSED:
        # One notice per outage, not one per message: a failed probe that opens it
        # again is in the admin, not another message (D-K33).
        _notify(breaker, "opened", target=breaker.last_target, now=now)
    elif verdict.closed:
        _notify(breaker, "closed", target=probe.target, now=now)


def _notify(breaker: Breaker, what: str, *, target: str, now: datetime) -> None:
    """One message on the channel's fallback saying its breaker opened (or closed)."""
    blocked, _ = breaker_blocked()
    where = fallback_route(breaker.channel, _fallbacks(), blocked | {breaker.channel})
    if where is None or not target:
        logger.warning(
            "channel %s: breaker %s; no fallback to tell (the admin shows it)",
            breaker.channel,
            what,
        )
        return
    if what == "opened":
        body = (
            f"Delivery circuit breaker OPEN on channel {breaker.channel}: "
            f"{breaker.failures} consecutive sends failed (last: {breaker.last_error}). "
            f"Its messages now go to {where} until a probe send succeeds "
            f"(the first probe after {_iso(breaker.probe_after)}).\n"
            f"投递熔断：通道 {breaker.channel} 连续 {breaker.failures} 次发送失败，"
            f"其消息改走 {where}，直到探测发送成功。"
        )
    else:
        body = (
            f"Delivery circuit breaker CLOSED on channel {breaker.channel}: a probe send "
            f"was confirmed; its messages go to it again.\n"
            f"投递熔断解除：通道 {breaker.channel} 探测发送成功，消息恢复走该通道。"
        )
    _write_on(
        where,
        purpose=BREAKER_PURPOSE,
        target=target,
        body=body,
        key=f"breaker:{breaker.channel}:{breaker.times_opened}:{what}",
        now=now,
    )


# --- the dispatch job's tick: probe, move, hold ----------------------------------------------


def breakers_tick(now: datetime) -> int:
    """Half-open the breakers whose cool-down is over, pick their probes, and move (or
    hold) the messages of the open ones. How many messages were moved to a fallback."""
    Breaker.objects.filter(state=OPEN, probe_after__lte=now).update(
        state=HALF_OPEN,
        probe_message_id=None,
        changed_at=now,
        note=f"half-open since {now.isoformat()}: one probe send decides",
    )
    for breaker in Breaker.objects.filter(state=HALF_OPEN):
        _probe(breaker, now)
    moved = 0
    blocked, _ = breaker_blocked()
    for breaker in Breaker.objects.filter(state=OPEN):
        moved += _reroute(breaker, blocked, now)
    return moved


def _probe(breaker: Breaker, now: datetime) -> None:
    """Give a half-open breaker its probe: the oldest message still to be sent on it."""
    if breaker.probe_message_id is not None:
        probe = Message.objects.filter(pk=breaker.probe_message_id).first()
        if probe is not None and probe.channel == breaker.channel:
            if probe.status in (Message.PENDING, Message.FAILED) and probe.next_attempt_at:
                return  # waiting to be sent
            if probe.status == Message.UNKNOWN:
                if not _in_flight(probe):
                    # Its send began and no answer will come (abandoned): not a success.
                    _reopen(breaker, f"the probe (message {probe.pk}) ended unknown", now)
                return
        # Gone, answered some other way, or given up: another message probes.
    with transaction.atomic():
        candidate = (
            Message.objects.select_for_update(skip_locked=True)
            .filter(_SENDABLE, _unclaimed(now), channel=breaker.channel)
            .order_by("id")
            .values_list("pk", flat=True)
            .first()
        )
        if candidate is None:
            return  # nothing to probe with yet: the next message on the channel will be
        changed = Breaker.objects.filter(
            pk=breaker.pk, state=HALF_OPEN, probe_message_id=breaker.probe_message_id
        ).update(probe_message_id=candidate, changed_at=now)
        if changed:
            Message.objects.filter(pk=candidate).update(
                next_attempt_at=now,
                route_note=(
                    f"the probe of the circuit breaker of channel {breaker.channel} "
                    f"(picked at {now.isoformat()}): its answer closes the breaker or "
                    "opens it again"
                ),
            )


def _in_flight(message: Message) -> bool:
    return message.attempts.filter(finished_at__isnull=True).exists()


def _reopen(breaker: Breaker, why: str, now: datetime) -> None:
    cooldown = DELIVERY.of(settings.XWORKMATE).breaker_cooldown
    Breaker.objects.filter(pk=breaker.pk, state=HALF_OPEN).update(
        state=OPEN,
        probe_message_id=None,
        probe_after=now + cooldown,
        changed_at=now,
        note=f"{why} at {now.isoformat()}; open again, the next probe after "
        f"{(now + cooldown).isoformat()}",
    )


def _reroute(breaker: Breaker, blocked: set[str], now: datetime) -> int:
    """Move the open channel's messages still to be sent to its fallback, or hold them.

    Only a message nothing of which may have arrived moves (pending, or failed): one
    whose last send's outcome is unknown stays, since a second channel could then
    deliver it twice (D-K30). Each says where it went and why, or why it waits.
    """
    channel = breaker.channel
    where = fallback_route(channel, _fallbacks(), blocked)
    why = (
        f"the circuit breaker of channel {channel} opened at "
        f"{_iso(breaker.opened_at)} after "
        f"{breaker.failures} consecutive failed sends (last: {breaker.last_error})"
    )
    moved = 0
    with transaction.atomic():
        rows = list(
            Message.objects.select_for_update(skip_locked=True)
            .filter(_unclaimed(now), channel=channel)
            .filter(_SENDABLE | Q(status=Message.UNKNOWN, next_attempt_at__isnull=False))
            .order_by("id")
            .values_list("pk", "status")[:REROUTE_BATCH]
        )
        movable = [pk for pk, status in rows if status != Message.UNKNOWN]
        unknown = [pk for pk, status in rows if status == Message.UNKNOWN]
        if where is not None and movable:
            Message.objects.filter(pk__in=movable, routed_from="").update(routed_from=channel)
            moved = Message.objects.filter(pk__in=movable).update(
                channel=where,
                status=Message.PENDING,
                next_attempt_at=now if _is_pushed(where) else None,
                route_note=f"moved from {channel} to {where} at {now.isoformat()}: {why}",
                updated_at=_not_before_creation(now),
            )
        held = unknown if where is not None else movable + unknown
        if held:
            probe_at = _iso(breaker.probe_after)
            reason = (
                "no fallback channel takes it"
                if where is None
                else "its last send's outcome is unknown, and another channel could deliver "
                "it twice"
            )
            note = f"held on {channel}: {why}; {reason}, so it waits for the probe after {probe_at}"
            Message.objects.filter(pk__in=held).exclude(route_note=note).update(route_note=note)
    if moved:
        logger.warning("channel %s: breaker open, %d messages moved to %s", channel, moved, where)
    return moved


__all__ = [
    "Active",
    "breaker_blocked",
    "breaker_hold_back",
    "breakers_active",
    "breakers_observe",
    "breakers_of",
    "breakers_statement",
    "breakers_tick",
]
