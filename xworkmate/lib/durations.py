"""Durations written the way people and the long-run skill write them.

Accepted: ``90s``, ``3m``, ``2h``, ``1h30m``, ``1h30m15s`` (D-B3). Units are
hours, minutes and seconds in that order, each at most once. Anything else
(``5 min``, ``5M``, ``1.5h``, ``-3m``, ``0s``) is rejected with a message that
says what the accepted form is, because the original scripts silently ignored
such values and a task then never became progress-due.
"""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION_RE = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$")

DURATION_RULE = "a duration like 90s, 3m, 2h or 1h30m (hours, minutes, seconds)"


class DurationError(ValueError):
    """A duration string that does not follow :data:`DURATION_RULE`."""


class DurationTooLong(DurationError):
    """A duration that follows the rule but is longer than a timedelta can hold."""


def parse_duration(value: str) -> timedelta:
    """Parse ``value`` into a positive :class:`timedelta` or raise DurationError."""
    text = value.strip()
    match = _DURATION_RE.match(text)
    if not text or match is None:
        raise DurationError(f"{value!r} is not {DURATION_RULE}")
    try:
        # int() refuses more than 4300 digits (ValueError), timedelta() more than
        # 999999999 days (OverflowError): both are longer than any duration can be.
        parts = {k: int(v) for k, v in match.groupdict().items() if v is not None}
        total = timedelta(
            hours=parts.get("h", 0), minutes=parts.get("m", 0), seconds=parts.get("s", 0)
        )
    except (OverflowError, ValueError):
        raise DurationTooLong(f"{value!r} is longer than any duration can be") from None
    if total <= timedelta(0):
        raise DurationError(f"{value!r} must be longer than zero")
    return total


def format_duration(value: timedelta) -> str:
    """The shortest string that :func:`parse_duration` reads back as ``value``."""
    seconds = int(value.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{hours}h"
    if minutes:
        out += f"{minutes}m"
    if secs or not out:
        out += f"{secs}s"
    return out
