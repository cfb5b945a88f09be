"""Pure rules of the outbox: what a send's outcome makes of a message, and when to try again.

No database, no clock: callers pass `now` and the settings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from xworkmate.delivery.channels.base import Outcome

__all__ = ["AfterSend", "RetryRules", "after_send", "body_hash", "retry_delay"]


def body_hash(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class RetryRules:
    first: timedelta  # delivery.retry_first
    maximum: timedelta  # delivery.retry_max
    max_attempts: int  # delivery.max_attempts
    unknown_cooldown: timedelta  # longrun.unknown_cooldown


def retry_delay(attempt: int, rules: RetryRules) -> timedelta:
    """Wait after failed attempt `attempt` (1-based): first, doubling, at most maximum."""
    # Capped exponent: 2**60 microseconds already exceed any sane maximum.
    factor: int = 2 ** min(attempt - 1, 40)
    return min(rules.first * factor, rules.maximum)


@dataclass(frozen=True)
class AfterSend:
    status: str  # sent, unknown, failed
    next_attempt_at: datetime | None  # None: never again by itself
    final: bool  # no further send will happen unless a person asks for one


def after_send(
    outcome: Outcome, *, attempt: int, deduplicates: bool, rules: RetryRules, now: datetime
) -> AfterSend:
    """The message's state once attempt number `attempt` ended with `outcome`.

    - sent: done.
    - failed: tried again after retry_delay, until max_attempts sends.
    - unknown: it may have arrived. Sending again could deliver it twice, so it
      happens only on a channel whose receiver de-duplicates by idempotency key,
      and only after the unknown cooldown; elsewhere it stays unknown (a person
      may re-send it from the admin).
    """
    if outcome is Outcome.SENT:
        return AfterSend("sent", None, True)
    if attempt >= rules.max_attempts:
        return AfterSend(outcome.value, None, True)
    if outcome is Outcome.FAILED:
        return AfterSend("failed", now + retry_delay(attempt, rules), False)
    if deduplicates:
        return AfterSend("unknown", now + rules.unknown_cooldown, False)
    return AfterSend("unknown", None, True)
