"""Reads of the outbox."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Min, QuerySet
from django.utils.translation import gettext as _

from xworkmate.cards import AdminNotice
from xworkmate.delivery.models import Breaker, Message

__all__ = [
    "breaker_notices",
    "breaker_states",
    "messages_with_ids",
    "outbox_metrics",
    "outbox_summary",
    "pending_for_session",
    "record_channels",
]


def record_channels() -> list[str]:
    return [c.name for c in settings.XWORKMATE.delivery_channels if c.kind == "record"]


def pending_for_session(session_key: str, *, limit: int) -> QuerySet[Message]:
    """The messages waiting for the bridge to fetch them into `session_key`, oldest first."""
    return Message.objects.filter(
        target=session_key, status=Message.PENDING, channel__in=record_channels()
    ).order_by("created_at", "id")[:limit]


def outbox_summary(now: datetime) -> dict[str, object]:
    """For /healthz: counts by status and the age of the oldest message not yet sent."""
    counts = dict(
        Message.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    )
    oldest = Message.objects.filter(status=Message.PENDING).aggregate(oldest=Min("created_at"))
    created = oldest["oldest"]
    return {
        "pending": counts.get(Message.PENDING, 0),
        "unknown": counts.get(Message.UNKNOWN, 0),
        "failed": counts.get(Message.FAILED, 0),
        "oldest_pending_age_seconds": (
            round((now - created).total_seconds(), 1) if created is not None else None
        ),
        # D-K33: every channel that has a breaker row, closed ones included.
        "breakers": breaker_states(),
    }


def breaker_states() -> dict[str, dict[str, object]]:
    """Each channel's circuit breaker (D-K33): state, failures in a row, since and until when."""
    return {
        b.channel: {
            "state": b.state,
            "consecutive_failures": b.failures,
            "opened_at": b.opened_at.isoformat() if b.opened_at else None,
            "probe_after": b.probe_after.isoformat() if b.probe_after else None,
        }
        for b in Breaker.objects.order_by("channel")
    }


def breaker_notices() -> list[AdminNotice]:
    """For the admin's landing page: one line per channel whose breaker is not closed."""
    notices = []
    for breaker in Breaker.objects.exclude(state=Breaker.CLOSED).order_by("channel"):
        fallback = next(
            (c.fallback for c in settings.XWORKMATE.delivery_channels
             if c.name == breaker.channel and c.fallback),
            "",
        )
        if breaker.state == Breaker.OPEN:
            text = _(
                "Channel %(channel)s: circuit breaker open after %(failures)d failed sends "
                "(last: %(error)s)."
            )
        else:
            text = _("Channel %(channel)s: circuit breaker half-open, a probe send decides.")
        text %= {
            "channel": breaker.channel,
            "failures": breaker.failures,
            "error": breaker.last_error or "-",
        }
        where = (
            _("Its messages go to %(fallback)s.") % {"fallback": fallback}
            if fallback
            else _("No fallback channel: its messages wait.")
        )
        notices.append(AdminNotice("admin:delivery_breaker_changelist", f"{text} {where}"))
    return notices


def outbox_metrics() -> tuple[dict[tuple[str, str], int], dict[str, datetime]]:
    """For /metrics (D-K26): messages by (status, channel), and by channel the
    creation time of the oldest still pending. Two grouped queries on the
    status index, whatever the outbox holds."""
    counts = {
        (status, channel): n
        for status, channel, n in Message.objects.values_list("status", "channel")
        .annotate(n=Count("id"))
        .values_list("status", "channel", "n")
        .order_by()
    }
    oldest = dict(
        Message.objects.filter(status=Message.PENDING)
        .values_list("channel")
        .annotate(oldest=Min("created_at"))
        .values_list("channel", "oldest")
        .order_by()
    )
    return counts, oldest


def messages_with_ids(ids: Iterable[int]) -> QuerySet[Message]:
    """The messages an app keeps the ids of (a long task's), newest first, with their attempts."""
    return (
        Message.objects.filter(pk__in=list(ids))
        .prefetch_related("attempts")
        .order_by("-created_at", "-id")
    )
