"""Pure rules of the plans app. No database, no clock: callers pass what they know.

Today: what counts as a person's explicit confirmation of a PLAN.md revision
(§2.4, D-C5), each refusal naming the rule it enforces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ConfirmationVerdict", "confirmation_verdict", "normalise_message"]

# Words that turn a reply into a change request (§2.4 "改/换/调整/不过/但是…").
_CHANGE_MARKERS = ("改", "换", "调整", "不过", "但是", "修改", "变更", "而是", "除了")
# Acknowledgements that are not explicit (§2.4: ask again explicitly).
_ACKNOWLEDGEMENTS = ("嗯", "嗯嗯", "好", "好的", "行", "可以", "ok", "okay", "收到", "知道了")
_TRAILING = re.compile(r"[。！!.\s]+$")


@dataclass(frozen=True)
class ConfirmationVerdict:
    confirmed: bool
    rule: str  # why not, naming the rule; "" when confirmed


def normalise_message(message: str) -> str:
    """Trimmed, trailing 。！!. removed, case folded (`按这个建 cron` = `按这个建 Cron`)."""
    return _TRAILING.sub("", message.strip()).casefold()


def confirmation_verdict(
    *,
    message: str,
    phrases: Iterable[str],
    message_turn: str,
    revision_turn: str,
    revision_number: int,
    current_revision_number: int,
) -> ConfirmationVerdict:
    """Whether `message`, from turn `message_turn`, confirms PLAN.md revision `revision_number`.

    All must hold (§2.3 transition 6): another turn than the one that wrote the
    revision (F1); the revision is still the newest (D-C3); the message is, once
    normalised, exactly one of `plans.confirmation_phrases` (F2, F3), so a
    change request, a question or a bare acknowledgement never is.
    """

    def refused(rule: str) -> ConfirmationVerdict:
        return ConfirmationVerdict(False, rule)

    if not message_turn.strip():
        return refused("turnId: required, the conversation turn the user's message comes from")
    if message_turn == revision_turn:
        return refused(
            f"F1: not in the turn that wrote PLAN.md revision {revision_number}; "
            "the user confirms in a later turn"
        )
    if revision_number != current_revision_number:
        return refused(
            f"D-C3: revision {revision_number} is no longer current; "
            f"revision {current_revision_number} is the one to confirm"
        )
    normalised = normalise_message(message)
    if normalised in {normalise_message(phrase) for phrase in phrases}:
        return ConfirmationVerdict(True, "")
    if any(marker in normalised for marker in _CHANGE_MARKERS):
        return refused(
            "§2.4: a change request is not a confirmation; write the change into "
            "PLAN.md as a new revision and ask again"
        )
    if normalised.endswith(("?", "？")) or "吗" in normalised:
        return refused("§2.4: a question is not a confirmation; answer it and ask again")
    if normalised in _ACKNOWLEDGEMENTS:
        return refused(
            "§2.4: an acknowledgement alone is not explicit; ask the user to confirm explicitly"
        )
    return refused(
        "F2/F3: not an explicit confirmation; the message must be one of "
        "plans.confirmation_phrases (e.g. 确认)"
    )
