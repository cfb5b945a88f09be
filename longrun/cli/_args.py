"""What the command line's handlers share: who acts, and how counts and spans are read."""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Callable
from datetime import timedelta

from longrun.policies.timing import MAX_THRESHOLD_MINUTES, MAX_THRESHOLD_SECONDS
from xworkmate.auth import Caller

# Who the task log names for a change made from the command line (D-K12).
BY = Caller.command_line().name


def _count(maximum: int) -> Callable[[str], int]:
    """argparse's `type=int`, refusing 0 and below (no threshold of zero means
    anything) and more than `maximum` (a year: MAX_THRESHOLD_MINUTES / _SECONDS)."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ArgumentTypeError(f"invalid int value: {text!r}") from None
        if value < 1:
            raise ArgumentTypeError(f"must be 1 or more (got {value})")
        if value > maximum:
            raise ArgumentTypeError(f"must be at most {maximum}, a year (got {value})")
        return value

    return count


minute_count = _count(MAX_THRESHOLD_MINUTES)
second_count = _count(MAX_THRESHOLD_SECONDS)
# How the operation table's kinds of count are read here.
COUNTS: dict[str, Callable[[str], int]] = {"minutes": minute_count, "seconds": second_count}


def minutes(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(minutes=value)


def seconds(value: int | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)
