"""The outbox's outcome handlers: what an app runs when a send of its purpose has an outcome.

One protocol for every app (D-K17): a handler gets the message (as
`RecordedMessage`, the fields it may read), the channel's `Outcome` and whether
that outcome is final (no retry follows). It runs inside the transaction that
writes the message's new status, so the app's bookkeeping (a long task's
progress marked sent, a plan run's delivery outcome) commits or rolls back with
it; an exception rolls both back.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from xworkmate.config import DELIVERY_PURPOSES
from xworkmate.delivery.channels.base import Outcome

__all__ = [
    "Outcome",
    "OutcomeHandler",
    "RecordedMessage",
    "register_outcome_handler",
    "run_outcome_handlers",
    "unregister_outcome_handler",
]


class RecordedMessage(Protocol):
    """The outbox message whose outcome was just recorded, as an outcome handler sees it."""

    pk: Any
    purpose: str
    target: str
    status: str  # the status the outcome just gave it
    idempotency_key: str
    body_hash: str
    last_error: str
    updated_at: datetime  # when the outbox recorded this outcome


OutcomeHandler = Callable[[RecordedMessage, Outcome, bool], None]
_HANDLERS: dict[str, list[OutcomeHandler]] = {}


def register_outcome_handler(purpose: str, handler: OutcomeHandler) -> None:
    """Run `handler(message, outcome, final)` each time the outcome of a send of `purpose`
    is recorded."""
    if purpose not in DELIVERY_PURPOSES:
        raise ValueError(f"unknown delivery purpose {purpose!r}")
    _HANDLERS.setdefault(purpose, []).append(handler)


def unregister_outcome_handler(purpose: str, handler: OutcomeHandler) -> None:
    if handler in _HANDLERS.get(purpose, []):
        _HANDLERS[purpose].remove(handler)


def run_outcome_handlers(message: RecordedMessage, outcome: Outcome, final: bool) -> None:
    for handler in _HANDLERS.get(message.purpose, ()):
        handler(message, outcome, final)
