"""The one exception type the schedule engine raises for bad input."""

from __future__ import annotations

__all__ = ["ScheduleError"]


class ScheduleError(ValueError):
    """A schedule, cron expression, time zone or timestamp that cannot be used.

    ``str(error)`` is the message OpenClaw (or croner inside it) gives for the same
    input where one exists, e.g. ``CronPattern: Invalid value for minute: 61`` or
    ``Invalid schedule.at: expected ISO-8601 timestamp (got tomorrow 9am)``, so the
    API can pass it through unchanged.
    """
