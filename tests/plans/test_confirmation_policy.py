"""What counts as an explicit confirmation (§2.4, D-C5); §11 group A case numbers."""

from __future__ import annotations

import pytest

from plans.policies import confirmation_verdict
from xworkmate.wiring import SCHEMA

# The defaults of plans.confirmation_phrases.
PHRASES = SCHEMA["plans"]["confirmation_phrases"].default


def _verdict(message: str, *, turn: str = "turn-2", revision: int = 1, current: int = 1):
    return confirmation_verdict(
        message=message,
        phrases=PHRASES,
        message_turn=turn,
        revision_turn="turn-1",
        revision_number=revision,
        current_revision_number=current,
    )


@pytest.mark.parametrize(
    "message",
    ["确认", "确认。", "  确认！ ", "可以创建定时任务了", "按这个建 Cron", "按这个建cron", "同意", "就这样"],
)
def test_7_8_an_explicit_confirmation_in_a_later_turn_confirms(message):
    assert _verdict(message).confirmed


@pytest.mark.parametrize(
    ("message", "rule"),
    [
        ("做个定时任务", "F2/F3: not an explicit confirmation"),  # case 10
        ("好的，不过把时间改成8点", "§2.4: a change request is not a confirmation"),  # case 11
        ("确认，但是改到8点", "§2.4: a change request is not a confirmation"),
        ("嗯", "§2.4: an acknowledgement alone is not explicit"),  # case 14
        ("好的", "§2.4: an acknowledgement alone is not explicit"),
        ("可以吗？", "§2.4: a question is not a confirmation"),
        ("确认？", "§2.4: a question is not a confirmation"),
        ("直接建好，不用问我", "F2/F3: not an explicit confirmation"),
        ("", "F2/F3: not an explicit confirmation"),
    ],
)
def test_anything_else_is_refused_naming_the_rule(message, rule):
    verdict = _verdict(message)
    assert not verdict.confirmed and verdict.rule.startswith(rule)


def test_f1_never_in_the_turn_that_wrote_the_revision():
    verdict = _verdict("确认", turn="turn-1")
    assert not verdict.confirmed and verdict.rule.startswith("F1: not in the turn that wrote")


def test_a_confirmation_needs_its_turn():
    verdict = _verdict("确认", turn=" ")
    assert not verdict.confirmed and verdict.rule.startswith("turnId: required")


def test_a_stale_revision_is_not_confirmed():
    verdict = _verdict("确认", revision=1, current=2)
    assert not verdict.confirmed
    assert verdict.rule == (
        "D-C3: revision 1 is no longer current; revision 2 is the one to confirm"
    )


def test_the_whitelist_is_the_configured_one():
    verdict = confirmation_verdict(
        message="ship it", phrases=("Ship it",), message_turn="b", revision_turn="a",
        revision_number=1, current_revision_number=1,
    )
    assert verdict.confirmed
