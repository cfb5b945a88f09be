"""Pure rules of a channel's circuit breaker (D-K33): what answers do to it, where messages go.

No database, no clock: the service passes the breaker's state and the answers a
step recorded, and writes what these functions decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "Answer", "Verdict", "after_answers", "fallback_route"]

CLOSED = "closed"
OPEN = "open"
HALF_OPEN = "half_open"


@dataclass(frozen=True)
class Answer:
    """One send's answer on the channel, as the breaker counts it."""

    message_id: int
    sent: bool  # the receiver confirmed it; failed and unknown both count against the channel
    detail: str
    target: str


@dataclass(frozen=True)
class Verdict:
    state: str
    failures: int
    opened: bool  # opened by these answers (a failed probe opens it again)
    closed: bool  # the probe was confirmed: closed by these answers
    last_failure: Answer | None  # the failure that opened it, or the latest one counted


def after_answers(
    state: str,
    failures: int,
    probe_message_id: int | None,
    answers: Iterable[Answer],
    *,
    threshold: int,
) -> Verdict:
    """The breaker after `answers` (in the order they were recorded).

    - closed: a confirmed send resets the count; a failed or unknown one adds
      one, and at `threshold` in a row the breaker opens.
    - open: answers of sends begun before it opened change nothing (only the
      probe may close it, and only after the cool-down).
    - half-open: the probe's answer decides: confirmed closes it, anything else
      opens it again; other answers change nothing.
    """
    opened = closed = False
    last_failure: Answer | None = None
    for answer in answers:
        if state == CLOSED:
            if answer.sent:
                failures = 0
                continue
            failures += 1
            last_failure = answer
            if failures >= threshold:
                state, opened = OPEN, True
        elif state == HALF_OPEN and answer.message_id == probe_message_id:
            if answer.sent:
                state, failures, closed, opened = CLOSED, 0, True, False
            else:
                state, opened, last_failure = OPEN, True, answer
                failures += 1
    return Verdict(state, failures, opened, closed, last_failure)


def fallback_route(
    channel: str, fallbacks: Mapping[str, str], blocked: Iterable[str]
) -> str | None:
    """Where a message of `channel` (whose breaker is open) goes: its fallback, or that
    one's fallback while the fallback's own breaker is open too, and so on; None when
    the chain ends (no fallback, or every one on it open): the message is held.

    The config refuses cycles; a cycle here still ends (nothing is visited twice).
    """
    shut = set(blocked)
    seen = {channel}
    step = fallbacks.get(channel, "")
    while step and step not in seen:
        if step not in shut:
            return step
        seen.add(step)
        step = fallbacks.get(step, "")
    return None
