"""The one interface every delivery channel implements, and what a send answers.

A channel gets an `Envelope` and answers a `Result` with one of three
outcomes, and it must be honest about which (D-B10: a message counts as sent
only when the channel confirmed it):

- SENT: the receiver confirmed it (an HTTP 2xx, an OpenClaw answer that says so);
- UNKNOWN: it may or may not have arrived (a timeout, a connection dropped after
  the request was written, a process killed for taking too long);
- FAILED: it certainly did not arrive (a refusal, an error answer, nothing sent).

A channel never raises for a delivery problem: it answers FAILED or UNKNOWN with
the reason in `detail`. It is plain Python (no Django): it is given everything it
needs and is tested on its own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = ["DETAIL_LIMIT", "Channel", "Envelope", "Outcome", "Result"]

# How much of a receiver's answer or a process's stderr is kept with an attempt.
DETAIL_LIMIT = 512


class Outcome(enum.StrEnum):
    SENT = "sent"
    UNKNOWN = "unknown"
    FAILED = "failed"


@dataclass(frozen=True)
class Envelope:
    """One message as a channel sends it (an outbox row, without the bookkeeping)."""

    message_id: int
    purpose: str  # plans.run, longrun.progress, longrun.resume, longrun.recovery
    target: str  # the OpenClaw session key the message is for
    body: str  # the message text
    body_hash: str  # SHA-256 hex of the body's UTF-8 bytes
    idempotency_key: str  # the same for every attempt of one message
    attempt: int  # 1 for the first send
    created_at: datetime


@dataclass(frozen=True)
class Result:
    outcome: Outcome
    detail: str = ""  # why (an error, a status and the start of an answer), at most DETAIL_LIMIT

    def __post_init__(self) -> None:
        if len(self.detail) > DETAIL_LIMIT:
            object.__setattr__(self, "detail", self.detail[:DETAIL_LIMIT])


class Channel(Protocol):
    name: str
    kind: str
    # Whether the receiver de-duplicates by idempotency key: only then may a message
    # whose outcome was UNKNOWN be sent again (after longrun.unknown_cooldown).
    deduplicates: bool

    def send(self, envelope: Envelope) -> Result:
        """Deliver one message; never raises for a delivery problem (see the module)."""
        ...
