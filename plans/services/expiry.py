"""A revision's wait for its confirmation runs out (D-C25): mark it expired, say why.

A revision awaiting confirmation longer than `plans.confirmation_expiry` (from
the moment it was recorded) expires: the entry turns EXPIRED with the moment
it ran out, it can no longer be confirmed or answered, and the agent's next
look at the plan says it must propose again. The scheduler's tick applies it
(every 15 s, so it shows without anyone asking), and a confirmation or change
request applies it first itself, so none slips through between two ticks.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import F, Q

from plans.conf import plans_conf
from plans.models import Entry, Expiry
from xworkmate.lib.durations import format_duration
from xworkmate.lib.jstime import wire_time

# The states in which the current revision waits for a person's answer.
WAITING = (Entry.AWAITING, Entry.REVISING)


def confirmation_expires_at(entry: Entry) -> datetime | None:
    """When the entry's current revision stops being confirmable; None when it does not
    wait for a confirmation (confirmed, cancelled, blocked, already expired)."""
    if entry.state not in WAITING or entry.confirmed_revision_id == entry.revision_id:
        return None
    written_at: datetime = entry.revision.written_at
    return written_at + plans_conf().confirmation_expiry


def expired_rule(entry: Entry) -> str:
    """The refusal and the agent's instruction for an expired revision (D-C25)."""
    expiry = format_duration(plans_conf().confirmation_expiry)
    when = wire_time(entry.expired_at) if entry.expired_at else "its deadline"
    return (
        f"D-C25: revision {entry.revision.number} waited for a confirmation longer than "
        f"plans.confirmation_expiry ({expiry}) and expired at {when}; it can no longer be "
        "confirmed or answered: propose it again (revise the plan, which writes a new "
        "revision) and ask the user to confirm that one"
    )


def _mark(entry_pk: int, revision_pk: int, expired_at: datetime, now: datetime) -> bool:
    # One conditional UPDATE (compare and swap): a confirmation or a revise that took the
    # entry first leaves it as they left it, since the state or revision no longer match.
    # The history row goes with it, in the same transaction (the timeline reads it).
    with transaction.atomic():
        changed = Entry.objects.filter(
            pk=entry_pk, state__in=WAITING, revision_id=revision_pk
        ).update(state=Entry.EXPIRED, expired_at=expired_at, updated_at=now)
        if changed != 1:
            return False
        Expiry.objects.get_or_create(
            entry_id=entry_pk,
            revision_id=revision_pk,
            defaults={"expired_at": expired_at, "recorded_at": now},
        )
        return True


def entry_expire_if_due(entry: Entry, *, now: datetime) -> bool:
    """Mark this entry expired if its wait ran out by `now`; whether it did now.

    Called before a confirmation or change request takes its locks, outside their
    transaction, so the mark stays when the call is then refused.
    """
    deadline = confirmation_expires_at(entry)
    if deadline is None or deadline > now:
        return False
    return _mark(entry.pk, entry.revision_id, deadline, now)


def entries_expire(*, now: datetime) -> int:
    """Mark every entry whose wait ran out by `now` (the tick's part); how many."""
    expiry = plans_conf().confirmation_expiry
    due = (
        Entry.objects.filter(state__in=WAITING, revision__written_at__lte=now - expiry)
        .exclude(Q(confirmed_revision__isnull=False) & Q(confirmed_revision=F("revision")))
        .values_list("pk", "revision_id", "revision__written_at")
    )
    # One row at a time: a single UPDATE of many entries would lock them in its own
    # order, against writers that lock a plan's entries in theirs.
    return sum(_mark(pk, revision, written + expiry, now) for pk, revision, written in due)
